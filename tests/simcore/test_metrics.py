"""Fluid-GPS reference and summary metrics with hand-derived numbers."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.gps import capacity_steps, gps_jct
from simcore.metrics import FTF_TOLERANCE


def g(sub, dem, solo, cap):
    return gps_jct(np.asarray(sub, float), np.asarray(dem, float), np.asarray(solo, float), cap)


def test_equal_share():
    assert g([0, 0], [4, 4], [100, 100], 4).tolist() == pytest.approx([200, 200])


def test_water_filling_gives_capped_jobs_their_demand():
    # A (1 GPU) gets 1, B gets 3 of 4: A done at 100; B did 75 %, then 25 s alone
    assert g([0, 0], [1, 4], [100, 100], 4).tolist() == pytest.approx([100, 125])


def test_arrival_halves_the_share():
    assert g([0, 50], [4, 4], [100, 50], 4).tolist() == pytest.approx([150, 100])


def test_alone_is_solo_and_invalid_jobs_are_nan():
    out = g([5, 10], [2, 3], [30, np.nan], 8)
    assert out[0] == pytest.approx(30) and np.isnan(out[1])


def test_order_independent():
    a = g([0, 50, 10], [4, 4, 2], [100, 50, 20], 4)
    b = g([50, 0, 10], [4, 4, 2], [50, 100, 20], 4)
    assert a.tolist() == pytest.approx(b[[1, 0, 2]].tolist())


def test_summary_metrics_from_a_run():
    from simcore.metrics import jobs_frame, summary_row
    from tests.simcore.fakes import FifoTest
    from tests.simcore.helpers import simulate

    rows = [dict(submit_time=0.0, num_gpus=16, duration=100.0), dict(submit_time=0.0, num_gpus=16, duration=100.0)]
    res = simulate(rows, FifoTest())
    gps = gps_jct(res.jobs.submit_time, res.jobs.num_gpus.astype(float),
                  res.jobs.work_iters * res.jobs.ref_iter_s, 16)
    jf = jobs_frame(res, gps)
    # FIFO: 100 and 200; GPS: both 200 → FTF 0.5 and 1.0 (not unfair)
    assert jf["jct_s"].tolist() == pytest.approx([100, 200])
    assert jf["ftf"].tolist() == pytest.approx([0.5, 1.0])
    s = summary_row("fifo-test", jf, res)
    assert s["avg_jct_s"] == pytest.approx(150) and s["makespan_s"] == pytest.approx(200)
    assert s["unfair_fraction"] == 0.0 and s["worst_ftf"] == pytest.approx(1.0, abs=FTF_TOLERANCE)
    assert s["gpu_utilization"] == pytest.approx(1.0) and s["starvation_s"] == pytest.approx(100)
    assert s["avg_queueing_s"] == pytest.approx(50) and s["p50_jct_s"] == pytest.approx(150)


def reference_gps(sub, dem, solo, cap):
    """Straightforward fluid GPS: sort-based water-filling, step from event to event."""
    n = len(sub)
    left = list(solo)
    done = [None] * n
    t = 0.0
    while any(d is None for d in done):
        act = [j for j in range(n) if done[j] is None and sub[j] <= t + 1e-12]
        future = [sub[j] for j in range(n) if done[j] is None and sub[j] > t + 1e-12]
        if not act:
            t = min(future)
            continue
        share, c, k = {}, cap, len(act)
        for j in sorted(act, key=lambda j: dem[j]):
            share[j] = min(dem[j], c / k)
            c -= share[j]
            k -= 1
        speed = {j: share[j] / dem[j] for j in act}
        dt = min(left[j] / speed[j] for j in act)
        if future and t + dt > min(future):
            dt = min(future) - t
        t += dt
        for j in act:
            left[j] -= dt * speed[j]
            if left[j] <= 1e-9 * solo[j]:
                done[j] = t
    return np.array(done) - np.array(sub)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.sampled_from([1, 2, 4, 8]), st.integers(1, 100)), min_size=1,
                max_size=12), st.sampled_from([4, 8, 16]))
def test_gps_matches_reference(jobs, cap):
    sub = [float(a) for a, _, _ in jobs]
    dem = [float(d) for _, d, _ in jobs]
    solo = [float(s) for _, _, s in jobs]
    np.testing.assert_allclose(g(sub, dem, solo, cap), reference_gps(sub, dem, solo, cap), rtol=1e-7)


def test_gps_capacity_drop_hand_example():
    """One 4-GPU job of 100 s: 4 GPUs until t=50 (half done), then 2 (half speed) → JCT 150 s."""
    jct = gps_jct(np.array([0.0]), np.array([4.0]), np.array([100.0]), 4.0,
                  (np.array([50.0]), np.array([2.0])))
    assert jct[0] == pytest.approx(150.0)


def test_gps_capacity_outage_and_return():
    """Capacity 0 from 50 s to 80 s pauses the job: 100 s of work ends at 130 s; two 1-GPU
    jobs on 1 GPU share it: each at half speed."""
    steps = (np.array([50.0, 80.0]), np.array([0.0, 4.0]))
    assert gps_jct(np.array([0.0]), np.array([4.0]), np.array([100.0]), 4.0, steps)[0] == pytest.approx(130.0)
    both = gps_jct(np.array([0.0, 0.0]), np.array([1.0, 1.0]), np.array([10.0, 10.0]), 1.0)
    np.testing.assert_allclose(both, [20.0, 20.0])


def test_gps_capacity_lost_for_good_is_nan():
    jct = gps_jct(np.array([0.0, 200.0]), np.array([2.0, 2.0]), np.array([100.0, 10.0]), 2.0,
                  (np.array([50.0]), np.array([0.0])))
    assert np.isnan(jct).all()


def test_capacity_steps_follow_engine_order():
    t, c = capacity_steps([(10.0, 1, False), (10.0, 0, False), (20.0, 1, True), (30.0, 1, True)],
                          np.array([8, 4]))
    np.testing.assert_array_equal(t, [10.0, 20.0, 30.0])
    np.testing.assert_array_equal(c, [0.0, 4.0, 4.0])
