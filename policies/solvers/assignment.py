"""Min-cost assignment on a rectangular cost matrix with forbidden pairs.

AlloX (EuroSys'20) schedules by a min-cost bipartite matching of jobs to (machine,
position) slots (seeds/notes/ares.md, baselines). This wraps
`scipy.optimize.linear_sum_assignment` (a shortest-augmenting-path algorithm, Crouse
2016, exact, O(n³)); forbidden pairs get an infinite cost, which scipy never assigns.

- `complete=True`: every row is matched when rows ≤ columns, every column otherwise
  (the classic rectangular problem); `SolveError("infeasible")` when forbidden pairs
  leave no such matching.
- `complete=False`: any matching, of least total cost (a pair costing more than leaving
  both sides unmatched, i.e. > 0, is never taken): each row also gets a private dummy
  column at cost 0, so the problem stays a square-enough assignment for scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.solvers.lp import SolveError


@dataclass(frozen=True)
class Assignment:
    """Matched pairs (rows[i], cols[i]) in row order, and their total cost."""

    rows: np.ndarray
    cols: np.ndarray
    cost: float

    def col_of(self, num_rows: int) -> np.ndarray:
        """Column of each row, -1 where the row is unmatched."""
        out = np.full(num_rows, -1, np.int64)
        out[self.rows] = self.cols
        return out


def assign(cost, forbidden=None, *, maximize: bool = False, complete: bool = True) -> Assignment:
    """Least-cost (`maximize`: greatest) matching of rows to columns; see the module docstring.

    `cost`: (n, m) finite numbers; `forbidden`: (n, m) booleans, True where a pair may not
    be matched (None: all allowed).
    """
    c = np.array(cost, float, ndmin=2)
    if c.ndim != 2:
        raise ValueError("cost must be a 2-D matrix")
    if not np.all(np.isfinite(c)):
        raise ValueError("cost must be finite (mark impossible pairs in `forbidden`)")
    n, m = c.shape
    work = -c if maximize else c.copy()
    if forbidden is not None:
        f = np.asarray(forbidden, bool)
        if f.shape != c.shape:
            raise ValueError(f"forbidden has shape {f.shape}, cost has {c.shape}")
        work[f] = np.inf
    if n == 0 or m == 0:
        return Assignment(np.zeros(0, np.int64), np.zeros(0, np.int64), 0.0)
    if not complete:
        dummy = np.full((n, n), np.inf)
        np.fill_diagonal(dummy, 0.0)
        work = np.hstack([work, dummy])
    from scipy.optimize import linear_sum_assignment  # on use: scipy.optimize loads scipy.linalg

    try:
        r, k = linear_sum_assignment(work)
    except ValueError as exc:  # "cost matrix is infeasible"
        raise SolveError("infeasible", f"no {'complete ' if complete else ''}assignment avoids the forbidden pairs "
                         f"({exc})") from None
    real = k < m
    r, k = r[real].astype(np.int64), k[real].astype(np.int64)
    return Assignment(r, k, float(c[r, k].sum()))
