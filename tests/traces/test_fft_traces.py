"""FFT's Traces 1-9 (traces/fft.py; seeds/notes/fft.md §5.2): what the paper states about each."""

from __future__ import annotations

import numpy as np
import pytest

from cosim.errors import InputError
from traces import fft, synth


def _trace(k: int, n: int = 400, seed: int = 0):
    return synth.from_spec(f"synth:fft-trace{k}:{n}", seed)


def test_models_and_workers_follow_table_2():
    df = _trace(2)
    for m, g in zip(df["model"], df["num_gpus"]):
        assert g in fft.TABLE2[m]
    assert set(df["num_gpus"]) >= {1, 4, 8}
    assert (df["min_gpus"] == df["num_gpus"]).all() and (df["max_gpus"] == df["num_gpus"]).all()  # no elasticity


def test_trace1_all_four_gpus_and_800_jobs_over_48h():
    df = _trace(1, 800)
    assert (df["num_gpus"] == 4).all()
    assert df["submit_time"].max() == pytest.approx(48 * 3600, rel=1e-6)


def test_trace6_half_llm_trace7_fastest_trace9_within_3x():
    t6, t3, t9 = _trace(6), _trace(3), _trace(9)
    assert np.isin(t6["model"], fft.LLMS).mean() == pytest.approx(0.5, abs=0.07)
    assert np.isin(t3["model"], fft.LLMS).mean() < 0.45
    spans = {k: _trace(k)["submit_time"].max() for k in (3, 4, 5, 6, 7, 8, 9)}
    assert min(spans, key=spans.get) == 7  # the highest arrival rate
    d9 = t9["duration"].to_numpy()
    assert d9.max() / d9.min() <= 3.0 + 1e-6
    assert t3["duration"].max() / t3["duration"].min() > 10


def test_offered_load_and_minimum_duration():
    df = _trace(2, 800)
    span = df["submit_time"].max()
    load = float((df["num_gpus"] * df["duration"]).sum()) / (fft.TESTBED_GPUS * span)
    assert load == pytest.approx(fft.TRACES["fft-trace2"].load, rel=0.05)  # the floor adds a little
    assert df["duration"].min() >= fft.MIN_SCALED_S


def test_deterministic_and_bad_names():
    a, b = _trace(4, 100, 3), _trace(4, 100, 3)
    assert a.equals(b)
    assert not a.equals(_trace(4, 100, 4))
    with pytest.raises(InputError):
        fft.synthesize("fft-trace10", 10, 0)
    with pytest.raises(InputError):
        fft.synthesize("fft-trace1", 0, 0)
