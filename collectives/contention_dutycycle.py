"""Cheap contention solver for large groups: a fixed point on communication duty cycles (numba).

Hundreds of jobs behind one spine make the event-exact phase simulation
(``contention_exact``) too slow: every job's phase boundary is an event and every event
refills the rates of the whole group. This solver replaces phase tracking by a mean-field
argument. Job j communicates for ``tau_j`` seconds of every ``T_j``; its duty cycle is
``q_j = tau_j / T_j``. Assume the other jobs' phases are independent of j's (random
relative offsets, no phase locking). While j communicates, job k is on a shared link with
probability ``q_k``, so the load the others put on link l is the random sum
``X_l = sum_k B_k w_k d_kl`` with ``B_k ~ Bernoulli(q_k)``. If every active job on l is
bottlenecked there, max-min gives ``x_j = min(1, w_j cap_l / (w_j d_jl + X_l))``; j's mean
progress rate while communicating is ``xbar_j = min_l E[x_jl]`` (its tightest link), so

    tau_j = M_j / xbar_j,   T_j = max(C_j, s_j + tau_j),   q_j = tau_j / T_j.

Without the correction below, the map q -> q is monotone (more of the others on the links
lowers xbar_j, lengthens tau_j and raises q_j), so plain iteration from the solo duty cycles
climbs to the least fixed point; with it, plain iteration still settles (geometrically,
checked on every test and benchmark group) and a group that does not is logged.
``per_work`` (option ``dutycycle_average="work"``) averages time per unit of work,
``M_j E[1/x]``, instead of ``M_j / E[x]``: processor-sharing-like, biased high.

Each link's expectation, for every user j at once, is computed by the cheapest adequate
law of the others' load: exact enumeration of their on/off states when at most
``enum_max_others`` others share the link; the Poisson-binomial law of the *number* of
others on, times their q-weighted mean demand (exact for equal demands), up to
``dp_max_others``; a moment-matched normal law integrated by Gauss-Hermite quadrature
beyond. Only links whose users moved since their last evaluation are re-evaluated.

Correction for jobs held back elsewhere (``elsewhere``): a job whose expected rate is set
by another of its links uses only ``y/r`` of its share on this one (y its rate elsewhere,
r its rate here), so the others see its demand shrunk by that factor. Without it the
solver over-estimates slowdown badly on multi-link groups (max error 47% instead of 16%).

What it estimates: the iteration time averaged over random initial phase offsets (the
phase simulation's ``offsets="random"`` with many draws). Error against that, measured in
tests/collectives/test_contention_dutycycle.py: small random groups (2-8 jobs) mean
|error| 1.0%, 95th percentile 3.7%, max 10%; heavily contended mini fat-tree groups (10-30
jobs, mean slowdown 1.4-1.9x) mean |error| 3.6%, 95th percentile 9.6%, max 16%. It leans
optimistic (bias -0.4% and -2.6%): an overlap slows both jobs and so lasts longer than
independent phases predict; phase locking between near-identical jobs is invisible to it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from collectives.contention_exact import build_link_index
from collectives.contention_groups import split_groups

_GH_POINTS = 16


def gauss_hermite_standard(n_points: int = _GH_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) for E[f(Z)], Z standard normal."""
    z, wt = np.polynomial.hermite_e.hermegauss(n_points)
    return z.astype(np.float64), (wt / wt.sum()).astype(np.float64)


@njit(cache=True, no_cfunc_wrapper=True)
def _share(wj_cap, a_j, load, per_work):
    """Max-min rate of job j on one link when the others active there put ``load`` on it
    (its reciprocal, time per unit of solo work, when ``per_work``)."""
    x = min(1.0, wj_cap / (a_j + load))
    return 1.0 / x if per_work else x


@njit(cache=True, no_cfunc_wrapper=True)
def _expected_rates_enum(lo, hi, lent, ejob, q, a, ao, w, cap, per_work, out):
    """Per entry of one link: E[share] by enumerating the other users' on/off states (exact)."""
    m = hi - lo
    for i in range(m):
        out[lent[lo + i]] = 0.0
    for mask in range(1 << m):
        for i in range(m):
            if not (mask >> i) & 1:
                continue
            prob = 1.0
            load = 0.0
            for k in range(m):
                if k == i:
                    continue
                ek = lent[lo + k]
                qk = q[ejob[ek]]
                if (mask >> k) & 1:
                    prob *= qk
                    load += ao[ek]
                else:
                    prob *= 1.0 - qk
            e = lent[lo + i]
            out[e] += prob * _share(w[ejob[e]] * cap, a[e], load, per_work)
    # each leave-one-out state was visited once per mask containing i: exactly once


@njit(cache=True, no_cfunc_wrapper=True)
def _expected_rates_count_dp(lo, hi, lent, ejob, q, a, ao, w, cap, per_work, out, pk, loo, rep, reuse=True):
    """Per entry of one link: E[share] with the others' load approximated as K * abar.

    K, the number of other jobs active, has a Poisson-binomial law: the full law over all m
    users is built once (O(m^2)) and each user's leave-one-out law is peeled off it
    (forward when its q <= 1/2, backward otherwise, which keeps the recursion stable).
    abar is the q-weighted mean demand of the others; exact when their demands are equal.

    A user's answer is a function of its (q, a, ao, w) alone, given the link's law: users
    equal in all four (same model, batch and placement shape: a third of the users of a
    busy uplink are distinct) copy the first one's answer instead of repeating the O(m)
    peel, bit for bit. ``rep`` is scratch of at least m entries; ``reuse=False`` computes
    every user (the reference the reuse is tested against).
    """
    m = hi - lo
    pk[: m + 1] = 0.0
    pk[0] = 1.0
    sq = 0.0
    sqa = 0.0
    for i in range(m):
        e = lent[lo + i]
        qi = q[ejob[e]]
        sq += qi
        sqa += qi * ao[e]
        for k in range(i + 1, 0, -1):
            pk[k] = pk[k] * (1.0 - qi) + pk[k - 1] * qi
        pk[0] *= 1.0 - qi
    n_rep = 0
    for i in range(m):
        e = lent[lo + i]
        j = ejob[e]
        qi = q[j]
        same = -1
        for r_i in range(n_rep if reuse else 0):
            f = rep[r_i]
            if q[ejob[f]] == qi and a[f] == a[e] and ao[f] == ao[e] and w[ejob[f]] == w[j]:
                same = f
                break
        if same >= 0:
            out[e] = out[same]
            continue
        rep[n_rep] = e
        n_rep += 1
        if qi <= 0.5:
            prev = 0.0
            for k in range(m):
                v = (pk[k] - qi * prev) / (1.0 - qi)
                prev = max(v, 0.0)
                loo[k] = prev
        else:
            nxt = 0.0
            for k in range(m, 0, -1):
                v = (pk[k] - (1.0 - qi) * nxt) / qi
                nxt = max(v, 0.0)
                loo[k - 1] = nxt
        den = sq - qi
        if den > 1e-12:
            abar = (sqa - qi * ao[e]) / den
        else:
            tot = 0.0
            for p in range(lo, hi):
                tot += ao[lent[p]]
            abar = (tot - ao[e]) / max(m - 1, 1)
        r = 0.0
        norm = 0.0
        for k in range(m):
            r += loo[k] * _share(w[j] * cap, a[e], k * abar, per_work)
            norm += loo[k]
        out[e] = r / norm


@njit(cache=True, no_cfunc_wrapper=True)
def _expected_rates_normal(lo, hi, lent, ejob, q, a, ao, w, cap, per_work, out, gh_z, gh_w):
    """Per entry of one link: E[share] with the others' load normal (moment-matched, clipped)."""
    mu = 0.0
    var = 0.0
    top = 0.0
    for p in range(lo, hi):
        e = lent[p]
        qk = q[ejob[e]]
        mu += qk * ao[e]
        var += qk * (1.0 - qk) * ao[e] * ao[e]
        top += ao[e]
    for p in range(lo, hi):
        e = lent[p]
        j = ejob[e]
        m = mu - q[j] * ao[e]
        sd = np.sqrt(max(var - q[j] * (1.0 - q[j]) * ao[e] * ao[e], 0.0))
        r = 0.0
        for g in range(gh_z.shape[0]):
            load = min(max(m + sd * gh_z[g], 0.0), top - ao[e])
            r += gh_w[g] * _share(w[j] * cap, a[e], load, per_work)
        out[e] = r


@njit(cache=True, no_cfunc_wrapper=True)
def _memo_copy(lo, hi, lent, ejob, q, a, ao, w, L, slot, memo_n, memo_key, memo_r, out):
    """Copy link L's last evaluation in this round slot if its users' (q, a, ao, w) are
    equal, in order, to this one's (an evaluation is a function of those alone: the
    link's capacity and the solver's options are fixed for a memo). True on a copy."""
    m = hi - lo
    if memo_n[L, slot] != m:
        return False
    for p in range(m):
        e = lent[lo + p]
        j = ejob[e]
        if (memo_key[L, slot, p, 0] != q[j] or memo_key[L, slot, p, 1] != a[e]
                or memo_key[L, slot, p, 2] != ao[e] or memo_key[L, slot, p, 3] != w[j]):
            return False
    for p in range(m):
        out[lent[lo + p]] = memo_r[L, slot, p]
    return True


@njit(cache=True, no_cfunc_wrapper=True)
def _memo_store(lo, hi, lent, ejob, q, a, ao, w, L, slot, memo_n, memo_key, memo_r, out):
    """Remember link L's evaluation (its users' inputs and answers) in this round slot."""
    memo_n[L, slot] = hi - lo
    for p in range(hi - lo):
        e = lent[lo + p]
        j = ejob[e]
        memo_key[L, slot, p, 0] = q[j]
        memo_key[L, slot, p, 1] = a[e]
        memo_key[L, slot, p, 2] = ao[e]
        memo_key[L, slot, p, 3] = w[j]
        memo_r[L, slot, p] = out[e]


class LinkMemo:
    """Per global link, the last duty-cycle evaluation in each round slot (rounds 1, 2, 3,
    and later rounds sharing the last slot), for a solver whose link capacities and options
    are fixed (the engine's ``PreparedContention``).

    An engine re-solves a group after one job of it starts or stops; every link that job
    does not cross has the same users with the same first-round inputs (solo duty cycles,
    demands) as in the previous solve, so its first-round evaluation — the O(m^2) counting
    law on a busy uplink — is copied, bit for bit, instead of recomputed. Links with more
    users than the memo's width are computed and ask it to widen (up to ``limit``).
    """

    SLOTS = 4

    def __init__(self, num_links: int, width: int = 16, limit: int = 128) -> None:
        self.limit = limit
        self.large_groups = False  # a group above exact_max_jobs came up (contention._solve_groups)
        self._allocate(num_links, width)

    def _allocate(self, num_links: int, width: int) -> None:
        self.n = np.full((num_links, self.SLOTS), -1, np.int64)
        self.key = np.zeros((num_links, self.SLOTS, width, 4))
        self.r = np.zeros((num_links, self.SLOTS, width))

    def widen(self, need_users: int) -> None:
        """Make room for links of `need_users` users (forgets what it held)."""
        width = self.r.shape[2]
        if width < need_users and width < self.limit:
            self._allocate(self.n.shape[0], min(max(need_users, 2 * width), self.limit))

    def arrays(self):
        return self.n, self.key, self.r


NO_MEMO = (np.zeros((0, 1), np.int64), np.zeros((0, 1, 1, 4)), np.zeros((0, 1, 1)))


@njit(cache=True, no_cfunc_wrapper=True)
def dutycycle_group(compute_s, comm_start_s, comm_s, weight, ptr, lidx, demand_Bps, cap_Bps,
                    gh_z, gh_w, enum_max_others, dp_max_others, per_work, elsewhere, tol, max_rounds,
                    glink, memo_n, memo_key, memo_r):
    """Solve one group by the duty-cycle fixed point; see the module docstring.

    Iterates ``q <- F(q)`` from the solo duty cycles until ``max |F(q) - q| < tol``. Only
    links with a user whose duty cycle or seen demand moved by more than ``tol``
    since their last evaluation are re-evaluated (late rounds touch a few jobs only).

    ``glink`` (the group's links' global ids) and ``memo_*`` (a ``LinkMemo``'s arrays, or
    empty ones: no memo) let a link evaluation be copied from the last one of the same
    link in the same round slot when its users' (q, a, ao, w) are equal, in order.
    Returns ``(iter_s, rounds, converged, link_evals, need_users)``: ``link_evals`` counts
    evaluations computed (not copied); ``need_users`` > 0 asks the memo to widen.
    """
    n = compute_s.shape[0]
    n_links = cap_Bps.shape[0]
    lptr, lent, ejob = build_link_index(n_links, ptr, lidx)
    n_e = lidx.shape[0]
    a = np.empty(n_e)  # weighted demand w_j d_jl of each entry
    for e in range(n_e):
        a[e] = weight[ejob[e]] * demand_Bps[e]
    ao = a.copy()  # demand as the others see it (shrunk when the job is held back elsewhere)
    r_e = np.ones(n_e)  # expected rate (or time per work) of each entry on its link
    min1 = np.empty(n)
    min2 = np.empty(n)
    tau = comm_s.copy()
    q = np.empty(n)
    q_seen = np.full(n, -1.0)  # q at the last evaluation of the job's links
    it = np.empty(n)
    for j in range(n):
        it[j] = max(compute_s[j], comm_start_s[j] + tau[j])
        q[j] = tau[j] / it[j]
    dirty = np.ones(n_links, np.bool_)
    xbar = np.empty(n)
    max_users = 1
    for lk in range(n_links):
        max_users = max(max_users, lptr[lk + 1] - lptr[lk])
    pk_buf = np.empty(max_users + 1)
    loo_buf = np.empty(max_users + 1)
    rep_buf = np.empty(max_users + 1, np.int64)
    quiet = tol
    use_memo = memo_n.shape[0] > 0
    n_slots = memo_n.shape[1]
    memo_k = memo_r.shape[2]
    need_users = 0
    link_evals = 0
    converged = False
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        for lk in range(n_links):
            if not dirty[lk]:
                continue
            lo = lptr[lk]
            hi = lptr[lk + 1]
            dirty[lk] = False
            slot = min(rounds, n_slots) - 1
            memo = use_memo and hi - lo <= memo_k
            if use_memo and not memo:
                need_users = max(need_users, hi - lo)
            if memo and _memo_copy(lo, hi, lent, ejob, q, a, ao, weight, glink[lk], slot, memo_n, memo_key,
                                   memo_r, r_e):
                continue
            m_oth = hi - lo - 1
            if m_oth <= enum_max_others:
                _expected_rates_enum(lo, hi, lent, ejob, q, a, ao, weight, cap_Bps[lk], per_work, r_e)
            elif m_oth <= dp_max_others:
                _expected_rates_count_dp(lo, hi, lent, ejob, q, a, ao, weight, cap_Bps[lk], per_work, r_e,
                                         pk_buf, loo_buf, rep_buf)
            else:
                _expected_rates_normal(lo, hi, lent, ejob, q, a, ao, weight, cap_Bps[lk], per_work, r_e,
                                       gh_z, gh_w)
            if memo:
                _memo_store(lo, hi, lent, ejob, q, a, ao, weight, glink[lk], slot, memo_n, memo_key, memo_r, r_e)
            link_evals += 1
        for j in range(n):
            xbar[j] = 1.0
        for e in range(n_e):
            r = 1.0 / r_e[e] if per_work else r_e[e]
            if r < xbar[ejob[e]]:
                xbar[ejob[e]] = r
        if elsewhere:
            # a job whose rate is set by another link uses only y/r of its share here
            for j in range(n):
                min1[j] = 1.0
                min2[j] = 1.0
            for e in range(n_e):
                j = ejob[e]
                r = 1.0 / r_e[e] if per_work else r_e[e]
                if r < min1[j]:
                    min2[j] = min1[j]
                    min1[j] = r
                elif r < min2[j]:
                    min2[j] = r
            for e in range(n_e):
                j = ejob[e]
                r = 1.0 / r_e[e] if per_work else r_e[e]
                y = min2[j] if r == min1[j] else min1[j]
                new = a[e] * min(1.0, y / r)
                if abs(new - ao[e]) > quiet * a[e]:
                    dirty[lidx[e]] = True
                ao[e] = new
        worst = 0.0
        for j in range(n):
            tau[j] = comm_s[j] / xbar[j]
            it[j] = max(compute_s[j], comm_start_s[j] + tau[j])
            qn = tau[j] / it[j]
            worst = max(worst, abs(qn - q[j]))
            q[j] = qn
            if abs(qn - q_seen[j]) > quiet:
                q_seen[j] = qn
                for e in range(ptr[j], ptr[j + 1]):
                    dirty[lidx[e]] = True
        if worst < tol:
            converged = True
            break
    return it, rounds, converged, link_evals, need_users


@njit(cache=True, no_cfunc_wrapper=True)
def solve_large_groups(compute_s, comm_start_s, comm_s, weight, ptr, lidx, demand_Bps, cap_Bps, min_jobs,
                       gh_z, gh_w, enum_max_others, dp_max_others, per_work, elsewhere, tol, max_rounds,
                       memo_n, memo_key, memo_r):
    """Split the jobs into groups (``split_groups``) and solve here, by ``dutycycle_group``
    with the memo, every group of more than ``min_jobs`` jobs: one call per re-solve
    instead of a Python loop slicing each group out (in the full Philly run that loop and
    the split cost 2.3 s against the solver's 3.6 s).

    Returns ``(iter_s, split, info, todo)``: iteration times (``max(C, s + M)`` for
    singletons and for the groups left to the caller), the seven ``split_groups`` arrays, per
    group ``info[g] = (rounds, converged, link_evals, need_users)`` with ``rounds = -1`` for a
    group not solved here, and ``todo``, ascending, the groups the caller still has work for:
    those not solved here, those that did not converge (to log) and those whose links
    outgrew the memo (to widen it). A solved group's times are
    ``max(dutycycle_group(...), solo)``, exactly what the caller's per-group path computes.
    """
    n = compute_s.shape[0]
    it = np.empty(n)
    for j in range(n):
        it[j] = max(compute_s[j], comm_start_s[j] + comm_s[j])
    gjp, jobs, eptr, elink, edem, glp, lglob = split_groups(cap_Bps.shape[0], ptr, lidx, demand_Bps, comm_s)
    n_groups = gjp.shape[0] - 1
    info = np.zeros((n_groups, 4), np.int64)
    todo = np.empty(n_groups, np.int64)
    n_todo = 0
    for g in range(n_groups):
        a = gjp[g]
        b = gjp[g + 1]
        k = b - a
        if k <= min_jobs:
            info[g, 0] = -1
            todo[n_todo] = g
            n_todo += 1
            continue
        gc = np.empty(k)
        gs = np.empty(k)
        gm = np.empty(k)
        gw = np.empty(k)
        gptr = np.empty(k + 1, np.int64)
        for i in range(k):
            j = jobs[a + i]
            gc[i] = compute_s[j]
            gs[i] = comm_start_s[j]
            gm[i] = comm_s[j]
            gw[i] = weight[j]
            gptr[i] = eptr[a + i] - eptr[a]
        gptr[k] = eptr[b] - eptr[a]
        glink = lglob[glp[g]:glp[g + 1]].copy()
        gcap = np.empty(glink.shape[0])
        for x in range(glink.shape[0]):
            gcap[x] = cap_Bps[glink[x]]
        res, rounds, ok, evals, need = dutycycle_group(
            gc, gs, gm, gw, gptr, elink[eptr[a]:eptr[b]].copy(), edem[eptr[a]:eptr[b]].copy(), gcap, gh_z, gh_w,
            enum_max_others, dp_max_others, per_work, elsewhere, tol, max_rounds, glink, memo_n, memo_key, memo_r)
        for i in range(k):
            j = jobs[a + i]
            it[j] = max(res[i], it[j])
        info[g, 0] = rounds
        info[g, 1] = 1 if ok else 0
        info[g, 2] = evals
        info[g, 3] = need
        if not ok or need != 0:
            todo[n_todo] = g
            n_todo += 1
    return it, (gjp, jobs, eptr, elink, edem, glp, lglob), info, todo[:n_todo]
