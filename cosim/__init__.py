"""cosim: network-aware co-simulation of GPU clusters training deep-learning jobs.

This small base package holds what every layer shares and nothing else: the version,
the error type users see, the generic registry, atomic file writes and unit parsing.
It imports no other cosim package, so every layer may import it. Importing it points numba's
kernel cache at a per-user folder (`cosim.numba_cache`), so it must come before any kernel.
"""

import os as _os

from cosim import numba_cache as _numba_cache

# One OpenBLAS thread unless the user says otherwise (read when each OpenBLAS copy loads: numpy's
# at its import, scipy's when `scipy.interpolate` first runs, inside the engine with `--perf
# measured`). The simulator's linear algebra is tiny (a Delaunay's 4x4 barycentric solves); with
# the default one thread per core, the workers spin after each call, and on a shared 2-core host
# that spinning cost the Pollux workload-1 run 0.2-2 s of CPU against 0.3 s for the whole engine.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

_numba_cache.configure()
