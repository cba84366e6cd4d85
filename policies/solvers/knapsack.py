"""Multiple-choice knapsack (MCKP) by dynamic programming over integer weights.

Aryl (EuroSys'22) hands the GPUs left after its SJF phase to elastic jobs' extra workers:
one *group* per job, one *item* per possible number of extra workers (weight = GPUs,
value = the JCT reduction), at most one item per group, total weight ≤ capacity; the paper
solves it by DP (seeds/notes/aryl.md, "Phase 2"). `mckp` is that DP, with an "exactly one
item per group" variant for programs where every group must choose (a group may then hold
a zero-weight "keep as is" item).

The table is indexed by exact total weight (dp[c] = best value of a selection weighing
exactly c), so among selections of equal value the lightest is returned (Aryl's
tie-break: prefer the smaller total weight); within that, a group prefers taking nothing,
then its earlier item. Cost: O(items × capacity) numpy operations, memory groups ×
(capacity + 1) choice indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from policies.solvers.lp import SolveError


@dataclass(frozen=True)
class Knapsack:
    """The chosen item index per group (-1: none), the total value and the total weight."""

    choice: np.ndarray
    value: float
    weight: int


def _group(weights, values, g: int) -> tuple[np.ndarray, np.ndarray]:
    w = np.asarray(weights)
    v = np.asarray(values, float)
    if w.shape != v.shape or w.ndim != 1:
        raise ValueError(f"group {g}: weights and values must be 1-D arrays of the same length")
    if w.size and (not np.all(np.equal(np.mod(w, 1), 0)) or w.min() < 0):
        raise ValueError(f"group {g}: weights must be non-negative integers")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"group {g}: values must be finite")
    return w.astype(np.int64), v


def mckp(groups: Sequence[tuple[Sequence[int], Sequence[float]]], capacity: int, *,
         exactly_one: bool = False) -> Knapsack:
    """Maximise Σ value over ≤ 1 item per group (`exactly_one`: exactly 1), Σ weight ≤ capacity.

    `groups`: one (weights, values) pair of equal-length sequences per group; weights are
    non-negative integers. Raises `SolveError("infeasible")` when `exactly_one` and no
    selection fits.
    """
    cap = int(capacity)
    if cap < 0 or cap != capacity:
        raise ValueError("capacity must be a non-negative integer")
    items = [_group(w, v, g) for g, (w, v) in enumerate(groups)]
    most = max((w.size for w, _ in items), default=0)
    dtype = np.int8 if most < 127 else (np.int16 if most < 32_767 else np.int32)
    dp = np.full(cap + 1, -np.inf)
    dp[0] = 0.0
    choice = np.full((len(items), cap + 1), -1, dtype)
    for g, (w, v) in enumerate(items):
        new = np.full(cap + 1, -np.inf) if exactly_one else dp.copy()
        pick = choice[g]
        for k in range(w.size):
            wk = int(w[k])
            if wk > cap:
                continue
            cand = dp[: cap + 1 - wk] + v[k]
            better = cand > new[wk:]  # strict: ties keep "nothing" / the earlier item
            new[wk:][better] = cand[better]
            pick[wk:][better] = k
        dp = new
    best = float(dp.max())
    if not np.isfinite(best):
        raise SolveError("infeasible", "no selection with exactly one item per group fits the capacity")
    c = int(np.argmax(dp))  # first maximum: the lightest of the best selections
    out = np.full(len(items), -1, np.int64)
    weight = c
    for g in range(len(items) - 1, -1, -1):
        k = int(choice[g, c])
        out[g] = k
        if k >= 0:
            c -= int(items[g][0][k])
    return Knapsack(out, best, weight)
