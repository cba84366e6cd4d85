"""Sweep workers, local or Ray, run each cell through `experiments.sweep.backends.in_worker`: the
simulating process's runtime settings first (cosim.process_settings), as the `cosim` process
itself does: a Pollux cell in a worker would otherwise spend ≈ 10 % of its CPU in page faults
(glibc's default malloc thresholds) and collect garbage 300x as often."""

from __future__ import annotations

import gc
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from cosim.process_settings import GC_THRESHOLDS
from experiments.sweep.backends import in_worker


def test_a_task_in_a_fresh_worker_runs_with_the_process_settings():
    assert gc.get_threshold() != GC_THRESHOLDS  # this (test) process keeps Python's
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(gc.get_threshold).result(timeout=120) != GC_THRESHOLDS  # a bare worker: Python's
        assert pool.submit(in_worker, gc.get_threshold).result(timeout=120) == GC_THRESHOLDS
        assert pool.submit(in_worker, divmod, 7, 2).result(timeout=120) == (3, 1)  # the task's own result
