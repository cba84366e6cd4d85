"""Small sorts for numba kernels, cheap to compile.

numba's own `np.sort`, `np.argsort` and `np.unique` are built from five to eight separately
compiled helpers (quicksort: insertion sort, partition, partition3, run_quicksort, ...;
mergesort: argmergesort, argmergesort_inner, ...), each its own LLVM module linked into every
caller: 1.3-2.8 s of compilation per (function, dtype) on a 2-core machine, about a
sixth of the first `cosim simulate`. These are one function each (0.1-0.3 s to
compile) with the same results:

- `argsort_stable(a)` == `np.argsort(a, kind="mergesort")` (== `kind="stable"`): ties keep
  their index order, NaN last;
- `sorted_copy(a)` == `np.sort(a)` (NaN last);
- `unique_sorted(a)` == `np.unique(a)` for arrays without NaN (numba's `np.unique` keeps
  every NaN; cosim never asks it about NaN).

Insertion sort on runs of 16, then bottom-up merges: O(n log n), stable, one scratch array.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# (importing cosim.nsort runs cosim/__init__ first: numba's cache folder is set before these kernels)

_RUN = 16


@njit(cache=True, no_cfunc_wrapper=True)
def argsort_stable(a):  # pragma: no cover - compiled
    """Indices that sort 1-D `a` ascending; equal values keep their order; NaN last."""
    n = a.shape[0]
    src = np.arange(n)
    if n < 2:
        return src
    for lo in range(0, n, _RUN):
        hi = min(lo + _RUN, n)
        for i in range(lo + 1, hi):
            v = src[i]
            x = a[v]
            j = i - 1
            while j >= lo:
                y = a[src[j]]
                if x < y or (y != y and x == x):  # x strictly before y (NaN last)  # noqa: PLR0124 (NaN test)
                    src[j + 1] = src[j]
                    j -= 1
                else:
                    break
            src[j + 1] = v
    dst = np.empty(n, src.dtype)
    width = _RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                x = a[src[j]]
                y = a[src[i]]
                if x < y or (y != y and x == x):  # right strictly before left: take it  # noqa: PLR0124 (NaN test)
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    return src


@njit(cache=True, no_cfunc_wrapper=True)
def sorted_copy(a):  # pragma: no cover - compiled
    """A sorted copy of 1-D `a` (NaN last), same dtype."""
    n = a.shape[0]
    src = a.copy()
    if n < 2:
        return src
    for lo in range(0, n, _RUN):
        hi = min(lo + _RUN, n)
        for i in range(lo + 1, hi):
            x = src[i]
            j = i - 1
            while j >= lo:
                y = src[j]
                if x < y or (y != y and x == x):  # noqa: PLR0124 (NaN test)
                    src[j + 1] = y
                    j -= 1
                else:
                    break
            src[j + 1] = x
    dst = np.empty_like(src)
    width = _RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                x = src[j]
                y = src[i]
                if x < y or (y != y and x == x):  # noqa: PLR0124 (NaN test)
                    dst[k] = x
                    j += 1
                else:
                    dst[k] = y
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    return src


@njit(cache=True, no_cfunc_wrapper=True)
def unique_sorted(a):  # pragma: no cover - compiled
    """The distinct values of 1-D `a`, ascending (`np.unique(a)` for `a` without NaN)."""
    s = sorted_copy(a)
    m = 0
    for i in range(s.shape[0]):
        if i == 0 or s[i] != s[m - 1]:
            s[m] = s[i]
            m += 1
    return s[:m].copy()
