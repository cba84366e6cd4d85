"""numba kernels of `policies.tiresias`: the per-job arithmetic of one call, over the active set.

They do exactly what the NumPy expressions they replace did (the same float operations in
the same order, the same stable ordering), in one pass each instead of ~40 array calls,
which dominated a call's cost on long traces. The policy logic (which job is demoted,
promoted, or preempted, and why) is documented in `policies.tiresias.Tiresias`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _queue(svc, thr):
    """Number of thresholds `svc` has reached (`searchsorted(thr, svc, side="right")`)."""
    k = 0
    for i in range(thr.shape[0]):
        if thr[i] <= svc:
            k += 1
    return k


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
    n = active.shape[0]
    for i in range(n):
        j = active[i]
        waited[j] = now - submit[j] - executed[j]
        if np.isnan(pend_base[j]) and promotions[j] == 0 and np.isfinite(first_start[j]):
            pend_base[j] = first_start[j] - submit[j]
        if holding[j] and np.isnan(pend_base[j]):
            pend_base[j] = waited[j]
        q[j] = _queue(attained[j] - svc_base[j] + eps, thr)
    if knob > 0:
        for i in range(n):
            j = active[i]
            if q[j] > 0 and not holding[j] and not np.isnan(pend_base[j]):
                execd = executed[j] - exec_base[j]
                if execd > 0 and waited[j] - pend_base[j] >= knob * execd - 1e-6:
                    svc_base[j] = attained[j]
                    exec_base[j] = executed[j]
                    pend_base[j] = np.nan
                    promotions[j] += 1
                    q[j] = _queue(attained[j] - svc_base[j] + eps, thr)
    # stable sort by submit time (ties: index, as `active` is ascending), then a stable
    # counting sort by class = 2 × queue + (0 running, 1 waiting)
    # (traces are usually in submit order already: then the stable sort is the identity)
    in_order = True
    for i in range(1, n):
        if not submit[active[i]] >= submit[active[i - 1]]:  # (a NaN also takes the sort)
            in_order = False
            break
    by_submit = active if in_order else active[np.argsort(submit[active], kind="mergesort")]
    ncls = 2 * (thr.shape[0] + 1)
    count = np.zeros(ncls + 1, np.int64)
    for i in range(n):
        j = by_submit[i]
        count[2 * q[j] + (0 if holding[j] else 1) + 1] += 1
    for c in range(ncls):
        count[c + 1] += count[c]
    order = np.empty(n, np.int64)
    for i in range(n):
        j = by_submit[i]
        c = 2 * q[j] + (0 if holding[j] else 1)
        order[count[c]] = j
        count[c] += 1
    return order


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
    t = np.inf
    nthr = thr.shape[0]
    for i in range(placed.shape[0]):
        scratch[placed[i]] = True
    min_wait_q = nthr + 1  # the highest-priority queue with a waiting job
    for i in range(active.shape[0]):
        j = active[i]
        if not scratch[j] and q[j] < min_wait_q:
            min_wait_q = q[j]
    for i in range(placed.shape[0]):
        j = placed[i]
        if q[j] < nthr and q[j] >= min_wait_q and placed_gpus[i] > 0:
            t = min(t, now + (thr[q[j]] - (attained[j] - svc_base[j])) / placed_gpus[i])
    if knob > 0 and active.shape[0] > placed.shape[0]:
        for i in range(active.shape[0]):
            j = active[i]
            if not scratch[j] and q[j] > 0 and not np.isnan(pend_base[j]):
                execd = executed[j] - exec_base[j]
                if execd > 0:
                    t = min(t, now + (knob * execd - (waited[j] - pend_base[j])))
    for i in range(placed.shape[0]):
        scratch[placed[i]] = False
    return t


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
