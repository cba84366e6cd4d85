"""numba kernels of `policies.tiresias`: the per-job arithmetic of one call, over the active set.

They do exactly what the NumPy expressions they replace did (the same float operations in
the same order, the same stable ordering), in one pass each instead of ~40 array calls,
which dominated a call's cost on long traces. The policy logic (which job is demoted,
promoted, or preempted, and why) is documented in `policies.tiresias.Tiresias`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies import _kernels as K


@njit(cache=True)
def _queue(svc, thr):
    """Number of thresholds `svc` has reached (`searchsorted(thr, svc, side="right")`)."""
    k = 0
    for i in range(thr.shape[0]):
        if thr[i] <= svc:
            k += 1
    return k


@njit(cache=True)
def _prepare(active, holding, now, submit, executed, attained, first_start, svc_base, exec_base, pend_base,
             promotions, thr, eps, knob, q, waited):
    """`prepare`, also returning where each class starts in the order (`bounds`, one more
    entry than classes: class c = 2 × queue + (0 running, 1 waiting) occupies positions
    bounds[c] .. bounds[c + 1])."""
    n = active.shape[0]
    ncls = 2 * (thr.shape[0] + 1)
    count = np.zeros(ncls + 1, np.int64)
    # one pass: every quantity of job j depends on j's own entries only, so the bookkeeping,
    # the starvation guard, the submit-order check and the class counts share it
    in_order = True
    prev = 0.0
    for i in range(n):
        j = active[i]
        s = submit[j]
        if i > 0 and not s >= prev:  # (a NaN also takes the sort)
            in_order = False
        prev = s
        w = now - s - executed[j]
        waited[j] = w
        pb = pend_base[j]
        if np.isnan(pb) and promotions[j] == 0 and np.isfinite(first_start[j]):
            pb = first_start[j] - s
        hold = holding[j]
        if hold and np.isnan(pb):
            pb = w
        qj = _queue(attained[j] - svc_base[j] + eps, thr)
        if knob > 0 and qj > 0 and not hold and not np.isnan(pb):
            execd = executed[j] - exec_base[j]
            if execd > 0 and w - pb >= knob * execd - 1e-6:
                svc_base[j] = attained[j]
                exec_base[j] = executed[j]
                pb = np.nan
                promotions[j] += 1
                qj = _queue(attained[j] - svc_base[j] + eps, thr)
        pend_base[j] = pb
        q[j] = qj
        count[2 * qj + (0 if hold else 1) + 1] += 1
    # stable sort by submit time (ties: index, as `active` is ascending), then a stable
    # counting sort by class (traces are usually in submit order already: then the stable
    # sort is the identity)
    by_submit = active if in_order else active[np.argsort(submit[active], kind="mergesort")]
    for c in range(ncls):
        count[c + 1] += count[c]
    bounds = count.copy()
    order = np.empty(n, np.int64)
    for i in range(n):
        j = by_submit[i]
        c = 2 * q[j] + (0 if holding[j] else 1)
        order[count[c]] = j
        count[c] += 1
    return order, bounds


@njit(cache=True)
def prepare(active, holding, now, submit, executed, attained, first_start, svc_base, exec_base, pend_base,
            promotions, thr, eps, knob, q, waited):
    """Bookkeeping and priority order of one call.

    For every active job j (`holding[j]`: it runs now): `waited[j]` = now − submit − executed;
    the waiting time before its first start after the last promotion (`pend_base`) where it
    becomes known; its queue `q[j]`; the starvation-guard promotions (a waiting job in a lower
    queue whose wait since `pend_base` reaches `knob` × its executed time since the promotion
    goes back to queue 0, its counters restarting). Returns the active jobs in priority
    order: queue, then running before waiting, then submit time, then index.
    """
    return _prepare(active, holding, now, submit, executed, attained, first_start, svc_base, exec_base, pend_base,
                    promotions, thr, eps, knob, q, waited)[0]


@njit(cache=True)
def next_jump(placed, placed_gpus, active, q, attained, svc_base, thr, now, knob, executed, exec_base, pend_base,
              waited, scratch):
    """Earliest time a job that runs after this call crosses its next threshold while a job
    waits in its queue or a higher one, or a waiting job becomes due for promotion (inf if
    none). `scratch`: a J-sized all-False mask, returned all False.

    A demotion with no job waiting at the demoted job's queue or above changes no decision
    (no waiting job gains it as a victim; the next event's call sees the new queue anyway),
    so it needs no wake-up of its own (one event instant fewer: see
    `simcore.api.Policy`, `ignores_restart_ends`, on what that can change numerically).
    """
    nthr = thr.shape[0]
    for i in range(placed.shape[0]):
        scratch[placed[i]] = True
    # one pass over the waiting jobs: the highest-priority queue with one, and the earliest
    # promotion (both minima of finite values, so the grouping changes no bit)
    min_wait_q = nthr + 1
    t_promote = np.inf
    promote = knob > 0 and active.shape[0] > placed.shape[0]
    for i in range(active.shape[0]):
        j = active[i]
        if scratch[j]:
            continue
        if q[j] < min_wait_q:
            min_wait_q = q[j]
        if promote and q[j] > 0 and not np.isnan(pend_base[j]):
            execd = executed[j] - exec_base[j]
            if execd > 0:
                t_promote = min(t_promote, now + (knob * execd - (waited[j] - pend_base[j])))
    t = np.inf
    for i in range(placed.shape[0]):
        j = placed[i]
        scratch[j] = False
        if q[j] < nthr and q[j] >= min_wait_q and placed_gpus[i] > 0:
            t = min(t, now + (thr[q[j]] - (attained[j] - svc_base[j])) / placed_gpus[i])
    return min(t, t_promote)


@njit(cache=True)
def walk_inputs(order, holding, q, demand, type_req, skewed, num_queues, with_keys):
    """Per-position inputs of the priority walk, in one pass over `order`.

    Returns (klass, keys, running_rev, q_rev): `klass[i]` = queue of `order[i]` (its
    preemption class); `keys[i]` = its placement shape ((demand, type, skewed, queue) as
    one int, as the NumPy expression `((dem*65537 + type + 1)*2 + skewed)*num_queues + q`),
    or -1 for all when `with_keys` is False (a placer that is not deterministic);
    `running_rev` = the jobs holding GPUs, lowest priority first, and `q_rev` their queues
    (the victim candidates of a preemption are a prefix-filter of that list).
    """
    n = order.shape[0]
    klass = np.empty(n, np.int64)
    keys = np.full(n, -1, np.int64)
    nrun = 0
    for i in range(n):
        j = order[i]
        klass[i] = q[j]
        if with_keys:
            keys[i] = ((np.int64(demand[j]) * 65_537 + np.int64(type_req[j]) + 1) * 2 + np.int64(skewed[j])) \
                * num_queues + q[j]
        if holding[j]:
            nrun += 1
    running_rev = np.empty(nrun, np.int64)
    q_rev = np.empty(nrun, np.int64)
    k = 0
    for i in range(n - 1, -1, -1):
        j = order[i]
        if holding[j]:
            running_rev[k] = j
            q_rev[k] = q[j]
            k += 1
    return klass, keys, running_rev, q_rev


@njit(cache=True)
def _fit(avail, req, demand, topo):
    """The placer of the fused round: `consolidate_gpus` for a job of any type (or type 0) on a
    one-type cluster, nothing for a job that asks for another type (`Tiresias.decide`'s
    placer with `placement.consolidate_fast`), `topo` the cluster's arrays as `fused_round` gets
    them. Empty when it fails."""
    if req > 0:
        return np.empty(0, np.int32)
    gpu_node, gpu_type, first, num, node_leaf, leaf_pod, num_leaves, num_pods = topo
    return K.consolidate_gpus(avail, gpu_node, gpu_type, -1, first, num, node_leaf, leaf_pod, num_leaves, num_pods,
                              demand)


@njit(cache=True)
def _usable(online, claimed, held):
    a = np.empty(online.shape[0], np.bool_)
    for g in range(online.shape[0]):
        a[g] = online[g] and not claimed[g] and not held[g]
    return a


@njit(cache=True)
def _preempting(j, d, req, qj, order, bounds, nq, owner, online, claimed, held, gpu_type, undecided, alloc_count,
                rank, topo):
    """`Round._place_preempting` with the fused round's placer: victims are the jobs that ran
    at the round's start in strictly lower queues, lowest priority first (the running
    classes of `order` from the back). Returns (GPUs or empty, victims to release)."""
    nv = 0
    for c in range(2 * nq - 2, 2 * qj + 1, -2):
        nv += bounds[c + 1] - bounds[c]
    victims = np.empty(nv, np.int64)
    nv = 0
    for c in range(2 * nq - 2, 2 * qj + 1, -2):
        for x in range(bounds[c + 1] - 1, bounds[c] - 1, -1):
            victims[nv] = order[x]
            nv += 1
    none = np.empty(0, np.int64)
    cand, vr, lo, pool = K.preempt_plan(owner, online, claimed, held, gpu_type, req, undecided, alloc_count, victims,
                                        j, d, rank)
    if lo == 0:
        return np.empty(0, np.int32), none
    n_all = cand.shape[0]
    gpus = _fit(pool, req, d, topo)
    if gpus.shape[0] == 0 and lo < n_all:
        base = _usable(online, claimed, held)
        if _fit(base | (vr < n_all), req, d, topo).shape[0] == 0:
            return gpus, none
        lo, hi = lo + 1, n_all
        while lo < hi:  # shortest prefix with a feasible placement
            mid = (lo + hi) // 2
            if _fit(base | (vr < mid), req, d, topo).shape[0] > 0:
                hi = mid
            else:
                lo = mid + 1
        gpus = _fit(base | (vr < lo), req, d, topo)
        if gpus.shape[0] == 0:  # feasibility was not monotone here: use every candidate
            lo = n_all
            gpus = _fit(base | (vr < lo), req, d, topo)
    if gpus.shape[0] == 0:
        return gpus, none
    return gpus, K.hit_victims(vr, gpus.astype(np.int64), lo, cand)


@njit(cache=True)
def fused_round(active, running, now, submit, executed, attained, first_start, fstate, istate, params, any_skewed,
                alloc_count, owner, online, gpu_node, gpu_type, node_first_gpu, node_num_gpus, node_leaf, leaf_pod,
                num_leaves, num_pods, out):
    """One whole Tiresias call in the common case, in one dispatch (issue 4): `prepare`, the
    priority walk of `policies.base.Round` with its consolidate placements and preemptions,
    the starts' waiting-time bookkeeping and `next_jump`.

    It takes exactly the steps `Tiresias.decide` takes through `Round` when every GPU is
    online, the engine passes `current` (so running jobs are kept through its objects), the
    placement is `consolidate` on a one-type cluster and no active job is skewed: the same
    kernels (`consolidate_gpus`, `preempt_plan`, `hit_victims`, `next_jump`) on the same
    masks in the same order. What differs changes no value: a kept job's GPUs stay `held`
    instead of moving to `claimed` (both mean "not usable" to every reader, and nobody else
    may take them); the walk's count bound (free GPUs plus those of every job the job may
    preempt) is kept exact, updated at each claim and release, instead of recounted per
    yield, and like the failed-shape memo it only skips placements that would fail; the
    walk inputs (`walk_inputs`) are read off the class blocks of the order (`_prepare`'s
    bounds) instead of built as arrays.

    The policy's per-job arrays are columns of two, so that one job's entries lie side by
    side (a call reads them for every active job: a cache line or two per job instead of a
    dozen): `fstate` (float64, J × 4): svc_base, exec_base, pend_base, waited; `istate`
    (int64, J × 8): promotions, q, then the static demand, type requirement, skewed and
    shape key ((demand × 65537 + type + 1) × 2 + skewed: `walk_inputs`' key without the
    queue), then two scratch columns returned as found: undecided (0) and rank (-1).
    `params` = [eps, promote knob, thresholds...]. The topology arrays are the cluster's
    own (`consolidate_gpus` runs with the types `placement.consolidate_fast` gives it).
    `out` (int64, ≥ 5 G + 2 entries) receives, from 0, one record per placed job in
    placement order (job, GPU count, GPU ids...); from 3 G the preempted jobs that were not
    placed again, in preemption order; from 4 G the kept running jobs in walk order.
    Returns (status, record length, preempted, kept, wake time): status -1 (nothing done,
    nothing changed) where the conditions above do not hold.
    """
    n_g = owner.shape[0]
    if running.shape[0] > n_g or out.shape[0] < 5 * n_g + 2 or gpu_node.shape[0] != n_g:
        return -1, 0, 0, 0, np.inf
    for g in range(n_g):
        if not online[g]:
            return -1, 0, 0, 0, np.inf
    demand, type_req, skewed, bkey = istate[:, 2], istate[:, 3], istate[:, 4], istate[:, 5]
    if any_skewed:  # (whether any job of the run is skewed: none in most traces)
        for i in range(active.shape[0]):
            if skewed[active[i]]:
                return -1, 0, 0, 0, np.inf
    svc_base, exec_base, pend_base, waited = fstate[:, 0], fstate[:, 1], fstate[:, 2], fstate[:, 3]
    promotions, q, undecided, rank = istate[:, 0], istate[:, 1], istate[:, 6], istate[:, 7]
    eps, knob, thr = params[0], params[1], params[2:]
    topo = (gpu_node, gpu_type, node_first_gpu, node_num_gpus, node_leaf, leaf_pod, num_leaves, num_pods)
    # the round's masks (`Round.__init__`)
    claimed = np.zeros(n_g, np.bool_)
    held = np.empty(n_g, np.bool_)
    free = 0  # usable GPUs (online, unclaimed, not held), kept up to date below
    for g in range(n_g):
        held[g] = owner[g] >= 0
        if not held[g]:
            free += 1
    for i in range(running.shape[0]):
        undecided[running[i]] = 1
    order, bounds = _prepare(active, undecided, now, submit, executed, attained, first_start, svc_base, exec_base,
                             pend_base, promotions, thr, eps, knob, q, waited)
    nq = thr.shape[0] + 1
    vq = np.zeros(nq + 1, np.int64)  # per queue, GPUs of its undecided running jobs
    for c in range(0, 2 * nq, 2):
        for x in range(bounds[c], bounds[c + 1]):
            vq[c // 2] += alloc_count[order[x]]
    o_stop, o_kept = 3 * n_g, 4 * n_g
    failed = np.empty(order.shape[0] + 1, np.int64)  # shapes that failed on the pool as it is now
    nf = 0
    n_out = 0
    n_rel = 0
    n_kept = 0
    for c in range(2 * nq):
        qc = c // 2
        for x in range(bounds[c], bounds[c + 1]):
            j = order[x]
            if undecided[j]:  # a running job not preempted so far keeps its GPUs
                undecided[j] = 0
                vq[qc] -= alloc_count[j]
                out[o_kept + n_kept] = j
                n_kept += 1
                continue
            key = bkey[j] * nq + qc
            if K.memo_has(failed, nf, key):
                continue
            d = demand[j]
            bound = free
            for qq in range(qc + 1, nq):
                bound += vq[qq]
            if bound < d:
                continue
            req = type_req[j]
            gpus = _fit(_usable(online, claimed, held), req, d, topo)
            if gpus.shape[0] == 0:
                gpus, hits = _preempting(j, d, req, qc, order, bounds, nq, owner, online, claimed, held, gpu_type,
                                         undecided, alloc_count, rank, topo)
                for h in range(hits.shape[0]):  # `Round.release`
                    k = hits[h]
                    if undecided[k]:
                        undecided[k] = 0
                        vq[q[k]] -= alloc_count[k]
                        out[o_stop + n_rel] = k
                        n_rel += 1
                        for g in range(n_g):
                            if owner[g] == k and not claimed[g]:
                                if held[g] and online[g]:
                                    free += 1
                                held[g] = False
                        nf = 0
            if gpus.shape[0] == 0:
                failed[nf] = key  # (`Round.walk_failed`)
                nf += 1
                continue
            nf = 0  # `Round.claim`
            out[n_out] = j
            out[n_out + 1] = gpus.shape[0]
            n_out += 2
            for y in range(gpus.shape[0]):
                gy = gpus[y]
                if online[gy] and not claimed[gy] and not held[gy]:
                    free -= 1
                claimed[gy] = True
                held[gy] = False
                out[n_out] = gy
                n_out += 1
    if n_kept + n_rel < running.shape[0]:  # `Round.keep_all_undecided` (running jobs the order missed)
        for i in range(running.shape[0]):
            j = running[i]
            if undecided[j]:
                undecided[j] = 0
                out[o_kept + n_kept] = j
                n_kept += 1
    # the jobs that run after the call; starts' waiting time before their first start
    npl = 0
    x = 0
    while x < n_out:
        npl += 1
        x += 2 + out[x + 1]
    placed = np.empty(npl + n_kept, np.int64)
    placed_gpus = np.empty(npl + n_kept, np.int64)
    x = 0
    for i in range(npl):
        j = out[x]
        if np.isnan(pend_base[j]):
            pend_base[j] = waited[j]
        placed[i] = j
        placed_gpus[i] = out[x + 1]
        rank[j] = 0  # marks a placed job (reset below)
        x += 2 + out[x + 1]
    for i in range(n_kept):
        j = out[o_kept + i]
        placed[npl + i] = j
        placed_gpus[npl + i] = alloc_count[j]
    n_stop = 0
    for i in range(n_rel):  # preempted and not placed again: they stop
        k = out[o_stop + i]
        if rank[k] < 0:
            out[o_stop + n_stop] = k
            n_stop += 1
    for i in range(npl):
        rank[placed[i]] = -1
    t = next_jump(placed, placed_gpus, active, q, attained, svc_base, thr, now, knob, executed, exec_base, pend_base,
                  waited, undecided)
    return 0, n_out, n_stop, n_kept, t
