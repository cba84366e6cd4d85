"""numba kernels of `policies.base.Round`: the walk, keeping, preemption and the failed-shape memo.

One implementation of the round's mechanisms for every policy: `walk_run` is `Round.walk`'s
scan (keeps, exact skips, and — where a job's placer is the kernel one — its placement and
preemption), `preempt_plan`/`prefix_next`/`hit_victims` are the steps of every preemption
attempt, whether the walk kernel or `Round.place` with a Python placer drives them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies import _kernels as K


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
def round_begin(owner, online, running, undecided, claimed, held, node_free, gpu_node, nfree):
    """A round's initial state in one pass, in place: `claimed` all False, `held` = GPUs with
    an owner, `undecided` set for the running jobs, and `nfree`, the round's usable GPUs per
    node (online, unclaimed, not held): at a round's start exactly the cluster's usable GPUs
    per node, so a copy of `node_free` (the cluster state's counts), or counted in the pass
    over the GPUs where the view carries none (`node_free` empty). Returns the number of
    offline GPUs held by a job: when not 0, the jobs holding them must be checked one by one
    instead of kept as they are (`slow_jobs`)."""
    off = 0
    for g in range(owner.shape[0]):  # no branch: the loop vectorises
        h = owner[g] >= 0
        claimed[g] = False
        held[g] = h
        off += h & (not online[g])
    if node_free.shape[0] == nfree.shape[0]:
        for n in range(nfree.shape[0]):
            nfree[n] = node_free[n]
    else:
        nfree[:] = 0
        for g in range(owner.shape[0]):
            if online[g] and owner[g] < 0:
                nfree[gpu_node[g]] += 1
    for i in range(running.shape[0]):
        undecided[running[i]] = True
    return off


@njit(cache=True, no_cfunc_wrapper=True)
def claim_gpus(gpus, online, claimed, held, gpu_node, nfree):
    """Mark `gpus` claimed this round (no longer held); those usable until now leave the
    round's per-node counts `nfree`. Returns how many were usable. The one claim of the
    round's state: `Round.claim` and the walk kernel's placements."""
    took = 0
    for y in range(gpus.shape[0]):
        g = gpus[y]
        if online[g] and not (claimed[g] or held[g]):
            nfree[gpu_node[g]] -= 1
            took += 1
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


def walk_buffer_size(n_jobs, n_gpus):
    """Entries of the walk's integer buffer (`walk_buffers`) for J jobs and G GPUs."""
    return 8 + 4 * n_jobs + 4 * n_gpus + 3


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
        free -= claim_gpus(gpus, online, claimed, held, gpu_node, nfree)
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
