"""The report's figures, one function per figure, each writing one PNG and returning its path
(or None when the data it needs is absent). matplotlib runs on the Agg backend (no display).

Choices, and why:
- Distributions (JCT, queueing, FTF, exposed communication) are drawn per trace and cluster
  (one panel each, `load.FACET_COLUMNS`): a CDF pooling two traces describes neither. Seeds and
  the other axes of one trace/cluster are pooled within its panel.
- Exposed communication is per job: communication compute did not hide, as a % of the job's
  executed time.
- Every axis names its unit (a ratio or a fraction says so), and every time in one report is in
  one unit (`ReportData.time`: hours or seconds).
- JCT CDFs use a log x-axis: job times in production traces span seconds to weeks, and a
  linear axis hides every difference below the tail.
- Queueing delay has many exact zeros, so its axis is symmetric-log (linear below 1 s).
- Utilisation timelines are step functions (the engine records change points) that change at
  every arrival and finish; drawn raw on one axis, several policies overlap as noise. Each
  policy gets its own panel (shared axes) with its time-weighted mean over `UTIL_BINS` equal
  bins (the bin width is in the title), exact for the area under the curve.
- Finish-time fairness marks FTF = 1 (as fast as a fair share would have been); the legend
  carries each policy's unfair fraction with the metrics' own definition (FTF > 1 +
  `simcore.metrics.FTF_TOLERANCE`), the number the summary table shows. All panels share one
  x scale.
- Every curve has its own line style, so identical curves that lie on top of each other stay
  visible in the legend and at their ends; long labels wrap.
- A sweep's comparisons (bars, metric vs a swept axis) are paired ratios to a baseline policy
  (`experiments.report.sweep_plots`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from cosim.plotting import pyplot
from experiments.report.labels import SUFFIX_UNITS
from simcore.metrics import FTF_TOLERANCE
from experiments.report.load import (
    JOB_COLUMNS,
    SUMMARY_COLUMNS,
    TIMELINE_COLUMNS,
    ReportData,
    pick,
)

log = logging.getLogger(__name__)

#: bins of the utilisation figure's time-weighted means
UTIL_BINS = 48
DPI = 110


def _plt():
    return pyplot("cosim report")


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


def _facet_axes(plt, n: int, sharex: bool = False):
    """One subplot per facet (trace × cluster, or policy), up to 3 a row, sharing the y-axis."""
    ncols = min(3, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 if n == 1 else 4.8 * ncols, 4.2 if n == 1 else 3.8 * nrows),
                             sharey=True, sharex=sharex, squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    for ax in flat[:n]:  # a shared x-axis still labels every panel: a hidden neighbour below has none
        ax.tick_params(labelbottom=True)
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


def _column(metric: str, div: float = 1.0):
    """The job column of `metric` as floats, divided by `div` (seconds → the report's time unit)."""
    def values_of(jobs: pd.DataFrame) -> np.ndarray | None:
        col = pick(jobs, metric, JOB_COLUMNS)
        return None if col is None else pd.to_numeric(jobs[col], errors="coerce").to_numpy(dtype=float) / div
    return values_of


def _cdf_facets(data: ReportData, series: dict[str, dict[str, np.ndarray]], path: Path, xlabel: str, scale: str,
                title: str, label_of=None, decorate=None, linthresh: float = 1.0) -> Path | None:
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
            ax.set_xscale("symlog", linthresh=linthresh)
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
    unit, div = data.time
    return _cdf_facets(data, _facet_series(data, _column("jct", div)), out / "jct_cdf.png",
                       f"job completion time ({unit}, log scale)", "log", "JCT distribution per policy")


def queueing_cdf(data: ReportData, out: Path) -> Path | None:
    unit, div = data.time
    return _cdf_facets(data, _facet_series(data, _column("queueing", div)), out / "queueing_cdf.png",
                       f"queueing delay: first start - submit ({unit}, symlog: linear below 1 s)", "symlog",
                       "Queueing-delay distribution per policy", linthresh=1.0 / div)


def ftf_cdf(data: ReportData, out: Path) -> Path | None:
    series = _facet_series(data, _column("ftf"))
    if not series:
        data.notes.append("no finish-time-fairness column in the job tables; ftf_cdf.png skipped")
        return None

    def label_of(label, v):  # the metrics' definition, so the legend and the summary table agree
        return f"{label}: unfair {float((v > 1.0 + FTF_TOLERANCE).mean()) if v.size else float('nan'):.1%}"

    # one x range and scale for every panel: p1 to p99 over all of them
    every = [v for per in series.values() for v in per.values() if v.size]
    lo = min([0.9] + [0.95 * float(np.quantile(v, 0.01)) for v in every])
    hi = max([1.1] + [1.05 * float(np.quantile(v, 0.99)) for v in every])
    log_axis = lo > 0 and hi / lo > 20  # heavy tails: a log axis keeps the region around 1 readable

    def decorate(ax, per):
        ax.axvline(1.0, color="k", ls="--", lw=1)
        ax.text(1.0, 0.03, " FTF = 1 (fair share)", fontsize=8, va="bottom")
        if log_axis:
            ax.set_xscale("log")
        ax.set_xlim(max(lo, 1e-3) if log_axis else max(lo, 0.0), hi)

    return _cdf_facets(data, series, out / "ftf_cdf.png",
                       "finish-time fairness = JCT / fair-share JCT (ratio, p1 to p99)", "linear",
                       f"Finish-time fairness; legend: share of jobs with FTF > 1 + {FTF_TOLERANCE:g} (unfair)",
                       label_of, decorate)


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


def _binned_step(t: np.ndarray, u: np.ndarray, bins: int, end: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted mean of a right-continuous step function over `bins` equal bins from its
    first change point to `end` (default its last; past it the last value holds). Returns the
    bins' left edges and means."""
    edges = np.linspace(t[0], t[-1] if end is None else end, bins + 1)
    seg = np.diff(t)
    area = np.concatenate([[0.0], np.cumsum(u[:-1] * seg)])  # integral up to each change point

    def integral(x):
        i = np.clip(np.searchsorted(t, x, side="right") - 1, 0, t.size - 1)
        return area[i] + u[i] * (x - t[i])

    cum = integral(edges)
    width = np.diff(edges)
    return edges[:-1], np.where(width > 0, np.diff(cum) / np.where(width > 0, width, 1), u[0])


def utilization(data: ReportData, out: Path) -> Path | None:
    """GPUs allocated over time per policy: time-weighted means over `UTIL_BINS` equal bins of the
    longest run (the raw step functions change at every arrival and finish and overlap as noise);
    a sweep's figure names the cell it shows in its title."""
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
        if t.size >= 2:
            curves[label] = (t, u)
    if not curves:
        data.notes.append("no usable timeline (time + utilisation or busy/total GPUs); utilization.png skipped")
        return None
    start = min(c[0][0] for c in curves.values())
    end = max(c[0][-1] for c in curves.values())
    unit, div = data.time
    width = (end - start) / UTIL_BINS
    fig, axes = _facet_axes(plt, len(curves), sharex=True)
    for k, (ax, (label, (t, u))) in enumerate(zip(axes, curves.items())):
        if t[0] > start:  # nothing allocated before this policy's first change point
            t, u = np.concatenate([[start], t]), np.concatenate([[0.0], u])
        t0, mean = _binned_step(t, u, UTIL_BINS, end)
        x = np.append(t0, t0[-1] + width) / div
        y = 100 * np.append(mean, mean[-1])
        color = f"C{k % 10}"
        ax.fill_between(x, y, step="post", alpha=0.35, color=color, lw=0)
        ax.step(x, y, where="post", lw=1.4, color=color)
        ax.set_title(_wrap(label, 40), fontsize=9)
        ax.set_xlabel(f"simulated time ({unit})")
        ax.set_ylabel("GPUs allocated (%)")
        ax.set_ylim(0, 105)
        ax.grid(True, alpha=0.3)
    where = f"; {data.timeline_where}" if data.timeline_where else ""
    fig.suptitle(_wrap(f"GPU utilisation over time, one panel per policy (time-weighted mean per "
                       f"{width / div:.3g}-{unit} bin{where})", 110), fontsize=10)
    return _save(fig, out / "utilization.png")


def summary_bars(data: ReportData, out: Path) -> Path | None:
    """A simulate folder's average and p99 JCT and makespan per policy, in the report's time unit
    (a sweep's bars are paired ratios: `sweep_plots.paired_bars`)."""
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
        unit, div = data.time
        bars = ax.bar(range(len(v)), v / div, color=[colors[i % len(colors)] for i in range(len(v))])
        ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks(range(len(v)), [_wrap(lb) for lb in labels], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(f"{title} ({unit})")
        ax.set_title(title, fontsize=10)
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


def _axis_label(axis: str) -> str:
    """Every x-axis carries a unit: the coordinate's, or the parameter name's suffix, or says the
    value is the parameter's own (dimensionless) setting."""
    name = axis.removeprefix("param_")
    unit = AXIS_UNITS.get(axis) or next((u for suf, u in SUFFIX_UNITS.items() if name.endswith(suf)), None)
    return f"{name} ({unit or 'parameter value, no unit'})"


def _wrap(label: str, width: int = 18) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(str(label), width, break_on_hyphens=False)) or str(label)


def all_figures(data: ReportData, out: Path, baseline: str | None = None) -> list[tuple[str, Path]]:
    """Every figure the data supports, as (caption, path), in page order; a sweep's comparisons
    are against `baseline` (a policy label or name; default the grid's first policy)."""
    out.mkdir(parents=True, exist_ok=True)
    figs: list[tuple[str, Path | None]] = [
        ("Job completion time, CDF per policy", jct_cdf(data, out)),
        ("Queueing delay, CDF per policy", queueing_cdf(data, out)),
        ("GPU utilisation over time", utilization(data, out)),
        ("Finish-time fairness, CDF with the unfair fraction", ftf_cdf(data, out)),
        ("Exposed communication, share of each job's run time, CDF per policy", exposed_comm_cdf(data, out)),
    ]
    if data.kind == "sweep":
        from experiments.report.sweep_plots import sweep_figures

        figs += sweep_figures(data, out, baseline)
    else:
        figs.append(("Average and p99 JCT and makespan per policy", summary_bars(data, out)))
    return [(c, p) for c, p in figs if p is not None]
