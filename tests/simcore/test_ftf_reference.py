"""Named FTF references (`simcore.gps.FTF_REFERENCES`) against hand-computed completion times."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cosim.errors import InputError
from simcore.gps import ftf_reference_jct
from experiments.runner import RunConfig, run
from tests.simcore.helpers import fake_backends
from tests.simcore.test_runner import golden_trace

ONE_NODE = np.array([4])  # one node of 4 GPUs
TYPE0 = np.array([0])


def ref(name, submit, n, mx, solo, nodes=ONE_NODE, types=TYPE0, speed=None, changes=()):
    return ftf_reference_jct(name, np.asarray(submit, float), np.asarray(n), np.asarray(mx), np.asarray(solo, float),
                             nodes, types, speed, changes)


def test_gps_and_capped_gps_by_hand():
    # A: 1 GPU (max 4), B: 2 GPUs (max 2), both 100 s solo, 4 GPUs.
    # gps: both get their request → 100, 100.
    # gps-capped: B capped at 2, A gets the other 2 = half its 4-GPU speed; at 4 GPUs A needs
    # 25 s → 50 s.
    np.testing.assert_allclose(ref("gps", [0, 0], [1, 2], [4, 2], [100, 100]), [100, 100])
    np.testing.assert_allclose(ref("gps-capped", [0, 0], [1, 2], [4, 2], [100, 100]), [50, 100])


def test_uncapped_and_artifact_gps_by_hand():
    # A: 1 GPU, B: 2 GPUs, both 100 s solo (A: 100 GPU-s, B: 200 GPU-s of work), 4 GPUs.
    # gps-uncapped (the Ares paper's): 2 GPUs each; A done at 50 s (2x speed), B then has
    # 100 GPU-s left on all 4 GPUs → 25 s more → 75 s.
    np.testing.assert_allclose(ref("gps-uncapped", [0, 0], [1, 2], [2, 4], [100, 100]), [50, 75])
    # gps-artifact with caps A 1, B 8: A held at 1 GPU → 100 s; B gets 3 → 200 / 3 = 66.7 s
    got = ftf_reference_jct("gps-artifact", np.zeros(2), np.array([1, 2]), np.array([2, 4]), np.array([100.0, 100.0]),
                            ONE_NODE, TYPE0, None, (), np.array([1, 8]))
    np.testing.assert_allclose(got, [100, 200 / 3])
    with pytest.raises(InputError, match="artifact GPU cap"):
        ref("gps-artifact", [0, 0], [1, 2], [2, 4], [100, 100])


def test_one_over_n_differs_from_gps_by_hand():
    # A 1 GPU, B and C 4 GPUs, all 100 s solo at t=0 on 4 GPUs.
    # gps: A 1 GPU (full speed) → 100; B, C 1.5 GPUs (0.375) until 100, then 2 (0.5):
    #      37.5 done, 62.5 / 0.5 = 125 more → 225.
    # 1/N: N = 3, shares 4/3: A full speed → 100; B, C at 1/3 → 33.3 done, then N = 2,
    #      shares 2 → 0.5: 66.7 / 0.5 = 133.3 more → 233.3 (A's unused third is not passed on).
    args = ([0, 0, 0], [1, 4, 4], [1, 4, 4], [100, 100, 100])
    np.testing.assert_allclose(ref("gps", *args), [100, 225, 225])
    np.testing.assert_allclose(ref("hetero-1-over-n", *args), [100, 700 / 3, 700 / 3])


def test_one_over_n_heterogeneous_by_hand():
    # Two nodes of 2 GPUs: type 0 and type 1; jobs run at half speed on type 1.
    # One job of 2 GPUs: alone, takes both type-0 GPUs → 100 s.
    # Two such jobs: each 1 type-0 GPU (1) + 1 type-1 GPU (0.5) = 1.5 / 2 = 0.75 → 133.3 s.
    nodes, types = np.array([2, 2]), np.array([0, 1])
    sp = np.array([[1.0, 0.5]])
    np.testing.assert_allclose(ref("hetero-1-over-n", [0], [2], [2], [100], nodes, types, sp), [100])
    np.testing.assert_allclose(ref("hetero-1-over-n", [0, 0], [2, 2], [2, 2], [100, 100], nodes, types,
                                   np.repeat(sp, 2, axis=0)), [400 / 3, 400 / 3])
    # the type-0 node leaves at t = 50: one job alone on 2 type-1 GPUs at half speed after
    # 50 s done: 50 / 0.5 = 100 more → 150
    np.testing.assert_allclose(ref("hetero-1-over-n", [0], [2], [2], [100], nodes, types, sp,
                                   changes=[(50.0, 0, False)]), [150])


def test_runner_records_reference_and_rejects_unknown():
    be = fake_backends(golden_trace())
    a = run(RunConfig(trace="g", policies=("fifo-test",), ftf_reference="gps"), None, backends=be)
    b = run(RunConfig(trace="g", policies=("fifo-test",), ftf_reference="gps-capped"), None, backends=be)
    c = run(RunConfig(trace="g", policies=("fifo-test",), ftf_reference="hetero-1-over-n"), None, backends=be)
    assert b.summary["ftf_reference"].tolist() == ["gps-capped"] and a.summary["ftf_reference"].tolist() == ["gps"]
    ga, gb, gc = (r.jobs["fifo-test"]["gps_jct_s"].to_numpy() for r in (a, b, c))
    assert np.any(np.abs(gb - ga) > 1e-6)  # elastic jobs take up to their maximum in gps-capped
    assert np.all(np.isfinite(gb)) and np.all(np.isfinite(gc))
    jf = b.jobs["fifo-test"]
    np.testing.assert_allclose(jf["ftf"], jf["jct_s"] / gb)  # FTF is measured against the chosen reference
    with pytest.raises(InputError, match="ftf_reference"):
        run(RunConfig(trace="g", policies=("fifo-test",), ftf_reference="themis"), None, backends=be)


def test_cli_options_recorded_in_outputs(monkeypatch, tmp_path):
    """`--ftf-reference` and `--progress` reach the run and are recorded in the Parquet
    metadata and the summary; a bad name exits 2 with a one-line error."""
    import experiments.runner as r
    from typer.testing import CliRunner

    from cli.app import app
    from cosim.atomic import read_metadata

    monkeypatch.setattr(r, "real_backends", lambda cfg: fake_backends(golden_trace()))
    cli = CliRunner()
    res = cli.invoke(app, ["simulate", "--policy", "fifo-test", "--ftf-reference", "gps-capped", "--out",
                           str(tmp_path)])
    assert res.exit_code == 0, res.output
    meta = read_metadata(tmp_path / "fifo-test" / "jobs.parquet")
    assert meta["config"]["ftf_reference"] == "gps-capped" and meta["config"]["progress"] == "plain"
    s = pd.read_parquet(tmp_path / "summary.parquet")
    assert s["ftf_reference"].tolist() == ["gps-capped"] and s["progress_model"].tolist() == ["plain"]
    bad = cli.invoke(app, ["simulate", "--policy", "fifo-test", "--ftf-reference", "themis"])
    assert bad.exit_code == 2 and "ftf_reference" in bad.output
    bad = cli.invoke(app, ["simulate", "--policy", "fifo-test", "--progress", "fast"])
    assert bad.exit_code == 2 and "progress" in bad.output


def test_type_speed_per_job_on_a_heterogeneous_cluster(monkeypatch):
    """The speed table of the hetero-1-over-n reference, job by job: ref / solo time of its
    (model, GPU count, batch) consolidated on each type it may use, 0 elsewhere."""
    import experiments.runner as r

    seen = {}
    real = r._type_speed

    def spy(base, perf, topo):
        seen["args"] = (base, perf, topo)
        return real(base, perf, topo)

    monkeypatch.setattr(r, "_type_speed", spy)
    run(RunConfig(trace="synth:philly:300", cluster="fft-hetero", policies=("fifo",), contention=False,
                  seed=0, ftf_reference="hetero-1-over-n"), None, progress=False)
    base, perf, topo = seen["args"]
    got = real(base, perf, topo)
    nt = len(topo.gpu_type_names)
    assert got.shape == (base.num_jobs, nt) and nt > 1
    for j in range(base.num_jobs):
        req, ref = int(base.gpu_type_req[j]), float(base.ref_iter_s[j])
        for k in range(nt):
            want = 0.0
            if np.isfinite(ref) and ref > 0 and (req < 0 or k == req):
                place = perf.consolidated_gpus(int(base.num_gpus[j]), k)
                batch = int(base.global_batch[j])
                t = np.inf if place is None else perf.solo_iter_s(base.model[j], place, batch)
                want = ref / t if np.isfinite(t) and t > 0 else 0.0
            assert got[j, k] == want, (j, k)
    assert (got > 0).any() and (got == 0).any()
