"""numba kernels of the round's state (`policies.round.Round`): its GPU masks and per-node counts,
claims and releases, and the failed-shape memo.

The one implementation of each: `Round`'s operations, the walk kernel
(`policies._walk_kernels.walk_run`) and Tiresias' round kernel all change the round's state
through these.
"""

from __future__ import annotations

import numpy as np
from numba import njit

@njit(cache=True, no_cfunc_wrapper=True)
def shape_key(demand, gpu_type_req):  # pragma: no cover - compiled
    """A job's placement shape (GPU count, required type) as one int, for the failed-shape
    memo of `policies.base.Round` (`failed_before`, `walk`). Works on ints and int arrays;
    the one place the encoding is written. Type -1 (any) maps to 0."""
    return demand * 65_537 + gpu_type_req + 1


@njit(cache=True, no_cfunc_wrapper=True)
def memo_has(failed, n, key):  # pragma: no cover - compiled
    """Whether `key` is among `failed[:n]` (the shapes that failed on the pool as it is now)."""
    for f in range(n):
        if failed[f] == key:
            return True
    return False


#: the round's list of touched GPUs is used while it and the GPUs held are at most this share of
#: all GPUs (1/16): a pass over the list reads and writes scattered entries, the full pass
#: streams three arrays, so past that share the full pass is the cheaper one
_TOUCHED_SHARE = 16


@njit(cache=True, no_cfunc_wrapper=True)
def round_begin(owner, online, running, alloc_count, undecided, claimed, held, node_free, gpu_node, nfree, touched):
    """A round's initial state, in place: `claimed` all False, `held` = GPUs with an owner,
    `undecided` set for the running jobs, and `nfree`, the round's usable GPUs per node
    (online, unclaimed, not held): at a round's start exactly the cluster's usable GPUs per
    node, so a copy of `node_free` (the cluster state's counts), or counted in the pass over
    the GPUs where the view carries none (`node_free` empty). Returns the number of offline
    GPUs held by a job: when not 0, the jobs holding them must be checked one by one instead
    of kept as they are (`slow_jobs`).

    The masks are reset over what earlier rounds of the workspace touched, not over all GPUs:
    `touched[0]` counts the GPUs listed in `touched[1:]` (-1: no list kept), every GPU whose
    `claimed` or `held` may be True — the GPUs held at the last begin, and every GPU
    `claim_gpus` claimed since (the only writes of True besides this one; `claim_kept`
    claims held GPUs only). Every GPU held now was held at the last begin or claimed since,
    unless the view changed owners in another way: the GPUs found held on the list are
    counted against the running jobs' GPU counts (`alloc_count`), and any shortfall falls
    back to the full pass. The full pass lists the GPUs held when its count agrees with
    `alloc_count` and they are few (`_TOUCHED_SHARE`)."""
    want = 0
    for i in range(running.shape[0]):
        undecided[running[i]] = True
        want += alloc_count[running[i]]
    n_gpus = owner.shape[0]
    n = touched[0]
    off = 0
    found = -1
    if n >= 0 and _TOUCHED_SHARE * (n + want) <= n_gpus:
        for i in range(1, n + 1):
            g = touched[i]
            claimed[g] = False
            held[g] = False
        found = 0
        for i in range(1, n + 1):
            g = touched[i]
            if owner[g] >= 0 and not held[g]:  # listed twice at most: held once
                held[g] = True
                found += 1
                touched[found] = g  # compacted in place: found <= i
                off += not online[g]
    if found == want:
        touched[0] = found
    else:
        off = 0
        for g in range(n_gpus):  # no branch: the loop vectorises
            h = owner[g] >= 0
            claimed[g] = False
            held[g] = h
            off += h & (not online[g])
        touched[0] = -1
        if _TOUCHED_SHARE * want <= n_gpus:
            m = 0
            for g in range(n_gpus):
                if owner[g] >= 0:
                    m += 1
                    if m < touched.shape[0]:
                        touched[m] = g
            if m == want and m < touched.shape[0]:
                touched[0] = m
    if node_free.shape[0] == nfree.shape[0]:
        for n in range(nfree.shape[0]):
            nfree[n] = node_free[n]
    else:
        nfree[:] = 0
        for g in range(owner.shape[0]):
            if online[g] and owner[g] < 0:
                nfree[gpu_node[g]] += 1
    return off


@njit(cache=True, no_cfunc_wrapper=True)
def claim_gpus(gpus, online, claimed, held, gpu_node, nfree, touched):
    """Mark `gpus` claimed this round (no longer held); those usable until now leave the
    round's per-node counts `nfree`. Returns how many were usable. The one claim of the
    round's state: `Round.claim` and the walk kernel's placements. A GPU neither claimed nor
    held until now joins the workspace's touched list (`round_begin`); a full list stops
    being kept (`touched[0]` = -1)."""
    took = 0
    for y in range(gpus.shape[0]):
        g = gpus[y]
        if not (claimed[g] or held[g]):
            if online[g]:
                nfree[gpu_node[g]] -= 1
                took += 1
            k = touched[0] + 1
            if k > 0:
                if k < touched.shape[0]:
                    touched[k] = g
                    touched[0] = k
                else:
                    touched[0] = -1
        claimed[g] = True
        held[g] = False
    return took


@njit(cache=True, no_cfunc_wrapper=True)
def unhold_gpu(g, online, claimed, held, gpu_node, nfree):
    """GPU g of a released job stops being held (unless claimed this round); if online it
    becomes usable and joins the round's per-node counts `nfree`. Returns 1 if it did."""
    if held[g] and not claimed[g]:
        held[g] = False
        if online[g]:
            nfree[gpu_node[g]] += 1
            return 1
    return 0


@njit(cache=True, no_cfunc_wrapper=True)
def release_gpus(gpus, online, claimed, held, gpu_node, nfree):
    """`unhold_gpu` for each of `gpus` (the GPUs of a job `Round.release` lets go)."""
    for y in range(gpus.shape[0]):
        unhold_gpu(gpus[y], online, claimed, held, gpu_node, nfree)


@njit(cache=True, no_cfunc_wrapper=True)
def slow_jobs(owner, online, n_jobs, n_off):
    """The running jobs the walk must hand back instead of keeping as they are: a J-sized
    mask of the jobs holding an offline GPU, or an empty array when none does (`n_off`, from
    `round_begin`, is 0: the common case)."""
    if n_off == 0:
        return np.zeros(0, np.bool_)
    slow = np.zeros(n_jobs, np.bool_)
    for g in range(owner.shape[0]):
        if not online[g] and owner[g] >= 0:
            slow[owner[g]] = True
    return slow


@njit(cache=True, no_cfunc_wrapper=True)
def usable_mask(online, claimed, held):
    """The GPUs a placement may take: online, unclaimed, not held by an unvisited job."""
    a = np.empty(online.shape[0], np.bool_)
    for g in range(online.shape[0]):
        a[g] = online[g] & (not (claimed[g] | held[g]))  # no branch: the loop vectorises
    return a


@njit(cache=True, no_cfunc_wrapper=True)
def pool_mask(online, claimed, held, victim_rank, n):
    """The usable GPUs plus those of the first `n` victims (`victim_rank[g] < n`)."""
    a = np.empty(online.shape[0], np.bool_)
    for g in range(online.shape[0]):
        a[g] = (online[g] & (not (claimed[g] | held[g]))) | (victim_rank[g] < n)
    return a


@njit(cache=True, no_cfunc_wrapper=True)
def claim_kept(held, claimed, owner, mark, kept):
    """Move the GPUs of the jobs in `kept` from held to claimed (their owner is the job).
    `mark` is a scratch of at least J entries, all False on entry and on return."""
    for i in range(kept.shape[0]):
        mark[kept[i]] = True
    for g in range(owner.shape[0]):
        o = owner[g]
        if o >= 0 and held[g] and mark[o]:
            claimed[g] = True
            held[g] = False
    for i in range(kept.shape[0]):
        mark[kept[i]] = False
