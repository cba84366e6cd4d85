"""Synthetic traces: the fitted distributions come back out, seeded runs are byte-identical.

Tolerances (stated once): GPU-count histograms within total-variation distance 0.01; duration
quantiles p10…p99 within 10 % (|log ratio| < 0.1); per-GPU-bucket duration CDFs within
Kolmogorov–Smirnov distance 0.02 (0.06 for the small multi-GPU buckets, where the real trace
has only 289–3,688 jobs); arrival rate per hour of day within 5 %
(200,000 jobs, so sampling noise is far below these).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cosim.errors import InputError, UnknownNameError
from traces import load
from traces.io import write_jobs
from traces.synth import LIKES, fit, load_params, sample_arrivals, save_params, synthesize

N = 200_000
TV_TOL, Q_TOL, RATE_TOL, KS_TOL = 0.01, 0.1, 0.05, 0.02
QS = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


def _tv(a: pd.Series, b: pd.Series) -> float:
    pa_, pb = a.value_counts(normalize=True), b.value_counts(normalize=True)
    keys = pa_.index.union(pb.index)
    return 0.5 * float(np.abs(pa_.reindex(keys, fill_value=0) - pb.reindex(keys, fill_value=0)).sum())


@pytest.fixture(scope="module")
def philly_synth():
    return synthesize("philly", N, seed=1)


def test_philly_like_matches_fitted_params(philly_synth):
    params = load_params("philly")
    hist = pd.Series(np.repeat(params["gpus"]["values"], params["gpus"]["counts"]))
    assert _tv(philly_synth["num_gpus"], hist) < TV_TOL
    probs = np.asarray(params["duration"]["probs"])
    b0 = params["duration"]["buckets"][0]  # 1-GPU jobs
    d = philly_synth.loc[philly_synth["num_gpus"] == 1, "duration"].to_numpy()
    for q in QS:
        want = np.exp(np.interp(q, probs, np.log(b0["quantiles_s"])))
        assert abs(np.log(np.quantile(d, q) / want)) < Q_TOL, q


def test_arrivals_follow_hour_of_day_profile(philly_synth):
    params = load_params("philly")
    rate = np.asarray(params["arrivals"]["rate_per_h"])
    t = philly_synth["submit_time"].to_numpy()
    days = t.max() / 86400.0
    per_hour = np.bincount(((t % 86400) // 3600).astype(int), minlength=24) / days
    assert np.all(np.abs(per_hour / rate - 1) < RATE_TOL)
    assert (np.diff(t) >= 0).all() and t[0] >= 0


def test_sample_arrivals_exact_cases():
    rng = np.random.default_rng(0)
    t = sample_arrivals(rng, 100_000, np.full(24, 36.0))  # 36/h = one per 100 s
    assert abs(np.mean(np.diff(t)) - 100.0) < 1.0
    rate = np.zeros(24)
    rate[10] = 50.0  # only 10:00–11:00
    t = sample_arrivals(np.random.default_rng(1), 5000, rate)
    assert np.all((t % 86400) // 3600 == 10)
    assert abs(len(t) / (t.max() / 86400) - 50) < 3


def test_same_seed_byte_identical_parquet(tmp_path):
    a, b, c = (synthesize("sensetime", 500, seed=s) for s in (4, 4, 5))
    write_jobs(a, tmp_path / "a.parquet")
    write_jobs(b, tmp_path / "b.parquet")
    write_jobs(c, tmp_path / "c.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (tmp_path / "a.parquet").read_bytes() != (tmp_path / "c.parquet").read_bytes()


def test_helios_and_sensetime_carry_models():
    h = synthesize("helios", 2000, seed=0)
    assert h["duration"].isna().all() and h["model"].notna().all() and h["global_batch"].notna().all()
    assert set(h["model"]) <= {"cifar10", "imagenet", "bert", "deepspeech2", "yolov3", "ncf"}
    assert set(h["num_gpus"]) <= {4, 6, 8, 10, 12, 14, 16}
    assert abs(len(h) / (h["submit_time"].max() / 3600) - 20.0) < 2.0  # 160 jobs / 8 h
    p = synthesize("philly-sia", 2000, seed=0)  # Philly as Pollux/Sia/Ares sample it: multi-GPU training jobs
    assert p["duration"].isna().all() and p["model"].notna().all() and p["global_batch"].notna().all()
    assert p["num_gpus"].min() >= 2 and p["num_gpus"].median() >= 6
    assert abs(len(p) / (p["submit_time"].max() / 3600) - 20.0) < 2.0
    s = synthesize("sensetime", 2000, seed=0)
    assert s["dataset"].notna().all() and s["duration"].min() >= 1
    assert (s["source"] == "synth:sensetime").all() and s["job_id"].is_unique


def test_fit_roundtrip_on_synthetic_data(tmp_path):
    s = synthesize("philly", 50_000, seed=2)
    p = fit(s, "again")
    path = save_params(p, tmp_path / "again.json")
    back = synthesize(str(path), 50_000, seed=3)
    assert _tv(back["num_gpus"], s["num_gpus"]) < 0.02
    for q in QS[:-1]:
        assert abs(np.log(np.quantile(back["duration"], q) / np.quantile(s["duration"], q))) < Q_TOL


def test_params_errors(tmp_path):
    with pytest.raises(UnknownNameError, match="valid: helios, philly, philly-sia, sensetime"):
        synthesize("alibaba", 10, 0)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 99}))
    with pytest.raises(InputError, match="field 'version'"):
        load_params(bad)
    bad.write_text("{")
    with pytest.raises(InputError):
        load_params(bad)
    assert LIKES.names() == ["helios", "philly", "philly-sia", "sensetime"]


@pytest.mark.shared_data
def test_philly_like_matches_real_trace(shared_data, philly_synth):
    real = load(shared_data / "traces/philly/philly_jobs.csv")
    assert _tv(philly_synth["num_gpus"], real["num_gpus"]) < TV_TOL
    for q in QS:
        r, s = np.quantile(real["duration"], q), np.quantile(philly_synth["duration"], q)
        assert abs(np.log(s / r)) < Q_TOL, (q, r, s)
    for lo, hi in ((1, 1), (2, 4), (5, 8), (9, 10**6)):  # per GPU bucket: CDFs (quantiles are steep here)
        r = np.sort(real.loc[real["num_gpus"].between(lo, hi), "duration"].to_numpy())
        s = np.sort(philly_synth.loc[philly_synth["num_gpus"].between(lo, hi), "duration"].to_numpy())
        grid = np.unique(np.concatenate([r, s]))
        ks = np.max(np.abs(np.searchsorted(r, grid, "right") / len(r) - np.searchsorted(s, grid, "right") / len(s)))
        assert ks < KS_TOL * (1 if lo == 1 else 3), (lo, ks)  # small buckets: more sampling noise
    real_rate = len(real) / (real["submit_time"].max() / 86400)
    syn_rate = len(philly_synth) / (philly_synth["submit_time"].max() / 86400)
    assert abs(syn_rate / real_rate - 1) < RATE_TOL


@pytest.mark.shared_data
def test_committed_params_are_reproducible(shared_data, tmp_path):
    from traces.synth_fit import FITTERS

    for name, fn in FITTERS.items():
        fresh = json.loads(json.dumps(fn(shared_data)))
        committed = load_params(name)
        assert fresh["gpus"] == committed["gpus"], name
        assert np.allclose(fresh["arrivals"]["rate_per_h"], committed["arrivals"]["rate_per_h"], rtol=1e-5)
        if committed["duration"]:
            for a, b in zip(fresh["duration"]["buckets"], committed["duration"]["buckets"]):
                assert np.allclose(a["quantiles_s"], b["quantiles_s"], rtol=1e-5)
        assert fresh["categorical"] == committed["categorical"], name


def test_spec_with_window_scales_arrivals():
    from traces.synth import from_spec

    plain = from_spec("synth:philly-sia:160", 3)
    assert plain.equals(synthesize("philly-sia", 160, 3))
    two_h = from_spec("synth:philly-sia:160:2h", 3)
    assert two_h["submit_time"].min() == 0.0 and two_h["submit_time"].max() == pytest.approx(7200.0)
    # same jobs, same arrival order; only the time axis is scaled
    assert two_h["job_id"].tolist() == plain["job_id"].tolist()
    assert two_h["num_gpus"].tolist() == plain["num_gpus"].tolist()
    for bad in ("synth:philly", "synth:philly:x", "synth:philly:10:soon", "philly:10", "synth:philly:10:0"):
        with pytest.raises(InputError, match="trace"):
            from_spec(bad, 0)
