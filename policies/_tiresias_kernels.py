"""numba kernels of Tiresias (`policies.tiresias`): the per-job arithmetic of one call, over
the active set, and the round kernel that runs it with the round toolkit's begin and walk.

Each does exactly what the equivalent NumPy expressions do (the same float operations in the
same order, the same stable ordering), in one pass instead of ~40 array calls.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cosim.nsort import argsort_stable
from policies import _round_state_kernels as RS
from policies import _walk_kernels as WK


@njit(cache=True, no_cfunc_wrapper=True)
def _queue(svc, thr):
    """Number of thresholds `svc` has reached (`searchsorted(thr, svc, side="right")`)."""
    k = 0
    for i in range(thr.shape[0]):
        if thr[i] <= svc:
            k += 1
    return k


@njit(cache=True, no_cfunc_wrapper=True)
def _prepare(active, holding, now, submit, executed, attained, first_start, svc_base, exec_base, pend_base,
             promotions, thr, eps, knob, q, waited, rows, with_keys, order, klass, keys, kernel, run_rev, run_cls):
    """`prepare`, writing the order into `order[:n]`; with state `rows` (at least one row:
    `_walk_input`'s columns) also the walk inputs of each position into `klass`, `keys`,
    `kernel`, and the running jobs (`holding`) in reverse priority order with their queues
    into `run_rev`, `run_cls` (the walk's victim candidates), returning their number (-1
    without rows)."""
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
    # sort is the identity); class c = 2 × queue + (0 running, 1 waiting)
    by_submit = active if in_order else active[argsort_stable(submit[active])]
    for c in range(ncls):
        count[c + 1] += count[c]
    bounds = count.copy()
    inputs = rows.shape[0] > 0
    nq = thr.shape[0] + 1
    for i in range(n):
        j = by_submit[i]
        c = 2 * q[j] + (0 if holding[j] else 1)
        x = count[c]
        order[x] = j
        if inputs:  # the walk inputs at the position, while the job's row is in cache
            _walk_input(rows, j, nq, with_keys, x, klass, keys, kernel)
        count[c] += 1
    if not inputs:
        return -1
    # the victim candidates: the running classes' blocks of the order, from the lowest priority
    # (what the walk kernel's first pass over the whole order would list)
    nrun = 0
    for qq in range(nq - 1, -1, -1):
        for x in range(bounds[2 * qq + 1] - 1, bounds[2 * qq] - 1, -1):
            run_rev[nrun] = order[x]
            run_cls[nrun] = qq
            nrun += 1
    return nrun


@njit(cache=True, no_cfunc_wrapper=True)
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
    order = np.empty(active.shape[0], np.int64)
    none = np.empty(0, np.int64)
    _prepare(active, holding, now, submit, executed, attained, first_start, svc_base, exec_base, pend_base,
             promotions, thr, eps, knob, q, waited, np.zeros((0, 4), np.int64), False, order, none,
             none, np.empty(0, np.bool_), none, none)
    return order


@njit(cache=True, no_cfunc_wrapper=True)
def next_jump(new, new_gpus, kept, alloc_count, active, q, attained, svc_base, thr, now, knob, executed, exec_base,
              pend_base, waited, scratch):
    """Earliest time a job that runs after this call crosses its next threshold while a job
    waits in its queue or a higher one, or a waiting job becomes due for promotion (inf if
    none). The jobs that run after the call: `new` (given GPUs one by one this call, on
    `new_gpus` GPUs each) and `kept` (kept as they were, on `alloc_count`). First, for the
    new ones, the waiting time before their first start after the last promotion where it
    is not known yet (`pend_base`). `scratch`: a J-sized all-False mask, returned all False.

    A demotion with no job waiting at the demoted job's queue or above changes no decision
    (no waiting job gains it as a victim; the next event's call sees the new queue anyway),
    so it needs no wake-up of its own (one event instant fewer: see
    `simcore.api.Policy`, `ignores_restart_ends`, on what that can change numerically).
    """
    nthr = thr.shape[0]
    for i in range(new.shape[0]):
        j = new[i]
        if np.isnan(pend_base[j]):
            pend_base[j] = waited[j]
        scratch[j] = True
    for i in range(kept.shape[0]):
        scratch[kept[i]] = True
    # one pass over the waiting jobs: the highest-priority queue with one, and the earliest
    # promotion (both minima of finite values, so the grouping changes no bit)
    min_wait_q = nthr + 1
    t_promote = np.inf
    promote = knob > 0 and active.shape[0] > new.shape[0] + kept.shape[0]
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
    for i in range(new.shape[0] + kept.shape[0]):
        if i < new.shape[0]:
            j = new[i]
            g = new_gpus[i]
        else:
            j = kept[i - new.shape[0]]
            g = alloc_count[j]
        scratch[j] = False
        if q[j] < nthr and q[j] >= min_wait_q and g > 0:
            t = min(t, now + (thr[q[j]] - (attained[j] - svc_base[j])) / g)
    return min(t, t_promote)


@njit(cache=True, no_cfunc_wrapper=True)
def walk_inputs(order, q, demand, type_req, skewed, num_queues, with_keys, consolidate):
    """Per-position inputs of the priority walk, in one pass over `order`.

    Returns (klass, keys, kernel): `klass[i]` = queue of `order[i]` (its preemption class);
    `keys[i]` = its placement shape (`shape_key`(demand, type), skewed and queue as one int),
    or -1 for all when `with_keys` is False (a placer that is not deterministic);
    `kernel[i]`: its placer is the walk kernel's (`consolidate` for a job not skewed).
    (`Tiresias.decide` keeps the per-job columns in its state rows and calls `_round_kernel`.)
    """
    n = order.shape[0]
    J = q.shape[0]
    rows = np.zeros((J, 4), np.int64)
    for j in range(J):
        rows[j, 1] = q[j]
        rows[j, 2] = RS.shape_key(np.int64(demand[j]), np.int64(type_req[j])) * 2 + np.int64(skewed[j])
        rows[j, 3] = consolidate and not skewed[j]
    klass = np.empty(n, np.int64)
    keys = np.empty(n, np.int64)
    kernel = np.empty(n, np.bool_)
    _walk_inputs_into(order, rows, num_queues, with_keys, klass, keys, kernel)
    return klass, keys, kernel


@njit(cache=True, no_cfunc_wrapper=True)
def _walk_inputs_into(order, rows, num_queues, with_keys, klass, keys, kernel):
    """The walk inputs of every position of `order` (`_walk_input`)."""
    for i in range(order.shape[0]):
        _walk_input(rows, order[i], num_queues, with_keys, i, klass, keys, kernel)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _walk_input(rows, j, num_queues, with_keys, x, klass, keys, kernel):
    """The walk inputs of job j at position x, from its state row (column 1 queue, 2 shape
    × 2 + skewed, 3 kernel placer): its preemption class (the queue), its placement shape
    key with the queue (-1 when the placer is not deterministic) and whether the walk kernel
    places it."""
    qj = rows[j, 1]
    klass[x] = qj
    kernel[x] = rows[j, 3] != 0
    keys[x] = rows[j, 2] * num_queues + qj if with_keys else -1


@njit(cache=True, no_cfunc_wrapper=True)
def _round_kernel(owner, online, running, active, undecided, now, submit, executed, attained, first_start, fstate,
                  istate, thr, eps, knob, with_keys, order, klass, keys, kernel, demand, type_req, alloc_count, memo,
                  topo, ibuf, masks, node_free, nfree):
    """The round toolkit's begin (`_round_state_kernels.round_begin`: the masks; `undecided` marks
    the running jobs, which `prepare` reads as holding), `prepare` with the walk inputs
    written into the first len(active) entries of `order`, `klass`, `keys`, `kernel` and
    the victim candidates into `run_rev`, `run_cls`, then the walk's first run
    (`_walk_kernels.walk_run`, the one walk, on the workspace's `masks`, `ibuf` and per-node
    counts `nfree`, which start from the cluster's `node_free`). Where
    that run finished the walk (nothing for Python), also the wake-up time (`next_jump` on
    its outcome). Returns (`round_begin`'s count, the position the walk stopped at, the
    wake-up time or inf) for `Round(begun=)` and `Round.walk(ran=)`.

    One kernel call over three parts (`_round_begin`, `walk_run`, `_round_wake`): linking the
    walk into this kernel costs ≈ 1 s more compile CPU on a first run than three
    Python-level calls, but those cost ≈ 0.5 s more policy time on the full Philly trace.
    `start` is an int64, not the
    literal 0, which would compile a second `walk_run`.

    The policy's per-job arrays are columns of two (one job's entries side by side):
    `fstate` (float64): svc_base, exec_base, pend_base, waited; `istate` (int64):
    promotions, q, shape key × 2 + skewed, kernel placer, `next_jump`'s scratch (all 0)."""
    n_off, slow = _round_begin(owner, online, running, active, undecided, now, submit, executed, attained, first_start,
                               fstate, istate, thr, eps, knob, with_keys, order, klass, keys, kernel, ibuf, masks,
                               node_free, topo[0], nfree, alloc_count)
    n = active.shape[0]
    start = n - n  # an int64, not the literal 0 (a literal compiles a second walk_run)
    blocking = n < 0  # False (no head-of-line blocking), not a literal, for the same reason
    i = WK.walk_run(order[:n], start, undecided, slow, klass[:n], thr.shape[0] + 1, demand, type_req, alloc_count, keys[:n],
                    memo, online, owner, masks, nfree, kernel[:n], blocking, topo, ibuf)
    if i < n:
        return n_off, i, math.inf
    return n_off, i, _round_wake(undecided.shape[0], owner.shape[0], active, now, executed, attained, fstate, istate,
                                 thr, knob, alloc_count, ibuf)


@njit(cache=True, no_cfunc_wrapper=True)
def _round_begin(owner, online, running, active, undecided, now, submit, executed, attained, first_start, fstate,
                 istate, thr, eps, knob, with_keys, order, klass, keys, kernel, ibuf, masks, node_free, gpu_node, nfree,
                 alloc_count):
    """`_round_kernel`'s first part: `round_begin`, the jobs to check one by one (`slow_jobs`),
    the memo emptied, `_prepare` with the walk inputs and victim candidates. Returns
    (`round_begin`'s count, the `slow` mask)."""
    counts, memo_n, kept, rec, rel, run_rev, run_cls, rank = WK.walk_buffers(ibuf, undecided.shape[0], owner.shape[0])
    n_off = RS.round_begin(owner, online, running, alloc_count, undecided, masks[0], masks[1], node_free, gpu_node,
                           nfree, WK.touched_part(ibuf, owner.shape[0]))
    slow = RS.slow_jobs(owner, online, undecided.shape[0], n_off)
    memo_n[0] = 0
    svc_base, exec_base, pend_base, waited = fstate[:, 0], fstate[:, 1], fstate[:, 2], fstate[:, 3]
    promotions, q = istate[:, 0], istate[:, 1]
    counts[3] = _prepare(active, undecided, now, submit, executed, attained, first_start, svc_base, exec_base,
                         pend_base, promotions, thr, eps, knob, q, waited, istate, with_keys, order, klass, keys,
                         kernel, run_rev, run_cls)
    return n_off, slow


@njit(cache=True, no_cfunc_wrapper=True)
def _round_wake(n_jobs, n_gpus, active, now, executed, attained, fstate, istate, thr, knob, alloc_count, ibuf):
    """`_round_kernel`'s last part, after a walk that needed no Python: the wake-up time
    (`next_jump`) of the jobs that run after the call — the walk's placements (records: job,
    GPU count, ids) and the jobs it kept."""
    counts, memo_n, kept, rec, rel, run_rev, run_cls, rank = WK.walk_buffers(ibuf, n_jobs, n_gpus)
    svc_base, exec_base, pend_base, waited = fstate[:, 0], fstate[:, 1], fstate[:, 2], fstate[:, 3]
    q, scratch = istate[:, 1], istate[:, 4]
    nrec = counts[1]
    m = 0
    x = 0
    while x < nrec:
        m += 1
        x += 2 + rec[x + 1]
    new = np.empty(m, np.int64)
    new_n = np.empty(m, np.int64)
    x = 0
    for y in range(m):
        new[y] = rec[x]
        new_n[y] = rec[x + 1]
        x += 2 + rec[x + 1]
    return next_jump(new, new_n, kept[:counts[0]], alloc_count, active, q, attained, svc_base, thr, now, knob, executed,
                     exec_base, pend_base, waited, scratch)
