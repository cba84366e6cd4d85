"""Gavel: heterogeneity-aware LP policies realised by round-based priorities (OSDI'20).

Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI'20; public code stanford-futuredata/gavel (`scheduler/policies/*.py`,
`scheduler/scheduler.py`). A policy is an optimisation over the allocation matrix X[j, t],
the fraction of time job j should spend on GPU type t, given the throughput matrix
T[j, t] (samples/s of job j at its requested count on type t, `view.throughput_matrix`);
every program shares Gavel's base constraints

    0 ≤ X,   Σ_t X[j, t] ≤ 1 (a job runs on one type at a time),
    Σ_j sf_j · X[j, t] ≤ N_t (type t has N_t GPUs; sf_j = the job's GPU count, its scale factor).

X is realised round by round (360 s): each (job, type) has priority X[j, t] / (share of type
t's job-time the job received since the last allocation reset); per type, from the fastest,
jobs are taken in decreasing priority (deficit, then allocation, breaking ties) while their
scale factor fits the GPUs left of that type, each job at most once (`round_schedule`).

The objectives with a 1/rate term (finish-time fairness, the SJF-like sum of remaining
times) are convex, not linear: `_inverse_rate_lp` solves them exactly up to a tolerance by
Kelley's cutting planes on φ_j ≥ 1/u_j (u_j = the job's rate relative to its best type), each
round an LP on the solver kit's HiGHS. `Gavel` (registered `gavel`) keeps the per-run
state: the allocation, the time each job received per type since the last reset, deficits, and
for finish-time fairness the isolated-time sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies import placement as P
from policies.base import BasePolicy, Round
from policies.config import PlacedConfig, param
from policies.gavel_sjf import sjf_barrier
from policies.registry import POLICIES
from policies.solvers import Model
from policies.solvers.lp import Expr
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

#: priority of a (job, type) with an allocation but no time received since the reset (Gavel:
#: `allocation * 1e9`, "don't use inf so 2*new_priority > new_priority")
UNSERVED_PRIORITY = 1e9


def proportional_throughput(tput: np.ndarray, num_gpus: np.ndarray) -> np.ndarray:
    """Each job's throughput under Gavel's proportional split X[j, t] = N_t / Σ N (the
    normaliser of max-min fairness, `ProportionalPolicy`: N_t/m per job, rows scaled to sum 1)."""
    share = num_gpus / max(float(num_gpus.sum()), 1.0)
    return tput @ share


def isolated_throughput(tput: np.ndarray, sf: np.ndarray, num_gpus: np.ndarray) -> np.ndarray:
    """Each job's throughput on its 1/m share of every type (Gavel's `IsolatedPolicy`:
    X[j, t] = N_t / (m · sf_j), rows capped at a total of 1): the reference of finish-time fairness."""
    m = tput.shape[0]
    x = (num_gpus[None, :] / max(m, 1)) / sf[:, None]
    x = x / np.maximum(x.sum(axis=1), 1.0)[:, None]
    return (tput * x).sum(axis=1)


def _base(tput: np.ndarray, sf: np.ndarray, num_gpus: np.ndarray, count=None) -> tuple[Model, object]:
    """Gavel's base constraints over X (X = 0 where the job cannot run: zero throughput);
    `count`: rows are job classes of that many jobs each (capacity counts every member)."""
    m = Model()
    x = m.var("x", tput.shape, ub=(tput > 0).astype(float))
    m.add(x.sum(axis=1) <= 1.0)
    w = np.asarray(sf, float) if count is None else np.asarray(sf, float) * count
    m.add(x.sum(axis=0, coef=w[:, None]) <= num_gpus)
    return m, x


def job_classes(tput: np.ndarray, sf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(representative row of each class, class of each job, class sizes): jobs with the same
    throughput row and scale factor. Max-min fairness and max-sum throughput are LPs symmetric
    in such jobs, so averaging any optimum over the members of each class is again optimal:
    solving one variable row per class (weighted by its size in the capacity rows) gives an
    optimum of Gavel's program, exactly, in a much smaller LP."""
    key = np.column_stack([np.asarray(tput, float), np.asarray(sf, float)])
    _, first, inv, cnt = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
    return first, inv.ravel(), cnt.astype(float)


def max_min_fairness(tput: np.ndarray, sf: np.ndarray, num_gpus: np.ndarray, fill_slack: bool = True) -> np.ndarray:
    """Gavel's `MaxMinFairnessPolicyWithPerf`: maximise min_j Σ_t (T[j,t] / prop_j) · sf_j · X[j,t]
    with prop_j the job's proportional-split throughput. Pass T = 1 where a job can run for
    Gavel's heterogeneity-agnostic `max_min_fairness` (LAS weighted by scale factors).
    Solved over job classes (`job_classes`).

    `fill_slack`: an LP has many optima (only the bottleneck jobs are pinned); Gavel's interior-
    point solver (ECOS) returns one in the interior, HiGHS a vertex that may leave GPUs idle. A
    second LP keeps every job at the optimal minimum and maximises Σ of the same normalised
    throughputs, so spare GPUs go to the jobs that can use them."""
    tput = np.asarray(tput, float)
    sf = np.asarray(sf)
    if tput.shape[0] == 0:
        return np.zeros(tput.shape)
    first, inv, cnt = job_classes(tput, sf)
    t, s = tput[first], sf[first]
    prop = proportional_throughput(t, num_gpus)
    c = np.where(prop[:, None] > 0, t / np.where(prop > 0, prop, 1.0)[:, None], 0.0) * s[:, None]
    rows = np.flatnonzero(c.sum(axis=1) > 0)  # classes that can run somewhere
    if rows.size == 0:  # e.g. only jobs larger than every type (placements never mix types)
        return np.zeros(tput.shape)
    m, x = _base(t, s, num_gpus, cnt)
    z = m.var("z", 1)
    m.add(_take(x.sum(axis=1, coef=c), rows) - z.sum() >= 0.0)
    m.maximize(z.sum())
    sol = m.solve()
    if fill_slack:
        zstar = float(sol["z"][0])
        m, x = _base(t, s, num_gpus, cnt)
        m.add(_take(x.sum(axis=1, coef=c), rows) >= zstar * (1.0 - 1e-7))
        m.maximize(x.sum(coef=c * cnt[:, None]))
        sol = m.solve()
    return np.clip(sol["x"], 0.0, 1.0)[inv]


def _take(expr, rows: np.ndarray):
    """The rows `rows` of a row group, renumbered 0..len(rows)-1."""
    pos = np.full(expr.n_rows, -1, np.int64)
    pos[rows] = np.arange(rows.size)
    keep = pos[expr.rows] >= 0
    return Expr(rows.size, pos[expr.rows[keep]], expr.cols[keep], expr.vals[keep], expr.const[rows])


def max_sum_throughput(tput: np.ndarray, sf: np.ndarray, num_gpus: np.ndarray) -> np.ndarray:
    """Gavel's `ThroughputSumWithPerf`: maximise Σ_j Σ_t T[j,t] · X[j,t] (raw throughputs,
    as Gavel's code: its per-job normaliser is computed but not used). Over job classes."""
    tput = np.asarray(tput, float)
    sf = np.asarray(sf)
    if tput.shape[0] == 0:
        return np.zeros(tput.shape)
    first, inv, cnt = job_classes(tput, sf)
    m, x = _base(tput[first], sf[first], num_gpus, cnt)
    m.maximize(x.sum(coef=tput[first] * cnt[:, None]))
    return np.clip(m.solve()["x"], 0.0, 1.0)[inv]


def _one_type_inverse_rate(sf: np.ndarray, cap: float, *, weight=None, ftf=None) -> tuple[np.ndarray, float]:
    """The exact optimum of `_inverse_rate_lp`'s programs when every job can run on one GPU type
    only (u_j = X_j ∈ [0, 1], Σ sf_j X_j ≤ cap), by their KKT conditions instead of cutting
    planes. Returns (X_j, objective).

    - min Σ w_j / X_j: X_j = min(1, √(w_j / (λ sf_j))) with λ ≥ 0 the capacity's price, found
      exactly over the sorted breakpoints b_j = w_j / sf_j (X_j = 1 iff λ ≤ b_j); jobs with
      w_j = 0 get 0 (they add nothing to the objective).
    - min max_j (a_j + c_j / X_j), lexicographically (leximin, which the plain min-max leaves
      open once one job's ρ is fixed by its past): one water level L, every job at
      X_j = c_j / (L − a_j) (ρ_j = L) or at X_j = 1 if even that leaves it above L, the least L
      whose Σ sf_j X_j fits `cap` (bisection to float precision). When the capacity binds for
      every job this is the min-max optimum; otherwise it also equalises the others at the
      lowest common level instead of leaving GPUs idle. Jobs with c_j = 0 get 0."""
    s = np.asarray(sf, float)
    if weight is not None:
        w = np.maximum(np.asarray(weight, float), 0.0)
        pos = w > 0
        x = np.zeros(s.size)
        if s[pos].sum() <= cap:
            x[pos] = 1.0
        else:
            idx = np.flatnonzero(pos)
            b = w[idx] / s[idx]
            o = idx[np.argsort(-b, kind="stable")]
            bo = w[o] / s[o]
            capped = np.concatenate([[0.0], np.cumsum(s[o])])  # GPUs of the k largest-b jobs at X = 1
            root = np.sqrt(w[o] * s[o])
            unc = np.concatenate([np.cumsum(root[::-1])[::-1], [0.0]])  # Σ √(w s) of the others
            room = cap - capped[:-1]
            lam = np.where(room > 0, (unc[:-1] / np.where(room > 0, room, 1.0)) ** 2, np.inf)
            ok = (lam > bo) & np.concatenate([[True], lam[1:] <= bo[:-1]]) & (room > 0)
            lam_k = float(lam[int(np.flatnonzero(ok)[0])]) if ok.any() else float(lam[room > 0][-1])
            x[idx] = np.minimum(1.0, np.sqrt(w[idx] / (lam_k * s[idx])))
        obj = float(np.sum(w[pos] / np.maximum(x[pos], 1e-300)))
        return x, obj
    a, c = (np.asarray(v, float) for v in ftf)
    pos = c > 0
    x = np.zeros(s.size)
    floor = float(a.max()) if a.size else 0.0  # jobs with c = 0 keep ρ = a whatever they get
    if not pos.any():
        return x, floor
    ap, cp, sp = a[pos], c[pos], s[pos]
    r1 = ap + cp  # each job's ρ at X = 1

    def shares(level: float) -> np.ndarray:
        return np.where(r1 >= level, 1.0, cp / np.maximum(level - ap, 1e-300))

    if sp.sum() <= cap:
        xp = np.ones(sp.size)
    else:  # the water level: g(L) = Σ sf·X(L) decreases from Σ sf (L ≤ min r1) to 0; g(L) = cap
        lo, hi = float(r1.min()), float(max(r1.max(), ap.max() + float(np.sum(sp * cp)) / cap)) * (1 + 1e-12) + 1e-300
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if float(np.sum(sp * shares(mid))) > cap:
                lo = mid
            else:
                hi = mid
        xp = shares(hi)
    x[pos] = xp
    return x, max(floor, float(np.max(ap + cp / xp)))


#: HiGHS options of the Dinkelbach LPs (measured on the first LP of the 1,000-job × 8-type
#: benchmark view, `benchmarks/bench_ftf.py`, CPU ms at a load of ~7: dual simplex 16 ms with
#: these, 27 ms without presolve only, 40 ms with linprog's defaults, 51 ms primal simplex;
#: the presolve finds little to remove in these LPs and steepest-edge pricing costs more per
#: iteration than it saves)
FTF_LP_OPTIONS = {"presolve": "off", "simplex_dual_edge_weight_strategy": 1}  # 1: devex
#: `_ftf_dinkelbach` stops once an X is within this fraction of the lower bound max_j (a_j + c_j)
#: (HiGHS' own feasibility tolerance, 1e-7, is looser: a later LP could only match it to that)
LOWER_BOUND_RTOL = 1e-14


def _ftf_dinkelbach(tput, sf, num_gpus, a, c, max_iter=30):
    """min max_j (a_j + c_j / u_j) over Gavel's constraints by the Dinkelbach-type method of
    Crouzeix, Ferland and Schaible for generalised fractional programs (ρ_j = N_j / D_j with
    N_j = a_j u_j + c_j, D_j = u_j, both linear in X): from ρ_k, solve the LP
    F(ρ_k) = min_X max_j (N_j − ρ_k D_j) / d_j with d_j the previous rates (the first: each
    job's proportional share), then ρ_{k+1} = max_j ρ_j at its X. F(ρ) = 0 exactly at the
    optimum (F > 0 below it, as the start may be), and from the first feasible X on ρ_k
    decreases superlinearly: 2–10 LPs on the tests' cases where Kelley's cutting planes needed 12+
    and stopped far from it. The LPs share one HiGHS model, re-solved from the last basis. Every ρ_j ≥ a_j + c_j (u_j ≤ 1), so max_j (a_j + c_j) bounds the
    optimum from below: an X that reaches it is optimal and ends the iterations at once (the
    common case where a job's past alone sets the maximum: one LP, not two). Returns (X,
    objective, iterations)."""
    tput = np.asarray(tput, float)
    rmax = tput.max(axis=1)
    live = rmax > 0
    U = np.where(live[:, None], tput / np.where(live, rmax, 1.0)[:, None], 0.0)
    rows = np.flatnonzero(live)
    a, c = np.asarray(a, float)[rows], np.asarray(c, float)[rows]
    d = np.clip(proportional_throughput(U, num_gpus)[rows], 1e-6, 1.0)
    rho = float(np.max(a + c / d))
    lower = float(np.max(a + c))  # u_j ≤ 1: no X does better than every job on its best type full time
    best_x, best = None, np.inf
    n = rows.size
    # row j of the LP, N_j − ρ D_j + d_j z ≥ 0, i.e. u_j (ρ − a_j) + d_j z ≥ c_j, divided by
    # ρ − a_j, which is positive wherever c_j > 0 (every ρ_k is some X's max_j ρ_j, and
    # ρ_j ≥ a_j + c_j): u_j + z·d_j/(ρ − a_j) ≥ c_j/(ρ − a_j). The same rows and optimum, but a
    # new ρ or d changes only z's column and the right-hand sides, so one HiGHS model is kept
    # and each LP restarts from the last basis. A row with c_j = 0 (ρ_j = a_j whatever X) is
    # scaled the same way while ρ > a_j (u_j + z·d_j/(ρ − a_j) ≥ 0); at ρ = a_j it reads
    # d_j z ≥ 0, i.e. z ≥ 0 with no X in it: only these rows' X coefficients change.
    pos = c > 0
    zero = np.flatnonzero(~pos)

    # z is solved in units of 1/zs, zs = the largest scaled z coefficient, so that its column
    # keeps coefficients near 1: after a start below the optimum ρ may be ~1e9 (a job left empty)
    # and d/(ρ − a) ~1e-10 would fall under HiGHS' least matrix value (1e-9), leaving z free —
    # which is why no row may keep an unscaled z coefficient d_j ~ 1 beside the others.

    def coefficients(rho: float, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        gap = rho - a
        scaled = pos | (gap > 0)
        scale = np.where(scaled, 1.0 / np.where(scaled, gap, 1.0), 1.0)
        fz = d * scale
        zs = float(fz[scaled].max()) if scaled.any() else 1.0
        fz = np.where(scaled, fz / zs, 1.0)  # unscaled rows: z ≥ 0
        return scaled.astype(float), fz, c * scale, zs  # (X rows' factor, z column, rhs, z unit)

    fx, fz, rhs, zs = coefficients(rho, d)
    m, x = _base(tput, sf, num_gpus)
    z = m.var("z", 1, lb=-np.inf)
    ftf_rows = m.add(_take(x.sum(axis=1, coef=U), rows) * fx + Expr(n, np.arange(n), np.full(n, z.start), fz) >= rhs)
    ftf_rows = np.arange(ftf_rows.start, ftf_rows.stop)
    m.minimize(z.sum())
    lp = m.resolvable(FTF_LP_OPTIONS)
    jz, tz = np.nonzero(U[rows[zero]] > 0)  # the X entries of the c_j = 0 rows
    it = 0
    for it in range(1, max_iter + 1):
        if it > 1:
            fx, fz, rhs, zs = coefficients(rho, d)
            lp.set_coefficients(ftf_rows, z.start, fz)
            lp.set_row_bounds(ftf_rows[pos], rhs[pos], np.inf)
            if zero.size:
                lp.set_coefficients(ftf_rows[zero[jz]], x.start + rows[zero[jz]] * U.shape[1] + tz,
                                    U[rows[zero[jz]], tz] * fx[zero[jz]])
        sol = lp.solve()
        u = np.maximum((U[rows] * sol["x"][rows]).sum(axis=1), 1e-9)
        new = float(np.max(a + c / u))
        if new < best:
            best_x, best = np.clip(sol["x"], 0.0, 1.0), new
        f = sol.objective / zs  # > 0: ρ_k was below the optimum (the start); < 0: above; 0: optimal
        if abs(f) <= 1e-12 * max(1.0, abs(rho)) or (f < 0 and new >= rho * (1.0 - 1e-12)):
            break
        if best <= lower + LOWER_BOUND_RTOL * abs(lower):
            break  # certified: X reaches the lower bound max_j (a_j + c_j), nothing does better
        # the next normalisation: the rates at X — but only from a point above the optimum
        # (f < 0: every job then has a positive rate). From below (f > 0, the start) the LP may
        # leave a job empty, and a ~1e-9 weight on z sits below HiGHS' tolerances and stalls ρ.
        rho = new
        if f < 0:
            d = u
    return best_x, best, it


def _inverse_rate_lp(tput, sf, num_gpus, *, weight=None, ftf=None, tol=1e-3, max_iter=12, start=None,
                     exact_one_type=True, ftf_method="dinkelbach"):
    """min Σ_j weight_j / u_j (`weight`) or min max_j (a_j + c_j / u_j) (`ftf` = (a, c)) over
    Gavel's constraints, u_j = Σ_t (T[j,t] / max_t T[j,t]) X[j,t] ∈ (0, 1].

    Kelley's cutting planes: φ_j ≥ 1/u_j is replaced by its tangents at points u_k,
    φ_j ≥ 2/u_k − u_j/u_k²; start with tangents at `start` (default each job's proportional
    share) × 4^i, i = −3..0, solve, add the tangent at each job's solution, until the LP's
    objective (a lower bound) is within `tol` (relative) of the true objective at its X (an
    upper bound). Returns (X, true objective, iterations).

    `exact_one_type`: when every job can run on one type only (one column of T has
    throughputs), the program is separable up to one capacity row and
    `_one_type_inverse_rate` solves it exactly in well under a millisecond (0 iterations).
    `ftf_method`: "dinkelbach" solves the min-max (FTF) program by `_ftf_dinkelbach` (exact,
    1–10 LPs); "kelley" by the cutting planes above (kept for tests: at `max_iter` = 12 it can
    stop far from the optimum on 100+ jobs)."""
    tput = np.asarray(tput, float)
    J = tput.shape[0]
    cols = np.flatnonzero((tput > 0).any(axis=0)) if J else np.zeros(0, np.int64)
    if cols.size == 0:  # no job can run on any type now: nothing to allocate (an empty program)
        return np.zeros(tput.shape), 0.0, 0
    if exact_one_type and cols.size == 1:
        t = int(cols[0])
        live1 = tput[:, t] > 0
        x = np.zeros(tput.shape)
        args = {"weight": np.asarray(weight, float)[live1]} if ftf is None else \
            {"ftf": tuple(np.asarray(v, float)[live1] for v in ftf)}
        x[live1, t], obj = _one_type_inverse_rate(np.asarray(sf)[live1], float(num_gpus[t]), **args)
        return x, obj, 0
    if ftf is not None and ftf_method == "dinkelbach" and cols.size:
        return _ftf_dinkelbach(tput, sf, num_gpus, *ftf)
    rmax = tput.max(axis=1) if J else np.zeros(0)
    live = rmax > 0
    U = np.where(live[:, None], tput / np.where(live, rmax, 1.0)[:, None], 0.0)
    m, x = _base(tput, sf, num_gpus)
    rows = np.flatnonzero(live)
    if rows.size == 0:
        return np.zeros(tput.shape), 0.0, 0
    phi = m.var("phi", rows.size)
    rate = _take(x.sum(axis=1, coef=U), rows)
    if start is None:
        start = proportional_throughput(U, num_gpus)[rows]
    start = np.clip(np.asarray(start, float), 1e-6, 1.0)

    def cut(u: np.ndarray) -> None:
        m.add(rate * (1.0 / u ** 2) + phi.each() >= 2.0 / u)

    for i in (-3, -2, -1, 0):
        cut(np.clip(start * 4.0 ** i, 1e-6, 1.0))
    if ftf is not None:
        a, c = (np.asarray(v, float)[rows] for v in ftf)
        z = m.var("z", 1, lb=-np.inf)
        m.add(z.sum() - phi.each(coef=c) >= a)
        m.minimize(z.sum())

        def true(u):
            return float(np.max(a + c / u)) if u.size else 0.0
    else:
        w = np.asarray(weight, float)[rows]
        m.minimize(phi.sum(coef=w))

        def true(u):
            return float(np.sum(w / u))
    sol = None
    for it in range(1, max_iter + 1):
        sol = m.solve()
        u = np.maximum((U[rows] * sol["x"][rows]).sum(axis=1), 1e-9)
        upper = true(u)
        if upper - sol.objective <= tol * abs(upper):
            break
        cut(np.clip(u, 1e-6, 1.0))
    return np.clip(sol["x"], 0.0, 1.0), upper, it


def sjf_like(tput, sf, num_gpus, remaining, tol=1e-3, max_iter=12):
    """FFT's "Gavel SJF-like" (seeds/notes/fft.md A10): minimise Σ_j W_j / Σ_t X[j,t] T[j,t],
    the sum of the jobs' remaining times (W_j: remaining samples) at their allocated rates.
    One usable type: exact by KKT (`_one_type_inverse_rate`); several: a log-barrier Newton
    method on the convex program itself (`gavel_sjf.sjf_barrier`, to a 1e-9 relative gap, then
    shares below `ZERO_FRAC` = 1e-6 of a job's largest dropped, which costs at most ≈ 1e-6 of the
    objective; it returns the central optimum, as Gavel's interior-point solver does). Kelley's cutting planes
    (`_inverse_rate_lp`, which FTF uses) stopped at their round cap above the tolerance here
    and are only the tests' reference. `tol`/`max_iter` reach the one-type path's signature."""
    tput = np.asarray(tput, float)
    rmax = tput.max(axis=1) if tput.shape[0] else np.zeros(0)
    w = np.asarray(remaining, float) / np.where(rmax > 0, rmax, 1.0)  # seconds at the best type
    cols = np.flatnonzero((tput > 0).any(axis=0)) if tput.shape[0] else np.zeros(0, np.int64)
    if cols.size > 1:
        U = np.where(rmax[:, None] > 0, tput / np.where(rmax > 0, rmax, 1.0)[:, None], 0.0)
        return sjf_barrier(U, sf, num_gpus, w)[0]
    return _inverse_rate_lp(tput, sf, num_gpus, weight=w, tol=tol, max_iter=max_iter)[0]


def finish_time_fairness(tput, sf, num_gpus, remaining, since_start_s, isolated_time_s, tol=1e-3, max_iter=12):
    """Gavel's `FinishTimeFairnessPolicyWithPerf`: minimise max_j ρ_j,
    ρ_j = (time since arrival + W_j / Σ_t T[j,t] X[j,t]) / isolated_time_s_j, where the
    isolated time is the job's time so far on its isolated share plus W_j over its isolated
    throughput (the caller keeps that running sum, as Gavel's `_cumulative_isolated_time`)."""
    tput = np.asarray(tput, float)
    rmax = tput.max(axis=1) if tput.shape[0] else np.zeros(0)
    iso = np.where(np.asarray(isolated_time_s, float) > 0, isolated_time_s, 1.0)
    a = np.asarray(since_start_s, float) / iso
    c = np.asarray(remaining, float) / np.where(rmax > 0, rmax, 1.0) / iso
    return _inverse_rate_lp(tput, sf, num_gpus, ftf=(a, c), tol=tol, max_iter=max_iter)[0]


class IsolatedClock:
    """The isolated finish time of finish-time fairness (Gavel's `_cumulative_isolated_time`,
    Themis' T_id): the time a job's progress so far would have taken on its isolated share
    (summed update by update at the isolated throughput of each interval) plus its remaining
    work at the current isolated throughput. Shared by Gavel's FTF objective and Themis."""

    def __init__(self) -> None:
        self._cum: dict[int, float] = {}  # job → time so far measured on the isolated share
        self._prev: dict[int, tuple[float, float]] = {}  # job → (remaining samples, isolated tput)

    def update(self, jobs: np.ndarray, rem: np.ndarray, iso: np.ndarray) -> np.ndarray:
        """Isolated finish times of `jobs` with remaining samples `rem` and isolated
        throughputs `iso` now; call once per recomputation with every active job."""
        out = np.zeros(jobs.size)
        for i, j in enumerate(jobs.tolist()):
            if j in self._prev:
                r0, i0 = self._prev[j]
                self._cum[j] = self._cum.get(j, 0.0) + ((r0 - rem[i]) / i0 if i0 > 0 else 0.0)
            out[i] = self._cum.get(j, 0.0) + (rem[i] / iso[i] if iso[i] > 0 else 0.0)
        self._prev = {j: (rem[i], iso[i]) for i, j in enumerate(jobs.tolist())}
        return out


def priorities(alloc: np.ndarray, received_s: np.ndarray, tput: np.ndarray) -> np.ndarray:
    """Gavel's `_update_priorities`: X[j,t] / fraction[j,t], fraction = the job's share of the
    job-time type t ran since the last reset; `UNSERVED_PRIORITY` × X where that share is 0,
    and 0 where X is 0 or the job cannot run on t."""
    tot = received_s.sum(axis=0)
    frac = np.divide(received_s, tot[None, :], out=np.zeros_like(received_s), where=tot[None, :] > 0)
    pr = np.where(frac > 0, alloc / np.where(frac > 0, frac, 1.0), alloc * UNSERVED_PRIORITY)
    return np.where((alloc > 0) & (tput > 0), pr, 0.0)


def round_schedule(prio: np.ndarray, deficit_s: np.ndarray, alloc: np.ndarray, tput: np.ndarray,
                   sf: np.ndarray, free: np.ndarray, type_order: np.ndarray) -> np.ndarray:
    """Gavel's `_schedule_jobs_on_workers_helper` (per-type queues, no global queue): the GPU
    type each job runs on this round, -1 for none.

    For each type in `type_order`, its (job, type) entries sorted by (priority, deficit,
    allocation), largest first, are appended to one list; walking it, an entry is skipped if
    its job is already scheduled, cannot run on the type (throughput 0) or its scale factor
    exceeds the type's GPUs left (`free[t]`); otherwise the job takes `sf_j` of them. Entries
    with priority 0 still run on GPUs nobody with a positive priority took, as in Gavel."""
    J = prio.shape[0]
    out = np.full(J, -1, np.int64)
    left = np.asarray(free, np.int64).copy()
    for t in np.asarray(type_order).tolist():
        if left[t] <= 0:
            continue
        cand = np.flatnonzero((tput[:, t] > 0) & (out < 0) & (sf <= left[t]))
        if cand.size == 0:
            continue
        order = cand[np.lexsort((-alloc[cand, t], -deficit_s[cand, t], -prio[cand, t]))]
        for j in order.tolist():
            if sf[j] <= left[t]:
                out[j] = t
                left[t] -= sf[j]
                if left[t] == 0:
                    break
    return out


def reference_gpus(view: ClusterView, n: int, type_req: int) -> np.ndarray | None:
    """The placement on which the engine turned each job's work into `remaining_s`
    (`simcore.perf.PerfModel.consolidated_gpus`: the biggest nodes first, in index order,
    the job's type only if it requires one); None if too few GPUs."""
    c = view.cluster
    out, need = [], n
    for node in np.argsort(-np.asarray(c.node_num_gpus), kind="stable").tolist():
        first, cnt = int(c.node_first_gpu[node]), int(c.node_num_gpus[node])
        g = np.arange(first, first + cnt, dtype=np.int64)
        if type_req >= 0:
            g = g[c.gpu_type[g] == type_req]
        out.append(g[:need])
        need -= out[-1].size
        if need == 0:
            return np.sort(np.concatenate(out))
    return None


class OracleWork:
    """Remaining work of a job in samples, from the duration oracle: `remaining_s` over the
    iteration time on the engine's reference placement (`reference_gpus`) at the reference
    batch, × that batch. Iteration times are cached per (model, count, type, batch).
    Shared by Gavel's and AlloX's remaining-time objectives."""

    def __init__(self) -> None:
        self._ref: dict[tuple, float] = {}

    def samples(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        jv = view.jobs
        out = np.zeros(jobs.size)
        for i, j in enumerate(jobs.tolist()):
            n, req, b = int(jv.num_gpus[j]), int(jv.gpu_type_req[j]), int(jv.global_batch[j])
            key = (jv.model[j], n, req, b)
            s = self._ref.get(key)
            if s is None:
                ids = reference_gpus(view, n, req)
                s = self._ref[key] = np.inf if ids is None else float(view.iteration_time(j, ids, b))
            r = float(jv.remaining_s[j])
            out[i] = r / s * b if np.isfinite(r) and 0 < s < np.inf else 0.0
        return out


def job_matrix(view: ClusterView, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(T[j, t] samples/s at the requested count and reference batch, 0 where the job cannot
    run — memory, type, or more GPUs than the type has; scale factors; GPUs online per type)."""
    jv = view.jobs
    ntypes = len(view.cluster.gpu_type_names)
    online = np.asarray(view.cluster.gpu_online, bool)
    num = np.bincount(np.asarray(view.cluster.gpu_type, np.int64)[online], minlength=ntypes).astype(float)
    sf = np.clip(jv.num_gpus[jobs], jv.min_gpus[jobs], jv.max_gpus[jobs]).astype(np.int64)
    if jobs.size == 0:
        return np.zeros((0, ntypes)), sf, num
    tput = view.throughput_matrix(jobs, batch=jv.global_batch[jobs].astype(np.int64))
    tput = np.where(np.isfinite(tput) & (sf[:, None] <= num[None, :]), tput, 0.0)
    return tput, sf, num


OBJECTIVES = ("max_min_fairness", "max_sum_throughput", "finish_time_fairness", "sjf_like")


@dataclass(frozen=True)
class GavelConfig(PlacedConfig):
    """Gavel: an optimisation over the time fractions X[job, GPU type] (the objective), over the
    jobs' throughput on each type at their requested GPU count, recomputed when jobs arrive or
    finish (at most once per `reset_interval_s`), realised in `interval_s` rounds: each round a
    job's priority on a type is its fraction X over the share of that type's time it received
    since the last recomputation, and jobs take the GPUs of each type (fastest type first) in
    priority order at their requested count. It decides only at round boundaries: arrivals wait for the next one.
    Jobs move freely between rounds (Gavel is migration-oblivious); moves pay the engine's
    restart cost."""

    reference: ClassVar[str] = ("Narayanan et al., \"Heterogeneity-Aware Cluster Scheduling Policies for Deep "
                                "Learning Workloads\", OSDI'20; stanford-futuredata/gavel scheduler/policies, "
                                "scheduler.py")

    objective: str = param(
        "max_min_fairness",
        "max_min_fairness: maximise the least normalised throughput × scale factor (LAS-like fairness); "
        "max_sum_throughput: maximise total samples/s; finish_time_fairness: minimise the largest ratio of "
        "finish time to the finish time on a 1/n share (Themis' metric); sjf_like: minimise the sum of "
        "remaining times (FFT's 'Gavel SJF-like'). The last two read the duration oracle",
        choices=OBJECTIVES,
        source="Gavel's policies max_min_fairness.py, max_sum_throughput.py, finish_time_fairness.py (the _perf "
               "variants); sjf_like: seeds/notes/fft.md A10; Ares runs max_min_fairness (ares.md §6)")
    heterogeneity_aware: bool = param(
        True,
        "true: the objective sees each type's own throughput (Gavel's *_perf policies, the paper's); false: "
        "every type a job can run on counts as its best type (Gavel's agnostic max_min_fairness, the policy "
        "the Ares artifact runs)",
        source="Gavel utils.get_policy: max_min_fairness vs max_min_fairness_perf")
    reset_interval_s: float = param(
        1920.0, "least time between two recomputations of the allocation (and resets of the received times)",
        source="Gavel Scheduler(minimum_time_between_allocation_resets=1920)")
    fill_slack: bool = param(
        True,
        "max_min_fairness: after the max-min optimum, give the slack to the jobs that can use it (a second LP "
        "keeping every job at the optimum); false: HiGHS' vertex as is, which may leave GPUs idle",
        source="stands in for the interior solution Gavel's ECOS solver returns")
    cut_tol: float = param(
        1e-2,
        "finish_time_fairness: relative gap at which the cutting-plane LP stops (the objective is "
        "convex, 1/rate): the objective is then within this fraction of the optimum; 1e-3 costs ~4x the time "
        "at 1,000 jobs", unit="fraction", source="cosim (Gavel solves these with cvxpy/ECOS)")
    interval_s: float | None = param(360.0, "round length: the only decision points",
                                     source="Gavel time_per_iteration = 360 s; 360 s in Ares and FFT")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None, "a positive number of seconds (Gavel is round-based)")
        self.check("reset_interval_s", self.reset_interval_s >= 0, "seconds ≥ 0")
        self.check("cut_tol", 0 < self.cut_tol < 1, "a fraction in (0, 1)")


@POLICIES.register("gavel")
class Gavel(BasePolicy):
    """Gavel (OSDI'20): heterogeneity-aware LP allocation over job × GPU type, realised by round-based priorities.

    - Allocation X (`objective`) recomputed at a round where the set of active jobs changed and
      at least `reset_interval_s` passed since the last recomputation; a job that arrived since
      has no allocation (priority 0: it only runs on GPUs left over) until then.
    - At a recomputation each job's deficit on each type grows by what it should have received
      (X × elapsed) minus what it did, and every job's received time restarts at half a round.
    - Each round: priorities (`priorities`), per-type greedy selection (`round_schedule`); a
      running job selected on its current type keeps its GPUs, the rest are released and the
      selected jobs placed on their type, largest first, with `placement`.
    """

    name = "gavel"
    Config = GavelConfig
    single_type_placement = True  # Σ_t X[j, t] ≤ 1: a round places a job on one type (`simcore.admission`)

    def __init__(self, config: GavelConfig) -> None:
        super().__init__(config)
        self.event_driven = False
        if config.objective in ("finish_time_fairness", "sjf_like"):
            self.needs = frozenset({NEED_DURATION_ORACLE})
        self.work = OracleWork()
        self.alloc: dict[int, np.ndarray] = {}  # job → X row
        self.received_s: dict[int, np.ndarray] = {}  # job → seconds run per type since the reset
        self.deficit_s: dict[int, np.ndarray] = {}
        self._jobset: frozenset | None = None
        self._last_reset: float | None = None
        self._last_t: float | None = None
        self._ran: dict[int, int] = {}  # job → type it ran on in the last round
        self.iso_clock = IsolatedClock()  # FTF: the isolated-time reference

    def allocation(self, view: ClusterView, now: float, jobs: np.ndarray, tput: np.ndarray, sf: np.ndarray,
                   num: np.ndarray) -> np.ndarray:
        """X for `jobs` under the configured objective."""
        obj = self.config.objective
        t = tput if self.config.heterogeneity_aware else np.where(tput > 0, tput.max(axis=1, keepdims=True), 0.0)
        if obj == "max_min_fairness":
            return max_min_fairness(t, sf, num, self.config.fill_slack)
        if obj == "max_sum_throughput":
            return max_sum_throughput(t, sf, num)
        rem = self.work.samples(view, jobs)
        if obj == "sjf_like":
            return sjf_like(t, sf, num, rem, tol=self.config.cut_tol)
        iso_time = self.iso_clock.update(jobs, rem, isolated_throughput(t, sf, num))
        since = now - view.jobs.submit_time[jobs]
        return finish_time_fairness(t, sf, num, rem, since, iso_time, tol=self.config.cut_tol)

    def _reset(self, view: ClusterView, now: float, jobs: np.ndarray, tput, sf, num) -> None:
        ntypes = tput.shape[1]
        half = float(self.config.interval_s) / 2.0
        if self._last_reset is not None:
            el = now - self._last_reset
            for j in jobs.tolist():
                got = self.received_s.get(j)
                x = self.alloc.get(j)
                d = (np.zeros(ntypes) if x is None else x * el) - (np.zeros(ntypes) if got is None else got - half)
                self.deficit_s[j] = self.deficit_s.get(j, np.zeros(ntypes)) + d
        x = self.allocation(view, now, jobs, tput, sf, num)
        self.alloc = {j: x[i] for i, j in enumerate(jobs.tolist())}
        self.received_s = {j: np.full(ntypes, half) for j in jobs.tolist()}
        self.deficit_s = {j: self.deficit_s.get(j, np.zeros(ntypes)) for j in jobs.tolist()}
        self._jobset = frozenset(jobs.tolist())
        self._last_reset = now

    def decide(self, view: ClusterView, now: float) -> Decision:
        jobs = np.asarray(view.active(), np.int64)
        if self._last_t is not None:  # the last round's run time, per (job, type)
            dt = now - self._last_t
            for j, t in self._ran.items():
                if j in self.received_s:
                    self.received_s[j][t] += dt
        self._last_t = now
        tput, sf, num = job_matrix(view, jobs)
        ntypes = tput.shape[1]
        if frozenset(jobs.tolist()) != self._jobset and (
                self._last_reset is None or now - self._last_reset >= self.config.reset_interval_s):
            self._reset(view, now, jobs, tput, sf, num)
        z = np.zeros(ntypes)
        jl = jobs.tolist()
        x = np.array([self.alloc.get(j, z) for j in jl]).reshape(jobs.size, ntypes)
        got = np.array([self.received_s.get(j, z) for j in jl]).reshape(jobs.size, ntypes)
        dfc = np.array([self.deficit_s.get(j, z) for j in jl]).reshape(jobs.size, ntypes)
        best = tput / np.maximum(tput.max(axis=1, keepdims=True), 1e-300)
        type_order = np.argsort(-best.mean(axis=0), kind="stable") if jobs.size else np.arange(ntypes)
        chosen = round_schedule(priorities(x, got, tput), dfc, x, tput, sf, num.astype(np.int64), type_order)
        return self._apply(view, jobs, chosen, sf)

    def _apply(self, view: ClusterView, jobs: np.ndarray, chosen: np.ndarray, sf: np.ndarray) -> Decision:
        d, self._ran = apply_types(self, view, jobs, chosen, sf)
        return d


def apply_types(policy: BasePolicy, view: ClusterView, jobs: np.ndarray, chosen: np.ndarray,
                sf: np.ndarray) -> tuple[Decision, dict[int, int]]:
    """Realise "job j runs on type chosen[j] at sf[j] GPUs this round" (-1: not at all), as
    Gavel does and Themis' per-type auction outcome needs: running jobs selected on their
    current type at the same count keep their GPUs; the others are released; then the
    selected jobs are placed on their type, largest scale factor first, with the policy's
    `placement`. Returns (the decision, job → type it runs on)."""
    r = Round(view)
    c = view.cluster
    want = dict(zip(jobs.tolist(), chosen.tolist()))
    size = dict(zip(jobs.tolist(), sf.tolist()))
    last = view.jobs.last_gpu_type
    ran: dict[int, int] = {}
    for k in view.running().tolist():
        cur = int(last[k])  # a running job's type (-2: a mixed allocation, never kept)
        if want.get(k, -1) == cur and int(view.jobs.alloc_count[k]) == size.get(k) and r.keep(k):
            ran[k] = cur
            continue
        r.release(k)
    todo = [j for j, t in want.items() if t >= 0 and j not in ran]
    todo.sort(key=lambda j: -size[j])
    # usable GPUs per type, kept as jobs are placed: a job whose type has fewer left than it
    # needs is not tried (`placement.place` would return None before any search or draw)
    left = np.bincount(np.asarray(c.gpu_type, np.int64)[r.avail()], minlength=len(c.gpu_type_names)).tolist()
    for j in todo:
        t = want[j]
        if left[t] < size[j]:
            continue

        def placer(jj: int, avail: np.ndarray, t=t) -> np.ndarray | None:
            return P.place(c, avail, size[jj], gpu_type=t, strategy=policy.config.placement, rng=policy.rng)

        if r.place(j, placer) is not None:
            ran[j] = t
            left[t] -= size[j]  # `place` with gpu_type=t takes size[j] GPUs of type t
    return r.decision(), ran
