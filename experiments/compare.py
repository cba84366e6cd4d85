"""Per-figure tables and the "same ordering?" rule.

A figure's cells (one per trace × cluster × … × seed × policy) are reduced to one value per
row and policy: the mean of the metric over the cells that share the row coordinate (seeds,
and the traces of a group), with its standard deviation and count.

The rule, stated once and printed in every REPORT.md: a claim "A is better than B" holds in
cosim when A's value beats B's by more than `TIE_TOL` relative to the larger magnitude of the
two (`yes`); within that tolerance it is a tie (`tie`), and the other way round it is `no`. Two
values within `ZERO_ABS` of zero are a tie (floating-point residue, not a difference).
A row's verdict is `yes` when every claim on it holds, `no` when any is reversed, else `tie`.
The cosim rank order of all policies on the row is printed beside it, best first: joined by `<`
for a lower-is-better metric and by `>` for a higher-is-better one, with `≈` joining neighbours
within the tolerance.

A figure may pool several grids (its table is built from the cells of all of them, e.g. Aryl's
runs with and without an inference load series), and a claim may select rows: `x@row` is
policy (or variant) `x` on row `row`; such a claim is checked once, between the rows it names,
and its verdict's row reads `a-row vs b-row`.

How far, not only which way. A claim's *factor* is how much A beats B (B/A for a lower-is-better
metric, A/B for higher), its *margin* the factor − 1 (1.31× is a 31 % margin); the *ratio* is
cosim's margin over the paper's (0.42: cosim shows 42 % of the paper's gain; 15.7: far more).
Each claim then gets one of three verdicts, `VERDICTS`:

- `reproduces`: the direction holds on the mean and on every seed, and, for a claim checked by
  margin (the catalog's `check`, default `margin` where the paper gives a factor), the ratio meets
  the claim's qualifier for its `margin` m (default `spec.DEFAULT_MARGIN` = 2); a claim the paper
  states without a number (or declared `check = "direction"`) needs the direction only;
- `direction only`: the direction holds on the mean, but the margin misses its band or some
  seed ties or reverses it;
- `does not reproduce`: the mean ties or reverses it.

The qualifier (`spec.QUALIFIERS`) says what the paper's number is, and the band follows its words:

- "about X" (and a bare X, e.g. the pairs of the paper's printed values): the ratio within [1/m, m];
- "at least X": cosim's margin at least X's within the band: ratio ≥ 1/m, no upper bound;
- "at most X": the paper bounds a loss: the ratio ≤ m. A tie on the mean (and ties on seeds) is
  within the bound, so it reproduces (a loss of zero is at most X); a reversal beyond the tie
  tolerance does not: the paper states which way the loss goes, and cosim shows the other;
- "up to X": X is the paper's largest margin over the rows of the figure. Each row is checked for
  the direction only (on the mean and every seed); the margin is compared once, "about"-wise, on
  the checked row with cosim's largest factor for the claim, as one more line of the claim
  (row `largest over rows (R)`: "largest over rows: F× on row R, ratio …", with row R's seeds).
  Checked on one row only, that row is the largest and its own line compares the margin.
  The largest-row line is the claim's verdict, and it counts once in a report's totals (`counted`):
  it reproduces when the margin is in the band there and every row holds the direction; a row
  that ties or reverses makes it `direction only`. Its row lines show the direction, uncounted.

A claim naming a policy (`pollux`) checks the row's one parameterised label of it
(`pollux(generations=4,population=10)`, a size that runs it with other parameters) when there is
exactly one. A claim with no cells for one of its sides is `not checked`, with the catalog's reason
(`not_at = { small = "why" }` on the claim or its figure) or "no cells for X". A claim the catalog
marks `not_at` for the size is `not checked` with that reason even where the size has cells (a sample
too small to show the effect): cosim's values are printed, no direction is judged.

The paper's own exceptions. A claim may name the rows where the paper says it does not hold
(`except_rows = { ROW = "the paper's line" }` in the catalog). With `except_as = "reverse"` (the
default: the paper says the other side wins there) each such row is checked as a claim of its own,
`worse` better than `better` on that row by direction, with the paper's line as its note, and it
leaves the claim's rows (an "up to" claim's largest row is taken over the others). With
`except_as = "skip"` (the paper names no winner there) the row's values are shown, `not checked`,
the paper's line as the reason. At a size whose every row is excepted, the claim is listed once,
`not checked`, with the paper's lines (or the claim's `not_at` reason for that size).

Seeds: the spread is over the `seed` coordinate, which seeds the synthetic workload and the
policy's randomness together (a trace file keeps its jobs: only the policy's draws change). Per
seed, each side is the mean over the row's cells of that seed; a claim's seed factors are
printed as their range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from experiments.spec import ROW_SEP, UP_TO, Claim, Figure

#: the three verdicts, best first, and the one of a claim without cells
REPRODUCES, DIRECTION_ONLY, NOT_REPRODUCED, NOT_CHECKED = ("reproduces", "direction only",
                                                           "does not reproduce", "not checked")
VERDICTS = (REPRODUCES, DIRECTION_ONLY, NOT_REPRODUCED)

#: the row of an "up to" claim's margin line: `largest over rows (R)`
LARGEST = "largest over rows"
#: relative difference below which two policies count as tied
TIE_TOL = 0.02
#: values both within this of zero are equal: the residue of sums that are zero (a metric no policy
#: on the row has, in any unit cosim reports) must not decide a direction
ZERO_ABS = 1e-12


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
    if scale <= ZERO_ABS:  # both zero up to floating-point residue (e.g. 7e-18 h of exposed communication)
        return 0.0
    return (worse_val - better_val) / scale if lower else (better_val - worse_val) / scale


def rank_order(values: dict[str, float], lower: bool, tol: float = TIE_TOL) -> str:
    """Best first: `a < b ≈ c` for a lower-is-better metric, `a > b ≈ c` for higher; `≈` joins
    neighbours within `tol` of each other."""
    items = sorted(((p, v) for p, v in values.items() if not math.isnan(v)), key=lambda kv: kv[1] if lower else -kv[1])
    if not items:
        return "n/a"
    text = items[0][0]
    for (_, va), (pb, vb) in zip(items, items[1:]):
        text += (" ≈ " if abs(_rel(va, vb, lower)) <= tol else " < " if lower else " > ") + pb
    return text


def seed_values(cells: pd.DataFrame, figure: Figure) -> dict[tuple[str, str], dict[int, float]]:
    """(row, policy) → {seed: mean of the metric over the row's ok cells of that seed}."""
    ok = cells[cells["grid"].isin(figure.all_grids()) & (cells["status"] == "ok")]
    if figure.metric not in ok.columns or "seed" not in ok.columns or not len(ok):
        return {}
    label = "policy_label" if "policy_label" in ok.columns else "policy"
    df = ok.assign(row=ok[figure.rows].astype(str), value=pd.to_numeric(ok[figure.metric], errors="coerce"),
                   seed_=ok["seed"].astype("Int64"))
    out: dict[tuple[str, str], dict[int, float]] = {}
    for (row, pol, seed), v in df.groupby(["row", label, "seed_"], sort=True)["value"].mean().items():
        out.setdefault((str(row), str(pol)), {})[int(seed)] = float(v)
    return out


@dataclass(frozen=True)
class Verdict:
    row: str
    claim: Claim
    cosim: str  # e.g. "tiresias 0.59 < fifo 0.62 (1.05×)"
    result: str  # the direction on the means: yes / tie / no / n/a
    factor: float = math.nan  # cosim's factor (B/A lower-is-better, A/B higher)
    ratio: float = math.nan  # cosim's margin / the paper's (margin = factor − 1)
    seed_factors: tuple[float, ...] = ()  # the factor per seed, in seed order
    seed_results: tuple[str, ...] = ()  # the direction per seed
    verdict: str = NOT_CHECKED  # one of VERDICTS, or NOT_CHECKED
    why: str = ""  # what keeps it from the verdict above it (or why it was not checked)

    def spread(self) -> str:
        """`1.10-1.42× (3 seeds, 3 hold)`, or `1 seed`."""
        f = [x for x in self.seed_factors if not math.isnan(x)]
        if len(f) < 2:
            return f"{len(f)} seed"
        held = sum(r == "yes" for r in self.seed_results)
        return f"{min(f):.2f}-{max(f):.2f}× ({len(f)} seeds, {held} hold)"


def _factor(a: float, b: float, lower: bool) -> float:
    return (b / a if lower else a / b) if a and b else math.nan


def _direction(a: float, b: float, lower: bool, tol: float) -> str:
    d = _rel(a, b, lower)
    return "yes" if d > tol else ("no" if d < -tol else "tie")


def margin_ratio(cosim_factor: float, paper_factor: float | None) -> float:
    """cosim's margin over the paper's (margin = factor − 1); NaN without a positive paper margin."""
    if paper_factor is None or not paper_factor > 1 or math.isnan(cosim_factor):
        return math.nan
    return (cosim_factor - 1.0) / (paper_factor - 1.0)


def _band(claim: Claim) -> tuple[float, float, str]:
    """(lowest, highest ratio that reproduces, how a miss reads) for the claim's qualifier."""
    m = claim.margin
    if claim.qualifier == "at least":
        return 1.0 / m, math.inf, f"below {1 / m:.2g}"
    if claim.qualifier == "at most":
        return -math.inf, m, f"above {m:g}"
    return 1.0 / m, m, f"outside {1 / m:.2g}-{m:g}"


def classify(claim: Claim, direction: str, ratio: float, seed_results: tuple[str, ...] = ()) -> tuple[str, str]:
    """(verdict, why) of a checked claim (`direction` yes/tie/no on the means), by its qualifier."""
    bound = claim.qualifier == "at most"  # a tie is a loss of zero: within the paper's bound
    if direction == "no" or (direction == "tie" and not bound):
        return NOT_REPRODUCED, "tie on the mean" if direction == "tie" else "reversed on the mean"
    bad = [r for r in seed_results if r == "no" or (r == "tie" and not bound)]
    if bad:
        return DIRECTION_ONLY, f"{'reversed' if bound else 'tied or reversed'} on {len(bad)} of {len(seed_results)} seeds"
    if claim.checked_by == "direction":
        return REPRODUCES, ""
    if direction == "tie":
        return REPRODUCES, f"tie on the mean: within the paper's at most {claim.factor:g}×"
    if math.isnan(ratio):
        return DIRECTION_ONLY, "the paper's factor gives no margin to compare"
    lo, hi, miss = _band(claim)
    if lo <= ratio <= hi:
        return REPRODUCES, ""
    return DIRECTION_ONLY, f"margin ratio {ratio:.2f}, {miss}"


def largest_over_rows(claim: Claim, found: list[Verdict]) -> tuple[list[Verdict], Verdict | None]:
    """An "up to" claim checked on several rows: (its row lines, judged by direction only; the margin
    line: the checked row with cosim's largest factor, judged "about"-wise). With fewer than two
    checked rows the lines are returned as they are, and no margin line (the row judges its margin)."""
    if sum(v.verdict != NOT_CHECKED for v in found) < 2:
        return found, None
    by_direction = replace(claim, check="direction")
    top = max((v for v in found if v.verdict != NOT_CHECKED),
              key=lambda v: -math.inf if math.isnan(v.factor) else v.factor)
    rows = []
    for v in found:
        if v.verdict != NOT_CHECKED:
            verdict, why = classify(by_direction, v.result, v.ratio, v.seed_results)
            why = why or f"by direction; the margin is compared on the largest row ({top.row})"
            v = replace(v, claim=by_direction, verdict=verdict, why=why)
        rows.append(v)
    ratio = "n/a" if math.isnan(top.ratio) else f"{top.ratio:.2f}"
    verdict, why = top.verdict, top.why
    missed = [v for v in rows if v.verdict not in (REPRODUCES, NOT_CHECKED)]
    if missed and verdict == REPRODUCES:  # the peak matches, but not every row goes the paper's way
        checked = sum(v.verdict != NOT_CHECKED for v in rows)
        verdict, why = DIRECTION_ONLY, f"direction missed on {len(missed)} of {checked} rows"
    return rows, replace(top, row=f"{LARGEST} ({top.row})", verdict=verdict, why=why,
                         cosim=f"{LARGEST}: {top.factor:.2f}× on row {top.row}, ratio {ratio}")


def counted(lines: pd.DataFrame) -> pd.Series:
    """Which lines of a claims table count as claims: all but the row lines of an "up to" claim that
    has a `largest over rows` line (that line is the claim's verdict; its rows show the direction).
    `lines` has the claims.csv columns `figure, row, better, worse, qualifier`; a `report` column,
    when present, keeps reports apart."""
    if not len(lines):
        return pd.Series([], dtype=bool, index=lines.index)
    keys = [c for c in ("report", "figure", "better", "worse", "qualifier") if c in lines.columns]
    largest = lines["row"].astype(str).str.startswith(LARGEST)
    has_largest = largest.astype(int).groupby([lines[k].astype(str) for k in keys]).transform("max") > 0
    return (largest | ~has_largest).astype(bool)


def check_claim(row: str, values: dict[str, float], claim: Claim, lower: bool, fmt, tol: float = TIE_TOL,
                seeds: dict[str, dict[int, float]] | None = None, size: str | None = None) -> Verdict:
    """The claim on one row: `values` name → mean, `seeds` name → {seed: mean} (optional)."""
    a, b = values.get(claim.better, math.nan), values.get(claim.worse, math.nan)
    if math.isnan(a) or math.isnan(b):
        missing = claim.better if math.isnan(a) else claim.worse
        why = claim.not_at.get(size or "", "") or f"no cells for {missing} at this size"
        return Verdict(row, claim, f"no result for {missing}", "n/a", why=why)
    result = _direction(a, b, lower, tol)
    factor = _factor(a, b, lower)
    sign = {"yes": "better than", "tie": "≈", "no": "worse than"}[result]
    sa, sb = (seeds or {}).get(claim.better, {}), (seeds or {}).get(claim.worse, {})
    common = sorted(set(sa) & set(sb))
    seed_f = tuple(_factor(sa[k], sb[k], lower) for k in common)
    seed_r = tuple(_direction(sa[k], sb[k], lower, tol) for k in common)
    ratio = margin_ratio(factor, claim.factor)
    verdict, why = classify(claim, result, ratio, seed_r)
    text = f"{claim.better} {fmt(a)} {sign} {claim.worse} {fmt(b)} ({factor:.2f}×)"
    if size in claim.not_at:  # the catalog says this size cannot check it: the values are shown, not judged
        return Verdict(row, claim, text, "n/a", factor, verdict=NOT_CHECKED, why=claim.not_at[size])
    return Verdict(row, claim, text, result, factor, ratio, seed_f, seed_r, verdict, why)


def _select(name: str, row: str) -> tuple[str, str]:
    """`x@r` → (x, r); a plain name is on `row`."""
    pol, sep, r = name.rpartition(ROW_SEP)
    return (pol, r) if sep else (name, row)


def with_bare_names(values: dict) -> dict:
    """`values` (label → x) plus each policy's bare name for its only parameterised label on the row
    (`pollux` → `pollux(generations=4,population=10)` when that is the row's one Pollux), so a claim
    naming the policy checks the cells a size ran with other parameters."""
    bases: dict[str, list[str]] = {}
    for label in values:
        base, paren, _ = str(label).partition("(")
        if paren:
            bases.setdefault(base, []).append(label)
    return {**{b: values[ls[0]] for b, ls in bases.items() if len(ls) == 1 and b not in values}, **values}


def verdicts(table: pd.DataFrame, figure: Figure, fmt, tol: float = TIE_TOL,
             seeds: dict[tuple[str, str], dict[int, float]] | None = None, size: str | None = None) -> list[Verdict]:
    """Every claim of the figure checked on every row it applies to, in row order; claims that
    select rows (`x@row`) once each, after the per-row ones. `seeds` (`seed_values`) adds the
    per-seed spread; `size` picks the catalog's reason for a claim without cells."""
    out: list[Verdict] = []
    lower = figure.better == "lower"
    claims = figure.all_claims()
    rows = list(dict.fromkeys(table["row"]))
    seeds = seeds or {}
    up_to: dict[int, list[int]] = {}  # an "up to" claim → the positions of its row lines in `out`
    for row in rows:
        vals = with_bare_names(dict(zip(table.loc[table["row"] == row, "policy"],
                                        table.loc[table["row"] == row, "value"])))
        per_seed = with_bare_names({p: s for (r, p), s in seeds.items() if r == row})
        for i, c in enumerate(claims):
            if c.across_rows or c.row not in (None, row):
                continue
            if row in c.except_rows:  # the paper's exception: checked reversed (a claim of its own), or shown
                if c.except_as == "skip":
                    v = check_claim(row, vals, c, lower, fmt, tol, None, size)
                    out.append(replace(v, result="n/a", ratio=math.nan, verdict=NOT_CHECKED,
                                       why=f"the paper's exception: {c.except_rows[row]}"))
            else:
                if c.qualifier == UP_TO and c.checked_by == "margin":
                    up_to.setdefault(i, []).append(len(out))
                out.append(check_claim(row, vals, c, lower, fmt, tol, per_seed, size))
            if c.except_rows and c.row is None and row == rows[-1] and not any(v.claim is c for v in out):
                why = c.not_at.get(size or "") or "the paper excepts " + "; ".join(
                    f"row {r}: {c.except_rows[r]}" for r in rows)
                out.append(Verdict(", ".join(rows), c, "every row of this size is the paper's exception", "n/a", why=why))
    for i, at in up_to.items():  # each row by direction, the margin once on the largest row
        lines, largest = largest_over_rows(claims[i], [out[k] for k in at])
        for k, v in zip(at, lines):
            out[k] = v
        if largest is not None:
            out.append(largest)
    for c in claims:  # a claim on a row this size does not run: listed, with why
        if not c.across_rows and c.row is not None and c.row not in rows:
            out.append(Verdict(c.row, c, "no such row at this size", "n/a",
                               why=c.not_at.get(size or "", "") or f"row {c.row} is not run at this size"))
    every = {(p, r): x for r in rows for p, x in with_bare_names(dict(zip(
        table.loc[table["row"] == r, "policy"], table.loc[table["row"] == r, "value"]))).items()}
    seeds = {(r, p): x for r in rows for p, x in with_bare_names(
        {p: x for (rr, p), x in seeds.items() if rr == r}).items()}
    for c in claims:
        if c.across_rows:
            default = c.row if c.row is not None else (rows[0] if len(rows) == 1 else "")
            b, w = _select(c.better, default), _select(c.worse, default)
            vals = {c.better: every.get(b, math.nan), c.worse: every.get(w, math.nan)}
            per_seed = {c.better: seeds.get((b[1], b[0]), {}), c.worse: seeds.get((w[1], w[0]), {})}
            out.append(check_claim(f"{b[1]} vs {w[1]}", vals, c, lower, fmt, tol, per_seed, size))
    if not len(table):  # no cells at all: every claim unchecked, with the catalog's reason
        out = [check_claim(c.row or "(all)", {}, c, lower, fmt, tol, None, size) for c in claims]
    return out


def row_verdict(results: list[str]) -> str:
    """A row's overall answer from its claims' results."""
    real = [r for r in results if r != "n/a"]
    if not real:
        return "n/a"
    if "no" in real:
        return "no"
    return "yes" if all(r == "yes" for r in real) else "tie"
