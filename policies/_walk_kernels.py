"""numba kernel of the round's walk (`policies.round.Round.walk`) and its kernel placer.

`walk_run` is `Round.walk`'s scan: keeps, exact skips, and — where a job's placer is the kernel
one — its placement and preemption, through the round-state kernels
(`policies._round_state_kernels`) and the preemption steps (`policies._preempt_kernels`) that
`Round` itself uses.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies import _kernels as K
from policies._preempt_kernels import PREFIX_FAIL, hit_victims, preempt_plan, prefix_next, prefix_start
from policies._round_state_kernels import claim_gpus, memo_has, pool_mask, unhold_gpu

def walk_buffer_size(n_jobs, n_gpus):
    """Entries of the walk's integer buffer (`walk_buffers`, `touched_part`) for J jobs and G GPUs."""
    return 8 + 4 * n_jobs + 5 * n_gpus + 4


@njit(cache=True, no_cfunc_wrapper=True)
def walk_buffers(ibuf, n_jobs, n_gpus):
    """The parts of the walk's integer buffer (views): counts (kept, rec length, released,
    victim candidates: -1 list them, -2 none), the failed-shape memo's length, kept jobs (J),
    placement records (job, GPU count, ids...: 3 G + 2), released jobs (G + 1), victim
    candidates and their classes (J each) and the `rank` scratch of `preempt_plan` (J, all
    -1 between calls)."""
    o = 8
    kept = ibuf[o:o + n_jobs]
    o += n_jobs
    rec = ibuf[o:o + 3 * n_gpus + 2]
    o += 3 * n_gpus + 2
    rel = ibuf[o:o + n_gpus + 1]
    o += n_gpus + 1
    run_rev = ibuf[o:o + n_jobs]
    o += n_jobs
    run_cls = ibuf[o:o + n_jobs]
    o += n_jobs
    rank = ibuf[o:o + n_jobs]
    return ibuf[0:4], ibuf[4:5], kept, rec, rel, run_rev, run_cls, rank


@njit(cache=True, no_cfunc_wrapper=True)
def touched_part(ibuf, n_gpus):
    """The last part of the walk's integer buffer: the round's touched GPUs (count, then up
    to G ids; `_round_state_kernels.round_begin`, `claim_gpus`), after `walk_buffers`' parts."""
    return ibuf[ibuf.shape[0] - n_gpus - 1:]


@njit(cache=True, no_cfunc_wrapper=True)
def walk_run(order, start, undecided, slow, klass, num_classes, demand, type_req, alloc_count, keys, memo, online,
             owner, masks, nfree, kfit, blocking, topo, ibuf):
    """Advance a priority walk (`policies.base.Round.walk`) to the next job Python must handle,
    doing in between everything the round's own rules decide.

    From position `start` of `order`:
    - a running job still undecided is kept as it is (`undecided` cleared, written to
      `kept`) unless it must be checked one by one (`slow[j]`; `slow` empty: none must);
    - a job that holds nothing is passed over when it cannot be placed: its shape `keys[i]`
      (-1: none) already failed on this pool (one of `memo[:memo_n[0]]`), or even the free
      GPUs (online, unclaimed, not held) plus every GPU of the running jobs it may preempt
      (undecided, class strictly above `klass[i]`) are fewer than it needs — the count bound
      every placement (and preemption) attempt checks first, so passing over changes no
      decision and draws nothing from a random placer;
    - where `kfit[i]` (the job's placer is the kernel one: `consolidate_gpus` on a one-type
      cluster, a job asking for type > 0 fitting nothing) the job is placed here: on the
      free pool, else by preempting the fewest of its victims — the jobs running at the
      round's start of a strictly higher class, lowest priority first (`run_rev`, their
      classes `run_cls`) — found by `preempt_plan` and `prefix_next` exactly as
      `Round.place` does with a Python placer. Placements go to `rec` (job, GPU count,
      GPU ids ...), preempted jobs to `rel`; a failure records the shape in the memo, a
      claim or release empties it.
    Everything else (a running job that must be checked, a job with a Python placer)
    stops the scan there. With `blocking` (head-of-line blocking, as FIFO), the first job
    that holds nothing and is passed over or fails to be placed ends the walk: no later job
    is placed. `counts[:3]` receives (kept, rec length, released). Returns the position of
    the job to hand back, or len(order).

    The usable GPUs are counted per node in `nfree` (the round's counts: `round_begin`,
    `claim_gpus`, `unhold_gpu`), which this scan reads and keeps in step with its claims and
    releases: the free-pool placement picks its nodes from them and reads the GPUs of those
    nodes only (`_kfit`), so no step of a scan that places from the free pool passes over all
    GPUs. The round's GPU masks are the rows of `masks` (claimed, held, and the placer's
    scratch `pool`, meaningful only on the nodes `_kfit` picks); its integer buffers
    (counts, memo length, kept, rec, rel, run_rev, run_cls, rank) are parts of `ibuf`
    (`walk_buffers`): one argument each, not ten.
    """
    claimed, held, pool = masks[0], masks[1], masks[2]
    gpu_node = topo[0]
    counts, memo_n, kept, rec, rel, run_rev, run_cls, rank = walk_buffers(ibuf, undecided.shape[0], owner.shape[0])
    touched = touched_part(ibuf, owner.shape[0])
    n = order.shape[0]
    # the number of usable GPUs now (online, not claimed this round, not held by an unvisited
    # job), from the per-node counts; it follows this scan's claims and releases
    free = 0
    for x in range(nfree.shape[0]):
        free += nfree[x]
    vic = np.zeros(num_classes + 1, np.int64)
    # GPUs per class of every undecided job (also one a caller passed over without deciding).
    # `counts[3]`: -1, list the victim candidates (running at the round's start, lowest
    # priority first) in the same pass over the order; -2, no victims (count only); >= 0,
    # that many are listed (by an earlier call, or by the caller), so count over the list,
    # which holds every undecided job of the order, instead of over the order
    if counts[3] < 0:
        list_run = counts[3] == -1
        nrun = 0
        for i in range(n - 1, -1, -1):
            j = order[i]
            if undecided[j]:
                vic[klass[i]] += alloc_count[j]
                if list_run:
                    run_rev[nrun] = j
                    run_cls[nrun] = klass[i]
                    nrun += 1
        if list_run:
            counts[3] = nrun
    else:
        for x in range(counts[3]):
            j = run_rev[x]
            if undecided[j]:
                vic[run_cls[x]] += alloc_count[j]
    for c in range(num_classes - 1, -1, -1):  # vic[c] = GPUs of victims of class >= c
        vic[c] += vic[c + 1]
    nrun = max(counts[3], 0)
    nk = 0
    nrec = 0
    nrel = 0
    for i in range(start, n):
        j = order[i]
        if undecided[j]:
            if slow.shape[0] == 0 or not slow[j]:
                undecided[j] = False
                kept[nk] = j
                nk += 1
                continue
            counts[0], counts[1], counts[2] = nk, nrec, nrel
            return i
        k = keys[i]
        if k >= 0 and memo_has(memo, memo_n[0], k):
            if blocking:
                break
            continue
        d = demand[j]
        # victims' GPUs counted at entry: keeps since then only shrink them (a looser bound);
        # `free` follows this scan's claims and releases
        if free + vic[klass[i] + 1] < d:
            if blocking:
                break
            continue
        if not kfit[i]:
            counts[0], counts[1], counts[2] = nk, nrec, nrel
            return i
        # fewer usable GPUs than it needs: no placement on the free pool (`free` is exact here)
        gpus = _kfit(nfree, online, claimed, held, pool, type_req[j], d, topo) if free >= d else np.empty(0, np.int32)
        if gpus.shape[0] == 0 and nrun > 0:
            nv = 0
            for x in range(nrun):
                if run_cls[x] > klass[i]:
                    nv += 1
            victims = np.empty(nv, np.int64)
            nv = 0
            for x in range(nrun):
                if run_cls[x] > klass[i]:
                    victims[nv] = run_rev[x]
                    nv += 1
            gpus, hits = _kpreempt(j, d, type_req[j], victims, owner, online, claimed, held, topo, undecided,
                                   alloc_count, rank)
            for h in range(hits.shape[0]):  # `Round.release`
                v = hits[h]
                if undecided[v]:
                    undecided[v] = False
                    rel[nrel] = v
                    nrel += 1
                    memo_n[0] = 0
                    for g in range(owner.shape[0]):
                        if owner[g] == v:
                            free += unhold_gpu(g, online, claimed, held, gpu_node, nfree)
        if gpus.shape[0] == 0:
            if k >= 0 and memo_n[0] < memo.shape[0]:  # (`Round.walk_failed`)
                memo[memo_n[0]] = k
                memo_n[0] += 1
            if blocking:
                break
            continue
        memo_n[0] = 0  # `Round.claim`
        rec[nrec] = j
        rec[nrec + 1] = gpus.shape[0]
        nrec += 2
        free -= claim_gpus(gpus, online, claimed, held, gpu_node, nfree, touched)
        for y in range(gpus.shape[0]):
            rec[nrec] = gpus[y]
            nrec += 1
    counts[0], counts[1], counts[2] = nk, nrec, nrel
    return n


# `_kfit`, `_kfit_mask` and `_kpreempt` are inlined into `walk_run` (numba IR): as separate
# kernels each was its own LLVM module holding a copy of `consolidate_gpus` and everything it
# calls, optimised and compiled to machine code again (≈ 1.3 s and 1.7 s of the first run's CPU)
@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _kfit(nfree, online, claimed, held, pool, req, demand, topo):
    """The kernel placer of `walk_run` on the free pool: `consolidate_gpus` on a one-type
    cluster (what `placement.place(strategy="consolidate")` does there: a job asking for
    type > 0 fits nothing), its nodes picked from the round's per-node usable counts `nfree`
    (`consolidate_nodes`, as `consolidate_gpus` does on the counts it takes from a mask), its
    GPUs read on those nodes only: `pool` is set there from the round's masks for
    `take_gpus`. `topo` = (gpu_node, gpu_type, node_first_gpu, node_num_gpus, node_leaf,
    leaf_pod, num_leaves, num_pods). Empty when it fails."""
    if req > 0:
        return np.empty(0, np.int32)
    gpu_node, gpu_type, first, num, node_leaf, leaf_pod, num_leaves, num_pods = topo
    nodes, counts = K.consolidate_nodes(nfree, demand, node_leaf, leaf_pod, num_leaves, num_pods)
    if nodes.shape[0] == 0:
        return np.empty(0, np.int32)
    for i in range(nodes.shape[0]):
        s = first[nodes[i]]
        for g in range(s, s + num[nodes[i]]):
            pool[g] = online[g] & (not (claimed[g] | held[g]))
    return K.take_gpus(pool, gpu_type, np.int64(-1), first, num, nodes, counts)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _kfit_mask(avail, req, demand, topo):
    """The kernel placer on a mask (a preemption's pool: the usable GPUs plus the victims'):
    `consolidate_gpus` on a one-type cluster, as `_kfit`. Empty when it fails."""
    if req > 0:
        return np.empty(0, np.int32)
    gpu_node, gpu_type, first, num, node_leaf, leaf_pod, num_leaves, num_pods = topo
    return K.consolidate_gpus(avail, gpu_node, gpu_type, np.int64(-1), first, num, node_leaf, leaf_pod, num_leaves, num_pods,
                            demand)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _kpreempt(j, d, req, victims, owner, online, claimed, held, topo, undecided, alloc_count, rank):
    """`Round._place_preempting` with the kernel placer: (GPUs or empty, victims to release)."""
    none = np.empty(0, np.int64)
    cand, vr, lo, pool = preempt_plan(owner, online, claimed, held, topo[1], req, undecided, alloc_count, victims, j,
                                      d, rank)
    if lo == 0:
        return np.empty(0, np.int32), none
    st = prefix_start(lo, cand.shape[0])
    m = prefix_next(st, np.bool_(False))
    gpus = np.empty(0, np.int32)
    while m >= 0:
        gpus = _kfit_mask(pool_mask(online, claimed, held, vr, m), req, d, topo)
        m = prefix_next(st, gpus.shape[0] > 0)
    if m == PREFIX_FAIL:
        return np.empty(0, np.int32), none
    return gpus, hit_victims(vr, gpus.astype(np.int64), st[4], cand)
