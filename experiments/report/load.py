"""Loading what a report needs from a `cosim simulate` folder or a `cosim sweep` folder.

Both kinds become one `ReportData`: per-policy job tables (for the CDFs), per-policy
timelines (utilisation), a per-policy summary (bars), and for sweeps the per-cell summary
with the swept axes (metric-vs-parameter plots). Column names are looked up through short
alias lists so the report keeps working when the engine renames a metric column; a missing
metric drops the one figure that needs it (with a note), it never fails the whole report.

Sweep folders pool each policy's jobs over all its successful cells: every policy ran on the
same traces, clusters and seeds, so the pooled distributions are comparable across policies.
Utilisation over time is not poolable; it is shown for one representative coordinate (the
first trace/cluster/contention/calibration/seed of the grid), named in the figure's title.
Times are shown in one unit per report (`report_time_unit`: hours when the largest JCT or
makespan is two hours or more, else seconds).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from cosim.errors import InputError
from experiments.report.header import simulate_frame
from experiments.report.labels import time_unit

log = logging.getLogger(__name__)

#: metric → column names the engine may use for it (first present wins)
JOB_COLUMNS = {
    "jct": ("jct_s", "jct", "job_completion_time_s"),
    "queueing": ("queueing_s", "queueing_delay_s", "queue_delay_s", "queueing_delay", "first_wait_s"),
    "ftf": ("ftf", "finish_time_fairness", "ftf_rho"),
}
TIMELINE_COLUMNS = {
    "time": ("time_s", "time", "t_s"),
    "util": ("utilization", "gpu_utilization", "gpu_util", "util"),
    "busy": ("busy_gpus", "allocated_gpus", "used_gpus", "gpus_busy", "running_gpus"),
    "total": ("total_gpus", "online_gpus", "num_gpus", "capacity_gpus"),
}
SUMMARY_COLUMNS = {
    "avg_jct": ("avg_jct_s", "jct_avg_s", "mean_jct_s", "jct_mean_s"),
    "p99_jct": ("p99_jct_s", "jct_p99_s"),
    "makespan": ("makespan_s",),
    "unfair_fraction": ("unfair_fraction", "ftf_unfair_fraction"),
    "avg_queueing": ("avg_queueing_s", "queueing_avg_s", "mean_queueing_s", "avg_queueing_delay_s"),
}
#: summary columns that are coordinates (possible sweep x-axes), besides param_*
AXIS_COLUMNS = ("trace", "cluster", "cluster_nodes", "contention", "calibration", "perf")
#: coordinates that set the workload and the hardware: distributions (CDFs) are drawn per value of
#: these, never pooled across them (a CDF mixing two traces describes neither)
FACET_COLUMNS = ("trace", "cluster", "cluster_nodes")


def pick(df: pd.DataFrame, metric: str, table: dict[str, tuple[str, ...]]) -> str | None:
    """The column of `df` holding `metric`, or None."""
    for name in table[metric]:
        if name in df.columns:
            return name
    return None


@dataclass
class ReportData:
    kind: str  # "simulate" or "sweep"
    root: Path
    title: str
    policy_summary: pd.DataFrame  # one row per policy label: policy, cells, metric columns (means)
    jobs: dict[str, pd.DataFrame] = field(default_factory=dict)  # policy label → jobs
    #: facet title ("trace=…, cluster=…"; "" for a simulate folder) → policy label → its jobs there
    facets: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)
    timelines: dict[str, pd.DataFrame] = field(default_factory=dict)
    cells: pd.DataFrame | None = None  # sweep: summary.parquet, one row per cell
    swept: list[str] = field(default_factory=list)  # sweep: x-axes (columns of `cells`)
    notes: list[str] = field(default_factory=list)
    #: why the results are partial (sweep cells missing or failed); empty when complete
    incomplete: list[str] = field(default_factory=list)
    #: what ran, one row per run or cell with the coordinate columns (`header.what_ran`)
    runs: pd.DataFrame | None = None
    #: the coordinates of the cell whose timelines the utilisation figure shows ("" for a simulate folder)
    timeline_where: str = ""
    #: the one time unit of the whole report ("h" or "s") and its divisor from seconds
    time: tuple[str, float] = ("s", 1.0)


def load(root: str | Path) -> ReportData:
    """Read a simulate or sweep output folder (decided by the presence of `cells/`)."""
    root = Path(root)
    summary_path = root / "summary.parquet"
    if not summary_path.is_file():
        raise InputError.at(root, expected="a cosim simulate or sweep output folder with summary.parquet")
    try:
        summary = pd.read_parquet(summary_path)
    except Exception as exc:
        raise InputError.at(summary_path, expected="a readable Parquet summary", detail=str(exc)) from None
    if "cell_id" in summary.columns:
        data = _load_sweep(root, summary)
    elif "policy" not in summary.columns:
        raise InputError.at(summary_path, field="policy", expected="a column naming the policy of each row")
    else:
        data = _load_simulate(root, summary)
    data.time = report_time_unit(data.cells if data.cells is not None else data.policy_summary)
    return data


def report_time_unit(frame: pd.DataFrame) -> tuple[str, float]:
    """One unit for every time the report shows, from the largest JCT or makespan it holds."""
    cols = [c for m in ("avg_jct", "p99_jct", "makespan") if (c := pick(frame, m, SUMMARY_COLUMNS)) is not None]
    return time_unit(pd.to_numeric(frame[c], errors="coerce").max() for c in cols)


def _read(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_parquet(path)
    except Exception as exc:
        log.warning("skipping unreadable %s (%s)", path, exc)
        return None


def _load_simulate(root: Path, summary: pd.DataFrame) -> ReportData:
    data = ReportData("simulate", root, f"cosim simulate: {root.name}", summary.copy())
    try:
        config = json.loads((root / "config.json").read_text()).get("config", {})
        data.runs = simulate_frame(config)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        data.notes.append("no readable config.json: the run's settings are not shown")
    for policy in summary["policy"].astype(str):
        jobs = _read(root / policy / "jobs.parquet")
        tl = _read(root / policy / "timeline.parquet")
        if jobs is None:
            data.notes.append(f"{policy}: no jobs.parquet")
        else:
            data.jobs[policy] = jobs
        if tl is not None:
            data.timelines[policy] = tl
    data.facets = {"": data.jobs}
    return data


def _load_sweep(root: Path, cells: pd.DataFrame) -> ReportData:
    name = root.name
    grid: int | None = None
    sweep_json = root / "sweep.json"
    if sweep_json.is_file():
        try:
            doc = json.loads(sweep_json.read_text())
            name = doc.get("name", name)
            grid = len(doc.get("cells") or {}) or None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            pass
    ok = cells[cells["status"] == "ok"] if "status" in cells.columns else cells
    if not len(ok):
        raise InputError.at(root, expected="a sweep with at least one successful cell",
                            detail=f"all {len(cells)} cells failed (see the error column of summary.parquet)")
    incomplete = []
    if grid is not None and len(cells) < grid:
        incomplete.append(f"{grid - len(cells)} of {grid} cells have not run (interrupted? cosim sweep --resume)")
    if len(ok) < len(cells):
        incomplete.append(f"{len(cells) - len(ok)} of {grid or len(cells)} cells failed")
    label = "policy_label" if "policy_label" in cells.columns else "policy"
    data = ReportData("sweep", root, f"cosim sweep: {name}", _policy_means(ok, label), cells=cells,
                      incomplete=incomplete, runs=cells)
    failed = len(cells) - len(ok)
    if failed:
        data.notes.append(f"{failed} of {len(cells)} cells failed; they are left out of every figure")
    # pooled job tables per policy label, in grid order
    pooled: dict[str, list[pd.DataFrame]] = {}
    by_facet: dict[str, dict[str, list[pd.DataFrame]]] = {}
    facet_cols = [c for c in FACET_COLUMNS if c in ok.columns and ok[c].nunique(dropna=False) > 1]
    for _, row in ok.iterrows():
        jobs = _read(root / "cells" / str(row["cell_id"]) / "jobs.parquet")
        if jobs is not None:
            pooled.setdefault(str(row[label]), []).append(jobs)
            facet = ", ".join(f"{c}={row[c]}" for c in facet_cols)
            by_facet.setdefault(facet, {}).setdefault(str(row[label]), []).append(jobs)
    data.jobs = {k: pd.concat(v, ignore_index=True) for k, v in pooled.items()}
    data.facets = {f: {k: pd.concat(v, ignore_index=True) for k, v in per.items()} for f, per in by_facet.items()}
    # timelines at the first coordinate (every policy at the same trace/cluster/seed)
    coords = [c for c in AXIS_COLUMNS + ("seed",) if c in ok.columns]
    if len(ok):
        first = ok.iloc[0]
        same = ok
        for c in coords:
            if pd.isna(first[c]):
                same = same[same[c].isna()]
            else:
                same = same[(same[c] == first[c]).fillna(False).astype(bool)]
        for _, row in same.iterrows():
            tl = _read(root / "cells" / str(row["cell_id"]) / "timeline.parquet")
            if tl is not None:
                data.timelines.setdefault(str(row[label]), tl)
        data.timeline_where = ", ".join(f"{c}={first[c]}" for c in coords if not pd.isna(first[c]))
    data.swept = swept_axes(ok)
    return data


def _policy_means(cells: pd.DataFrame, label: str) -> pd.DataFrame:
    """Per trace and cluster (where the sweep has several) and policy label: number of cells and the
    mean of every numeric metric over them. Different traces are never averaged into one row."""
    facets = [c for c in FACET_COLUMNS if c in cells.columns and cells[c].nunique(dropna=False) > 1]
    if not len(cells):
        return pd.DataFrame(columns=[*facets, "policy", "cells"])
    skip = {"seed", "cluster_nodes", "wall_s"} | {c for c in cells.columns if c.startswith("param_")}
    numeric = [c for c in cells.columns if c not in skip and pd.api.types.is_numeric_dtype(cells[c])
               and not pd.api.types.is_bool_dtype(cells[c])]
    g = cells.groupby([*facets, label], sort=False)
    out = g[numeric].mean()
    out.insert(0, "cells", g.size())
    out = out.reset_index().rename(columns={label: "policy"})
    return out[[*facets, "policy", *[c for c in out.columns if c not in facets and c != "policy"]]]


def swept_axes(cells: pd.DataFrame) -> list[str]:
    """Coordinates (and policy parameters) taking more than one value: the sweep's x-axes."""
    cands = [c for c in AXIS_COLUMNS if c in cells.columns] + sorted(c for c in cells.columns if c.startswith("param_"))
    return [c for c in cands if cells[c].dropna().nunique() > 1]
