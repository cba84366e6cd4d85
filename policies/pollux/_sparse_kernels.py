"""Row-sparse storage of Pollux's GA individuals (`policies.pollux._ga_kernels`): conversion from and to
dense allocation matrices, the pinned minimum shares in the same form, and identity (hash, equality)
for dropping duplicate individuals.

An individual's allocation matrix A[j, n] (GPUs of job j on node n) is kept as rows of (node, count)
entries, node-sorted: `rp[k, j]:rp[k, j + 1]` index `en[k]` (nodes) and `ev[k]` (counts) of slot k.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def to_sparse(X, k, rp, en, ev, slot):
    """Row-sparse copy of the dense X[k] (non-zero entries, negatives kept) into slot `slot`."""
    J, N = X.shape[1], X.shape[2]
    c = 0
    for j in range(J):
        rp[slot, j] = c
        for n in range(N):
            v = X[k, j, n]
            if v != 0:
                en[slot, c] = n
                ev[slot, c] = v
                c += 1
    rp[slot, J] = c


@njit(cache=True)
def to_dense(rp, en, ev, slot, X, k):
    J, N = X.shape[1], X.shape[2]
    for j in range(J):
        for n in range(N):
            X[k, j, n] = 0
        for e in range(rp[slot, j], rp[slot, j + 1]):
            X[k, j, en[slot, e]] = ev[slot, e]


@njit(cache=True)
def floor_arrays(floor):
    """(frp, fen, fev, res): the pinned minimum shares int[J, N] row-sparse in one slot, and summed per node."""
    J, N = floor.shape
    frp = np.zeros((1, J + 1), np.int64)
    fen = np.zeros((1, J * N + 1), np.int16)
    fev = np.zeros((1, J * N + 1), np.int16)
    to_sparse(floor.reshape((1, J, N)), 0, frp, fen, fev, 0)
    res = np.zeros(N, np.int64)
    for j in range(J):
        for n in range(N):
            res[n] += floor[j, n]
    return frp, fen, fev, res


@njit(cache=True)
def hash_one(rp, en, ev, k, N):
    """A 64-bit hash of individual k: Σ count × a pseudo-random odd weight of (job, node), mod 2^64
    (equal individuals, equal hashes; the caller compares in full on a match)."""
    h = np.uint64(0)
    J = rp.shape[1] - 1
    for j in range(J):
        for e in range(rp[k, j], rp[k, j + 1]):
            i = np.uint64(j * N + en[k, e] + 1)
            w = (i * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(0xBF58476D1CE4E5B9)
            h += np.uint64(ev[k, e] + 32768) * (w | np.uint64(1))
    return h


@njit(cache=True)
def _same(rp, en, ev, a, b):
    J = rp.shape[1] - 1
    for j in range(J + 1):
        if rp[a, j] != rp[b, j]:
            return False
    for e in range(rp[a, J]):
        if en[a, e] != en[b, e] or ev[a, e] != ev[b, e]:
            return False
    return True


@njit(cache=True)
def _seen(H, h, rp, en, ev, slot):
    """Whether individual `slot` (hash h) repeats one of the `slot` before it (NSGA-II keeps one copy)."""
    for q in range(slot):
        if H[q] == h and _same(rp, en, ev, q, slot):
            return True
    return False
