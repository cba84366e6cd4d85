"""Numba kernels of the engine's hot path: advancing time, finding the next completion,
merging the active set, and gathering and re-solving the contention a change touches.

The time kernels walk only the jobs holding GPUs (`held[:n]`: RUNNING or RESTARTING, kept
by the engine in an unordered array updated in O(1) per start and stop), so an event costs
what the running set costs, not the queue or the whole trace (queued time is accounted when
a job leaves the queue). State codes are `simcore.api.JobState` values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from collectives.contention_dutycycle import solve_large_groups
from collectives.contention_groups import find, union
from cosim.nsort import sorted_copy

QUEUED = 1
RUNNING = 2
RESTARTING = 3


@njit(cache=True, no_cfunc_wrapper=True)
def step(held, n, now, t_event, tol_s, state, rate, progress, mark, alloc_count, attained_gpu_s, executed_s,
         restart_s, exposed_frac, exposed_comm_s, out, hit):  # pragma: no cover - compiled
    """One step of simulated time, in one call: the next instant `t` (the first instant a job
    among the `n` jobs `held[:n]` reaches its progress mark, or the next queued event at
    `t_event`, whichever is first), every held job advanced to it, and, ascending, the
    RUNNING jobs done at `t` and those that reached a mark below 1.

    `mark[j]` is the next progress at which job j's state changes: 1 (done) for most jobs,
    or an epoch end / progress milestone (`simcore.engine`) — the engine refreshes the job's
    efficiency or calls the policy there. With every mark at 1 this is the plain completion
    step, to the bit.

    Returns `(t, m, h)`: the RUNNING jobs done at `t` are `out[:m]` and those at a mark below 1
    `hit[:h]`, each ascending (`out`, `hit`: the caller's buffers of at least `n` entries,
    reused across steps: no array is allocated or boxed per step); `t = inf` (nothing
    advanced) when nothing runs and nothing is queued, and `t < now` (nothing advanced) only
    on a queue bug the caller reports.
    RUNNING jobs gain `rate * dt` progress (capped at their mark), GPU-seconds and exposed
    communication; RESTARTING jobs hold GPUs without progress (time counted in
    `restart_s`). A RUNNING job reaches its mark when it has no progress left to it or would
    reach it within `tol_s` seconds (rounding of simultaneous events), or within the clock's
    resolution at `t` (one unit of roundoff of `t`: from 142 years on it exceeds the default 1 µs;
    a job left a sliver of time that `now + x` cannot represent would otherwise never advance);
    its progress is snapped to the mark.
    """
    best = np.inf
    for k in range(n):
        j = held[k]
        if state[j] == RUNNING and rate[j] > 0.0:
            x = (mark[j] - progress[j]) / rate[j]
            if x < best:
                best = x
    t = min(t_event, now + best)
    if not np.isfinite(t) or t < now:
        return t, 0, 0
    dt = t - now
    tol = t * 2.220446049250313e-16  # the clock's resolution at t (float64 epsilon times t)
    if tol < tol_s:
        tol = tol_s
    if dt > 0.0:
        for k in range(n):
            j = held[k]
            s = state[j]
            if s == RUNNING:
                p = progress[j] + rate[j] * dt
                m = mark[j]
                progress[j] = p if p < m else m
                attained_gpu_s[j] += alloc_count[j] * dt
                executed_s[j] += dt
                exposed_comm_s[j] += exposed_frac[j] * dt
            elif s == RESTARTING:
                attained_gpu_s[j] += alloc_count[j] * dt
                executed_s[j] += dt
                restart_s[j] += dt
    m = 0
    h = 0
    for k in range(n):
        j = held[k]
        if state[j] == RUNNING:
            mk = mark[j]
            left = mk - progress[j]
            if left <= 0.0 or (rate[j] > 0.0 and left / rate[j] <= tol) or left <= 1e-12:
                progress[j] = mk
                if mk >= 1.0:
                    out[m] = j
                    m += 1
                else:
                    hit[h] = j
                    h += 1
    # cosim.nsort's sort, not numba's quicksort (≈ 1 s more to compile on a first run)
    if m > 1:
        s = sorted_copy(out[:m])
        for i in range(m):
            out[i] = s[i]
    if h > 1:
        s = sorted_copy(hit[:h])
        for i in range(h):
            hit[i] = s[i]
    return t, m, h


@njit(cache=True, no_cfunc_wrapper=True)
def refresh_hits(hit, h, progress, rate, mark, epochs_done, gain, stat_eff, batch_size, global_batch, work_iters,
                 s_base, p_base, spp, kb_flat, kb_start, kb_len, ktab):  # pragma: no cover - compiled
    """Epoch ends of goodput jobs (`simcore.marks`), for the jobs `hit[:h]` at a mark whose
    bounds are `kb_flat[kb_start[j]:][:kb_len[j]]` (others are left alone): close the samples
    segment at the job's progress p, count the epochs done (k = the bounds <= p), take the
    gain of epoch k at the job's batch from `ktab[j, k]` (a row the engine fills when the batch
    is set, `ProgressMarks.set_batch`) when k is new — the rate scaled by new / old gain, the
    iteration time unchanged — set the next mark (the next bound, 1 after the last) and open
    the next segment. The same float operations, in the same order, as the Python they replace."""
    for i in range(h):
        j = hit[i]
        n = kb_len[j]
        if n == 0:
            continue
        p = progress[j]
        s_base[j] += (p - p_base[j]) * spp[j]
        p_base[j] = p
        st = kb_start[j]
        lo = 0
        hi = n
        while lo < hi:  # bounds <= p (`bisect_right`)
            mid = (lo + hi) // 2
            if p < kb_flat[st + mid]:
                hi = mid
            else:
                lo = mid + 1
        k = lo
        if k > epochs_done[j]:
            epochs_done[j] = k
            b = batch_size[j]
            old = gain[j]
            new = ktab[j, k]
            gain[j] = new
            stat_eff[j] = new * global_batch[j] / b
            if old > 0 and rate[j] > 0:
                rate[j] = rate[j] * (new / old)
        m = 1.0
        if k < n:
            m = min(m, kb_flat[st + k])
        mark[j] = m
        g = gain[j]
        spp[j] = work_iters[j] * batch_size[j] / g if g > 0 else 0.0


@njit(cache=True, no_cfunc_wrapper=True)
def step_through(held, n, now, t_event, tol_s, state, rate, progress, mark, alloc_count, attained_gpu_s, executed_s,
                 restart_s, exposed_frac, exposed_comm_s, out, hit, acc, online, busy, through, t_other, quiet_until,
                 interval_s, epochs_done, gain, stat_eff, batch_size, global_batch, work_iters, s_base, p_base, spp,
                 kb_flat, kb_start, kb_len, ktab):  # pragma: no cover - compiled
    """`step`, repeated through the instants at which nothing needs the engine, handling each
    as the engine would:

    - with `through`, instants with only epoch ends of goodput jobs (no completion, no queued
      event): `refresh_hits`;
    - periodic rounds (`t_event` is the queued round, `t_other` the next other queued event)
      before `quiet_until` (the policy's promise, `Decision.quiet_until`) with nothing else at
      their instant: counted, the next at (floor(t / interval_s) + 1) × interval_s, as the
      engine schedules rounds (the caller passes `t_other = t_event` when no round may pass).

    Returns (t, m, h, rounds passed, time of the next round) at the first other instant, as
    `step` does (its epoch ends left to the engine); `acc` += (online, busy) GPUs × each
    step's seconds, one step at a time as the engine adds them (the same sums)."""
    rounds = 0
    t_round = t_event
    while True:
        te = t_round if t_round < t_other else t_other
        t, m, h = step(held, n, now, te, tol_s, state, rate, progress, mark, alloc_count, attained_gpu_s,
                       executed_s, restart_s, exposed_frac, exposed_comm_s, out, hit)
        if not np.isfinite(t) or t < now:
            return t, m, h, rounds, t_round
        dt = t - now
        if dt > 0:
            acc[0] += online * dt
            acc[1] += busy * dt
        if m > 0:
            return t, m, h, rounds, t_round
        if h > 0:
            if not through or t >= te:
                return t, m, h, rounds, t_round
            refresh_hits(hit, h, progress, rate, mark, epochs_done, gain, stat_eff, batch_size, global_batch,
                         work_iters, s_base, p_base, spp, kb_flat, kb_start, kb_len, ktab)
        elif t >= te and t_round < t_other and t_round < quiet_until:
            rounds += 1  # a quiet round (t = t_round): nothing else happens at its instant
            t_round = (np.floor(t / interval_s) + 1.0) * interval_s
        else:
            return t, m, h, rounds, t_round
        now = t


@njit(cache=True, no_cfunc_wrapper=True)
def merge_sorted(a, add, drop):  # pragma: no cover - compiled
    """A new ascending array: ascending `a` and ascending `add` merged, minus every value in
    ascending `drop` — one pass, one allocation (the engine's active set, per policy call)."""
    out = np.empty(a.shape[0] + add.shape[0], np.int64)
    i = k = d = n = 0
    while i < a.shape[0] or k < add.shape[0]:
        if k >= add.shape[0] or (i < a.shape[0] and a[i] < add[k]):
            v = a[i]
            i += 1
        else:
            v = add[k]
            k += 1
        while d < drop.shape[0] and drop[d] < v:
            d += 1
        if d < drop.shape[0] and drop[d] == v:
            continue
        out[n] = v
        n += 1
    return out[:n]


@njit(cache=True, no_cfunc_wrapper=True)
def held_update(prev, started, alloc_count):  # pragma: no cover - compiled
    """A new ascending array of the jobs holding GPUs: ascending `prev` (the set at the last
    update) and `started` (jobs that took GPUs since, in any order, repeats allowed) merged
    (`merge_sorted`), keeping each job that holds GPUs now (`alloc_count > 0`) once — a sort
    of the starts only, instead of a sort of the whole set."""
    out = merge_sorted(prev, sorted_copy(started), prev[:0])
    n = 0
    last = -1
    for i in range(out.shape[0]):
        v = out[i]
        if v != last and alloc_count[v] > 0:  # a job stopped since, or met twice (stopped, started again)
            out[n] = v
            n += 1
            last = v
    return out[:n]


@njit(cache=True, no_cfunc_wrapper=True)
def view_sets(active, add, n_add, drop, n_drop, running, started, n_started, alloc_count, want_active,
              want_running):  # pragma: no cover - compiled
    """The policy view's two index sets in one call: (`active` with the first `n_add` of
    `add` merged in and the first `n_drop` of `drop` taken out, `running` updated with the
    first `n_started` of `started` by `held_update`), each only when wanted (an empty array
    otherwise). `add`/`drop`/`started` need not be sorted."""
    if want_active:
        a = merge_sorted(active, sorted_copy(add[:n_add]), sorted_copy(drop[:n_drop]))
    else:
        a = active[:0]
    r = held_update(running, started[:n_started], alloc_count) if want_running else running[:0]
    return a, r


@njit(cache=True, no_cfunc_wrapper=True)
def linked_inputs(seeds, n_links, slot_job, slot_of, nlink, links, demand, compute, start,
                  comm):  # pragma: no cover - compiled
    """The jobs whose contention a change can touch, with their prepared solver inputs.

    Slot `s` (`slot_job[s] >= 0`) holds a running job with links: its first `nlink[s]` link
    ids `links[s]` and demands `demand[s]`, and its compute / comm-start / comm seconds.
    The jobs returned, ascending, are those of the connected components of the job–link
    graph (jobs joined by a shared link) that contain a link of `seeds`; with them their
    inputs in that order: `(jobs, compute_s, comm_start_s, comm_s, ptr, link_ids, demand)`
    (CSR, each job's links in its own order) — what `PreparedContention.solve` takes.
    One union–find pass over the registered jobs' links: no Python loop over the group.
    """
    ns = slot_job.shape[0]
    first = np.full(n_links, -1, np.int64)  # first slot seen on each link
    parent = np.arange(ns)
    for s in range(ns):
        if slot_job[s] < 0:
            continue
        for k in range(nlink[s]):
            lk = links[s, k]
            f = first[lk]
            if f < 0:
                first[lk] = s
            else:
                union(parent, f, s)
    mark = np.zeros(ns, np.bool_)
    for i in range(seeds.shape[0]):
        f = first[seeds[i]]
        if f >= 0:
            mark[find(parent, f)] = True
    members = np.empty(ns, np.int64)
    n = 0
    for s in range(ns):
        if slot_job[s] >= 0 and mark[find(parent, s)]:
            members[n] = slot_job[s]
            n += 1
    members = sorted_copy(members[:n])
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + nlink[slot_of[members[i]]]
    ids = np.empty(ptr[n], np.int64)
    dem = np.empty(ptr[n])
    c = np.empty(n)
    st = np.empty(n)
    m = np.empty(n)
    for i in range(n):
        s = slot_of[members[i]]
        c[i] = compute[s]
        st[i] = start[s]
        m[i] = comm[s]
        for k in range(nlink[s]):
            ids[ptr[i] + k] = links[s, k]
            dem[ptr[i] + k] = demand[s, k]
    return members, c, st, m, ptr, ids, dem


@njit(cache=True, no_cfunc_wrapper=True)
def linked_resolve(seeds, n_links, slot_job, slot_of, nlink, links, demand, compute, start, comm, gain,
                   work_iters, rate, exposed_frac, cap, min_jobs, gh_z, gh_w, enum_max_others, dp_max_others,
                   per_work, elsewhere, tol, max_rounds, memo_n, memo_key,
                   memo_r):  # pragma: no cover - compiled
    """A re-solve in one call: the touched jobs and their inputs (`linked_inputs`), their
    groups solved by the duty-cycle kernel (`solve_large_groups`, the arguments from `cap`
    on being `PreparedContention.large_group_args()`), and each touched job's `rate` and
    `exposed_frac` written as `RateBook` writes them from `PreparedContention.solve`:
    `gain / (work_iters * iter_s)` and `(iter_s - compute_s) / iter_s`.

    Returns False, writing nothing, when the kernel leaves a group to Python (one of at
    most `min_jobs` jobs, an unconverged one, a link busier than the memo): the caller then
    solves the same jobs through `PreparedContention.solve`."""
    members, c, st, m, ptr, ids, dem = linked_inputs(seeds, n_links, slot_job, slot_of, nlink, links, demand,
                                                     compute, start, comm)
    n = members.shape[0]
    if n == 0:
        return True
    it, _, _, todo = solve_large_groups(c, st, m, np.ones(n), ptr, ids, dem, cap, min_jobs, gh_z, gh_w,
                                        enum_max_others, dp_max_others, per_work, elsewhere, tol, max_rounds,
                                        memo_n, memo_key, memo_r)
    if todo.shape[0] > 0:
        return False
    for i in range(n):
        j = members[i]
        rate[j] = gain[j] / (work_iters[j] * it[i])
        exposed_frac[j] = (it[i] - c[i]) / it[i]
    return True
