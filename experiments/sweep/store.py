"""On-disk layout of a sweep folder, written so that a kill at any moment loses only the
cells that were running.

    DIR/sweep.json                   the resolved grid (cell id → coordinates), rewritten at start
    DIR/cells/<cell_id>/row.parquet  the cell's one-row summary (coordinates, metrics, status, wall time)
    DIR/cells/<cell_id>/jobs.parquet the cell's per-job table (and timeline.parquet, decisions.parquet)
    DIR/summary.parquet              one row per finished cell, rebuilt from the row files, without
                                     the clock's columns (`cosim.columns.TIMING_COLUMNS`): two runs
                                     of one grid write the same bytes
    DIR/timing.parquet               cell_id and those columns (wall_s, FFT's solver seconds, …)

A cell is written into `DIR/cells/.tmp-<cell_id>-<pid>/` and renamed to its final name in
one `os.rename`, so a cell folder either is complete or does not exist. `summary.parquet`
is only a cache of the row files: it is rewritten atomically after cells finish and rebuilt
from the row files on `--resume`, so it can never disagree with them for long and never
holds a half-written cell.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd
import pyarrow as pa

from cosim import __version__
from cosim.atomic import write_parquet, write_text

log = logging.getLogger(__name__)

CELLS = "cells"
ROW_FILE = "row.parquet"
SUMMARY_FILE = "summary.parquet"
TIMING_FILE = "timing.parquet"
SWEEP_FILE = "sweep.json"
#: leading columns of every summary row, in this order; metrics follow, then these trailers
COORD_COLUMNS = ("cell_id", "trace", "cluster", "cluster_nodes", "policy", "policy_label", "contention",
                 "calibration", "seed")
TRAIL_COLUMNS = ("status", "error", "wall_s")
#: columns that differ between otherwise identical runs: in timing.parquet, not summary.parquet (the
#: summary `run_sweep` returns joins them back)
NONDETERMINISTIC = ("wall_s",)


def cell_dir(root: Path, cell_id: str) -> Path:
    return Path(root) / CELLS / cell_id


def clean_partial(root: Path) -> int:
    """Remove half-written cell folders left by a killed sweep; returns how many."""
    cells = Path(root) / CELLS
    if not cells.is_dir():
        return 0
    n = 0
    for p in cells.iterdir():
        if p.name.startswith(".tmp-"):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n


def commit_cell(root: Path, cell_id: str, row: Mapping[str, object], files: Mapping[str, bytes] | Path | None,
                metadata: Mapping[str, object] | None = None) -> Path:
    """Write a finished cell atomically: files + row into a temporary folder, then one rename.

    `files` is either a folder whose regular files are moved in (local backend: the runner
    wrote them) or a mapping name → bytes (Ray backend: the files came back from a worker).
    An existing folder for the cell (a failed attempt being retried) is replaced.
    """
    final = cell_dir(root, cell_id)
    tmp = final.parent / f".tmp-{cell_id}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if isinstance(files, Path):
        for f in sorted(files.iterdir()):
            if f.is_file():
                shutil.move(str(f), tmp / f.name)
    elif files:
        for name, blob in sorted(files.items()):
            (tmp / Path(name).name).write_bytes(blob)
    write_parquet(rows_table([row]), tmp / ROW_FILE, metadata)
    if final.exists():  # a retried cell: drop the old attempt first (not atomic, but the row is rewritable)
        old = final.parent / f".tmp-old-{cell_id}-{os.getpid()}"
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    return final


def rows_table(rows: Iterable[Mapping[str, object]]) -> pa.Table:
    """Rows → Arrow table with coordinates first, metrics in first-seen order, status last."""
    rows = list(rows)
    metrics: dict[str, None] = {}
    for r in rows:
        for k in r:
            if k not in COORD_COLUMNS and k not in TRAIL_COLUMNS:
                metrics[k] = None
    params = sorted(k for k in metrics if k.startswith("param_"))
    others = [k for k in metrics if not k.startswith("param_")]
    cols = list(COORD_COLUMNS[:6]) + params + list(COORD_COLUMNS[6:]) + others + list(TRAIL_COLUMNS)
    df = pd.DataFrame([{c: r.get(c) for c in cols} for r in rows], columns=cols)
    for c in ("cluster_nodes", "seed"):
        df[c] = df[c].astype("Int64")
    df["contention"] = df["contention"].astype("boolean")
    for c in ("trace", "cluster", "policy", "policy_label", "calibration", "status", "error", "cell_id"):
        df[c] = df[c].astype(object)
    for c in params + others:
        df[c] = _typed_column(df[c])
    df["wall_s"] = pd.to_numeric(df["wall_s"], errors="coerce").astype("float64")
    return pa.Table.from_pandas(df, preserve_index=False)


def _typed_column(col: pd.Series) -> pd.Series:
    """One Arrow-friendly dtype per column whatever mix the cells produced.

    Numbers (with missing values from failed cells) become float64 if any is fractional,
    else nullable Int64; all-boolean columns become nullable boolean; anything else is
    text (a parameter that is a number for one policy and a string for another).
    """
    vals = [v for v in col if v is not None and not (isinstance(v, float) and v != v) and v is not pd.NA]
    if not vals:
        return col.astype("float64")
    if all(isinstance(v, bool) for v in vals):
        return col.astype("boolean")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        if any(isinstance(v, float) for v in vals):
            return pd.to_numeric(col, errors="coerce").astype("float64")
        return col.astype("Int64")
    return col.map(lambda v: None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else str(v)).astype(object)


def load_rows(root: Path) -> dict[str, dict[str, object]]:
    """Every committed cell's row, by cell id (what `--resume` and the summary rebuild read)."""
    import pyarrow.parquet as pq

    out: dict[str, dict[str, object]] = {}
    cells = Path(root) / CELLS
    if not cells.is_dir():
        return out
    for d in sorted(cells.iterdir()):
        f = d / ROW_FILE
        if d.name.startswith(".") or not f.is_file():
            continue
        try:
            rec = pq.read_table(f).to_pylist()
        except Exception as exc:  # a damaged row is a cell to redo, never a crash of the sweep
            log.warning("ignoring unreadable %s (%s)", f, exc)
            continue
        if rec:
            out[d.name] = {k: v for k, v in rec[0].items()}
    return out


def write_summary(root: Path, rows_in_order: list[Mapping[str, object]], metadata: Mapping[str, object]) -> Path:
    """Rewrite `DIR/summary.parquet` (without the clock's columns) and `DIR/timing.parquet`
    (cell_id and those columns) atomically from the rows (grid order, not finish order)."""
    from cosim.columns import TIMING_COLUMNS

    table = rows_table(rows_in_order)
    clock = [c for c in table.column_names if c in TIMING_COLUMNS]
    write_parquet(table.select(["cell_id", *clock]), Path(root) / TIMING_FILE, metadata)
    return write_parquet(table.drop_columns(clock), Path(root) / SUMMARY_FILE, metadata)


def read_summary(root: Path) -> pd.DataFrame:
    """summary.parquet with timing.parquet's columns joined back by cell_id (at the end)."""
    summary = pd.read_parquet(Path(root) / SUMMARY_FILE)
    timing = Path(root) / TIMING_FILE
    if not timing.is_file():
        return summary
    return summary.merge(pd.read_parquet(timing), on="cell_id", how="left", validate="one_to_one")


def write_sweep_json(root: Path, payload: Mapping[str, object]) -> Path:
    return write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", Path(root) / SWEEP_FILE)


def summary_metadata(config_raw: Mapping[str, object], name: str) -> dict[str, object]:
    """Metadata stored in the summary: the sweep file as parsed and the version (no timestamps)."""
    return {"kind": "sweep", "sweep_name": name, "sweep_config": dict(config_raw), "version": __version__}
