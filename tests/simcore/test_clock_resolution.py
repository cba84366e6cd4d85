"""Simulated time far from zero: float64 resolves the clock only to about `t` × 2.2e-16 (4 µs
at 924 years). A job left a sliver of time smaller than that cannot move the clock; it must
complete at the current instant instead of stalling the engine at that instant forever."""

from __future__ import annotations

import numpy as np

from simcore import kernels


def _one_running_job(now: float, left_s: float):
    state = np.array([kernels.RUNNING], np.int8)
    rate = np.array([1e-3])  # progress per second
    progress = np.array([1.0 - left_s * 1e-3])
    f = lambda: np.zeros(1)  # noqa: E731
    return (np.array([0], np.int64), 1, now, np.inf, 1e-6, state, rate, progress, np.ones(1),
            np.ones(1, np.int32), f(), f(), f(), f(), f(), np.zeros(1, np.int64), np.zeros(1, np.int64))


def test_a_sliver_below_the_clocks_resolution_completes_now():
    now = 2.9e10  # a trace whose first job is dated centuries before the others
    left = 1.5e-6  # above the 1-µs tolerance, below what now + left can represent
    assert now + left == now
    args = _one_running_job(now, left)
    t, m, _ = kernels.step(*args)
    assert t == now and m == 1 and args[7][0] == 1.0  # done at this instant, progress snapped


def test_near_zero_the_tolerance_is_unchanged():
    now = 1e6
    t, m, _ = kernels.step(*_one_running_job(now, 1.5e-6))  # 1.5 µs left, representable: runs on to it
    assert m == 1 and t > now
    args = _one_running_job(now, 0.5e-6)  # within the 1-µs tolerance: done when the step lands
    assert kernels.step(*args)[1] == 1
