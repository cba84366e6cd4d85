"""The report's figures, one function per figure, each writing one PNG and returning its path
(or None when the data it needs is absent). matplotlib runs on the Agg backend (no display).

Choices, and why:
- Distributions (JCT, queueing, FTF, exposed communication) are drawn per trace and cluster
  (one panel each, `load.FACET_COLUMNS`): a CDF pooling two traces describes neither. Seeds and
  the other axes of one trace/cluster are pooled within its panel.
- Exposed communication is per job: communication compute did not hide, as a % of the job's
  executed time. Contention slowdown (sweeps over contention on/off): avg JCT with / without,
  for cells matched on every other coordinate.
- Every axis names its unit (a ratio or a fraction says so).
- JCT CDFs use a log x-axis: job times in production traces span seconds to weeks, and a
  linear axis hides every difference below the tail.
- Queueing delay has many exact zeros, so its axis is symmetric-log (linear below 1 s).
- Utilisation timelines are step functions (the engine records change points); long ones
  are reduced to time-weighted means over ≤ 2,000 bins so the PNG stays readable.
- Finish-time fairness marks FTF = 1 (as fast as a fair share would have been); the legend
  carries each policy's unfair fraction (share of jobs with FTF > 1).
- Every curve has its own line style (and marker in sweep plots), so identical curves that lie
  on top of each other stay visible in the legend and at their ends; long labels wrap.
- Sweep metric-vs-axis plots draw one row per combination of the other swept axes (trace,
  cluster, contention …): error bars are the spread over seeds only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from cosim.errors import CosimError
from experiments.report.load import (
    AXIS_COLUMNS,
    FACET_COLUMNS,
    JOB_COLUMNS,
    SUMMARY_COLUMNS,
    TIMELINE_COLUMNS,
    ReportData,
    pick,
)

log = logging.getLogger(__name__)

MAX_BINS = 2000
METRIC_TITLES = {"avg_jct": "average JCT", "p99_jct": "p99 JCT", "makespan": "makespan",
                 "unfair_fraction": "unfair fraction", "avg_queueing": "average queueing delay"}
DPI = 110


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise CosimError("cosim report needs matplotlib: pip install 'cosim[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    from cosim.atomic import atomic_path

    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=DPI, format="png", metadata={"Software": None}, bbox_inches="tight")
    _plt().close(fig)
    return path


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(values[np.isfinite(values)])
    return v, np.arange(1, v.size + 1) / max(v.size, 1)


def _facet_axes(plt, n: int):
    """One subplot per facet (trace × cluster), up to 3 a row, sharing the y-axis."""
    ncols = min(3, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 if n == 1 else 4.8 * ncols, 4.2 if n == 1 else 3.8 * nrows),
                             sharey=True, squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _facet_series(data: ReportData, values_of) -> dict[str, dict[str, np.ndarray]]:
    """facet → policy label → finite values (`values_of(jobs)` → array or None when the column is absent)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for facet, per in (data.facets or {"": data.jobs}).items():
        for label, jobs in per.items():
            v = values_of(jobs)
            if v is not None:
                out.setdefault(facet, {})[label] = v[np.isfinite(v)]
    return out


def _column(metric: str):
    def values_of(jobs: pd.DataFrame) -> np.ndarray | None:
        col = pick(jobs, metric, JOB_COLUMNS)
        return None if col is None else pd.to_numeric(jobs[col], errors="coerce").to_numpy(dtype=float)
    return values_of


def _cdf_facets(data: ReportData, series: dict[str, dict[str, np.ndarray]], path: Path, xlabel: str, scale: str,
                title: str, label_of=None, decorate=None) -> Path | None:
    """A CDF per policy in each facet; never a curve pooled over traces or clusters. Curves of one
    facet cycle line styles, so identical ones stay apart in the legend and at their ends."""
    if not series:
        data.notes.append(f"no data for {path.name} in the job tables; skipped")
        return None
    plt = _plt()
    fig, axes = _facet_axes(plt, len(series))
    for ax, (facet, per) in zip(axes, series.items()):
        for k, (label, v) in enumerate(per.items()):
            x, y = _ecdf(v)
            if scale == "log":
                keep = x > 0
                x, y = x[keep], y[keep]
            text = label_of(label, v) if label_of else f"{label} (n={v.size})"
            ax.step(x, y, where="post", label=text, ls=LINESTYLES[k % len(LINESTYLES)], lw=1.2 + 0.4 * (k % 3))
        if scale == "log":
            ax.set_xscale("log")
        elif scale == "symlog":
            ax.set_xscale("symlog", linthresh=1.0)
        if decorate:
            decorate(ax, per)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of jobs (0-1)")
        ax.set_ylim(0, 1.01)
        if facet:
            ax.set_title(_wrap(facet, 40), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title + (" (one panel per trace and cluster)" if len(series) > 1 else ""), fontsize=11)
    return _save(fig, path)


def jct_cdf(data: ReportData, out: Path) -> Path | None:
    return _cdf_facets(data, _facet_series(data, _column("jct")), out / "jct_cdf.png",
                       "job completion time (s, log scale)", "log", "JCT distribution per policy")


def queueing_cdf(data: ReportData, out: Path) -> Path | None:
    return _cdf_facets(data, _facet_series(data, _column("queueing")), out / "queueing_cdf.png",
                       "queueing delay: first start - submit (s, symlog)", "symlog",
                       "Queueing-delay distribution per policy")


def ftf_cdf(data: ReportData, out: Path) -> Path | None:
    series = _facet_series(data, _column("ftf"))
    if not series:
        data.notes.append("no finish-time-fairness column in the job tables; ftf_cdf.png skipped")
        return None

    def label_of(label, v):
        return f"{label}: unfair {float((v > 1.0).mean()) if v.size else float('nan'):.1%}"

    def decorate(ax, per):
        lo, hi = 0.9, 1.1
        for v in per.values():
            if v.size:
                lo = min(lo, 0.95 * float(np.quantile(v, 0.01)))
                hi = max(hi, 1.05 * float(np.quantile(v, 0.99)))
        ax.axvline(1.0, color="k", ls="--", lw=1)
        ax.text(1.0, 0.03, " FTF = 1 (fair share)", fontsize=8, va="bottom")
        if lo > 0 and hi / lo > 20:  # heavy tails: a log axis keeps the region around 1 readable
            ax.set_xscale("log")
        ax.set_xlim(max(lo, 1e-3) if ax.get_xscale() == "log" else max(lo, 0.0), hi)

    return _cdf_facets(data, series, out / "ftf_cdf.png",
                       "finish-time fairness = JCT / fair-share JCT (ratio, p1 to p99)", "linear",
                       "Finish-time fairness; legend: fraction of jobs with FTF > 1", label_of, decorate)


def _exposed_share(jobs: pd.DataFrame) -> np.ndarray | None:
    """Exposed (not overlapped) communication as a share of each job's executed time, in %."""
    if "exposed_comm_s" not in jobs.columns or "executed_s" not in jobs.columns:
        return None
    comm = pd.to_numeric(jobs["exposed_comm_s"], errors="coerce").to_numpy(dtype=float)
    run = pd.to_numeric(jobs["executed_s"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(run > 0, 100.0 * comm / run, np.nan)


def exposed_comm_cdf(data: ReportData, out: Path) -> Path | None:
    """Per job, the share of its run time spent in communication that compute did not hide."""
    return _cdf_facets(data, _facet_series(data, _exposed_share), out / "exposed_comm_cdf.png",
                       "exposed communication / executed time (% per job)", "linear",
                       "Exposed communication per job")


def contention_slowdown(data: ReportData, out: Path) -> Path | None:
    """Sweeps over contention on and off: per policy, avg JCT with contention / without, each pair
    of cells matched on every other coordinate (trace, cluster, seed, …); bars are the mean over
    the pairs, whiskers their min and max, one panel per trace and cluster."""
    cells = data.cells
    if data.kind != "sweep" or cells is None or "contention" not in cells.columns or "avg_jct_s" not in cells:
        return None
    ok = cells[cells["status"] == "ok"] if "status" in cells.columns else cells
    flags = set(ok["contention"].dropna().astype(bool))
    if flags != {True, False}:
        return None
    label = "policy_label" if "policy_label" in ok.columns else "policy"
    keys = [c for c in AXIS_COLUMNS + ("seed", label) if c in ok.columns and c != "contention"]
    on = ok[ok["contention"].astype(bool)].set_index(keys)["avg_jct_s"]
    off = ok[~ok["contention"].astype(bool)].set_index(keys)["avg_jct_s"]
    ratio = (on / off).dropna().reset_index(name="slowdown")
    if not len(ratio):
        return None
    facet_cols = [c for c in FACET_COLUMNS if c in ratio.columns and ratio[c].nunique() > 1]
    groups = list(ratio.groupby(facet_cols, sort=False)) if facet_cols else [((), ratio)]
    plt = _plt()
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


def _binned_step(t: np.ndarray, u: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted mean of a right-continuous step function over `bins` equal bins."""
    edges = np.linspace(t[0], t[-1], bins + 1)
    seg = np.diff(t)
    area = np.concatenate([[0.0], np.cumsum(u[:-1] * seg)])  # integral up to each change point

    def integral(x):
        i = np.clip(np.searchsorted(t, x, side="right") - 1, 0, t.size - 1)
        return area[i] + u[i] * (x - t[i])

    cum = integral(edges)
    width = np.diff(edges)
    return edges[:-1], np.where(width > 0, np.diff(cum) / np.where(width > 0, width, 1), u[0])


def utilization(data: ReportData, out: Path) -> Path | None:
    plt = _plt()
    curves = {}
    for label, tl in data.timelines.items():
        tcol = pick(tl, "time", TIMELINE_COLUMNS)
        ucol, bcol, ncol = (pick(tl, k, TIMELINE_COLUMNS) for k in ("util", "busy", "total"))
        if tcol is None or (ucol is None and (bcol is None or ncol is None)):
            continue
        tl = tl.sort_values(tcol, kind="stable")
        t = tl[tcol].to_numpy(dtype=float)
        if ucol is not None:
            u = tl[ucol].to_numpy(dtype=float)
            if np.nanmax(u, initial=0) > 1.5:  # given in percent
                u = u / 100.0
        else:
            u = tl[bcol].to_numpy(dtype=float) / np.maximum(tl[ncol].to_numpy(dtype=float), 1e-12)
        if t.size < 2:
            continue
        if t.size > 2 * MAX_BINS:
            t, u = _binned_step(t, u, MAX_BINS)
        curves[label] = (t, u)
    if not curves:
        data.notes.append("no usable timeline (time + utilisation or busy/total GPUs); utilization.png skipped")
        return None
    fig, ax = plt.subplots(figsize=(8, 4.2))
    span = max(c[0][-1] for c in curves.values())
    unit, div = ("h", 3600.0) if span > 3 * 3600 else ("min", 60.0) if span > 180 else ("s", 1.0)
    for k, (label, (t, u)) in enumerate(curves.items()):
        ax.step(t / div, 100 * u, where="post", lw=1, alpha=0.85, label=label, ls=LINESTYLES[k % len(LINESTYLES)])
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("GPUs allocated (%)")
    ax.set_ylim(0, 105)
    ax.set_title("GPU utilisation over time")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, out / "utilization.png")


def _seconds_unit(values: np.ndarray) -> tuple[str, float]:
    m = np.nanmax(values) if values.size and np.isfinite(values).any() else 0
    return ("h", 3600.0) if m > 3 * 3600 else ("min", 60.0) if m > 180 else ("s", 1.0)


def summary_bars(data: ReportData, out: Path) -> Path | None:
    s = data.policy_summary
    metrics = [(m, t) for m, t in (("avg_jct", "average JCT"), ("p99_jct", "p99 JCT"), ("makespan", "makespan"))
               if pick(s, m, SUMMARY_COLUMNS) is not None]
    if not metrics or not len(s):
        data.notes.append("no avg/p99 JCT or makespan in the summary; bars.png skipped")
        return None
    plt = _plt()
    labels = s["policy"].astype(str).tolist()
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.0 * len(metrics), 4.2 + 0.08 * min(18, max(map(len, labels)))))
    axes = np.atleast_1d(axes)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (m, title) in zip(axes, metrics):
        v = s[pick(s, m, SUMMARY_COLUMNS)].to_numpy(dtype=float)
        unit, div = _seconds_unit(v)
        bars = ax.bar(range(len(v)), v / div, color=[colors[i % len(colors)] for i in range(len(v))])
        ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks(range(len(v)), [_wrap(lb) for lb in labels], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(f"{title} ({unit})")
        ax.set_title(title + (" (mean over cells)" if data.kind == "sweep" else ""), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out / "bars.png")


def _x_values(col: pd.Series) -> tuple[list, bool]:
    vals = col.dropna().unique().tolist()
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                  for v in vals)
    try:
        vals = sorted(vals)
    except TypeError:
        vals = sorted(vals, key=str)
    return vals, numeric


#: most facet rows a metric-vs-axis figure draws; beyond that the other axes are averaged (and the title says so)
MAX_FACETS = 6
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
AXIS_UNITS = {"cluster_nodes": "nodes", "trace": "trace spec or file", "cluster": "preset or file",
              "contention": "on/off", "calibration": "profile", "perf": "backend"}
#: unit of a policy parameter, from its name's suffix (STYLE: units in names)
SUFFIX_UNITS = {"_s": "s", "_gbps": "Gb/s", "_bytes": "bytes", "_gb": "GB", "_frac": "fraction"}


def _axis_label(axis: str) -> str:
    """Every x-axis carries a unit: the coordinate's, or the parameter name's suffix, or says the
    value is the parameter's own (dimensionless) setting."""
    name = axis.removeprefix("param_")
    unit = AXIS_UNITS.get(axis) or next((u for suf, u in SUFFIX_UNITS.items() if name.endswith(suf)), None)
    return f"{name} ({unit or 'parameter value, no unit'})"


def _wrap(label: str, width: int = 18) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(str(label), width, break_on_hyphens=False)) or str(label)


def sweep_axis(data: ReportData, axis: str, out: Path,
               metrics: Sequence[str] = ("avg_jct", "p99_jct", "makespan")) -> Path | None:
    """Metric vs one swept coordinate, one row of panels per combination of the other swept axes.

    Within a panel every point is one (policy, x) over the seeds: mean ± std over seeds only,
    never over traces, clusters or contention (those are the rows). With more than MAX_FACETS
    combinations the other axes are averaged per seed first, and the title says so.
    """
    cells = data.cells
    ok = cells[cells["status"] == "ok"] if "status" in cells.columns else cells
    ok = ok[ok[axis].notna()]
    present = [(m, pick(ok, m, SUMMARY_COLUMNS)) for m in metrics]
    present = [(m, c) for m, c in present if c is not None]
    if not present or not len(ok):
        return None
    series_col = "policy" if axis.startswith("param_") else ("policy_label" if "policy_label" in ok else "policy")
    xs, numeric = _x_values(ok[axis])
    others = [c for c in data.swept if c != axis and c in ok.columns and c != series_col]
    facet_keys = list(dict.fromkeys(map(tuple, ok[others].astype(str).to_numpy()))) if others else [()]
    pooled = len(facet_keys) > MAX_FACETS
    if pooled:
        facet_keys = [()]
    plt = _plt()
    fig, axes = plt.subplots(len(facet_keys), len(present), figsize=(4.3 * len(present), 3.6 * len(facet_keys)),
                             squeeze=False)
    groups = list(dict.fromkeys(ok[series_col].astype(str)))
    for r, key in enumerate(facet_keys):
        sub_ok = ok
        for c, v in zip(others if not pooled else [], key):
            sub_ok = sub_ok[sub_ok[c].astype(str) == v]
        for ax, (m, col) in zip(axes[r], present):
            per_seed = sub_ok.groupby([series_col, axis, "seed"], sort=False)[col].mean().reset_index()
            unit, div = _seconds_unit(ok[col].to_numpy(dtype=float))
            for k, g in enumerate(groups):
                sub = per_seed[per_seed[series_col].astype(str) == g]
                stats = sub.groupby(axis)[col].agg(["mean", "std", "count"]).reindex(xs).dropna(subset=["mean"])
                if stats.empty:
                    continue
                if numeric:
                    x = stats.index.to_numpy(dtype=float)
                else:  # categories side by side, a small offset per series so error bars do not overlap
                    x = np.array([xs.index(v) for v in stats.index], dtype=float) + (k - (len(groups) - 1) / 2) * 0.08
                # marker and line style per series: identical curves stay distinguishable
                ax.errorbar(x, stats["mean"] / div, yerr=stats["std"].fillna(0) / div, capsize=3, label=g, lw=1.2,
                            marker=MARKERS[k % len(MARKERS)], ls=LINESTYLES[k % len(LINESTYLES)] if numeric else "none",
                            alpha=0.85)
            if not numeric:
                ax.set_xticks(range(len(xs)), [_wrap(v) for v in xs], rotation=20, ha="right", fontsize=8)
            ax.set_xlabel(_axis_label(axis))
            title = METRIC_TITLES.get(m, col)
            ax.set_ylabel(f"{title} ({unit})" if col.endswith("_s") else f"{title} (fraction)")
            if key:
                ax.set_title(", ".join(f"{c}={v}" for c, v in zip(others, key)), fontsize=8)
            ax.grid(True, alpha=0.3)
    n_seeds = ok["seed"].nunique() if "seed" in ok else 1
    how = (f"averaged over {', '.join(others)}, then " if pooled and others else "") + \
        f"mean ± std over {n_seeds} seed(s) only"
    fig.suptitle(f"metrics vs {axis.removeprefix('param_')} ({how})", fontsize=11)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, out / f"sweep_{axis}.png")


def all_figures(data: ReportData, out: Path) -> list[tuple[str, Path]]:
    """Every figure the data supports, as (caption, path), in page order."""
    out.mkdir(parents=True, exist_ok=True)
    figs: list[tuple[str, Path | None]] = [
        ("Job completion time, CDF per policy", jct_cdf(data, out)),
        ("Queueing delay, CDF per policy", queueing_cdf(data, out)),
        ("GPU utilisation over time", utilization(data, out)),
        ("Finish-time fairness, CDF with the unfair fraction", ftf_cdf(data, out)),
        ("Exposed communication, share of each job's run time, CDF per policy", exposed_comm_cdf(data, out)),
        ("Average and p99 JCT and makespan per policy", summary_bars(data, out)),
    ]
    if data.kind == "sweep":
        figs.append(("Contention slowdown: avg JCT with / without contention", contention_slowdown(data, out)))
        for axis in data.swept:
            figs.append((f"Metrics vs {axis.removeprefix('param_')}", sweep_axis(data, axis, out)))
    return [(c, p) for c, p in figs if p is not None]
