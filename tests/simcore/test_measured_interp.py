"""Table mode's 3-D interpolation without scipy (`simcore.measured_interp`) against scipy's
`LinearNDInterpolator` / `NearestNDInterpolator`, the peers' method: on the shipped Pollux/Sia
tables at every lookup the simulator can make, and on random point sets (hypothesis) with queries
inside, outside, on vertices, on edges and on faces of the simplices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from simcore.measured_interp import Triangulation
from simcore.perf_measured import MeasuredTables

scipy_interp = pytest.importorskip("scipy.interpolate")
QhullError = pytest.importorskip("scipy.spatial").QhullError


def _boundary_queries(tri: Triangulation, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Vertices, edge points and face points of random simplices (the exact boundaries)."""
    out = []
    for _ in range(n):
        s = tri.simplices[rng.integers(tri.simplices.shape[0])]
        k = rng.integers(1, 4)  # 1: a vertex, 2: an edge, 3: a face
        w = rng.dirichlet(np.ones(k)) if k > 1 else np.ones(1)
        w = np.round(w * 8) / 8 if rng.random() < 0.5 else w  # simple fractions: exactly on the boundary
        if w.sum() == 0:
            w = np.ones(k) / k
        out.append((w / w.sum()) @ tri.points[rng.choice(s, size=k, replace=False)])
    return out


def _check_against_scipy(points: np.ndarray, queries) -> None:
    """Each query, one per call as the simulator asks: inside the hull scipy's linear value (to
    rounding: a query on a shared face may take another simplex than scipy's walk only through
    rounding), outside it the nearest point — scipy's unless several are equally near."""
    values = np.column_stack([np.sin(points @ [0.3, 1.1, -0.7]) + 2.0, points[:, 0] * 0.5 + points[:, 2] ** 2])
    tri = Triangulation.build(points)
    lin = scipy_interp.LinearNDInterpolator(points, values)
    near = scipy_interp.NearestNDInterpolator(points, values)
    for q in queries:
        q = np.asarray(q, np.float64)
        want = lin(q[None, :])[0]
        got = tri.linear(q, values)
        if np.all(np.isfinite(want)):
            assert got is not None, q
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=str(q))
            continue
        assert got is None, q
        d2 = ((points - q) ** 2).sum(axis=1)
        i, (_, j) = tri.nearest(q), near.tree.query(q)
        assert d2[i] == d2.min() and np.isclose(d2[j], d2.min(), rtol=1e-12)
        if np.count_nonzero(d2 == d2.min()) == 1:
            assert np.array_equal(tri.interpolate(q, values), near(q[None, :])[0]), q


def test_shipped_tables_agree_with_scipy_at_every_lookup(shared_data, tmp_path, monkeypatch):
    """The (nodes, replicas, local batch) lookups table mode makes of the shipped sets, clamped as
    `MeasuredTable._interpolate` clamps, one point per call as the simulator calls: inside the
    hull bit-identical to scipy's `LinearNDInterpolator` (same simplex walk, same sums); outside,
    the nearest point at scipy's distance, and scipy's very point unless several are equally near
    (scipy's kd-tree then picks by its traversal order, ours the lowest index)."""
    monkeypatch.setenv("COSIM_MEASURED_CACHE_DIR", str(tmp_path))
    tables = MeasuredTables(shared_data / "profiles")
    inside = outside = ties = 0
    for platform in ("aws", "dgx", "rtx"):
        for model in tables.available(platform):
            t = tables.get(model, platform)
            lin = scipy_interp.LinearNDInterpolator(t.points, t.values)
            near = scipy_interp.NearestNDInterpolator(t.points, t.values)
            lo, hi = t._lbs
            lbs = sorted(set(np.linspace(lo, hi, 4).round().tolist()) | set(t.points[::23, 2].tolist()))
            for n in range(1, t._max_nodes + 1, 1 + t._max_nodes // 4):
                for r in range(n, t._max_reps + 1, 1 + (t._max_reps - n) // 4):
                    for b in lbs:
                        q = np.array([n, r, b], np.float64)
                        want = lin(q[None, :])[0]
                        got = t.tri.linear(q, t.values)
                        if np.all(np.isfinite(want)):
                            assert got is not None and np.array_equal(got, want), (model, platform, q, got, want)
                            inside += 1
                            continue
                        assert got is None, (model, platform, q)
                        outside += 1
                        d2 = ((t.points - q) ** 2).sum(axis=1)
                        i = t.tri.nearest(q)
                        _, j = near.tree.query(q)
                        assert d2[i] == d2[j] == d2.min()
                        if np.count_nonzero(d2 == d2.min()) > 1:
                            ties += 1
                        else:
                            assert np.array_equal(t.tri.interpolate(q, t.values), near(q[None, :])[0])
                    assert t._interpolate(n, r, b) == tuple(t.tri.interpolate(
                        [min(n, t._max_nodes), max(min(n, t._max_nodes), min(r, t._max_reps)), min(max(b, lo), hi)],
                        t.values).tolist())
    assert inside > 100 and outside > 20  # both branches exercised


points_3d = st.integers(5, 40).flatmap(lambda n: st.lists(
    st.tuples(*[st.floats(-10, 10, allow_nan=False, allow_infinity=False)] * 3), min_size=n, max_size=n, unique=True))
lattice_3d = st.integers(6, 40).flatmap(lambda n: st.lists(
    st.tuples(st.integers(1, 4), st.integers(1, 8), st.integers(1, 6)), min_size=n, max_size=n, unique=True))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pts=st.one_of(points_3d, lattice_3d), seed=st.integers(0, 2**31 - 1))
def test_random_point_sets_agree_with_scipy(pts, seed):
    """Random float and integer-lattice sets (the tables are lattices: degenerate, co-spherical
    configurations): queries on simplex boundaries, random inside/outside, and far outside."""
    points = np.array(pts, np.float64)
    try:
        scipy_interp.LinearNDInterpolator(points, np.zeros(len(points)))
    except QhullError:
        assume(False)  # qhull cannot triangulate (coplanar): scipy has no interpolant to compare
    tri = Triangulation.build(points)
    assume(tri.simplices.shape[0] > 0)
    rng = np.random.default_rng(seed)
    lo, hi = points.min(axis=0), points.max(axis=0)
    queries = _boundary_queries(tri, rng, 15)
    queries += list(rng.uniform(lo - 1.0, hi + 1.0, size=(15, 3)))  # inside and just outside the hull
    queries += [hi + 5.0, lo - 5.0, np.array([lo[0], hi[1], (lo[2] + hi[2]) / 2])]
    _check_against_scipy(points, queries)


def test_nearest_fallback_when_qhull_cannot_triangulate():
    """Coplanar points: no simplices (scipy's interpolant raises), every lookup is the nearest point."""
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float64)
    values = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
    tri = Triangulation.build(points)
    assert tri.simplices.shape[0] == 0 and tri.linear([0.2, 0.2, 0.0], values) is None
    assert tri.interpolate([0.9, 0.8, 5.0], values).tolist() == [4.0, 40.0]
    assert tri.nearest([0.5, 0.5, 0.0]) == 0  # a four-way tie: the lowest index


def test_exact_values_inside_one_simplex():
    """Hand-computed barycentric interpolation in the unit tetrahedron: v = 1 + x + 2y + 3z."""
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float64)
    values = (1 + points @ [1.0, 2.0, 3.0])[:, None]
    tri = Triangulation.build(points)
    assert tri.linear([0.25, 0.25, 0.25], values)[0] == pytest.approx(2.5, abs=1e-15)
    assert tri.linear([0.5, 0.5, 0.0], values)[0] == pytest.approx(2.5, abs=1e-15)  # on an edge
    assert tri.linear([0.6, 0.6, 0.0], values) is None  # outside: beyond the x + y + z = 1 face
    assert tri.interpolate([0.6, 0.6, 0.0], values)[0] == 2.0  # nearest: (1, 0, 0) (tie with (0, 1, 0) → lower index)


def test_stored_arrays_round_trip_and_reject_bad_shapes():
    rng = np.random.default_rng(3)
    points = rng.uniform(0, 5, size=(30, 3))
    tri = Triangulation.build(points)
    back = Triangulation.from_arrays(points, tri.to_arrays())
    values = rng.uniform(size=(30, 2))
    for q in rng.uniform(-1, 6, size=(20, 3)):
        a, b = tri.linear(q, values), back.linear(q, values)
        assert (a is None and b is None) or np.array_equal(a, b)
    bad = dict(tri.to_arrays(), tri_simplices=tri.simplices[:, :3])
    with pytest.raises(ValueError):
        Triangulation.from_arrays(points, bad)
    bad = dict(tri.to_arrays(), tri_simplices=tri.simplices + 100)
    with pytest.raises(ValueError):
        Triangulation.from_arrays(points, bad)
