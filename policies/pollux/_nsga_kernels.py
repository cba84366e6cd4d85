"""numba kernels of NSGA-II's selection for Pollux's GA (`policies.pollux._ga_kernels`): non-dominated
fronts over two objectives in O(n log n), crowding distance, truncation to the population size
(fronts in order, the last one by crowding, ties at random) and binary tournaments.
Random draws come from `rng_*`: SplitMix64 on a one-element uint64 state array threaded through
the kernels (a few integer operations per draw; numba's generator costs ~8 ns per draw here, in
its thread-local state lookup), seeded by the caller.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def rng_seed(st, seed):
    """Seed the SplitMix64 state `st` (uint64[1])."""
    st[0] = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)


@njit(cache=True)
def rng_random(st):
    """A uniform float in [0, 1) (SplitMix64, 53 bits)."""
    st[0] += np.uint64(0x9E3779B97F4A7C15)
    z = st[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def rng_randint(st, lo, hi):
    """A uniform int in [lo, hi) (as `np.random.randint`; bias < 2^-40 for the ranges used here)."""
    v = lo + int(rng_random(st) * (hi - lo))
    return v if v < hi else hi - 1


@njit(cache=True)
def fronts(F):
    """Non-dominated front index of each row of F[:, :2] (minimisation), O(n log n): in
    lexicographic order every earlier distinct point has f0 ≤ and, if f0 ties, f1 <, so a point
    belongs to the first front whose smallest f1 so far exceeds its f1; equal points share a front."""
    n = F.shape[0]
    o1 = np.argsort(F[:, 1], kind="mergesort")
    o = o1[np.argsort(F[o1, 0], kind="mergesort")]  # lexicographic (f0, f1)
    rank = np.empty(n, np.int64)
    best = np.empty(n)  # smallest f1 of each front so far (increasing)
    nf = 0
    prev = -1
    for i in range(n):
        r = o[i]
        if prev >= 0 and F[r, 0] == F[prev, 0] and F[r, 1] == F[prev, 1]:
            rank[r] = rank[prev]
            continue
        f1 = F[r, 1]
        lo, hi = 0, nf  # first front with best > f1 (bisect_right)
        while lo < hi:
            mid = (lo + hi) // 2
            if best[mid] <= f1:
                lo = mid + 1
            else:
                hi = mid
        best[lo] = f1
        if lo == nf:
            nf += 1
        rank[r] = lo
        prev = r
    return rank


@njit(cache=True)
def crowding(F, idx, out):
    """Crowding distance of the points F[idx] (infinite at each objective's extremes) into out[idx]."""
    m = idx.shape[0]
    for i in range(m):
        out[idx[i]] = 0.0
    if m <= 2:
        for i in range(m):
            out[idx[i]] = np.inf
        return
    for obj in range(F.shape[1]):
        vals = np.empty(m)
        for i in range(m):
            vals[i] = F[idx[i], obj]
        o = np.argsort(vals, kind="mergesort")
        span = vals[o[m - 1]] - vals[o[0]]
        out[idx[o[0]]] = np.inf
        out[idx[o[m - 1]]] = np.inf
        if span > 0:
            for i in range(1, m - 1):
                out[idx[o[i]]] += (vals[o[i + 1]] - vals[o[i - 1]]) / span


@njit(cache=True)
def survive(F, size, crowd, st):
    """Indices kept (fronts in order, the last one cut by crowding distance, most crowding first,
    ties at random); `crowd` receives every kept point's crowding distance within its front."""
    n = F.shape[0]
    rank = fronts(F)
    keep = np.empty(min(size, n), np.int64)
    got = 0
    k = 0
    while got < keep.shape[0]:
        c = 0
        for i in range(n):
            if rank[i] == k:
                c += 1
        idx = np.empty(c, np.int64)
        c = 0
        for i in range(n):
            if rank[i] == k:
                idx[c] = i
                c += 1
        crowding(F, idx, crowd)
        room = keep.shape[0] - got
        if c > room:
            key = np.empty(c)
            for i in range(c):
                key[i] = rng_random(st)
            o = np.argsort(key)  # random ties, then most crowding first (stable)
            neg = np.empty(c)
            for i in range(c):
                neg[i] = -crowd[idx[o[i]]]
            o = o[np.argsort(neg, kind="mergesort")]
            for i in range(room):
                keep[got + i] = idx[o[i]]
            got += room
        else:
            for i in range(c):
                keep[got + i] = idx[i]
            got += c
        k += 1
    return keep


@njit(cache=True)
def _dominates(F, a, b):
    return F[a, 0] <= F[b, 0] and F[a, 1] <= F[b, 1] and (F[a, 0] < F[b, 0] or F[a, 1] < F[b, 1])


@njit(cache=True)
def tournament(F, crowd, k, n, st):
    """`n` winners among rows 0..k−1 of binary tournaments over concatenated random permutations:
    the dominating one, else the less crowded, else a coin."""
    reps = -(-2 * n // k)
    picks = np.empty(reps * k, np.int64)
    for r in range(reps):
        for i in range(k):  # a random permutation (Fisher-Yates)
            picks[r * k + i] = i
        for i in range(k - 1, 0, -1):
            m = rng_randint(st, 0, i + 1)
            t = picks[r * k + i]
            picks[r * k + i] = picks[r * k + m]
            picks[r * k + m] = t
    out = np.empty(n, np.int64)
    for i in range(n):
        a = picks[2 * i]
        b = picks[2 * i + 1]
        coin = rng_random(st) < 0.5
        if _dominates(F, a, b):
            out[i] = a
        elif _dominates(F, b, a):
            out[i] = b
        elif crowd[a] > crowd[b] or (crowd[a] == crowd[b] and coin):
            out[i] = a
        else:
            out[i] = b
    return out
