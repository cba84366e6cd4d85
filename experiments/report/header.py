"""What ran, in a few lines: the opening of every report (HTML page and REPORT.md).

`what_ran(frame)` reads the coordinate columns of a run's rows (a sweep's or a reproduction's
cells, or the one-row frame `simulate_frame` makes from a simulate folder's config.json) and says
for each which values it took: trace, cluster, iteration-time backend, progress model,
contention, calibration, costs and seeds, then the cosim version. A coordinate that is absent is
left out, never guessed.
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

#: (column, what the line is called), in the order the lines are shown
COORDINATES = (("trace", "trace"), ("cluster", "cluster"), ("perf", "iteration-time backend"),
               ("progress", "progress model"), ("contention", "contention"), ("calibration", "calibration"),
               ("costs", "change costs"), ("seed", "seeds"))


def _values(col: pd.Series) -> list[str]:
    out = []
    for v in col.dropna().unique().tolist():
        if isinstance(v, bool):
            v = "on" if v else "off"
        out.append(str(v))
    return out


def _cluster(frame: pd.DataFrame) -> pd.Series:
    """Each cell's cluster: a preset's name or a cluster file (as `cosim.paths.for_display` names
    it), with its node count when resized."""
    from cosim.paths import for_display

    names = frame["cluster"].astype(str).map(for_display)
    if "cluster_nodes" not in frame.columns:
        return names
    nodes = frame["cluster_nodes"]
    return names + nodes.map(lambda n: "" if pd.isna(n) else f" ({int(n)} nodes)")


def what_ran(frame: pd.DataFrame, version: str) -> list[tuple[str, str]]:
    """(name, values) lines for the coordinates present in `frame`, then `version` (cosim's, and the
    commit where known)."""
    lines = []
    for col, name in COORDINATES:
        if col not in frame.columns:
            continue
        series = _cluster(frame) if col == "cluster" else frame[col]
        vals = _values(series)
        if col == "seed" and vals:
            vals = [", ".join(sorted(vals, key=lambda s: (len(s), s)))]
        if vals:
            lines.append((name, "; ".join(vals) if len(vals) > 1 else vals[0]))
    lines.append(("version", version))
    return lines


def simulate_frame(config: Mapping[str, Any]) -> pd.DataFrame:
    """A simulate folder's resolved config (config.json's `config`) as one row of the coordinate columns."""
    row = {"trace": config.get("trace"), "cluster": config.get("cluster"), "cluster_nodes": config.get("cluster_nodes"),
           "perf": config.get("perf"), "progress": config.get("progress"), "contention": config.get("contention"),
           "calibration": config.get("calibration"), "costs": config.get("costs"), "seed": config.get("seed")}
    if isinstance(row["costs"], (dict, list)):
        row["costs"] = str(row["costs"])
    return pd.DataFrame([{k: v for k, v in row.items() if v is not None}])
