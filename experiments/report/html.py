"""One self-contained HTML page: figures embedded as base64 PNG (the page can be mailed or
attached to an issue on its own), the per-policy summary table and the notes. Each figure is
also referenced by its file name in the `data-src` attribute and a link, so tools (and tests)
can find which PNG each image is.

The page opens with what ran (`header.what_ran`) and the metrics' definitions. Tables name
their columns in words with units (`labels.label`), show times in the report's one unit, and
scroll sideways inside their box rather than overflow the page."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Sequence

import pandas as pd

from cosim import __version__
from cosim.atomic import write_text
from experiments.report.header import what_ran
from experiments.report.labels import is_time, label
from experiments.report.load import ReportData
from simcore.metrics import FTF_TOLERANCE

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
.scroll { overflow-x: auto; max-width: 100%; margin: 1em 0; }
table { border-collapse: collapse; font-size: 0.85em; }
dl.ran { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1em; }
dl.ran dt { font-weight: 600; } dl.ran dd { margin: 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f2f2f2; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1.5em 0; } figcaption { font-weight: 600; margin-bottom: 0.4em; }
img { max-width: 100%; border: 1px solid #eee; } .notes { color: #555; font-size: 0.9em; }
"""


#: the summary columns shown on the page, in this order, when present (all columns are in the Parquet)
KEY_COLUMNS = ("trace", "cluster", "cluster_nodes", "policy", "cells", "jobs", "finished", "unfinished", "avg_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s",
               "makespan_s", "avg_queueing_s", "starvation_s", "gpu_utilization", "avg_ftf", "unfair_fraction",
               "worst_ftf", "avg_restarts", "exposed_comm_s")


def key_columns(df: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in KEY_COLUMNS if c in df.columns]
    return df[cols] if len(cols) > 2 else df


#: the coordinates shown first in the per-cell table, when present
CELL_COORDS = ("cell_id", "trace", "cluster", "cluster_nodes", "contention", "calibration", "perf", "policy_label",
               "seed", "status")


def cell_columns(cells: pd.DataFrame) -> pd.DataFrame:
    """The per-cell table: coordinates, then the key metrics (every column stays in summary.parquet)."""
    params = sorted(c for c in cells.columns if c.startswith("param_"))
    cols = [c for c in CELL_COORDS if c in cells.columns] + params
    cols += [c for c in KEY_COLUMNS if c in cells.columns and c not in cols and c not in ("policy", "cells")]
    return cells[cols]


#: what the metrics mean, shown under "What ran"
DEFINITIONS = (
    ("JCT", "job completion time: end - submit"),
    ("queueing delay", "first start - submit"),
    ("longest wait", "the longest total time any job spent queued, re-queueing after preemption included"),
    ("FTF", "finish-time fairness: JCT / the JCT under the run's fair-share reference (fluid GPS by default)"),
    ("unfair jobs", f"share of finished jobs with FTF > 1 + {FTF_TOLERANCE:g} (the same test in every table "
     "and figure)"),
    ("GPU utilisation", "busy GPU-seconds / online GPU-seconds from the start to the makespan"),
)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return "" if v != v else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return "" if v is None or v is pd.NA else str(v)


def table_html(df: pd.DataFrame, max_rows: int = 200, time: tuple[str, float] = ("s", 1.0)) -> str:
    """The table with human column names and units; columns of seconds shown in `time`'s unit."""
    unit, div = time
    shown = df.copy()
    for c in shown.columns:
        if is_time(str(c)) and pd.api.types.is_numeric_dtype(shown[c]):
            shown[c] = shown[c] / div
    head = "".join(f"<th title='{html.escape(str(c))}'>{html.escape(label(str(c), unit))}</th>"
                   for c in shown.columns)
    body = []
    for rec in shown.head(max_rows).itertuples(index=False):
        body.append("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in rec) + "</tr>")
    more = f"<p class='notes'>{len(df) - max_rows} more rows not shown</p>" if len(df) > max_rows else ""
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}"


def header_html(data: ReportData) -> str:
    """What ran and what the metrics mean."""
    runs = data.runs if data.runs is not None else pd.DataFrame()
    lines = what_ran(runs, f"cosim {__version__}")
    items = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in lines)
    items += f"<dt>source</dt><dd>{html.escape(str(data.root))}</dd>"
    items += f"<dt>times</dt><dd>in {'hours' if data.time[0] == 'h' else 'seconds'}</dd>"
    defs = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in DEFINITIONS)
    return (f"<h2>What ran</h2><dl class='ran'>{items}</dl>"
            f"<details><summary>Metric definitions</summary><dl class='ran'>{defs}</dl></details>")


def write_html(data: ReportData, figures: Sequence[tuple[str, Path]], path: Path) -> Path:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(data.title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{html.escape(data.title)}</h1>",
             header_html(data),
             *(f"<p><strong>Incomplete sweep: {html.escape(why)}</strong></p>" for why in data.incomplete),
             "<h2>Per-policy summary</h2>", table_html(key_columns(data.policy_summary), time=data.time)]
    if data.kind == "sweep":
        parts.append("<p class='notes'>means over each policy's successful cells of each trace and cluster; "
                     "every cell is a row of summary.parquet</p>")
    if data.kind == "sweep" and data.cells is not None:
        failed = data.cells[data.cells.get("status", pd.Series(dtype=object)) == "error"]
        if len(failed):
            cols = [c for c in ("cell_id", "trace", "cluster", "policy_label", "seed", "error") if c in failed]
            parts += ["<h2>Failed cells</h2>", table_html(failed[cols], time=data.time)]
    if data.kind == "sweep" and data.cells is not None and len(data.cells):
        parts += ["<h2>Per-cell results</h2>",
                  "<p class='notes'>one row per cell of the grid; the figures are drawn from these</p>",
                  table_html(cell_columns(data.cells), max_rows=500, time=data.time)]
    parts.append("<h2>Figures</h2>")
    for caption, fig in figures:
        b64 = base64.b64encode(Path(fig).read_bytes()).decode("ascii")
        name = html.escape(Path(fig).name)
        parts.append(f"<figure id='{name}'><figcaption>{html.escape(caption)} "
                     f"(<a href='{name}'>{name}</a>)</figcaption>"
                     f"<img alt='{html.escape(caption)}' data-src='{name}' src='data:image/png;base64,{b64}'>"
                     "</figure>")
    if data.notes:
        parts.append("<h2>Notes</h2><ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in data.notes)
                     + "</ul>")
    parts.append("</body></html>\n")
    return write_text("\n".join(parts), path)
