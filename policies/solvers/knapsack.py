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
then its earlier item. Cost: O(items × capacity) in one numba kernel (`_dp`; Aryl solves it
every scheduling round, so the per-group numpy calls of a plain loop dominated its rounds),
memory groups × (capacity + 1) choice indices. When the capacity holds every group's heaviest
item together (Aryl's rounds with spare GPUs), each group takes its best item outright
(`_all_fit`, O(items)) unless near-ties make the DP's tie-breaks matter. Weights with a common
factor g run the DP on weights/g and capacity//g: the same selection on a g-times smaller table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

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
    ws, vs = [], []
    for g, (w, v) in enumerate(groups):
        w, v = np.asarray(w), np.asarray(v, float)
        if w.shape != v.shape or w.ndim != 1:
            _group(w, v, g)  # raises the group's error
        ws.append(w)
        vs.append(v)
    sizes = np.fromiter((w.size for w in ws), np.int64, len(ws))
    offs = np.zeros(len(ws) + 1, np.int64)
    np.cumsum(sizes, out=offs[1:])
    w_all = np.concatenate(ws) if ws else np.zeros(0)
    v_all = np.concatenate(vs).astype(float) if vs else np.zeros(0)
    if w_all.size and (not np.all(np.equal(np.mod(w_all, 1), 0)) or w_all.min() < 0
                       or not np.all(np.isfinite(v_all))):
        for g, (w, v) in enumerate(zip(ws, vs)):
            _group(w, v, g)  # the first bad group raises its error
    return mckp_flat(offs, w_all.astype(np.int64), v_all, cap, exactly_one=exactly_one)


def mckp_flat(offs: np.ndarray, weights: np.ndarray, values: np.ndarray, capacity: int, *,
              exactly_one: bool = False) -> Knapsack:
    """`mckp` on groups already flattened: group g's items are weights/values[offs[g]:offs[g + 1]]
    (int64 non-negative weights, finite float values: not checked again here)."""
    cap = int(capacity)
    sizes = np.diff(offs)
    if weights.shape[0]:  # no selection weighs more than every group's heaviest item together
        starts = np.asarray(offs[:-1], np.int64)[sizes > 0]
        heaviest = int(np.maximum.reduceat(np.asarray(weights, np.int64), starts).sum())
        if cap >= heaviest and not exactly_one and sizes.shape[0] < 1_000_000:
            ok, out, best, weight = _all_fit(np.asarray(offs, np.int64), np.asarray(weights, np.int64),
                                             np.asarray(values, np.float64))
            if ok:
                return Knapsack(out, best, int(weight))
        cap = min(cap, heaviest)
    weights = np.asarray(weights, np.int64)
    # weights sharing a factor g (Aryl's 20 units per training GPU): only multiples of g are
    # reachable, so the DP over weights/g and capacity//g makes the same comparisons on the same
    # values in the same order (the same choice, value and weight/g), on a g-times smaller table
    g = int(np.gcd.reduce(weights)) if weights.shape[0] else 0
    g = g if g > 1 else 1
    cap //= g
    most = int(sizes.max()) if sizes.size else 0
    dtype = np.int8 if most < 127 else (np.int16 if most < 32_767 else np.int32)
    choice = np.full((sizes.shape[0], cap + 1), -1, dtype)
    out, best, weight = _dp(np.asarray(offs, np.int64), weights // g if g > 1 else weights,
                            np.asarray(values, np.float64), cap, exactly_one, choice)
    if not np.isfinite(best):
        raise SolveError("infeasible", "no selection with exactly one item per group fits the capacity")
    return Knapsack(out, best, int(weight) * g)


@njit(cache=True)
def _all_fit(offs, w, v):
    """Every selection fits: the optimum takes each group's best item, or nothing when no item
    is worth more than 0. Accepted (ok) only when each group's best beats its runner-up (or
    nothing) by more than 1e-9 of Σ|values|, far above the rounding of any sum of these
    values: the optimum is then unique and `_dp` returns it too, with the same value (summed
    in group order, as `_dp` adds it) and weight. Otherwise (near-ties) ok is False: run `_dp`."""
    n_groups = offs.shape[0] - 1
    out = np.full(n_groups, -1, np.int64)
    scale = 1.0
    for i in range(v.shape[0]):
        scale += abs(v[i])
    tol = 1e-9 * scale
    value = 0.0
    weight = 0
    for g in range(n_groups):
        best, second, pick = 0.0, -np.inf, -1  # "nothing" (value 0) is the first candidate
        for k in range(offs[g + 1] - offs[g]):
            x = v[offs[g] + k]
            if x > best:
                second, best, pick = best, x, k
            elif x > second:
                second = x
        if not best - second > tol:
            return False, out, 0.0, 0
        out[g] = pick
        if pick >= 0:
            value += best
            weight += w[offs[g] + pick]
    return True, out, value, weight


@njit(cache=True)
def _dp(offs, w, v, cap, exactly_one, choice):
    """The DP over groups (items offs[g]:offs[g+1] of `w`, `v`): dp[c] = best value of exactly
    weight c; strict improvement only (ties keep "nothing" / the earlier item); the first
    maximum is the lightest best selection; backtracked through `choice` (filled here)."""
    n_groups = offs.shape[0] - 1
    dp = np.full(cap + 1, -np.inf)
    dp[0] = 0.0
    new = np.full(cap + 1, -np.inf)
    reach = 0  # dp[c] is -inf above the heaviest selection so far: those cells are skipped
    for g in range(n_groups):
        heaviest = 0
        for k in range(offs[g + 1] - offs[g]):
            heaviest = max(heaviest, w[offs[g] + k])
        top = min(cap, reach + heaviest)
        if exactly_one:
            new[:top + 1] = -np.inf
        else:
            new[:top + 1] = dp[:top + 1]
        for k in range(offs[g + 1] - offs[g]):
            wk = w[offs[g] + k]
            if wk > cap:
                continue
            vk = v[offs[g] + k]
            for c in range(wk, min(cap, reach + wk) + 1):
                cand = dp[c - wk] + vk
                if cand > new[c]:
                    new[c] = cand
                    choice[g, c] = k
        dp[:top + 1] = new[:top + 1]
        reach = top
    c = 0
    best = dp[0]
    for i in range(1, cap + 1):
        if dp[i] > best:
            best = dp[i]
            c = i
    out = np.full(n_groups, -1, np.int64)
    weight = c
    if not np.isfinite(best):
        return out, best, weight
    for g in range(n_groups - 1, -1, -1):
        k = choice[g, c]
        out[g] = k
        if k >= 0:
            c -= w[offs[g] + k]
    return out, best, weight
