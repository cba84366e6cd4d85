"""The solver kit against brute force on small random programs (hypothesis), and its failure statuses.

LPs: the optimum of a bounded LP is attained at a vertex, so enumerating every basis of
the hand-built dense system (rows + bounds) gives the reference value. MILPs, knapsacks
and assignments: every selection is enumerated.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.solvers import Model, SolveError, assign, mckp
from policies.solvers.lp import Expr

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _ints(draw, shape, lo, hi):
    return np.array(draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))),
                    float).reshape(shape)


def _vertex_optimum(c, g, h):
    """min c·x s.t. g·x ≤ h over a bounded polytope, by enumerating bases; None if empty."""
    n = c.size
    best = None
    for rows in itertools.combinations(range(g.shape[0]), n):
        a = g[list(rows)]
        if abs(np.linalg.det(a)) < 1e-9:
            continue
        x = np.linalg.solve(a, h[list(rows)])
        if np.all(g @ x <= h + 1e-7):
            v = float(c @ x)
            best = v if best is None else min(best, v)
    return best


@st.composite
def small_lp(draw):
    """x[J, T] in [0, u], z in [-5, 5]; per-job rows Σ_t a·x - z ≥ b, per-type rows Σ_j w·x ≤ cap."""
    j, t = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    return dict(u=_ints(draw, (j, t), 1, 3), a=_ints(draw, (j, t), -2, 3), b=_ints(draw, (j,), -2, 2),
                w=_ints(draw, (j, t), 0, 3), cap=_ints(draw, (t,), 0, 4), cx=_ints(draw, (j, t), -3, 3),
                cz=float(draw(st.integers(-2, 2))), maximize=draw(st.booleans()))


@SETTINGS
@given(small_lp())
def test_lp_matches_vertex_enumeration(p):
    j, t = p["u"].shape
    m = Model()
    x = m.var("x", (j, t), ub=p["u"])
    z = m.var("z", lb=-5, ub=5)
    m.add(x.sum(axis=1, coef=p["a"]) - z.sum() >= p["b"])
    m.add(x.sum(axis=0, coef=p["w"]) <= p["cap"])
    obj = x.sum(coef=p["cx"]) + p["cz"] * z.sum() + 1.5
    (m.maximize if p["maximize"] else m.minimize)(obj)
    sol = m.solve(check=False)
    # the same program written densely by hand: variables (x row-major, z); g·v ≤ h
    n = j * t + 1
    g, h = [], []
    for jj in range(j):
        row = np.zeros(n)
        row[jj * t:(jj + 1) * t] = -p["a"][jj]
        row[-1] = 1.0
        g.append(row), h.append(-p["b"][jj])
    for tt in range(t):
        row = np.zeros(n)
        row[tt:j * t:t] = p["w"][:, tt]
        g.append(row), h.append(p["cap"][tt])
    ub = np.concatenate([p["u"].ravel(), [5.0]])
    lb = np.concatenate([np.zeros(j * t), [-5.0]])
    g += list(np.eye(n)) + list(-np.eye(n))
    h += list(ub) + list(-lb)
    c = np.concatenate([p["cx"].ravel(), [p["cz"]]]) * (-1 if p["maximize"] else 1)
    ref = _vertex_optimum(c, np.array(g), np.array(h))
    if ref is None:
        assert sol.status == "infeasible"
        return
    assert sol.status == "optimal"
    want = (-ref if p["maximize"] else ref) + 1.5
    assert sol.objective == pytest.approx(want, abs=1e-6)
    v = np.concatenate([sol["x"].ravel(), [float(sol["z"])]])
    assert np.all(np.array(g) @ v <= np.array(h) + 1e-6)  # the returned point is feasible
    assert float(c @ v) * (-1 if p["maximize"] else 1) + 1.5 == pytest.approx(sol.objective, abs=1e-6)


@st.composite
def small_milp(draw):
    """FFT's shape: binary x[J, T] with a mask, ≤ 1 type per job, d-weighted capacity per
    type, a lower bound on GPUs used, plus an integer y in [0, 3] in the objective."""
    j, t = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    d = _ints(draw, (j,), 1, 4)
    return dict(mask=_ints(draw, (j, t), 0, 1) > 0, d=d, cap=_ints(draw, (t,), 0, 6),
                k=float(draw(st.integers(0, 6))), cost=_ints(draw, (j, t), -5, 5), cy=float(draw(st.integers(-2, 2))))


@SETTINGS
@given(small_milp())
def test_milp_matches_enumeration(p):
    j, t = p["mask"].shape
    d = p["d"]
    m = Model()
    x = m.binary("x", (j, t), ub=p["mask"])
    y = m.var("y", lb=0, ub=3, integer=True)
    m.add(x.sum(axis=1) <= 1)
    m.add(x.sum(axis=0, coef=d[:, None]) <= p["cap"])
    m.add(x.sum(coef=d[:, None]) + y.sum() >= p["k"])
    m.minimize(x.sum(coef=p["cost"]) + p["cy"] * y.sum())
    sol = m.solve(check=False)
    best = None
    for bits in itertools.product((0, 1), repeat=j * t):
        xv = np.array(bits, float).reshape(j, t)
        if np.any(xv[~p["mask"]]) or np.any(xv.sum(1) > 1) or np.any((d[:, None] * xv).sum(0) > p["cap"]):
            continue
        for yv in range(4):
            if (d[:, None] * xv).sum() + yv >= p["k"]:
                v = float((p["cost"] * xv).sum() + p["cy"] * yv)
                best = v if best is None else min(best, v)
    if best is None:
        assert sol.status == "infeasible"
        with pytest.raises(SolveError, match="infeasible"):
            m.solve()
        return
    assert sol.status == "optimal" and sol.objective == pytest.approx(best, abs=1e-6)
    xv = sol["x"]
    assert np.allclose(xv, np.round(xv)) and not np.any(xv[~p["mask"]] > 0.5)


def test_gavel_max_min_hand_example():
    """Two jobs, two types, one GPU each: job 0 runs 2× faster on type 1, job 1 equally on
    both. Max-min of throughput normalised by the equal-share throughput (Gavel §4.1):
    job 1's ratio x10 + x11 can never exceed 1 (it holds at most one GPU-round), job 0 gets
    ratio 4/3 from type 1 alone, so the optimum is z = 1 with job 1 on type 0 in full."""
    theta = np.array([[1.0, 2.0], [1.0, 1.0]])
    equal = theta.mean(axis=1)  # time share 1/2 of each type: 1.5 and 1.0
    m = Model()
    x = m.var("x", (2, 2), ub=1)
    z = m.var("z", lb=-np.inf)
    m.add(x.sum(axis=1) <= 1)
    m.add(x.sum(axis=0) <= 1)
    m.add(x.sum(axis=1, coef=theta / equal[:, None]) >= z.sum())
    m.maximize(z.sum())
    sol = m.solve()
    assert sol.objective == pytest.approx(1.0, abs=1e-9)
    ratios = (sol["x"] * theta).sum(axis=1) / equal
    assert ratios.min() == pytest.approx(1.0, abs=1e-9) and ratios[0] >= 1.0 - 1e-9


def test_failure_statuses():
    m = Model()
    x = m.var("x", 2)
    m.add(x.sum() >= 3)
    m.add(x.sum() <= 1)
    m.minimize(x.sum())
    assert m.solve(check=False).status == "infeasible"
    with pytest.raises(SolveError, match="^infeasible"):
        m.solve()
    m = Model()
    x = m.var("x", 2, lb=-np.inf)
    m.minimize(x.sum())
    assert m.solve(check=False).status == "unbounded"
    with pytest.raises(SolveError, match="unbounded"):
        m.solve()
    m = Model()  # integer and unbounded: HiGHS' presolve reports "infeasible or unbounded"
    x = m.var("x", 2, lb=-np.inf, integer=True)
    m.minimize(x.sum())
    assert "unbounded" in m.solve(check=False).status
    m = Model()
    m.var("x", 3, lb=[0, 2, 0], ub=[1, 1, 1])
    with pytest.raises(SolveError, match=r"infeasible: variable x\[1\]: lb > ub"):
        m.solve()


def test_builder_shapes_and_errors():
    m = Model()
    x = m.var("x", (3, 2))
    m.add(x.sum(axis=0, coef=np.array([[1.0], [2.0], [0.0]])) <= [5, 6])
    m.add(x.each() >= 0.5)
    a, lo, hi = m.matrix()
    assert a.shape == (2 + 6, 6)
    np.testing.assert_array_equal(a[:2].toarray(), [[1, 0, 2, 0, 0, 0], [0, 1, 0, 2, 0, 0]])  # zeros dropped
    np.testing.assert_array_equal(hi[:2], [5, 6])
    assert np.all(np.isinf(lo[:2])) and np.all(lo[2:] == 0.5)
    with pytest.raises(ValueError, match="3 rows"):
        x.sum(axis=1) + x.sum(axis=0)
    with pytest.raises(ValueError, match="declared twice"):
        m.var("x", 1)
    with pytest.raises(TypeError, match="comparison"):
        m.add(x.sum())


def _mckp_brute(groups, cap, exactly_one):
    options = [range(len(w)) if exactly_one else range(-1, len(w)) for w, _ in groups]
    best = None
    for pick in itertools.product(*options):
        wt = sum(groups[g][0][k] for g, k in enumerate(pick) if k >= 0)
        val = sum(groups[g][1][k] for g, k in enumerate(pick) if k >= 0)
        if wt <= cap and (best is None or val > best[0] or (val == best[0] and wt < best[1])):
            best = (val, wt)
    return best


@SETTINGS
@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(-2, 10)), max_size=3), min_size=0, max_size=4),
       st.integers(0, 12), st.booleans())
def test_mckp_matches_enumeration(raw, cap, exactly_one):
    groups = [([w for w, _ in g], [float(v) for _, v in g]) for g in raw]
    ref = _mckp_brute(groups, cap, exactly_one)
    if ref is None:
        with pytest.raises(SolveError, match="infeasible"):
            mckp(groups, cap, exactly_one=exactly_one)
        return
    out = mckp(groups, cap, exactly_one=exactly_one)
    assert out.value == ref[0] and out.weight == ref[1]  # best value, lightest among the best
    assert (out.choice >= 0).all() or not exactly_one
    wt = sum(groups[g][0][k] for g, k in enumerate(out.choice) if k >= 0)
    val = sum(groups[g][1][k] for g, k in enumerate(out.choice) if k >= 0)
    assert (wt, val) == (out.weight, out.value) and wt <= cap


def test_mckp_aryl_figure6():
    """Aryl Fig. 6 (seeds/notes/aryl.md): A has one item (2 GPUs, value 50), B items w = 1..4
    (1..4 GPUs, values 20, 30, 36, 40). With 4 spare GPUs: A + B's 2-GPU item = 80."""
    out = mckp([([2], [50.0]), ([1, 2, 3, 4], [20.0, 30.0, 36.0, 40.0])], 4)
    assert out.value == 80.0 and list(out.choice) == [0, 1] and out.weight == 4
    with pytest.raises(ValueError, match="non-negative integers"):
        mckp([([1.5], [1.0])], 3)


def _assign_brute(c, forb, complete):
    n, m = c.shape
    best = None
    for k in range(min(n, m) + 1):
        if complete and k < min(n, m):
            continue
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.permutations(range(m), k):
                if any(forb[r, q] for r, q in zip(rows, cols)):
                    continue
                v = sum(c[r, q] for r, q in zip(rows, cols))
                best = v if best is None else min(best, v)
    return best


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.data(), st.booleans(), st.booleans())
def test_assignment_matches_enumeration(n, m, data, complete, maximize):
    c = _ints(data.draw, (n, m), -5, 9)
    forb = _ints(data.draw, (n, m), 0, 3) == 0  # about a quarter forbidden
    ref = _assign_brute(-c if maximize else c, forb, complete)
    if ref is None:
        with pytest.raises(SolveError, match="infeasible"):
            assign(c, forb, complete=complete, maximize=maximize)
        return
    out = assign(c, forb, complete=complete, maximize=maximize)
    assert out.cost == pytest.approx(-ref if maximize else ref)
    assert not forb[out.rows, out.cols].any()
    assert len(set(out.rows)) == out.rows.size and len(set(out.cols)) == out.cols.size
    if complete:
        assert out.rows.size == min(n, m)
    col = out.col_of(n)
    assert all(col[r] == q for r, q in zip(out.rows, out.cols))


@SETTINGS
@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.floats(-5.0, 1e4, allow_nan=False)), max_size=5),
                min_size=1, max_size=6), st.integers(0, 8), st.booleans())
def test_mckp_every_item_fits_shortcut_equals_the_dp(raw, extra_cap, near_tie):
    """With capacity ≥ every group's heaviest item together, `mckp_flat` takes each group's best
    item without the DP (`_all_fit`); the choice, value (bit for bit) and weight are the DP's,
    and near-ties fall back to the DP."""
    from policies.solvers.knapsack import _all_fit, _dp, mckp_flat

    if near_tie and raw[0]:
        raw[0].append((raw[0][0][0] + 1, raw[0][0][1]))  # a tie in group 0: the DP decides
    sizes = [len(g) for g in raw]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    w = np.array([x for g in raw for x, _ in g], np.int64)
    v = np.array([y for g in raw for _, y in g], float)
    cap = int(sum(max((x for x, _ in g), default=0) for g in raw)) + extra_cap
    out = mckp_flat(offs, w, v, cap)
    choice = np.full((len(raw), cap + 1), -1, np.int32)
    ref, best, weight = _dp(offs, w, v, cap, False, choice)
    assert out.choice.tolist() == ref.tolist() and out.value == best and out.weight == weight
    ok = _all_fit(offs, w, v)[0]
    if near_tie and raw[0] and max(y for _, y in raw[0]) == raw[0][0][1] and raw[0][0][1] > 0:
        assert not ok


@SETTINGS
@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.floats(-5.0, 1e4, allow_nan=False)), max_size=5),
                min_size=1, max_size=6), st.integers(2, 20), st.integers(0, 60), st.booleans())
def test_mckp_common_weight_factor_equals_the_full_dp(raw, factor, cap, exactly_one):
    """Weights sharing a factor run the DP on a table that many times smaller (`mckp_flat`); the
    choice, value (bit for bit) and weight equal the DP on the full table, near-ties included."""
    from policies.solvers.knapsack import _dp, mckp_flat

    raw.append([(raw[0][0][0], raw[0][0][1])] if raw[0] else [])  # an exact tie across groups
    sizes = [len(g) for g in raw]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    w = np.array([x * factor for g in raw for x, _ in g], np.int64)
    v = np.array([y for g in raw for _, y in g], float)
    choice = np.full((len(raw), cap + 1), -1, np.int32)
    ref, best, weight = _dp(offs, w, v, cap, exactly_one, choice)
    if not np.isfinite(best):
        with pytest.raises(SolveError, match="infeasible"):
            mckp_flat(offs, w, v, cap, exactly_one=exactly_one)
        return
    out = mckp_flat(offs, w, v, cap, exactly_one=exactly_one)
    assert out.choice.tolist() == ref.tolist() and out.value == best and out.weight == weight


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 100_000))
def test_direct_highs_is_linprogs_run(seed):
    """Continuous models go to HiGHS through scipy's bundled binding (`lp._highs_direct`) with
    linprog's program and options: the same run, so bit-identical x and the same status as
    `scipy.optimize.linprog(method="highs")` on random LPs (≤, ≥ and equality rows, free and
    bounded columns; some infeasible or unbounded)."""
    from scipy.optimize import linprog

    from policies.solvers import lp as L

    rng = np.random.default_rng(seed)
    n, m_up, m_lo, m_eq = int(rng.integers(1, 30)), int(rng.integers(0, 12)), int(rng.integers(0, 12)), \
        int(rng.integers(0, 3))
    dense = lambda k: rng.normal(size=(k, n)) * (rng.random((k, n)) < 0.5)
    a_up, a_lo, a_eq = dense(m_up), dense(m_lo), dense(m_eq)
    b_up, b_lo = rng.uniform(0, 5, m_up), rng.uniform(-5, 1, m_lo)
    b_eq = a_eq @ rng.uniform(0, 1, n) if rng.random() < 0.8 else rng.normal(size=m_eq)
    lb = np.where(rng.random(n) < 0.2, -np.inf, 0.0)
    ub = np.where(rng.random(n) < 0.5, np.inf, rng.uniform(1, 3, n))
    c = rng.normal(size=n)
    import scipy.sparse as sp

    a = sp.csr_matrix(np.vstack([a_up, a_lo, a_eq]).reshape(-1, n))
    rlb = np.concatenate([np.full(m_up, -np.inf), b_lo, b_eq])
    rub = np.concatenate([b_up, np.full(m_lo, np.inf), b_eq])
    got = L._linprog(c, a, rlb, rub, lb, ub, {"disp": False})
    kw = {}
    a_ub = np.vstack([a_up, -a_lo]).reshape(-1, n)
    if a_ub.shape[0]:
        kw.update(A_ub=a_ub, b_ub=np.concatenate([b_up, -b_lo]))
    if m_eq:
        kw.update(A_eq=a_eq, b_eq=b_eq)
    ref = linprog(c, bounds=np.column_stack([lb, ub]), method="highs", options={"disp": False}, **kw)
    assert got.status == ref.status or {got.status, ref.status} == {4}
    if ref.status == 0:
        assert np.array_equal(got.x, ref.x)
    else:
        assert got.x is None


def test_lp_options_reach_highs():
    """`Model.solve(lp_options=...)`: a HiGHS option set through it changes the run (an
    iteration limit of 0 stops before the optimum: no solution), an unknown name is an error."""
    m = Model()
    x = m.var("x", 3, ub=1.0)
    m.add(x.sum() <= 2.0)
    m.maximize(x.sum(coef=[1.0, 2.0, 3.0]))
    assert m.solve().objective == pytest.approx(5.0)
    assert m.solve(lp_options={"presolve": "off"}).objective == pytest.approx(5.0)
    assert m.solve(lp_options={"presolve": "off", "simplex_iteration_limit": 0}, check=False).status == "limit"
    with pytest.raises(ValueError, match="no_such_option"):
        m.solve(lp_options={"no_such_option": 1})


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_resolvable_equals_a_fresh_model_after_changes(seed):
    """`Model.resolvable`: after changing a column's coefficients (some to 0, some zero entries
    to nonzero) and some rows' bounds, re-solving from the last basis gives the optimum of a
    fresh model of the changed program."""
    rng = np.random.default_rng(seed)
    J, T = int(rng.integers(2, 10)), int(rng.integers(2, 4))
    U = rng.uniform(0.1, 1.0, (J, T))
    cap = rng.uniform(1.0, 4.0, T)

    def build(e, r):
        m = Model()
        x = m.var("x", (J, T), ub=1.0)
        z = m.var("z", 1, lb=-10.0)
        m.add(x.sum(axis=1) <= 1.0)
        m.add(x.sum(axis=0) <= cap)
        rows = m.add(x.sum(axis=1, coef=U) + Expr(J, np.arange(J), np.full(J, z.start), e) >= r)
        m.minimize(z.sum())
        return m, z, rows

    e0, r0 = rng.uniform(0.1, 1.0, J), rng.uniform(0.0, 0.5, J)
    e1, r1 = e0 * rng.uniform(0.5, 2.0, J), rng.uniform(0.0, 0.5, J)
    e1[0] = 0.0  # an entry removed
    m, z, rows = build(e0, r0)
    live = m.resolvable({"presolve": "off"})
    assert live.solve().objective == pytest.approx(m.solve().objective, abs=1e-9)
    idx = np.arange(rows.start, rows.stop)
    live.set_coefficients(idx, z.start, e1)
    live.set_row_bounds(idx, r1, np.inf)
    got = live.solve(check=False)
    want = build(e1, r1)[0].solve(check=False)
    assert got.status == want.status
    if want.status == "optimal":
        assert got.objective == pytest.approx(want.objective, abs=1e-9)


def test_a_scipy_without_the_highs_binding_is_named_in_one_line(monkeypatch):
    """The LP path has no fallback: a scipy whose private HiGHS binding is missing is an
    installation error naming the scipy range, not a silently slower second solver."""
    import scipy.optimize._highspy as pkg

    from policies.solvers import lp as L

    monkeypatch.setattr(pkg, "_core", None)  # as a scipy without the binding
    with pytest.raises(ImportError, match=r"scipy >= 1\.15, < 1\.18"):
        L._highs_core()

