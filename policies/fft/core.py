"""FFT's per-round mathematics (Mo, Xu, Lau, ICS'25 §4.2), on plain arrays in round units.

Everything here is in *rounds* (A1 of seeds/notes/fft.md §2.10): times t, a_j, τ_j in rounds,
W_j in work units ("epochs"), θ_j^i in work units per round with the job's d_j GPUs of type i,
the switching penalty s_j^i in rounds. The policy (`policies.fft.policy`) turns a ClusterView
into these arrays; the tests drive them directly with the paper's worked examples.

Per round t (Eqs. 5-7):

    φ_j^i = (t − a_j) θ_j^i / W_j + d_j W_j / θ_j^i                               (Eq. 3)
    c_j^i = w_jct φ_j^i + w_sw s_j^i − w_fair ρ_j θ_j^i                             (Eq. 6)
    min Σ c x   s.t.  Σ_i x_j^i ≤ 1,  Σ_j d_j x_j^i ≤ Y_i,  Σ d x ≥ K(t),  x = 0 where masked
    ρ_j ← max(0, ρ_j + μ_j (W_j / (τ_j − a_j) − Σ_i θ_j^i x_j^i)),  μ_j = (t − a_j)/(τ_j − a_j)   (Eq. 5)

K(t) (A3) is the optimum of the packing ILP max Σ d x over the same constraints, so the
round ILP is never infeasible; τ_j (A4) comes from `fair_rate`, the job's rate on a
1/|A(t)| slice of every type with preemption disabled (one type at a time).
"""

from __future__ import annotations

import time

import numpy as np

from policies.solvers import Model

#: A3 K(t) rules: the packing ILP's optimum (never infeasible); one ILP with a big-M bonus per
#: busy GPU (lexicographic: most GPUs, then least cost); the literal min(Σ Y, Σ d) relaxed on
#: infeasibility; no lower bound
K_RULES = ("packing_ilp", "big_m", "literal_relaxed", "none")


def fair_rate(theta: np.ndarray, d: np.ndarray, cap: np.ndarray, n_active: int) -> np.ndarray:
    """A4: each job's work per round on its own 1/N slice of every type (N = `n_active`),
    time-sharing the slice one type at a time: max Σ_i f_i θ_i, Σ f_i ≤ 1, f_i ≤ Y_i/(N d_j),
    filled fastest type first (θ = 0 marks a type the job cannot use)."""
    theta = np.asarray(theta, float)
    J, M = theta.shape
    n = max(int(n_active), 1)
    lim = np.asarray(cap, float)[None, :] / (n * np.maximum(np.asarray(d, float), 1.0))[:, None]
    lim = np.where(theta > 0, lim, 0.0)
    order = np.argsort(-theta, axis=1, kind="stable")
    th = np.take_along_axis(theta, order, axis=1)
    li = np.take_along_axis(lim, order, axis=1)
    left = np.ones(J)
    rate = np.zeros(J)
    for k in range(M):
        f = np.minimum(li[:, k], left)
        rate += f * th[:, k]
        left -= f
    return rate


def phi(t: float, a: np.ndarray, W: np.ndarray, W_phi: np.ndarray, theta: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The JCT term φ_j^i (Eq. 3): (t − a_j) θ/W_j + d_j W'_j/θ (W' = W_j literally, or the
    remaining work with A2's `remaining_work`); +inf where θ = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        first = (t - a)[:, None] * theta / W[:, None]
        second = (d * W_phi)[:, None] / theta
    return np.where(theta > 0, first + second, np.inf)


def round_costs(t, a, W, W_phi, theta, d, rho, switch, w_jct=1.0, w_sw=1.0, w_fair=1.0) -> np.ndarray:
    """c_j^i of Eq. 6; +inf where the job cannot use the type."""
    c = w_jct * phi(t, a, W, W_phi, theta, d) + w_sw * switch - w_fair * rho[:, None] * theta
    return np.where(theta > 0, c, np.inf)


def prune(cost: np.ndarray, d: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """The (job, type) pairs an optimal round needs (exact): for each type i and GPU count d,
    only the L_d = Σ_k ⌊Y_k/d⌋ cheapest jobs of that count on type i. At most L_d jobs of
    count d run in any feasible round, so if a job of count d outside type i's L_d cheapest ran
    on i, one of those L_d would be idle and could take its place on i at no more cost with the
    same GPUs (capacities and K unchanged). Returns the reduced mask."""
    mask = np.isfinite(cost)
    keep = np.zeros_like(mask)
    cap = np.asarray(cap, float)
    for dv in np.unique(d).tolist():
        rows = np.flatnonzero(d == dv)
        L = int(np.floor(cap / dv).sum())
        if L <= 0:
            continue
        if rows.size <= L:
            keep[rows] = mask[rows]
            continue
        sub = np.where(mask[rows], cost[rows], np.inf)
        part = np.argpartition(sub, L - 1, axis=0)[:L]  # per type: the L cheapest
        for i in range(cost.shape[1]):
            r = rows[part[:, i]]
            keep[r, i] = mask[r, i]
    return keep


def _base(mask: np.ndarray, d: np.ndarray, cap: np.ndarray, integer: bool = True):
    m = Model()
    x = m.binary("x", mask.shape, ub=mask.astype(float)) if integer else m.var("x", mask.shape, ub=mask.astype(float))
    m.add(x.sum(axis=1) <= 1.0)
    m.add(x.sum(axis=0, coef=d[:, None].astype(float)) <= np.asarray(cap, float))
    return m, x


def packing_k(mask: np.ndarray, d: np.ndarray, cap: np.ndarray, time_limit_s: float | None = None) -> int:
    """A3: the most GPUs the jobs can keep busy this round: max Σ d x under Eq. 1 and the masks."""
    mask = np.asarray(mask, bool)
    d = np.asarray(d, np.int64)
    if not mask.any():
        return 0
    # every job fits at once on its own: no ILP needed (common in light load)
    cap = np.asarray(cap, float)
    m, x = _base(mask, d, cap)
    m.maximize(x.sum(coef=np.where(mask, d[:, None], 0).astype(float)))
    sol = m.solve(time_limit_s=time_limit_s)
    return round(sol.objective)


def _count_model(mask: np.ndarray, d: np.ndarray, cap: np.ndarray, integer: bool = True, fix=None):
    """The same program with integer counts n[g, i] of jobs of GPU count d_g on type i and
    continuous x (exact): for fixed counts the x-polytope is a transportation problem per
    count (jobs of count d_g → the n[g, ·] slots of the types), totally unimodular, so its
    vertices are integral and Eq. 1's capacities and K(t) are linear in n alone. HiGHS then
    branches on |{d}|·M integers (≈ 40) instead of J·M binaries."""
    from policies.solvers.lp import Expr

    J, M = mask.shape
    dv, g = np.unique(d, return_inverse=True)
    G = dv.size
    m = Model()
    x = m.var("x", (J, M), ub=mask.astype(float))
    nmax = np.floor(np.asarray(cap, float)[None, :] / dv[:, None])
    n = m.var("n", (G, M), lb=0.0 if fix is None else fix, ub=nmax if fix is None else fix, integer=integer)
    m.add(x.sum(axis=1) <= 1.0)
    rows = (g.reshape(-1)[:, None] * M + np.arange(M)[None, :]).ravel()
    grp = Expr(G * M, rows, x.cols.ravel(), np.ones(J * M))
    m.add(grp - n.each() == 0.0)
    m.add(n.sum(axis=0, coef=dv[:, None].astype(float)) <= np.asarray(cap, float))
    return m, x, n, dv


def _round_x(xv: np.ndarray) -> np.ndarray | None:
    """The integral assignment of an LP vertex (None if some x is fractional)."""
    if np.any(np.abs(xv - np.round(xv)) > 1e-6):
        return None
    return np.round(xv) > 0.5


def solve_round(cost: np.ndarray, d: np.ndarray, cap: np.ndarray, *, k_rule: str = "packing_ilp",
                time_limit_s: float | None = None, mip_rel_gap: float | None = None,
                prune_pairs: bool = True, formulation: str = "counts", method: str = "exact",
                lp_round_gap: float = 1e-3) -> tuple[np.ndarray, dict]:
    """The per-round ILP (Eqs. 6-7): the type each job runs on this round (-1: none) and stats
    {k, objective, solve_s, status, mip_gap} (status "limit": the time limit stopped branch-and-bound
    and its incumbent is used, `mip_gap` its relative distance from HiGHS' dual bound). `cost` is +inf where x must be 0 (memory, d_j > Y_i, type)."""
    t0 = time.perf_counter()
    cost = np.asarray(cost, float)
    d = np.asarray(d, np.int64)
    J = cost.shape[0]
    mask = prune(cost, d, cap) if prune_pairs else np.isfinite(cost)
    out = np.full(J, -1, np.int64)
    stats = {"k": 0, "objective": 0.0, "status": "empty", "solve_s": 0.0, "jobs": J}
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return out, stats
    c = np.where(mask, cost, 0.0)[rows]
    mk, dk = mask[rows], d[rows]
    gpus = np.where(mk, dk[:, None], 0).astype(float)
    k = 0
    if formulation == "counts":
        xv, k, status, mip_gap = _solve_counts(c, mk, dk, cap, k_rule, time_limit_s, mip_rel_gap, method,
                                               lp_round_gap)
        if xv is not None:
            hit = xv.any(axis=1)
            out[rows[hit]] = np.argmax(xv[hit], axis=1)
            sel = out >= 0
            stats.update(k=k, status=status, mip_gap=mip_gap, objective=float(np.where(mask, cost, 0.0)[np.flatnonzero(sel), out[sel]].sum()),
                         solve_s=time.perf_counter() - t0, formulation="counts")
            return out, stats
        # a fractional vertex (not expected): solve the binary program below
    if k_rule in ("packing_ilp", "counts"):
        k = packing_k(mk, dk, cap, time_limit_s)
    elif k_rule == "literal_relaxed":
        k = int(min(float(np.sum(cap)), float(dk.sum())))
    m, x = _base(mk, dk, cap)
    if k_rule == "big_m":
        big = 1.0 + float(np.abs(c).sum())  # any extra busy GPU outweighs every cost difference
        m.minimize(x.sum(coef=c - big * gpus))
    else:
        if k > 0:
            m.add(x.sum(coef=gpus) >= float(k))
        m.minimize(x.sum(coef=c))
    sol = m.solve(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, check=False)
    if not sol.ok and k_rule == "literal_relaxed":  # relax K until feasible (fragmentation)
        k = packing_k(mk, dk, cap, time_limit_s)
        m, x = _base(mk, dk, cap)
        m.add(x.sum(coef=gpus) >= float(k))
        m.minimize(x.sum(coef=c))
        sol = m.solve(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, check=False)
    if not sol.ok:
        from policies.solvers.lp import SolveError

        raise SolveError(sol.status, f"FFT round ILP ({J} jobs, K={k}): {sol.message}")
    xv = sol["x"] > 0.5
    hit = xv.any(axis=1)
    out[rows[hit]] = np.argmax(xv[hit], axis=1)
    sel = out >= 0
    stats.update(k=k if k_rule != "big_m" else int((d[sel]).sum()), status=sol.status, mip_gap=sol.mip_gap,
                 objective=float(np.where(mask, cost, 0.0)[np.flatnonzero(sel), out[sel]].sum()),
                 solve_s=time.perf_counter() - t0)
    return out, stats


def _packing_counts(mask, d, cap, time_limit_s=None) -> int:
    """A3's K(t) on the count model: the trivial bound min(Σ_i Y_i, Σ_j d_j) when a greedy fill
    (largest jobs first, each on the type with the most room) reaches it — then it is the
    optimum — else the packing ILP."""
    cap = np.asarray(cap, float)
    usable = mask.any(axis=1)
    bound = min(float(cap.sum()), float(d[usable].sum()))
    room = cap.copy()
    busy = 0.0
    for j in np.argsort(-d, kind="stable").tolist():
        ok = np.flatnonzero(mask[j] & (room >= d[j]))
        if ok.size:
            i = ok[np.argmax(room[ok])]
            room[i] -= d[j]
            busy += d[j]
    if busy >= bound:
        return round(busy)
    m, _x, n, dv = _count_model(mask, d, cap)
    m.maximize(n.sum(coef=dv[:, None].astype(float)))
    return round(m.solve(time_limit_s=time_limit_s).objective)


def _lp_round(c, mask, d, cap, k, gap):
    """Fast path of `_solve_counts` (method "lp_round"): the LP relaxation (also the bound),
    its counts n rounded down then topped up (largest fractional part first, where the type
    has room) until Σ d n ≥ K, then the LP with those counts fixed — integral, a
    transportation problem. Accepted when within `gap` (relative) of the LP bound; None
    otherwise (the caller then runs branch-and-bound)."""
    relax_m, xr = _base(mask, d, cap, integer=False)  # the binary program's LP relaxation (faster)
    if k > 0:
        relax_m.add(xr.sum(coef=np.where(mask, d[:, None], 0).astype(float)) >= float(k))
    relax_m.minimize(xr.sum(coef=c))
    relax = relax_m.solve(check=False)
    if not relax.ok:
        return None
    dv, g = np.unique(d, return_inverse=True)
    nv = np.zeros((dv.size, mask.shape[1]))
    np.add.at(nv, g.reshape(-1), relax["x"])
    n0 = np.floor(nv + 1e-9)
    room = np.asarray(cap, float) - (dv[:, None] * n0).sum(axis=0)
    frac = nv - n0
    busy = float((dv[:, None] * n0).sum())
    have = np.array([[mask[d == v, i].sum() for i in range(mask.shape[1])] for v in dv.tolist()], float)
    size = np.array([mask[d == v].any(axis=1).sum() for v in dv.tolist()], float)  # jobs per count that can run
    M = n0.shape[1]
    # fractional counts first (largest part first, one more each), then any count that fills a
    # type's room, largest jobs first (as many as fit)
    passes = [(divmod(f, M), 1) for f in np.argsort(-frac, axis=None, kind="stable").tolist()
              if frac.flat[f] > 1e-9]
    passes += [((g, i), 1 << 30) for g in np.argsort(-dv, kind="stable").tolist() for i in range(M)]
    for (gi, ti), most in passes:
        while busy < k and most > 0 and dv[gi] <= room[ti] and n0[gi, ti] < have[gi, ti] \
                and n0[gi].sum() < size[gi]:
            n0[gi, ti] += 1
            room[ti] -= dv[gi]
            busy += dv[gi]
            most -= 1
    if busy < k:
        return None
    # counts fixed: per GPU count, jobs → slots (n0[g, i] slots of type i) is an assignment problem
    from scipy.optimize import linear_sum_assignment

    xv = np.zeros(mask.shape, bool)
    total = 0.0
    for gi in range(dv.size):
        slots = np.repeat(np.arange(M), n0[gi].astype(np.int64))
        if slots.size == 0:
            continue
        jobs = np.flatnonzero(g.reshape(-1) == gi)
        cm = np.where(mask[jobs][:, slots], c[jobs][:, slots], _BLOCKED).T  # slots × jobs
        r, col = linear_sum_assignment(cm)
        if r.size < slots.size or np.any(cm[r, col] >= _BLOCKED):  # a slot no job can fill
            return None
        xv[jobs[col], slots[r]] = True
        total += float(cm[r, col].sum())
    if total - relax.objective > gap * max(abs(relax.objective), 1.0):
        return None
    return xv


_BLOCKED = 1e15  # an assignment the mask forbids


def _solve_counts(c, mask, d, cap, k_rule, time_limit_s, mip_rel_gap, method="exact", gap=1e-3):
    """`solve_round` on `_count_model`: (x as bools or None if fractional, K, status, HiGHS' relative
    optimality gap: 0 at the optimum or an accepted `lp_round`, above 0 when the time limit stopped it)."""
    from policies.solvers.lp import SolveError

    k = 0
    if k_rule in ("packing_ilp", "literal_relaxed"):
        kp = _packing_counts(mask, d, cap, time_limit_s)
        k = kp if k_rule == "packing_ilp" else min(kp, int(min(float(np.sum(cap)), float(d.sum()))))
    if method == "lp_round" and k_rule != "big_m":
        xv = _lp_round(c, mask, d, cap, k, gap)
        if xv is not None:
            return xv, k, "lp_round", 0.0
    m, x, n, dv = _count_model(mask, d, cap)
    if k_rule == "big_m":
        big = 1.0 + float(np.abs(c).sum())
        m.minimize(x.sum(coef=c) - big * n.sum(coef=dv[:, None].astype(float)))
    else:
        if k > 0:
            m.add(n.sum(coef=dv[:, None].astype(float)) >= float(k))
        m.minimize(x.sum(coef=c))
    sol = m.solve(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, check=False)
    if not sol.ok:
        raise SolveError(sol.status, f"FFT round ILP ({mask.shape[0]} jobs, K={k}): {sol.message}")
    xv = _round_x(sol["x"])
    if k_rule == "big_m" and xv is not None:
        k = int((d[:, None] * xv).sum())
    return xv, k, sol.status, sol.mip_gap


def rho_update(rho: np.ndarray, t: float, a: np.ndarray, tau: np.ndarray, W: np.ndarray,
               got: np.ndarray) -> np.ndarray:
    """Eq. 5: ρ_j(t+1) = max{0, ρ_j(t) + μ_j(t) (W_j/(τ_j − a_j) − got_j)}, μ_j(t) = (t − a_j)/(τ_j − a_j);
    `got_j` = Σ_i θ_j^i x_j^i(t) (A6 nominal) or the realised work of round t."""
    span = np.maximum(np.asarray(tau, float) - a, 1e-9)
    mu = np.maximum(t - a, 0.0) / span
    return np.maximum(0.0, rho + mu * (W / span - got))
