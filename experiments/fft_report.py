"""FFT's extra REPORT.md sections (the `fft` experiment's `hooks`, `experiments.spec`).

- **Margins across offered load** (grid `load`): Gavel/FFT and Tiresias-typed/FFT average JCT per
  offered load (the trace's group, `load X`), mean over seeds with their range, drawn as
  `load-margins.png` with the paper's values marked (Trace 2: Gavel/FFT 1.37×; Tiresias up to
  3.15×; the paper states no load).
- **Solver rounds stopped by the time limit**: every FFT round whose branch-and-bound HiGHS'
  time limit stopped (the incumbent was used), with its relative optimality gap, read from each
  FFT cell's solver.parquet (`policies.fft.FFTPolicy.solver_log`). These depend on the machine's
  speed, like the solver seconds, and are in timing.parquet, not cells.parquet.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from cosim.plotting import INSTALL_HINT

LOAD_GRID = "load"
FFT, GAVEL, TIRESIAS = "fft", "gavel(objective='sjf_like')", "tiresias-typed"
#: the paper's Trace-2 testbed numbers (§6.2.1): Gavel/FFT, and Tiresias/FFT "up to"
PAPER = {GAVEL: 1.37, TIRESIAS: 3.15}
LABEL = {GAVEL: "Gavel/FFT", TIRESIAS: "Tiresias-typed/FFT"}


def _load_of(group: str) -> float:
    m = re.search(r"load ([0-9.]+)", str(group))
    return float(m.group(1)) if m else math.nan


def load_margins(cells: pd.DataFrame) -> pd.DataFrame:
    """Per load and baseline: the baseline's avg JCT over FFT's, mean / min / max over seeds."""
    ok = cells[(cells["grid"] == LOAD_GRID) & (cells["status"] == "ok")]
    cols = ["load", "baseline", "mean", "min", "max", "seeds"]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    wide = ok.pivot_table(index=["group", "seed"], columns="policy_label", values="avg_jct_s", aggfunc="mean")
    rows = []
    for base in (GAVEL, TIRESIAS):
        if base not in wide.columns or FFT not in wide.columns:
            continue
        r = (wide[base] / wide[FFT]).dropna()
        for group, per_seed in r.groupby(level="group"):
            rows.append({"load": _load_of(group), "baseline": base, "mean": float(per_seed.mean()),
                         "min": float(per_seed.min()), "max": float(per_seed.max()), "seeds": int(per_seed.size)})
    return pd.DataFrame(rows, columns=cols).sort_values(["baseline", "load"], kind="stable").reset_index(drop=True)


def plot_load_margins(table: pd.DataFrame, path: Path) -> Path | None:
    """Lines per baseline vs offered load (seed range as bars), the paper's values dashed. None without matplotlib."""
    from experiments.reproduction_report import pyplot, save_figure

    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    for k, base in enumerate((GAVEL, TIRESIAS)):
        sub = table[table["baseline"] == base]
        if sub.empty:
            continue
        colour = f"C{k}"
        ax.errorbar(sub["load"], sub["mean"], yerr=[sub["mean"] - sub["min"], sub["max"] - sub["mean"]],
                    marker="o", capsize=3, color=colour, label=f"{LABEL[base]} (cosim)")
        ax.axhline(PAPER[base], ls="--", color=colour, lw=1,
                   label=f"{LABEL[base]} paper {PAPER[base]:g}×" + (" (up to)" if base == TIRESIAS else ""))
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_xlabel("offered load (reference-type GPU time / capacity)")
    ax.set_ylabel("avg JCT ratio to FFT")
    ax.set_title("FFT's margins across load, Trace 2 (paper: load not stated)", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def limit_rounds(cells: pd.DataFrame, out: Path) -> tuple[pd.DataFrame, int, int]:
    """(every FFT round the time limit stopped: grid, trace, policy, seed, time_s, jobs, solve_s, mip_gap;
    FFT cells read; rounds read) from the cells' solver.parquet."""
    fft = cells[(cells["policy"] == FFT) & (cells["status"] == "ok")]
    found, n_cells, n_rounds = [], 0, 0
    for c in fft.itertuples(index=False):
        f = Path(out) / "runs" / str(c.grid) / "cells" / str(c.cell_id) / "solver.parquet"
        if not f.is_file():
            continue
        log = pd.read_parquet(f)
        n_cells, n_rounds = n_cells + 1, n_rounds + len(log)
        hit = log[log["status"] == "limit"]
        for r in hit.itertuples(index=False):
            found.append({"grid": c.grid, "trace": c.trace, "policy": c.policy_label, "seed": c.seed,
                          "time_s": r.time_s, "jobs": r.jobs, "solve_s": r.solve_s, "mip_gap": r.mip_gap})
    cols = ["grid", "trace", "policy", "seed", "time_s", "jobs", "solve_s", "mip_gap"]
    return pd.DataFrame(found, columns=cols), n_cells, n_rounds


def extra_sections(exp, size: str, cells: pd.DataFrame, out: Path) -> list[list[str]]:
    sections = []
    table = load_margins(cells)
    if len(table):
        lines = ["## load-margins: FFT's margins across offered load (Trace 2)", "",
                 "Average JCT of each baseline over FFT's, per offered load: mean over seeds (range). The paper "
                 f"gives Gavel/FFT {PAPER[GAVEL]:g}× on Trace 2 and Tiresias/FFT up to {PAPER[TIRESIAS]:g}× at its "
                 "testbed load, which it does not state; cosim's Trace 2 offers 1.2 at its own span, and a "
                 "window on the trace spec compresses the arrivals for the higher loads.", "",
                 "| offered load | " + " | ".join(f"{LABEL[b]} (paper {PAPER[b]:g}×)" for b in (GAVEL, TIRESIAS))
                 + " | seeds |", "|---|---|---|---|"]
        for load, g in table.groupby("load", sort=True):
            vals = []
            for b in (GAVEL, TIRESIAS):
                r = g[g["baseline"] == b]
                vals.append("n/a" if r.empty else
                            f"{r['mean'].iloc[0]:.2f}× ({r['min'].iloc[0]:.2f}-{r['max'].iloc[0]:.2f})")
            lines.append(f"| {load:.1f} | " + " | ".join(vals) + f" | {int(g['seeds'].max())} |")
        image = plot_load_margins(table, Path(out) / "load-margins.png")
        lines += ["", "![load-margins](load-margins.png)" if image else
                  f"Note: figure skipped: matplotlib is not installed ({INSTALL_HINT})", ""]
        full = "cosim reproduce fft --size full --figure load-avg-jct --workers 2"
        lines += [f"At the paper's size (800 jobs, loads 1.2-3.0, 3 seeds: 45 cells): `{full}`.", ""]
        sections.append(lines)
    hit, n_cells, n_rounds = limit_rounds(cells, out)
    lines = ["## solver-limit: FFT rounds stopped by the solver's time limit", "",
             "A round whose `lp_round` rounding missed its gap (or an `exact` round) is solved by HiGHS' "
             "branch-and-bound under `time_limit_s`; when the limit stops it, the best assignment found is used "
             "and its relative optimality gap (to HiGHS' dual bound) is listed here. These depend on the "
             "machine's speed (timing.parquet, each cell's solver.parquet).", ""]
    if hit.empty:
        lines += [f"No round hit the limit ({n_rounds} rounds in {n_cells} FFT cells).", ""]
    else:
        lines += [f"{len(hit)} of {n_rounds} rounds in {n_cells} FFT cells:", "",
                  "| grid | trace | policy | seed | round at (h) | jobs | solve s | optimality gap |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in hit.itertuples(index=False):
            lines.append(f"| {r.grid} | {r.trace} | {r.policy} | {r.seed} | {r.time_s / 3600:.2f} | {r.jobs} | "
                         f"{r.solve_s:.1f} | {r.mip_gap:.3%} |")
        lines.append("")
    sections.append(lines)
    return sections
