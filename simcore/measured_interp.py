"""Piecewise-linear interpolation over a Delaunay triangulation, in numpy: the 3-D lookup of table mode.

`simcore.perf_measured` interpolates an unmeasured placement's step time over (num_nodes,
num_replicas, local_bsz) the way the Pollux/Sia simulators do with scipy's
`LinearNDInterpolator` (Delaunay triangulation + barycentric weights), falling back to the nearest
measured point outside the hull (`NearestNDInterpolator`). Importing `scipy.interpolate` costs
0.3-0.8 s and building the two interpolants per table another 0.1-0.2 s on every `cosim simulate`,
for a handful of lookups. So the triangulation is computed once, when a table is first read
(`Triangulation.build`, qhull through `scipy.spatial.Delaunay`, the same triangulation
`LinearNDInterpolator` builds), stored with the table in the on-disk cache
(`simcore.measured_cache`), and every lookup runs here without scipy:

- **point location** is scipy's own algorithm (`scipy/spatial/_qhull.pyx`, `_find_simplex`):
  bounding-box test, a walk over the neighbours towards a facet of the lifted (paraboloid) hull
  with a positive plane distance, a directed walk by barycentric coordinates, and the brute-force
  scan over all simplices when the walk fails; tolerances `eps = 100 · DBL_EPSILON`,
  `eps_broad = sqrt(DBL_EPSILON)` as scipy's. Following the same walk matters: a query on a face
  shared by two simplices (integer placements on integer measured points often are) then takes
  the same simplex, and the same arithmetic order gives the same bits, so a run's outputs do not
  depend on which implementation computed them;
- **value**: `Σ_j c_j · v[simplex_j]` with the barycentric coordinates `c` from the simplex's
  stored affine transform (scipy's `Delaunay.transform`), summed in scipy's order;
- **outside the hull** (no simplex): the nearest measured point, Euclidean; an exact tie takes the
  lowest point index (scipy's kd-tree picks by its traversal order; `tests/simcore/
  test_measured_interp.py` checks the real tables agree).

A point set qhull cannot triangulate (fewer than 4 points, or all coplanar) has no simplices: every
lookup takes the nearest point (scipy's interpolant raises there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EPS = 100.0 * np.finfo(np.float64).eps  # scipy's `_find_simplex` tolerances
EPS_BROAD = math.sqrt(np.finfo(np.float64).eps)

#: arrays a triangulation is stored as (`to_arrays` / `from_arrays`), with their dtypes
FIELDS = {"tri_simplices": np.int32, "tri_neighbors": np.int32, "tri_transform": np.float64,
          "tri_equations": np.float64, "tri_paraboloid": np.float64}


@dataclass(frozen=True)
class Triangulation:
    """A Delaunay triangulation of `points` (float64[k, d]) with what locating a point needs:
    per simplex its vertices, neighbours (-1: hull facet; the k-th is opposite the k-th vertex),
    barycentric transform (float64[m, d+1, d]: the inverse of T in [:d], the last vertex r in [d];
    NaN for a degenerate simplex) and lifted-hull plane equation (float64[m, d+2])."""

    points: np.ndarray
    simplices: np.ndarray
    neighbors: np.ndarray
    transform: np.ndarray
    equations: np.ndarray
    paraboloid_scale: float
    paraboloid_shift: float

    def __post_init__(self) -> None:
        pts = self.points
        object.__setattr__(self, "_min", pts.min(axis=0).tolist() if pts.shape[0] else [])
        object.__setattr__(self, "_max", pts.max(axis=0).tolist() if pts.shape[0] else [])

    @classmethod
    def build(cls, points: np.ndarray) -> Triangulation:
        """Triangulate `points` with qhull (`scipy.spatial.Delaunay`, the options
        `LinearNDInterpolator` uses); imports scipy, so it runs when a table is first cached."""
        from scipy.spatial import Delaunay, QhullError

        pts = np.ascontiguousarray(points, dtype=np.float64)
        d = pts.shape[1]
        try:
            tri = Delaunay(pts)
        except (QhullError, ValueError):  # too few or coplanar points: nearest point only
            return cls(pts, np.zeros((0, d + 1), np.int32), np.zeros((0, d + 1), np.int32),
                       np.zeros((0, d + 1, d)), np.zeros((0, d + 2)), 1.0, 0.0)
        return cls(pts, tri.simplices.astype(np.int32), tri.neighbors.astype(np.int32),
                   np.ascontiguousarray(tri.transform, np.float64), np.ascontiguousarray(tri.equations, np.float64),
                   float(tri.paraboloid_scale), float(tri.paraboloid_shift))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"tri_simplices": self.simplices, "tri_neighbors": self.neighbors, "tri_transform": self.transform,
                "tri_equations": self.equations,
                "tri_paraboloid": np.array([self.paraboloid_scale, self.paraboloid_shift], np.float64)}

    @classmethod
    def from_arrays(cls, points: np.ndarray, arrays: dict[str, np.ndarray]) -> Triangulation:
        """The triangulation stored by `to_arrays` (shapes checked: a mismatch is a `ValueError`,
        which the cache treats as a corrupt entry)."""
        pts = np.asarray(points, np.float64)
        k, d = pts.shape
        sx, nb = arrays["tri_simplices"], arrays["tri_neighbors"]
        tr, eq, par = arrays["tri_transform"], arrays["tri_equations"], arrays["tri_paraboloid"]
        m = sx.shape[0]
        if (sx.shape != (m, d + 1) or nb.shape != (m, d + 1) or tr.shape != (m, d + 1, d) or eq.shape != (m, d + 2)
                or par.shape != (2,) or (m and (sx.min() < 0 or sx.max() >= k or nb.min() < -1 or nb.max() >= m))):
            raise ValueError("stored triangulation does not match its points")
        return cls(pts, sx, nb, tr, eq, float(par[0]), float(par[1]))

    # ---- point location (scipy's `_find_simplex`, see the module docstring) -------------------

    def _outside_box(self, x: list[float]) -> bool:
        return any(xi < lo - EPS or xi > hi + EPS for xi, lo, hi in zip(x, self._min, self._max))

    def _coords(self, s: int, x: list[float]) -> list[float]:
        """Barycentric coordinates of `x` in simplex `s`, in scipy's arithmetic order."""
        t = self.transform[s].tolist()
        d = len(x)
        r = t[d]
        c = [0.0] * (d + 1)
        last = 1.0
        for i in range(d):
            ci = 0.0
            row = t[i]
            for j in range(d):
                ci += row[j] * (x[j] - r[j])
            c[i] = ci
            last -= ci
        c[d] = last
        return c

    def _distplane(self, s: int, z: list[float]) -> float:
        e = self.equations[s].tolist()
        dist = e[-1]
        for k in range(len(z)):
            dist += e[k] * z[k]
        return dist

    def find_simplex(self, point) -> int:
        """Index of a simplex holding `point` (within `EPS`), or -1 when it is outside the hull."""
        x = [float(v) for v in point]
        if self.simplices.shape[0] == 0 or self._outside_box(x):
            return -1
        d = len(x)
        lifted = 0.0
        for v in x:
            lifted += v ** 2
        z = x + [lifted * self.paraboloid_scale + self.paraboloid_shift]
        s = 0
        best = self._distplane(s, z)
        changed = True
        while changed and not best > 0:  # walk towards a facet the lifted point is above
            changed = False
            for k in range(d + 1):
                nb = int(self.neighbors[s, k])
                if nb == -1:
                    continue
                dist = self._distplane(nb, z)
                if dist > best + EPS * (1.0 + abs(best)):
                    s, best, changed = nb, dist, True
        return self._directed(s, x)

    def _directed(self, s: int, x: list[float]) -> int:
        d = len(x)
        for _ in range(1 + self.simplices.shape[0] // 4):
            c = self._coords(s, x)
            inside = 1
            for k in range(d + 1):
                if c[k] < -EPS:  # the point lies beyond face k
                    nb = int(self.neighbors[s, k])
                    if nb == -1:
                        return -1  # beyond a hull facet: outside (the hull is convex)
                    s, inside = nb, -1
                    break
                if not c[k] <= 1.0 + EPS:  # > 1 + eps, or NaN (degenerate simplex)
                    inside = 0
            if inside == 1:
                return s
            if inside == 0:
                return self._brute_force(x)
        return self._brute_force(x)

    def _brute_force(self, x: list[float]) -> int:
        """The first simplex holding `x` (scipy's `_find_simplex_bruteforce`), all simplices at
        once: the coordinates are computed with scipy's operations in scipy's order, so the same
        simplices pass the same tolerance test."""
        if self._outside_box(x):
            return -1
        d = len(x)
        t = self.transform
        c = np.empty((t.shape[0], d + 1))
        last = np.ones(t.shape[0])
        for i in range(d):
            ci = np.zeros(t.shape[0])
            for j in range(d):
                ci = ci + t[:, i, j] * (x[j] - t[:, d, j])
            c[:, i] = ci
            last = last - ci
        c[:, d] = last
        ok = np.all((c >= -EPS) & (c <= 1.0 + EPS), axis=1)
        m = t.shape[0]
        first_ok = int(np.argmax(ok)) if ok.any() else m
        bad = np.flatnonzero(np.isnan(t[:first_ok, 0, 0]))
        if bad.size:  # degenerate simplices before it: scipy accepts a neighbour (in order) that holds
            nbs = self.neighbors[bad]  # the point with leeway towards the degenerate one
            safe = np.where(nbs >= 0, nbs, 0)
            usable = (nbs >= 0) & ~np.isnan(t[safe, 0, 0])
            low = np.where(self.neighbors[safe] == bad[:, None, None], -EPS_BROAD, -EPS)
            cn = c[safe]
            hit = usable & np.all((cn >= low) & (cn <= 1.0 + EPS), axis=2)
            rows = np.flatnonzero(hit.any(axis=1))
            if rows.size:
                r = int(rows[0])
                return int(nbs[r, int(np.argmax(hit[r]))])
        return first_ok if first_ok < m else -1

    # ---- values --------------------------------------------------------------------------------

    def linear(self, point, values: np.ndarray) -> np.ndarray | None:
        """The piecewise-linear interpolant of `values` (float64[k, n]) at `point`, or None outside
        the hull (where scipy's `LinearNDInterpolator` gives NaN)."""
        s = self.find_simplex(point)
        if s < 0:
            return None
        c = self._coords(s, [float(v) for v in point])
        out = [0.0] * values.shape[1]
        for j, vertex in enumerate(self.simplices[s].tolist()):
            row = values[vertex]
            for k in range(len(out)):
                out[k] += c[j] * float(row[k])
        return np.array(out, np.float64)

    def nearest(self, point) -> int:
        """Index of the measured point nearest to `point` (Euclidean; ties: the lowest index)."""
        q = np.asarray(point, np.float64)
        return int(np.argmin(((self.points - q) ** 2).sum(axis=1)))

    def interpolate(self, point, values: np.ndarray) -> np.ndarray:
        """Linear inside the hull, else the nearest measured point's values (table mode's rule)."""
        v = self.linear(point, values)
        if v is None or not np.all(np.isfinite(v)):
            return np.asarray(values[self.nearest(point)], np.float64)
        return v
