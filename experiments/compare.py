"""Per-figure tables and the "same ordering?" rule.

A figure's cells (one per trace × cluster × … × seed × policy) are reduced to one value per
row and policy: the mean of the metric over the cells that share the row coordinate (seeds,
and the traces of a group), with its standard deviation and count.

The rule, stated once and printed in every REPORT.md: a claim "A is better than B" holds in
cosim when A's value beats B's by more than `TIE_TOL` relative to the larger magnitude of the
two (`yes`); within that tolerance it is a tie (`tie`), and the other way round it is `no`.
A row's verdict is `yes` when every claim on it holds, `no` when any is reversed, else `tie`.
The cosim rank order of all policies on the row is printed beside it, with `≈` joining
neighbours within the tolerance.

A figure may pool several grids (its table is built from the cells of all of them, e.g. Aryl's
runs with and without an inference load series), and a claim may select rows: `x@row` is
policy (or variant) `x` on row `row`; such a claim is checked once, between the rows it names,
and its verdict's row reads `a-row vs b-row`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from experiments.spec import ROW_SEP, Claim, Figure

#: relative difference below which two policies count as tied
TIE_TOL = 0.02


def figure_table(cells: pd.DataFrame, figure: Figure) -> pd.DataFrame:
    """Rows × policies: `row, policy, value (mean), std, n, paper` for the figure's metric.

    `cells` is the sweep summary with `group` and `grid` columns added; failed cells are left out."""
    ok = cells[cells["grid"].isin(figure.all_grids()) & (cells["status"] == "ok")]
    cols = ["row", "policy", "value", "std", "n", "paper"]
    if figure.metric not in ok.columns or not len(ok):
        return pd.DataFrame(columns=cols)
    label = "policy_label" if "policy_label" in ok.columns else "policy"
    if figure.policies:  # the figure's own selection, in its order
        ok = ok[ok[label].isin(figure.policies)]
        ok = ok.iloc[ok[label].map(figure.policies.index).argsort(kind="stable")]
    df = ok.assign(row=ok[figure.rows].astype(str), value=pd.to_numeric(ok[figure.metric], errors="coerce"))
    g = df.groupby(["row", label], sort=False)["value"]
    out = pd.DataFrame({"value": g.mean(), "std": g.std(ddof=0), "n": g.count()}).reset_index()
    out = out.rename(columns={label: "policy"})
    out["paper"] = [figure.values.get(r, {}).get(p, math.nan) for r, p in zip(out["row"], out["policy"])]
    return out[cols]


def _rel(better_val: float, worse_val: float, lower: bool) -> float:
    """How much `better_val` beats `worse_val`, relative to the larger magnitude (negative: it loses)."""
    scale = max(abs(better_val), abs(worse_val))
    if scale == 0:
        return 0.0
    return (worse_val - better_val) / scale if lower else (better_val - worse_val) / scale


def rank_order(values: dict[str, float], lower: bool, tol: float = TIE_TOL) -> str:
    """`a < b ≈ c` best first; `≈` joins neighbours within `tol` of each other."""
    items = sorted(((p, v) for p, v in values.items() if not math.isnan(v)), key=lambda kv: kv[1] if lower else -kv[1])
    if not items:
        return "n/a"
    text = items[0][0]
    for (_, va), (pb, vb) in zip(items, items[1:]):
        text += (" ≈ " if abs(_rel(va, vb, lower)) <= tol else " < ") + pb
    return text


@dataclass(frozen=True)
class Verdict:
    row: str
    claim: Claim
    cosim: str  # e.g. "tiresias 0.59 < fifo 0.62 (1.05×)"
    result: str  # yes / tie / no / n/a


def check_claim(row: str, values: dict[str, float], claim: Claim, lower: bool, fmt, tol: float = TIE_TOL) -> Verdict:
    a, b = values.get(claim.better, math.nan), values.get(claim.worse, math.nan)
    if math.isnan(a) or math.isnan(b):
        missing = claim.better if math.isnan(a) else claim.worse
        return Verdict(row, claim, f"no result for {missing}", "n/a")
    d = _rel(a, b, lower)
    result = "yes" if d > tol else ("no" if d < -tol else "tie")
    factor = (b / a if lower else a / b) if a and b else math.nan
    sign = {"yes": "better than", "tie": "≈", "no": "worse than"}[result]
    return Verdict(row, claim, f"{claim.better} {fmt(a)} {sign} {claim.worse} {fmt(b)} ({factor:.2f}×)", result)


def _select(name: str, row: str) -> tuple[str, str]:
    """`x@r` → (x, r); a plain name is on `row`."""
    pol, sep, r = name.rpartition(ROW_SEP)
    return (pol, r) if sep else (name, row)


def verdicts(table: pd.DataFrame, figure: Figure, fmt, tol: float = TIE_TOL) -> list[Verdict]:
    """Every claim of the figure checked on every row it applies to, in row order; claims that
    select rows (`x@row`) once each, after the per-row ones."""
    out: list[Verdict] = []
    lower = figure.better == "lower"
    claims = figure.all_claims()
    rows = list(dict.fromkeys(table["row"]))
    for row in rows:
        vals = dict(zip(table.loc[table["row"] == row, "policy"], table.loc[table["row"] == row, "value"]))
        for c in claims:
            if not c.across_rows and (c.row is None or c.row == row):
                out.append(check_claim(row, vals, c, lower, fmt, tol))
    every = dict(zip(zip(table["policy"], table["row"]), table["value"]))
    for c in claims:
        if c.across_rows:
            default = c.row if c.row is not None else (rows[0] if len(rows) == 1 else "")
            b, w = _select(c.better, default), _select(c.worse, default)
            vals = {c.better: every.get(b, math.nan), c.worse: every.get(w, math.nan)}
            out.append(check_claim(f"{b[1]} vs {w[1]}", vals, c, lower, fmt, tol))
    return out


def row_verdict(results: list[str]) -> str:
    """A row's overall answer from its claims' results."""
    real = [r for r in results if r != "n/a"]
    if not real:
        return "n/a"
    if "no" in real:
        return "no"
    return "yes" if all(r == "yes" for r in real) else "tie"
