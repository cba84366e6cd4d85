"""Samplers, filters, rescaling and the Ares size classes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from traces import load
from traces.io import normalize
from traces.sample import filter_jobs, gpu_hours, rescale_gpus, sample_window, size_class


def _table(submit, gpus=None, duration=None, **extra):
    n = len(submit)
    return normalize(pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "submit_time": submit,
                                   "num_gpus": gpus if gpus is not None else [1] * n,
                                   "duration": duration if duration is not None else [60.0] * n, **extra}))


def test_size_class_boundaries_are_half_open():
    # GPU-hours: 0.999, 1 (→M), 9.99, 10 (→L), 99.9, 100 (→XL), unknown
    df = _table([0, 1, 2, 3, 4, 5, 6], gpus=[1, 1, 3, 2, 4, 4, 1],
                duration=[3596.4, 3600.0, 11988.0, 18000.0, 89910.0, 90000.0, np.nan])
    assert np.allclose(gpu_hours(df)[:6], [0.999, 1, 9.99, 10, 99.9, 100])
    assert size_class(df).tolist()[:6] == ["S", "M", "M", "L", "L", "XL"]
    assert pd.isna(size_class(df).iloc[6])


def test_gpu_time_column_takes_precedence():
    df = _table([0], gpus=[2], duration=[3600.0], gpu_time=[36000.0])
    assert gpu_hours(df).tolist() == [10.0] and size_class(df).tolist() == ["L"]


def test_window_and_jobs_like_pollux():
    t = np.arange(0, 100 * 3600, 60.0)  # one job a minute for 100 h
    df = _table(t)
    s = sample_window(df, jobs=160, window_s=8 * 3600, seed=7)
    assert len(s) == 160
    assert s["submit_time"].min() == 0.0 or s["submit_time"].min() >= 0
    assert s["submit_time"].max() < 8 * 3600
    assert s["job_id"].is_unique and (np.diff(s["submit_time"]) >= 0).all()
    again = sample_window(df, jobs=160, window_s=8 * 3600, seed=7)
    pd.testing.assert_frame_equal(s, again)
    other = sample_window(df, jobs=160, window_s=8 * 3600, seed=8)
    assert not s["job_id"].equals(other["job_id"])


def test_window_only_and_jobs_only():
    df = _table(np.arange(0, 1000.0, 10.0))
    w = sample_window(df, window_s=100.0, seed=1)
    assert len(w) == 10 and w["submit_time"].tolist() == [float(x) for x in range(0, 100, 10)]
    j = sample_window(df, jobs=5, seed=1)
    assert len(j) == 5 and np.allclose(np.diff(j["submit_time"]), 10.0) and j["submit_time"].iloc[0] == 0


def test_window_too_sparse_is_a_clear_error():
    df = _table([0.0, 10000.0, 20000.0])
    with pytest.raises(InputError, match="busiest such window holds 1"):
        sample_window(df, jobs=2, window_s=100.0, seed=0)
    with pytest.raises(InputError):
        sample_window(df, seed=0)


@settings(max_examples=50, deadline=None)
@given(t=st.lists(st.floats(0, 1e5), min_size=1, max_size=60), jobs=st.integers(1, 20),
       w=st.floats(1.0, 5e4), seed=st.integers(0, 2**32 - 1))
def test_window_sample_invariants(t, jobs, w, seed):
    df = _table(sorted(t))
    try:
        s = sample_window(df, jobs=jobs, window_s=w, seed=seed)
    except InputError:
        ts = np.sort(np.asarray(t))
        assert max(np.searchsorted(ts, x + w) - i for i, x in enumerate(ts)) < jobs
        return
    assert len(s) == jobs and s["job_id"].is_unique
    assert s["submit_time"].min() >= 0 and s["submit_time"].max() < w


def test_filters_and_rescale(fixtures):
    df = load(fixtures / "helios_cluster_log.csv")
    assert filter_jobs(df, status=["completed", "FAILED"])["job_id"].tolist() == ["1425511", "1425512"]
    assert filter_jobs(df, min_gpus=2, max_gpus=8)["job_id"].tolist() == ["1425512"]
    assert len(filter_jobs(df, vc=["vcJkd"])) == 2
    r = rescale_gpus(df, target_gpus=8)  # cap only
    assert r["num_gpus"].tolist() == [1, 4, 1, 8]
    r = rescale_gpus(df, target_gpus=16, source_gpus=64)  # ×1/4, at least 1
    assert r["num_gpus"].tolist() == [1, 1, 1, 4]
    r = rescale_gpus(_table([0, 1, 2], gpus=[3, 6, 12]), target_gpus=8, power_of_two=True)
    assert r["num_gpus"].tolist() == [4, 8, 8]
