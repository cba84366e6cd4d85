"""numba kernels of a preemption attempt (`policies.round.Round._place_preempting`): the
victim plan, the shortest-victim-prefix search and the victims a placement hits.

One implementation for every policy: `preempt_plan`/`prefix_next`/`hit_victims` are the steps
of every preemption attempt, whether the walk kernel (`policies._walk_kernels.walk_run`) or
`Round.place` with a Python placer drives them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# outcome codes of `prefix_next`
PREFIX_DONE = -1
PREFIX_FAIL = -2


@njit(cache=True, no_cfunc_wrapper=True)
def prefix_start(lo, n_all):
    """The state of a shortest-victim-prefix search (`prefix_next`): preempt_plan's `lo`
    (fewest victims by GPU count) and the number of candidates."""
    st = np.zeros(6, np.int64)
    st[1] = lo
    st[3] = n_all
    return st


@njit(cache=True, no_cfunc_wrapper=True)
def prefix_next(st, ok):
    """One step of the search for the shortest prefix of victims whose GPUs (with the free
    ones) let the placer succeed; the one implementation of that search, driven by
    `policies.base.Round` for Python placers and by `walk` for the kernel placer.

    The caller tries the placer on the free pool plus the first n victims for each n this
    returns, passing back whether it succeeded (`ok`, ignored on the first call); the
    answer is `PREFIX_DONE` (the last placement tried is the one to use; `st[4]` is its
    prefix length) or `PREFIX_FAIL`. The sequence of tries: `lo` (by GPU count alone, exact
    for an unconstrained placement, so usually the only one); if that fails, every
    candidate (none possible: fail), then a binary search on (lo, n_all], then its result,
    then every candidate again where feasibility was not monotone.
    """
    ph = st[0]
    if ph == 0:
        st[0] = 1
        st[4] = st[1]
        return st[1]
    if ph == 1:
        if ok:
            return PREFIX_DONE
        if st[1] >= st[3]:
            return PREFIX_FAIL
        st[0] = 2
        st[4] = st[3]
        return st[3]
    if ph == 2:
        if not ok:
            return PREFIX_FAIL
        st[1] += 1
        st[2] = st[3]
        st[0] = 3
        st[5] = 0  # no outcome of a midpoint pending
    if st[0] == 3:
        if st[5]:
            if ok:
                st[2] = st[4]
            else:
                st[1] = st[4] + 1
        if st[1] < st[2]:
            st[4] = (st[1] + st[2]) // 2
            st[5] = 1
            return st[4]
        st[0] = 4
        st[4] = st[1]
        return st[1]
    if ph == 4:
        if ok:
            return PREFIX_DONE
        st[0] = 5
        st[4] = st[3]
        return st[3]
    return PREFIX_DONE if ok else PREFIX_FAIL


@njit(cache=True, no_cfunc_wrapper=True)
def preempt_plan(owner, online, claimed, held, gpu_type, want_type, undecided, alloc_count, victims, job,
                 demand, rank):
    """The arithmetic of one preemption attempt (`policies.base.Round._place_preempting`) in
    one call, so Python is left with only the placer call(s) and the releases.

    Keeps the candidates of `victims` (lowest priority first) that are undecided and not
    `job`; ranks every GPU's owner among them (in O(G + V) through
    `rank`, a J-sized scratch all -1 on entry and on return); and finds `lo`, the shortest
    prefix of candidates whose usable GPUs of `want_type`, with the free ones, reach
    `demand` (by GPU count: exact for an unconstrained placement). Returns (candidates,
    per-GPU rank, lo, pool): `pool` = the free GPUs plus those of the first `lo` candidates;
    lo = 0 (pool empty) when even every candidate is not enough, first by the cheap bound
    (free GPUs plus every GPU the candidates hold), then by usable GPUs of the type.
    """
    nv0 = victims.shape[0]
    keep = np.empty(nv0, np.int64)
    nv = 0
    bound = 0
    for i in range(nv0):
        v = victims[i]
        if undecided[v] and v != job:
            keep[nv] = v
            nv += 1
            bound += alloc_count[v]
    cand = keep[:nv]
    g_n = owner.shape[0]
    empty = np.zeros(0, np.bool_)
    vr = np.full(g_n, nv, np.int64)
    if nv == 0:
        return cand, vr, 0, empty
    for g in range(g_n):
        bound += online[g] & (not (claimed[g] | held[g]))
    if bound < demand:
        return cand, vr, 0, empty
    for i in range(nv - 1, -1, -1):  # a job listed twice ranks at its first place
        rank[cand[i]] = i
    per_rank = np.zeros(nv, np.int64)
    have = 0
    for g in range(g_n):
        if not online[g] or claimed[g]:
            continue
        typed = want_type < 0 or gpu_type[g] == want_type
        if not held[g]:
            if typed:
                have += 1
            continue
        o = owner[g]
        if o >= 0 and rank[o] >= 0:
            vr[g] = rank[o]
            if typed:
                per_rank[rank[o]] += 1
    for i in range(nv):
        rank[cand[i]] = -1
    acc = have
    lo = 0
    for r in range(nv):
        acc += per_rank[r]
        if acc >= demand:
            lo = r + 1
            break
    if lo == 0:
        return cand, vr, 0, empty
    pool = np.empty(g_n, np.bool_)
    for g in range(g_n):
        pool[g] = (online[g] & (not (claimed[g] | held[g]))) | (vr[g] < lo)
    return cand, vr, lo, pool


@njit(cache=True, no_cfunc_wrapper=True)
def hit_victims(vr, gpus, lo, cand):
    """The candidates among the first `lo` whose GPUs the placement `gpus` uses, in rank
    order (lowest priority first), each once: the jobs a preemption actually stops."""
    hit = np.zeros(lo, np.bool_)
    n = 0
    for i in range(gpus.shape[0]):
        r = vr[gpus[i]]
        if r < lo and not hit[r]:
            hit[r] = True
            n += 1
    out = np.empty(n, np.int64)
    k = 0
    for r in range(lo):
        if hit[r]:
            out[k] = cand[r]
            k += 1
    return out
