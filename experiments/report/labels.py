"""Human names and units for result columns, shared by every report, table and figure.

A column's name carries its unit (STYLE: `avg_jct_s` is in seconds). Reports show it as
"average JCT (h)": the words spelled out and the unit named once. Times are shown in one unit
per report (`time_unit`), hours or seconds, never a mix of minutes and hours across panels.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from simcore.metrics import FTF_TOLERANCE

#: whole-column names whose words are not built from their parts
NAMES = {
    "policy": "policy", "policy_label": "policy", "cells": "cells", "jobs": "jobs", "finished": "finished jobs",
    "unfinished": "unfinished jobs", "cell_id": "cell", "cluster_nodes": "nodes", "status": "status",
    "perf": "iteration-time backend", "progress": "progress model",
    "gpu_utilization": "GPU utilisation", "unfair_fraction": "unfair jobs", "avg_ftf": "average FTF",
    "worst_ftf": "worst FTF", "avg_restarts": "restarts per job", "exposed_comm_s": "exposed communication",
    "starvation_s": "longest wait", "max_starvation_s": "longest wait", "makespan_s": "makespan",
    "contention_slowdown": "contention slowdown", "preemption_ratio": "preemption ratio",
    "avg_exposed_comm_s": "average exposed communication", "ftf_hetero_max": "max FTF, T_id = 1/N of every GPU type",
    "ftf_hetero_mean": "mean FTF, T_id = 1/N of every GPU type",
    "ftf_hetero_share_below_1": "jobs with FTF < 1, T_id = 1/N of every GPU type",
}
#: words inside column names
WORDS = {"avg": "average", "mean": "mean", "jct": "JCT", "ftf": "FTF", "qt": "queueing time",
         "queueing": "queueing delay", "waiting": "waiting time", "median": "median", "p50": "median",
         "comm": "communication", "gpu": "GPU", "hetero": "heterogeneous", "paper": "(paper's definition)",
         "artifact": "(artifact's definition)"}
#: a statistic at the end of a name moves to the front: `qt_p95` → "p95 queueing time"
STAT = re.compile(r"^(p\d+|mean|median|max|min)$")
#: units of columns whose name has no unit suffix
UNITS = {"gpu_utilization": "fraction", "unfair_fraction": f"fraction with FTF > 1 + {FTF_TOLERANCE:g}",
         "avg_ftf": "ratio", "worst_ftf": "ratio", "avg_restarts": "count", "contention_slowdown": "ratio",
         "preemption_ratio": "ratio"}
#: suffix → unit, for policy parameters and metrics alike (STYLE: units in names)
SUFFIX_UNITS = {"_s": "s", "_gbps": "Gb/s", "_bytes": "bytes", "_gb": "GB", "_frac": "fraction"}
TIME_UNITS = {"s": 1.0, "h": 3600.0}


def is_time(column: str) -> bool:
    """A column of seconds (its name ends in `_s`)."""
    return column.endswith("_s")


def time_unit(seconds: Iterable[float]) -> tuple[str, float]:
    """("h", 3600) when the largest finite value is at least two hours, else ("s", 1): one unit
    for a whole report or figure, chosen from every time it shows."""
    finite = [abs(float(v)) for v in seconds if v is not None and not math.isnan(float(v))]
    return ("h", 3600.0) if finite and max(finite) >= 2 * 3600 else ("s", 1.0)


def words(column: str) -> str:
    """`avg_jct_s` → "average JCT"; `param_promote_knob` → "promote knob"."""
    col = column.removeprefix("param_")
    if col in NAMES:
        return NAMES[col]
    stem = col[: -len(suf)] if (suf := next((s for s in SUFFIX_UNITS if col.endswith(s)), "")) else col
    parts = [p for p in stem.split("_") if p]
    tail = [p for p in parts if p in ("paper", "artifact")]
    parts = [p for p in parts if p not in tail]
    if len(parts) > 1 and STAT.match(parts[-1]):
        parts = [parts[-1], *parts[:-1]]
    return " ".join(WORDS.get(p, p) for p in parts + tail) or col


def unit(column: str, time: str = "s") -> str | None:
    """The column's unit as shown: `time` for seconds, the suffix's or the table's unit, else None."""
    col = column.removeprefix("param_")
    if col in UNITS:
        return UNITS[col]
    if is_time(col):
        return time
    suffix = next((u for s, u in SUFFIX_UNITS.items() if col.endswith(s)), None)
    if suffix:
        return suffix
    parts = set(col.split("_"))
    if parts & {"fraction", "share"}:
        return "fraction"
    if parts & {"ftf", "ratio"}:
        return "ratio"
    return None


def label(column: str, time: str = "s") -> str:
    """"average JCT (h)": the column's words and its unit, named once."""
    u = unit(column, time)
    return f"{words(column)} ({u})" if u else words(column)
