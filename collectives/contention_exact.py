"""Event-exact fluid simulation of one interacting group's compute/communicate phases (numba).

The model (docs/architecture.md, "Contention"): job j repeats iterations. Iteration k starts
at ``T_k``; its compute phase lasts ``C_j``; its gradient communication starts ``s_j`` into
the compute phase (backward overlap) and needs ``M_j`` seconds at solo speed. While a set A
of jobs is communicating, job j in A progresses at ``x_j`` times its solo speed, x being the
weighted max-min fair allocation (progressive filling) of the link capacities:
``sum_j x_j d_jl <= cap_l`` on every link l, ``0 < x_j <= 1``. The next iteration starts when
both the compute phase and the communication are done: ``T_{k+1} = max(T_k + C_j, comm end)``.

Between phase boundaries every rate is constant, so the simulation jumps from one boundary
to the next (communication start, communication end, compute end, first start) and refills
the rates only when the set of communicating jobs changed. Nothing is discretised in time:
the result is exact up to floating-point rounding.

What the steady state depends on: the fluid system is deterministic but not always
attracting. Two identical jobs whose communication windows overlap by ``M - delta`` are
both delayed by exactly that amount and keep their offset ``delta`` for ever (neutral
stability), so the long-run iteration time depends on the initial phase offsets. The
caller therefore passes the offsets (``offset_s``; see ``contention.initial_offsets`` for
the deterministic staggered default, synchronised start and seeded random draws) and the
kernel reports the mean over a measurement window after a warm-up, not a limit.

Measurement: job j's first ``warmup_iters`` iterations are discarded; its mean iteration
time is ``(end of its latest iteration - end of iteration warmup_iters) / (count -
warmup_iters)``. Every time the slowest job has completed another ``window_iters``
iterations, the means are compared with those of the previous check; the run stops when
the largest relative change is below ``rtol`` (``rtol <= 0`` disables that test), when the
slowest job reaches ``max_iters`` iterations, or after ``max_events`` phase boundaries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Job states of the phase machine.
_WAIT_FIRST = 0  # before its first iteration (initial offset)
_COMPUTE = 1  # compute phase, communication not started yet
_COMM = 2  # communicating (compute may or may not be finished)
_WAIT_COMPUTE = 3  # communication finished, compute still running


@njit(cache=True, no_cfunc_wrapper=True)
def build_link_index(n_links, ptr, lidx):
    """Transpose job->link CSR into link->entry CSR (``lptr``, entry numbers ``lent``)."""
    n_jobs = ptr.shape[0] - 1
    counts = np.zeros(n_links + 1, np.int64)
    for e in range(lidx.shape[0]):
        counts[lidx[e] + 1] += 1
    lptr = counts  # running sum in place (numba's np.cumsum is one more compile)
    for i in range(1, lptr.shape[0]):
        lptr[i] += lptr[i - 1]
    fill = lptr[:-1].copy()
    lent = np.empty(lidx.shape[0], np.int64)
    ejob = np.empty(lidx.shape[0], np.int64)
    for j in range(n_jobs):
        for e in range(ptr[j], ptr[j + 1]):
            ejob[e] = j
            lent[fill[lidx[e]]] = e
            fill[lidx[e]] += 1
    return lptr, lent, ejob


@njit(cache=True, no_cfunc_wrapper=True)
def maxmin_rates(active, w, ptr, lidx, d, cap, lptr, lent, ejob, x):
    """Weighted max-min fair rates (progressive filling) for the jobs with ``active[j]``.

    All unfrozen active jobs rise together as ``x_j = w_j * level``. The level stops at the
    first link to saturate (``residual_l / sum of w_j d_jl over its unfrozen jobs``) or at a
    job's solo cap ``x_j = 1``; the jobs on that link (or at their cap) are frozen, their
    usage leaves the links' residual capacity, and filling resumes. Writes ``x`` in place
    (0 for inactive jobs).
    """
    n = w.shape[0]
    n_links = cap.shape[0]
    frozen = np.empty(n, np.bool_)
    n_left = 0
    for j in range(n):
        x[j] = 0.0
        frozen[j] = not active[j]
        if active[j]:
            n_left += 1
    resid = cap.copy()
    load = np.empty(n_links)
    sat = np.zeros(n_links, np.bool_)
    while n_left > 0:
        level = np.inf
        for j in range(n):
            if not frozen[j] and 1.0 / w[j] < level:
                level = 1.0 / w[j]
        for lk in range(n_links):
            tot = 0.0
            for q in range(lptr[lk], lptr[lk + 1]):
                e = lent[q]
                j = ejob[e]
                if not frozen[j]:
                    tot += w[j] * d[e]
            load[lk] = tot
            if tot > 0.0:
                lv = max(resid[lk], 0.0) / tot
                if lv < level:
                    level = lv
        thr = level * (1.0 + 1e-12)
        # saturated links are decided before any usage moves out of the residuals
        for lk in range(n_links):
            sat[lk] = load[lk] > 0.0 and max(resid[lk], 0.0) <= thr * load[lk]
        # freeze jobs at their cap and every unfrozen job on a saturated link
        for j in range(n):
            if frozen[j]:
                continue
            hit = 1.0 / w[j] <= thr
            if not hit:
                for e in range(ptr[j], ptr[j + 1]):
                    if sat[lidx[e]]:
                        hit = True
                        break
            if hit:
                frozen[j] = True
                x[j] = min(w[j] * level, 1.0)
                n_left -= 1
                for e in range(ptr[j], ptr[j + 1]):
                    resid[lidx[e]] -= x[j] * d[e]
    return x


@njit(cache=True, no_cfunc_wrapper=True)
def simulate_group(compute_s, comm_start_s, comm_s, weight, ptr, lidx, demand_Bps, cap_Bps,
                   offset_s, warmup_iters, window_iters, rtol, max_iters, max_events):
    """Run the phase simulation of one group; see the module docstring.

    Arrays are group-local: ``lidx`` are link numbers ``0..len(cap_Bps)-1``; every job must
    have ``comm_s > 0``. Returns ``(mean_iter_s, n_iters, events, converged)`` where
    ``n_iters[j]`` is job j's completed iteration count at the stop (the window is
    ``warmup_iters..n_iters[j]``).
    """
    n = compute_s.shape[0]
    n_links = cap_Bps.shape[0]
    lptr, lent, ejob = build_link_index(n_links, ptr, lidx)
    scale = 0.0
    for j in range(n):
        scale = max(scale, offset_s[j] + compute_s[j] + comm_s[j])
    eps_t = 1e-10 * scale
    state = np.full(n, _WAIT_FIRST, np.int64)
    it_start = np.zeros(n)
    rem = np.zeros(n)  # communication work left, in solo seconds
    x = np.zeros(n)
    active = np.zeros(n, np.bool_)
    count = np.zeros(n, np.int64)
    mark = np.zeros(n)  # end of iteration `warmup_iters`
    last_end = np.zeros(n)
    prev_mean = np.full(n, np.nan)
    mean = np.full(n, np.nan)
    t = 0.0
    dirty = True
    events = 0
    converged = False
    next_check = warmup_iters + window_iters
    while True:
        if dirty:
            maxmin_rates(active, weight, ptr, lidx, demand_Bps, cap_Bps, lptr, lent, ejob, x)
            dirty = False
        # next phase boundary
        dt = np.inf
        jmin = -1
        for j in range(n):
            st = state[j]
            if st == _WAIT_FIRST:
                c = offset_s[j] - t
            elif st == _COMPUTE:
                c = it_start[j] + comm_start_s[j] - t
            elif st == _COMM:
                c = rem[j] / x[j]
            else:
                c = it_start[j] + compute_s[j] - t
            if c < dt:
                dt = c
                jmin = j
        if dt < 0.0:
            dt = 0.0
        elif dt == np.inf:  # cannot happen with positive capacities; never spin
            break
        for j in range(n):
            if state[j] == _COMM:
                rem[j] -= dt * x[j]
        t += dt
        events += 1
        # apply every transition due now (a job may pass several states at one instant)
        for j in range(n):
            force = j == jmin  # the boundary chosen above happens exactly now
            while True:
                st = state[j]
                if st == _WAIT_FIRST and (force or offset_s[j] - t <= eps_t):
                    it_start[j] = t
                    if warmup_iters == 0:
                        mark[j] = t
                    state[j] = _COMPUTE
                elif st == _COMPUTE and (force or it_start[j] + comm_start_s[j] - t <= eps_t):
                    state[j] = _COMM
                    rem[j] = comm_s[j]
                    active[j] = True
                    dirty = True
                elif st == _COMM and (force or rem[j] <= eps_t * x[j]):
                    rem[j] = 0.0
                    state[j] = _WAIT_COMPUTE
                    active[j] = False
                    dirty = True
                elif st == _WAIT_COMPUTE and (force or it_start[j] + compute_s[j] - t <= eps_t):
                    count[j] += 1
                    last_end[j] = t
                    if count[j] == warmup_iters:
                        mark[j] = t
                    it_start[j] = t
                    state[j] = _COMPUTE
                else:
                    break
                force = False
        # convergence bookkeeping when the slowest job has finished another window
        cmin = count[0]  # a loop, not count.min(): one numba reduction less to compile
        for j in range(1, n):  # (n >= 1 here: with no job the first boundary is inf and the loop ended)
            cmin = min(cmin, count[j])
        if cmin >= next_check:
            next_check += window_iters
            worst = 0.0
            for j in range(n):
                mean[j] = (last_end[j] - mark[j]) / (count[j] - warmup_iters)
                if np.isnan(prev_mean[j]):
                    worst = np.inf
                else:
                    worst = max(worst, abs(mean[j] - prev_mean[j]) / prev_mean[j])
                prev_mean[j] = mean[j]
            if rtol > 0.0 and worst < rtol:
                converged = True
                break
            if cmin >= max_iters:
                break
        if events >= max_events:
            break
    for j in range(n):
        if count[j] > warmup_iters:
            mean[j] = (last_end[j] - mark[j]) / (count[j] - warmup_iters)
        elif count[j] > 0:
            mean[j] = last_end[j] / count[j]
        else:
            mean[j] = np.nan
    return mean, count, events, converged
