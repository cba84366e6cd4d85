"""REPORT.md and the figures of a reproduction.

Per figure, REPORT.md has the comparison table "row | paper | cosim | same ordering?" (one line
per claim and row, the rule stated above it), the per-policy values with the cosim rank
order, and the figure itself. Around them: what ran (size, traces, synthetic fallbacks), the
commands to rerun, the runtime, and the cosim version and commit. Figures are matplotlib bar
charts (the optional `plot` extra); without matplotlib they are skipped with a note.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Sequence

import pandas as pd

from cosim.paths import for_display
from experiments.compare import TIE_TOL, Verdict, rank_order, row_verdict
from experiments.catalog_traces import TraceEntry
from experiments.spec import DEFAULT_MARGIN, REPO, Experiment, Figure


def unit_of(metric: str) -> tuple[str, float]:
    """Display unit and divisor: seconds are shown in hours (JCTs and makespans of hours and days)."""
    return ("h", 3600.0) if metric.endswith("_s") else ("", 1.0)


def formatter(metric: str):
    unit, div = unit_of(metric)

    def fmt(v: float) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "n/a"
        return f"{v / div:.3g}{(' ' + unit) if unit else ''}"

    return fmt


def version_line() -> str:
    """cosim version and the checkout's commit (with `+dirty` when its code has uncommitted changes;
    reports and figures under docs/, which reproductions rewrite, do not count)."""
    from cosim import __version__

    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        commit = head.stdout.strip() if head.returncode == 0 else "unknown"
        if head.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "--", ".",
                                    ":(exclude)docs"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            commit += "+dirty" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        commit = "unknown (no git)"
    return f"cosim {__version__}, commit {commit}"


#: x-axis names of a figure's `rows` coordinate
ROW_LABELS = {"trace": "trace", "group": "workload", "cluster": "cluster", "cluster_nodes": "cluster size (nodes)",
              "contention": "contention", "perf": "iteration-time backend"}


def plot_figure(table: pd.DataFrame, figure: Figure, path: Path) -> Path | None:
    """Grouped bars: one group per row, one bar per policy (the mean over the row's cells), whiskers
    ± std over those cells where there are several, and the paper's value as a black diamond on
    each bar that has one. Times in hours, as in REPORT.md's tables. None without matplotlib."""
    plt = pyplot()
    if plt is None:
        return None
    import textwrap

    import numpy as np

    from experiments.report.labels import label

    rows = list(dict.fromkeys(table["row"]))
    pols = list(dict.fromkeys(table["policy"]))
    unit, div = unit_of(figure.metric)
    width = 0.8 / max(len(pols), 1)
    wide = max(6.0, 0.55 * len(rows) * max(len(pols), 1) + 2.5)
    fig, ax = plt.subplots(figsize=(wide, 4.2))
    x = np.arange(len(rows))
    n_max, paper_drawn = 1, False
    for i, p in enumerate(pols):
        sub = table[table["policy"] == p].set_index("row").reindex(rows)
        n_max = max(n_max, int(sub["n"].max()) if sub["n"].notna().any() else 1)
        spread = sub["std"].where(sub["n"] > 1).fillna(0) / div  # whiskers only where several cells were pooled
        xi = x + (i - (len(pols) - 1) / 2) * width
        ax.bar(xi, sub["value"] / div, width, yerr=spread if spread.any() else None, label=p, capsize=2)
        paper = sub["paper"].to_numpy(dtype=float) / div
        if np.isfinite(paper).any():
            ax.plot(xi, paper, ls="none", marker="D", mfc="white", mec="black", mew=1.3, ms=6,
                    label=None if paper_drawn else "paper's value")
            paper_drawn = True
    ax.set_xticks(x, [textwrap.fill(str(r), 18) for r in rows], rotation=15 if len(rows) > 3 else 0,
                  fontsize=8)
    xlabel = ROW_LABELS.get(figure.rows, figure.rows)
    if n_max > 1:
        xlabel += f"\nbars: mean over each row's cells (up to {n_max}: seeds and pooled axes); whiskers: ± std"
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel(label(figure.metric, unit) if unit else label(figure.metric))
    ax.set_title(textwrap.fill(figure.title, int(wide * 12)), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    outside = len(pols) > 3 or max(map(len, map(str, pols))) > 24
    ax.legend(fontsize=8, **({"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)} if outside else {}))
    return save_figure(fig, path)


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None without matplotlib (figures are then skipped
    with a note)."""
    from cosim.plotting import pyplot as load

    return load()


def save_figure(fig, path: Path) -> Path:
    """Write a figure as PNG atomically (no software tag: same bytes for the same figure) and close it."""
    import matplotlib.pyplot as plt

    from cosim.atomic import atomic_path

    fig.tight_layout()
    with atomic_path(path) as tmp:  # bbox "tight": titles, wrapped labels and outside legends are not cut
        fig.savefig(tmp, dpi=110, format="png", metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return path


#: claims.csv: one row per claim and row checked, what REPORT.md's comparison tables show
CLAIM_COLUMNS = ("experiment", "size", "figure", "metric", "row", "better", "worse", "qualifier", "paper_factor",
                 "cosim_factor", "margin_ratio", "margin_tolerance", "check", "direction", "seeds", "seeds_held",
                 "seed_factor_min", "seed_factor_max", "verdict", "why")
CLAIMS_FILE = "claims.csv"


def _num(x: float | None) -> float:
    return math.nan if x is None or math.isnan(x) else float(f"{x:.4g}")


def claims_frame(exp: Experiment, size: str, found: dict[str, list[Verdict]]) -> pd.DataFrame:
    """Every checked claim of the run as rows of `CLAIM_COLUMNS` (numbers to 4 significant digits)."""
    rows = []
    for fig_name, vs in found.items():
        metric = exp.figure(fig_name).metric
        for v in vs:
            f = [x for x in v.seed_factors if not math.isnan(x)]
            rows.append({"experiment": exp.name, "size": size, "figure": fig_name, "metric": metric, "row": v.row,
                         "better": v.claim.better, "worse": v.claim.worse, "qualifier": v.claim.qualifier,
                         "paper_factor": _num(v.claim.factor), "cosim_factor": _num(v.factor),
                         "margin_ratio": _num(v.ratio), "margin_tolerance": v.claim.margin,
                         "check": v.claim.checked_by, "direction": v.result, "seeds": len(f),
                         "seeds_held": sum(r == "yes" for r in v.seed_results),
                         "seed_factor_min": _num(min(f)) if f else math.nan,
                         "seed_factor_max": _num(max(f)) if f else math.nan, "verdict": v.verdict, "why": v.why})
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def write_claims(path: Path, frame: pd.DataFrame) -> Path:
    from cosim.atomic import write_text

    return write_text(frame.to_csv(index=False, lineterminator="\n"), path)


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _ratio(v: Verdict) -> str:
    if math.isnan(v.ratio):
        return "n/a" if v.claim.factor is None else "no margin"
    return f"{v.ratio:.2f}"


def figure_section(figure: Figure, table: pd.DataFrame, found: list[Verdict], image: str | None,
                   note: str | None) -> list[str]:
    fmt = formatter(figure.metric)
    lines = [f"## {figure.name}: {figure.title}", "",
             f"Metric `{figure.metric}` ({figure.better} is better), rows by {figure.rows}; mean over the "
             f"cells of each row (n cells per policy in the second table)."]
    if figure.source:
        lines += ["", f"Paper: {figure.source}."]
    lines += ["", "| row | paper | cosim | same ordering? | cosim/paper margin | seeds | verdict |",
              "|---|---|---|---|---|---|---|"]
    if not found:
        lines.append("| (all) | no claim in the paper for this figure | see the values below | n/a | n/a | | |")
    for v in found:
        paper = v.claim.paper_text() + (f"; {v.claim.note}" if v.claim.note else "")
        verdict = v.verdict + (f" ({v.why})" if v.why else "")
        lines.append(f"| {_md_escape(v.row)} | {_md_escape(paper)} | {_md_escape(v.cosim)} | {v.result} | "
                     f"{_ratio(v)} | {_md_escape(v.spread()) if v.result != 'n/a' else ''} | {_md_escape(verdict)} |")
    lines.append("")
    pols = list(dict.fromkeys(table["policy"]))
    has_paper = table["paper"].notna().any()
    head = "| row | " + " | ".join(pols) + " | n | cosim order | same ordering? |"
    lines += [head, "|" + "---|" * (len(pols) + 4)]
    for row in dict.fromkeys(table["row"]):
        sub = table[table["row"] == row].set_index("policy")
        vals = {p: float(sub.loc[p, "value"]) if p in sub.index else math.nan for p in pols}
        cells = []
        for p in pols:
            c = fmt(vals[p])
            if has_paper and p in sub.index and not math.isnan(sub.loc[p, "paper"]):
                c += f" (paper {fmt(sub.loc[p, 'paper'])})"
            cells.append(c)
        n = int(sub["n"].max()) if len(sub) else 0
        overall = row_verdict([v.result for v in found if v.row == row])
        lines.append(f"| {_md_escape(row)} | " + " | ".join(cells) +
                     f" | {n} | {rank_order(vals, figure.better == 'lower')} | {overall} |")
    lines.append("")
    if image:
        lines += [f"![{figure.name}]({image})", ""]
    if note:
        lines += [f"Note: {note}", ""]
    return lines


def claims_summary(found: dict[str, list[Verdict]]) -> str:
    """One line: how many claims the run checked and how many of them held, held in direction only,
    failed, or could not be checked, with the reasons (the catalog's `not_at`, or the missing cells)
    most frequent first."""
    from experiments.compare import NOT_CHECKED, VERDICTS, counted

    lines = [v for vs in found.values() for v in vs]
    keep = counted(pd.DataFrame([{"figure": f, "row": v.row, "better": v.claim.better, "worse": v.claim.worse,
                                  "qualifier": v.claim.qualifier} for f, vs in found.items() for v in vs]))
    every = [v for v, k in zip(lines, keep) if k]
    counts = {k: sum(v.verdict == k for v in every) for k in VERDICTS + (NOT_CHECKED,)}
    checked = len(every) - counts[NOT_CHECKED]
    parts = ", ".join(f"{counts[k]} {k}" for k in VERDICTS)
    text = f"{checked} of {len(every)} claims checked: {parts}"
    if counts[NOT_CHECKED]:
        why = pd.Series([v.why for v in every if v.verdict == NOT_CHECKED]).value_counts(sort=True)
        text += f"; {counts[NOT_CHECKED]} not checked (" + "; ".join(
            f"{n}: {w.rstrip('.')}" for w, n in why.items()) + ")"
    return text


#: the rule REPORT.md states above its tables (`experiments.compare` holds the mechanism)
RULES = (
    "Same ordering? rule: a claim \"A better than B\" is `yes` when cosim's A beats B by more than "
    f"{TIE_TOL:.0%} of the larger of the two values, `tie` within {TIE_TOL:.0%}, `no` when B beats A by more; a row "
    "is `yes` when all its claims are, `no` when any is reversed. Claims the paper states without a number are "
    "checked by direction only; its factor is shown beside cosim's. `cosim order` lists the policies best first "
    "(`<` where lower is better, `>` where higher is), `≈` within the tolerance.",
    "How far: a claim's factor is how much A beats B (B/A for lower-is-better metrics), its margin the factor − 1; "
    "`cosim/paper margin` is cosim's margin over the paper's. Verdict: `reproduces` when the direction holds on the "
    "mean and on every seed and, for a claim with a number, the margin ratio meets the paper's qualifier with the "
    f"claim's factor m (default {DEFAULT_MARGIN:g}; the catalog may declare another or `check = \"direction\"`); "
    "`direction only` when the mean's direction holds but the margin or a seed does not; `does not reproduce` when "
    "the mean ties or reverses; `not checked` when the size has no cells for a side or the catalog says why it "
    "cannot check the claim. `seeds`: the factor's range over the run's seeds (each seeds the synthetic workload "
    "and the policy) and on how many it holds. The same rows are in claims.csv beside this file.",
    "Qualifiers: \"about X\" (or a bare X) reproduces with the margin ratio within [1/m, m] (default: half to twice "
    "the paper's margin); \"at least X\" with the ratio ≥ 1/m, no upper bound; \"at most X\" (a bound on a loss) "
    "with the ratio ≤ m, and a tie is within the bound (a loss of zero), while a reversal does not reproduce; "
    "\"up to X\" (the paper's largest margin over the rows) needs the direction on each row, and its margin is "
    "compared once, \"about\"-wise, on the row with cosim's largest factor. That line, `largest over rows (R)`, "
    "is the claim's verdict and counts once in the totals: `direction only` when any row ties or reverses; the "
    "row lines show the direction and are not counted (with one row checked, that row's line is the claim).",
)


def write_report(path: Path, exp: Experiment, size: str, sections: Sequence[list[str]],
                 traces: dict[str, list[TraceEntry]], commands: Sequence[str], runtime: dict[str, float],
                 failed: int, notes: Sequence[str], version: str | None = None, cells: pd.DataFrame | None = None,
                 found: dict[str, list[Verdict]] | None = None, failures: Sequence[str] = ()) -> Path:
    """REPORT.md: what ran and the claims' summary first, then the experiment's description, the
    rules, one section per figure, the traces, the rerun commands and the runtime."""
    from cosim.atomic import write_text
    from experiments.report.header import what_ran

    version = version or version_line()
    lines = [f"# {exp.title}", "", f"Experiment `{exp.name}`, size `{size}`: {exp.sizes.get(size, '')}", "",
             f"Paper: {exp.paper}" + (f" <{exp.url}>" if exp.url else ""), "", "## What ran", ""]
    ran = what_ran(cells, version) if cells is not None else [("cosim", version)]
    lines += [f"- {name}: {_md_escape(value)}" for name, value in ran]
    lines += [f"- cells: {len(cells) if cells is not None else 0}, {failed} failed; times in hours", ""]
    if found is not None:
        lines += [f"**Claims:** {claims_summary(found)}.", ""]
    if failed:
        lines += [f"**{failed} cell(s) failed** and are left out of every table and figure:", ""]
        lines += [f"- {_md_escape(why)}" for why in failures] + [""]
    if exp.notes:
        lines += ["## About this experiment", "", exp.notes, ""]
    lines += ["## How claims are checked", ""] + [p for part in RULES for p in (part, "")]
    fallback = [t for ts in traces.values() for t in ts if t.fallback]
    if fallback:
        lines += [f"**Synthetic fallback:** ../shared/data was not found, so {len(fallback)} trace(s) ran on "
                  "synthetic stand-ins (labelled `[synthetic fallback …]`); these are not the paper's workloads.", ""]
    for n in notes:
        lines += [f"Note: {n}", ""]
    for sec in sections:
        lines += sec
    lines += ["## Traces", ""]
    for grid, ts in traces.items():
        for t in ts:
            lines.append(f"- grid `{grid}`: {t.name} (group {t.group}): `{for_display(t.spec)}`")
    lines += ["", "## Rerun", "", "```"] + list(commands) + ["```", "",
              "Rerunning into the same folder reuses finished cells (the sweeps resume); a new folder runs all.", "",
              "## Runtime and version", "",
              f"- wall time: {runtime['wall_s']:.1f} s for this call, which ran {int(runtime['cells'])} cells and "
              f"reused {int(runtime['resumed'])} finished ones; the cells' own wall times sum to "
              f"{runtime['cells_s']:.1f} s (numba compilation included in the first cell of each process)",
              f"- {version}", ""]
    return write_text("\n".join(lines), path)
