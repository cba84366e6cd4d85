"""Local sweep workers run with a simulating process's runtime settings (cosim.process_settings),
as the `cosim` process itself does: a Pollux cell in a worker would otherwise spend ≈ 10 % of its
CPU in page faults (glibc's default malloc thresholds) and collect garbage 300x as often."""

from __future__ import annotations

import gc
import multiprocessing

from cosim.process_settings import GC_THRESHOLDS
from simcore.sweep.backends import worker_pool


def test_local_workers_start_with_the_process_settings():
    assert gc.get_threshold() != GC_THRESHOLDS  # this (test) process keeps Python's
    with worker_pool(1, multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(gc.get_threshold).result(timeout=120) == GC_THRESHOLDS
