"""Process-wide runtime settings of a process that runs simulations (`cosim` CLI, sweep workers).

Two defaults of the runtimes under cosim cost a simulating process CPU for nothing:

- Python's garbage collector (`GC_THRESHOLDS`). Importing numba builds hundreds of thousands of
  long-lived objects (its type registries, much of it lazily, inside the command); every
  collection of the young or middle generation re-scans those that have not yet aged out. With
  Python's default young-generation threshold (700 allocations) a cached `cosim simulate` of a
  Pollux workload ran ≈ 196 collections, 0.04-0.05 s of its ≈ 0.6 s of CPU; with 50,000, two
  middle-generation collections during numba's imports still took 0.04-0.06 s; with 200,000,
  none after the entry point (≈ 2 ms in all, `python -m benchmarks.command_sections gc`), at the
  same peak memory (≈ 198 MB). Long commands still collect, every 200,000 allocations.
- glibc's malloc (`MALLOC_TRIM_BYTES`, `MALLOC_MMAP_BYTES`). By default glibc hands blocks above
  a sliding threshold (128 KiB at first, at most 32 MiB) to fresh `mmap`s and gives the top of
  the heap back to the OS as soon as 2x that threshold is free there. The arrays numba kernels
  and numpy allocate and free every round then come back as new zeroed pages each time: the
  Pollux policy on Pollux workload 1 took 1.69 million page faults and 3.7-4.5 s of system CPU
  of a 35-39 s run. Serving blocks below 32 MiB from the heap and keeping up to 64 MiB free at
  its top: 36,000 faults, 0.2 s of system time, the same peak RSS (236 MB). Fixed values also
  switch off glibc's sliding threshold, so the behaviour no longer depends on the allocation
  history. Other C libraries (no `mallopt`) are left as they are.

`apply()` is called by the `cosim` entry point (`cli.app.main`) before the command runs and by each
sweep worker, local or Ray, before each cell (`experiments.sweep.backends.in_worker`); a library user's own process is not
changed by importing cosim.
"""

from __future__ import annotations

import gc

#: `gc.set_threshold` of a simulating process (Python's default: (700, 10, 10))
GC_THRESHOLDS = (200_000, 10, 10)
#: glibc `mallopt(M_TRIM_THRESHOLD)`: free bytes kept at the heap's top before it shrinks
MALLOC_TRIM_BYTES = 64 << 20
#: glibc `mallopt(M_MMAP_THRESHOLD)`: blocks from this size on get their own mmap
MALLOC_MMAP_BYTES = 32 << 20

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def apply() -> dict[str, bool]:
    """Set the collector's thresholds and, where the C library has `mallopt`, malloc's two
    thresholds. Returns what was set (`{"gc": True, "malloc": bool}`)."""
    gc.set_threshold(*GC_THRESHOLDS)
    return {"gc": True, "malloc": _set_malloc()}


def _set_malloc() -> bool:
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    trim_ok = mallopt(_M_TRIM_THRESHOLD, MALLOC_TRIM_BYTES)  # each returns 1 on success
    mmap_ok = mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_BYTES)
    return bool(trim_ok and mmap_ok)
