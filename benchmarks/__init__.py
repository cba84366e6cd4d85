"""Speed and scale measurements (not timed tests): `bench_<area>.py` modules, run by `benchmarks.run`."""

import cosim  # noqa: F401  first: OpenBLAS' kernels and threads are set before numpy loads (cosim.blas)

import time
from typing import Any, Callable


def time_calls(fn: Callable[[], Any], repeats: int,
               before: Callable[[], Any] | None = None) -> tuple[list[float], list[float], Any]:
    """Wall and CPU seconds of `repeats` calls of `fn`, and the last call's result (`before`
    runs untimed ahead of each, e.g. to restore state the call changes): the benchmarks' one
    timing loop."""
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        if before is not None:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu, out
