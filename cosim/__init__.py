"""cosim: network-aware co-simulation of GPU clusters training deep-learning jobs.

This small base package holds what every layer shares and nothing else: the version,
the error type users see, the generic registry, atomic file writes and unit parsing.
It imports no other cosim package, so every layer may import it. Importing it points numba's
kernel cache at a per-user folder (`cosim.numba_cache`), so it must come before any kernel.
"""

from cosim import blas as _blas
from cosim import numba_cache as _numba_cache

# OpenBLAS' kernels and threads, before numpy loads it (`cosim.blas`): the same seed gives the
# same outputs on every x86-64 CPU with AVX2, and no BLAS worker threads spin.
_blas.configure()

__version__ = "0.1.0"

_numba_cache.configure()
