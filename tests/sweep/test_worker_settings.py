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


def test_ray_tasks_take_the_process_settings_first():
    """A Ray task runs `run_cell_in_worker`: the settings, then the cell (in a fresh interpreter
    standing in for a Ray worker, whose thresholds are Python's until then)."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import gc, simcore.sweep.backends as b\n"
            "before = gc.get_threshold()\n"
            "b.run_cell = lambda *args: (args, gc.get_threshold())\n"
            "print(before, b.run_cell_in_worker(1, 2))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == f"{gc.get_threshold()} ((1, 2), {GC_THRESHOLDS})"
