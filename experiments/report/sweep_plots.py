"""A sweep's comparison figures: every policy against one baseline policy, cell by cell.

Two cells are paired when they agree on every coordinate but the policy (trace, cluster, nodes,
contention, calibration, backend, progress model, costs and seed): the same workload drawn from
the same seed on the same hardware. A policy's ratio to the baseline is taken per pair and only
then summarised, so the spread between seeds (which moves every policy alike) does not hide the
difference between policies, and different traces are never averaged into one bar.

- `paired_bars`: per trace and cluster (one row of panels each) and metric (one column each,
  one y scale per column), each policy's mean ratio over its pairs; whiskers span the pairs'
  minimum to maximum.
- `sweep_axis`: the ratio against one swept coordinate or policy parameter, one row of panels
  per combination of the other swept coordinates (panels without data are not drawn).
- `contention_slowdown`: avg JCT with contention / without, pairs matched on every other
  coordinate, for sweeps over contention.

The baseline is the first policy of the grid unless the report names one (`cosim report
--baseline NAME`).
"""

from __future__ import annotations

from pathlib import Path
import numpy as np
import pandas as pd

from cosim.errors import InputError
from experiments.report.labels import words
from experiments.report.load import AXIS_COLUMNS, FACET_COLUMNS, SUMMARY_COLUMNS, ReportData, pick
from experiments.report.plots import (
    LINESTYLES,
    MARKERS,
    MAX_FACETS,
    _axis_label,
    _plt,
    _save,
    _wrap,
    _x_values,
)

#: what two paired cells share: every coordinate but the policy
PAIR_COLUMNS = AXIS_COLUMNS + ("progress", "costs", "max_gpus", "seed")
METRICS = ("avg_jct", "p99_jct", "makespan")


def _ok(data: ReportData) -> pd.DataFrame:
    cells = data.cells
    return cells[cells["status"] == "ok"] if "status" in cells.columns else cells


def _label_col(cells: pd.DataFrame) -> str:
    return "policy_label" if "policy_label" in cells.columns else "policy"


def choose_baseline(cells: pd.DataFrame, baseline: str | None) -> str:
    """The baseline's policy label: `baseline` as a label, or a policy name with one label in the
    sweep; the grid's first policy when None."""
    col = _label_col(cells)
    labels = list(dict.fromkeys(cells[col].map(str)))
    if baseline is None:
        return labels[0]
    if baseline in labels:
        return baseline
    same = [lab for lab in labels if lab.partition("(")[0] == baseline]
    if len(same) == 1:
        return same[0]
    raise InputError.at(field="--baseline", expected=f"one of the sweep's policies ({', '.join(labels)})",
                        got=baseline)


def paired_ratios(cells: pd.DataFrame, column: str, baseline: str) -> pd.DataFrame:
    """Every non-baseline cell with `ratio` = its `column` / the baseline cell's on the same
    coordinates (`PAIR_COLUMNS`); cells without a baseline partner are left out."""
    col = _label_col(cells)
    keys = [c for c in PAIR_COLUMNS if c in cells.columns]
    key = pd.Series(["\x1f".join(map(str, t)) for t in cells[keys].itertuples(index=False)], index=cells.index)
    value = pd.to_numeric(cells[column], errors="coerce")
    is_base = cells[col].map(str) == baseline
    base = value[is_base].groupby(key[is_base]).mean()
    other = cells[~is_base].copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        other["ratio"] = value[~is_base].to_numpy() / key[~is_base].map(base).to_numpy(dtype=float)
    return other[np.isfinite(other["ratio"])]


def _ratio_label(column: str, baseline: str) -> str:
    return f"{words(column)} / {_wrap(baseline, 28)}'s (ratio)"


def _metrics(ok: pd.DataFrame) -> list[tuple[str, str]]:
    return [(m, c) for m in METRICS if (c := pick(ok, m, SUMMARY_COLUMNS)) is not None]


def paired_bars(data: ReportData, out: Path, baseline: str) -> Path | None:
    """Bars: each policy's mean ratio to the baseline per trace and cluster (rows) and metric (columns)."""
    ok = _ok(data)
    present = _metrics(ok)
    facets = [c for c in FACET_COLUMNS if c in ok.columns and ok[c].nunique(dropna=False) > 1]
    keys = list(dict.fromkeys(map(tuple, ok[facets].map(str).to_numpy()))) if facets else [()]
    if not present or ok[_label_col(ok)].nunique() < 2:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(keys), len(present), figsize=(4.4 * len(present), 3.9 * len(keys)),
                             squeeze=False, sharey="col")
    n_pairs = 0
    for r, key in enumerate(keys):
        sub = ok
        for c, v in zip(facets, key):
            sub = sub[sub[c].map(str) == v]
        for ax, (m, col) in zip(axes[r], present):
            ratios = paired_ratios(sub, col, baseline)
            stats = ratios.groupby(_label_col(ratios), sort=False)["ratio"].agg(["mean", "min", "max", "size"])
            n_pairs = max(n_pairs, int(stats["size"].max()) if len(stats) else 0)
            x = np.arange(len(stats))
            ax.bar(x, stats["mean"] - 1.0, bottom=1.0, color="#8fb3d9")
            ax.errorbar(x, stats["mean"], yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                        fmt="none", ecolor="k", capsize=3)
            for xi, v in zip(x, stats["mean"]):
                ax.annotate(f"{v:.3g}", (xi, v), textcoords="offset points", xytext=(4, 2), fontsize=7)
            ax.axhline(1.0, color="k", ls="--", lw=1)
            ax.set_xticks(x, [_wrap(s, 26) for s in stats.index], rotation=30, ha="right", fontsize=7)
            ax.set_ylabel(_ratio_label(col, baseline), fontsize=8)
            if key:
                ax.set_title(_wrap(_facet_title(facets, key), 45), fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
    _keep_one_visible(axes)
    fig.suptitle(_wrap(f"Each policy / {baseline} on the same workload, seed and coordinates (below 1: better "
                       f"than {baseline}); bar: mean over up to {n_pairs} pairs, whiskers: min-max over them", 110),
                 fontsize=10)
    return _save(fig, out / "bars.png")


def _show(v: object) -> str:
    """A coordinate value as a tick label: contention's booleans read on/off."""
    return ("on" if v else "off") if isinstance(v, (bool, np.bool_)) else str(v)


def _facet_title(columns, key) -> str:
    """"trace=…, contention=on": a panel's coordinates (contention's booleans read on/off)."""
    return ", ".join(f"{c}={({'True': 'on', 'False': 'off'}.get(v, v) if c == 'contention' else v)}"
                     for c, v in zip(columns, key))


def _keep_one_visible(axes) -> None:
    """Every panel's y range includes the dashed line at 1 (the baseline), with a margin."""
    for ax in (a for row in axes for a in row):
        lo, hi = ax.get_ylim()
        ax.set_ylim(min(lo, 0.97), max(hi, 1.03))


def _series(ok: pd.DataFrame, axis: str) -> pd.Series:
    """What one line is: the policy label, or for a policy-parameter axis the policy with its other
    parameters (the axis' value is the x coordinate)."""
    if not axis.startswith("param_"):
        return ok[_label_col(ok)].astype(str)
    others = [c for c in ok.columns if c.startswith("param_") and c != axis]

    def name(row) -> str:
        extra = ",".join(f"{c.removeprefix('param_')}={row[c]}" for c in others
                         if not (isinstance(row[c], float) and np.isnan(row[c])))
        return f"{row['policy']}({extra})" if extra else str(row["policy"])
    return ok.apply(name, axis=1)


def sweep_axis(data: ReportData, axis: str, out: Path, baseline: str) -> Path | None:
    """Ratio to the baseline against one swept coordinate or parameter; rows: the other swept
    coordinates' combinations that have data (more than MAX_FACETS: pooled, and the title says so)."""
    ok = _ok(data)
    present = _metrics(ok)
    if not present:
        return None
    ratios = {col: paired_ratios(ok, col, baseline) for _, col in present}
    ratios = {col: r[r[axis].notna()] for col, r in ratios.items()}
    if not any(len(r) for r in ratios.values()):
        return None
    sample = next(r for r in ratios.values() if len(r))
    others = [c for c in data.swept if c != axis and not c.startswith("param_") and c in sample.columns]
    keys = list(dict.fromkeys(map(tuple, sample[others].map(str).to_numpy()))) if others else [()]
    pooled = len(keys) > MAX_FACETS
    if pooled:
        keys = [()]
    xs, numeric = _x_values(sample[axis])
    plt = _plt()
    fig, axes = plt.subplots(len(keys), len(present), figsize=(4.4 * len(present), 3.6 * len(keys)),
                             squeeze=False, sharey="col")
    for r, key in enumerate(keys):
        for ax, (m, col) in zip(axes[r], present):
            sub = ratios[col]
            for c, v in zip(others if not pooled else [], key):
                sub = sub[sub[c].map(str) == v]
            series = _series(sub, axis)
            names = list(dict.fromkeys(series))
            for k, g in enumerate(names):
                stats = sub[series == g].groupby(axis)["ratio"].agg(["mean", "min", "max"])
                stats = stats.reindex(xs).dropna(subset=["mean"])
                if stats.empty:
                    continue
                if numeric:
                    x = stats.index.to_numpy(dtype=float)
                else:  # categories side by side, a small offset per series so whiskers do not overlap
                    x = np.array([xs.index(v) for v in stats.index], dtype=float) + 0.08 * (k - (len(names) - 1) / 2)
                ax.errorbar(x, stats["mean"], yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                            capsize=3, label=g, lw=1.2, marker=MARKERS[k % len(MARKERS)], alpha=0.85,
                            ls=LINESTYLES[k % len(LINESTYLES)] if numeric else "none")
            ax.axhline(1.0, color="k", ls="--", lw=1)
            if not numeric:
                ax.set_xticks(range(len(xs)), [_wrap(_show(v), 28) for v in xs], rotation=20, ha="right", fontsize=8)
            ax.set_xlabel(_axis_label(axis))
            ax.set_ylabel(_ratio_label(col, baseline), fontsize=8)
            if key:
                ax.set_title(_wrap(_facet_title(others, key), 45), fontsize=8)
            ax.grid(True, alpha=0.3)
            if r == 0 and ax is axes[0][-1]:
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    _keep_one_visible(axes)
    how = (f"pooled over {', '.join(others)}; " if pooled and others else "")
    fig.suptitle(_wrap(f"Ratio to {baseline} vs {axis.removeprefix('param_')}, cells paired on workload, seed and "
                       f"coordinates ({how}point: mean over the pairs, whiskers: min-max over them)", 110),
                 fontsize=10)
    return _save(fig, out / f"sweep_{axis}.png")


def contention_slowdown(data: ReportData, out: Path) -> Path | None:
    """Sweeps over contention on and off: per policy, avg JCT with contention / without, each pair
    of cells matched on every other coordinate (trace, cluster, seed, …); bars are the mean over
    the pairs, whiskers their min and max, one panel per trace and cluster."""
    cells = data.cells
    if data.kind != "sweep" or cells is None or "contention" not in cells.columns or "avg_jct_s" not in cells:
        return None
    ok = _ok(data)
    flags = set(ok["contention"].dropna().astype(bool))
    if flags != {True, False}:
        return None
    label = _label_col(ok)
    keys = [c for c in PAIR_COLUMNS + (label,) if c in ok.columns and c != "contention"]
    on = ok[ok["contention"].astype(bool)].set_index(keys)["avg_jct_s"]
    off = ok[~ok["contention"].astype(bool)].set_index(keys)["avg_jct_s"]
    ratio = (on / off).dropna().reset_index(name="slowdown")
    if not len(ratio):
        return None
    facet_cols = [c for c in FACET_COLUMNS if c in ratio.columns and ratio[c].nunique() > 1]
    groups = list(ratio.groupby(facet_cols, sort=False)) if facet_cols else [((), ratio)]
    plt = _plt()
    from experiments.report.plots import _facet_axes

    fig, axes = _facet_axes(plt, len(groups))
    for ax, (key, g) in zip(axes, groups):
        stats = g.groupby(label, sort=False)["slowdown"].agg(["mean", "min", "max", "size"])
        x = np.arange(len(stats))
        # bars grow from 1 (no slowdown), so a 2 % slowdown is visible; the value is written on each
        ax.bar(x, stats["mean"] - 1.0, bottom=1.0, color="#8fb3d9")
        for xi, m in zip(x, stats["mean"]):
            ax.annotate(f"{m:.3f}", (xi, m), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
        ax.errorbar(x, stats["mean"], yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                    fmt="none", ecolor="k", capsize=3)
        ax.axhline(1.0, color="k", ls="--", lw=1)
        ax.set_xticks(x, [_wrap(str(s), 14) for s in stats.index], fontsize=7, rotation=30, ha="right")
        ax.set_ylabel("avg JCT with / without contention (ratio)")
        key = key if isinstance(key, tuple) else (key,)
        if facet_cols:
            ax.set_title(_wrap(", ".join(f"{c}={v}" for c, v in zip(facet_cols, key)), 40), fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    r = ratio["slowdown"].to_numpy(dtype=float)
    lo, hi = min(0.98, float(r.min()) - 0.01), max(1.02, float(r.max()) + 0.05 * (float(r.max()) - 1.0) + 0.01)
    for ax in axes:  # no offset notation: ratios of 1 ± 1e-10 must read as 1.000, not as an offset axis
        ax.set_ylim(lo, hi)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    fig.suptitle("Contention slowdown per policy (bar from 1: mean over matched cells, whiskers: min-max)",
                 fontsize=11)
    return _save(fig, out / "contention_slowdown.png")


def sweep_figures(data: ReportData, out: Path, baseline: str | None) -> list[tuple[str, Path | None]]:
    """The sweep's comparison figures as (caption, path or None), in page order."""
    base = choose_baseline(_ok(data), baseline)
    figs: list[tuple[str, Path | None]] = [
        (f"Average and p99 JCT and makespan, each policy / {base} on the same cells", paired_bars(data, out, base)),
        ("Contention slowdown: avg JCT with / without contention", contention_slowdown(data, out)),
    ]
    for axis in data.swept:
        figs.append((f"Ratio to {base} vs {axis.removeprefix('param_')}", sweep_axis(data, axis, out, base)))
    return figs
