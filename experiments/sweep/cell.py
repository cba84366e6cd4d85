"""Running one cell: build the runner's `RunConfig`, run it, turn the result into a row.

This is the only code that executes inside workers (spawned processes or Ray tasks), so it
takes and returns plain picklable values. The runner travels as a `Runner`: the run's config
class and run function, both module-level, so they pickle by reference and a worker imports
them itself (`default_runner()`: `experiments.runner`, which builds policies from the project's
registry; tests pass a stand-in with the same `RunConfig` and
`run(config, out_dir, progress=False) -> RunResult` contract).

Any exception from the runner becomes a row with `status="error"` and the message, so one
bad cell (an unknown model in a trace, a policy that raises) never stops a sweep.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from experiments.sweep.config import Cell
from experiments.sweep.store import COORD_COLUMNS, TRAIL_COLUMNS, commit_cell

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Runner:
    """What a sweep runs each cell with. `config(**fields)` builds a run configuration and
    `run(config, out_dir, progress=False)` runs it; `names()`, when given, lists the valid
    policy names and `make(name, params)` builds one, so the driver can refuse an unknown
    policy or parameter before any cell runs."""

    config: Callable[..., Any]
    run: Callable[..., Any]
    policy_factory: Callable[[], tuple[Callable[[str, Mapping[str, Any]], Any], Callable[[], list[str]]]] | None = None


def default_runner() -> Runner:
    """The project's runner (`experiments.runner`), with its policy registry."""
    from experiments import runner

    return Runner(runner.RunConfig, runner.run, runner.policy_factory)

#: runner output files kept per cell (the per-policy folder is flattened into the cell folder; reclaims:
#: runs with a load series, read by Aryl's metrics)
KEPT_FILES = ("jobs.parquet", "timeline.parquet", "decisions.parquet", "reclaims.parquet", "solver.parquet")


def coordinate_row(cell: Cell) -> dict[str, Any]:
    """The coordinate part of a summary row (`param_<name>` for each policy parameter)."""
    row: dict[str, Any] = {
        "cell_id": cell.cell_id,
        "trace": cell.trace.label,
        "cluster": cell.cluster.preset,
        "cluster_nodes": cell.cluster.nodes,
        "policy": cell.policy.name,
        "policy_label": cell.policy.label,
        "contention": cell.contention,
        "calibration": cell.calibration,
        "seed": cell.seed,
        "perf": cell.perf,
        "progress": cell.progress,
    }
    for k, v in cell.policy.params:
        row[f"param_{k}"] = v
    if cell.costs is not None:  # only when set: rows of sweeps without costs stay as they were
        row["costs"] = cell.costs
    if cell.max_gpus != "2x":  # likewise
        row["max_gpus"] = cell.max_gpus
    return row


def _native(v: Any) -> Any:
    """numpy/pandas scalars → Python values so rows pickle small and type the same everywhere."""
    if v is None:
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(v, float) and math.isnan(v):
        return None
    if v.__class__.__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def metrics_row(summary: Any, policy: str) -> dict[str, Any]:
    """The runner's summary row for `policy` as a dict, minus columns that clash with coordinates."""
    df = summary
    if "policy" in df.columns and len(df) > 1:
        df = df[df["policy"] == policy]
    if len(df) != 1:
        raise RuntimeError(f"runner summary has {len(df)} rows for policy {policy!r}, expected 1")
    rec = df.iloc[0].to_dict()
    reserved = set(COORD_COLUMNS) | set(TRAIL_COLUMNS)
    return {k: _native(v) for k, v in rec.items() if k not in reserved}


def run_config_for(runner: Runner, cell: Cell, trace_spec: str, write_decisions: bool) -> Any:
    params = {cell.policy.name: dict(cell.policy.params)} if cell.policy.params else {}
    extra = {"skip_invalid": True} if cell.skip_invalid else {}  # additive RunConfig fields, passed only when
    if cell.perf != "network":  # set, so stand-in runners without them keep working
        extra["perf"] = cell.perf
    if cell.progress != "plain":
        extra["progress"] = cell.progress
    if cell.load_series is not None:
        extra["load_series"] = cell.load_series
    if cell.max_gpus != "2x":
        extra["max_gpus"] = cell.max_gpus
    if cell.costs is not None:  # a table travels as JSON text (cells are hashable)
        c = cell.costs
        extra["costs"] = json.loads(c) if isinstance(c, str) and c.startswith("{") else c
    return runner.config(
        trace=trace_spec,
        cluster=cell.cluster.preset,
        cluster_nodes=cell.cluster.nodes,
        policies=(cell.policy.name,),
        policy_params=params,
        contention=cell.contention,
        calibration=cell.calibration,
        seed=cell.seed,
        write_decisions=write_decisions,
        **extra,
    )


def run_cell(cell: Cell, trace_spec: str, root: str | None, runner: Runner,
             write_decisions: bool = False, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one cell. With `root`, commit it under `root/cells/<id>/` and return {"row"}; without,
    return {"row", "files": name → bytes} for the caller to commit (Ray workers on other hosts)."""
    row = coordinate_row(cell)
    scratch_parent = Path(root) / "cells" if root else None
    if scratch_parent is not None:
        scratch_parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".tmp-run-{cell.cell_id}-", dir=scratch_parent))
    flat = scratch / "_cell"
    flat.mkdir()
    t0 = time.perf_counter()
    metrics: dict[str, Any] = {}
    try:
        config = run_config_for(runner, cell, trace_spec, write_decisions)
        result = runner.run(config, scratch / "run", progress=False)
        metrics = metrics_row(result.summary, cell.policy.name)
        metrics.update(getattr(result, "timing", {}).get(cell.policy.name, {}))  # the row keeps them; not the summary
        status, error = "ok", None
        pol_dir = scratch / "run" / cell.policy.name
        for name in KEPT_FILES:
            if (pol_dir / name).is_file():
                shutil.move(str(pol_dir / name), flat / name)
        if not (flat / "jobs.parquet").exists() and cell.policy.name in getattr(result, "jobs", {}):
            from cosim.atomic import write_parquet
            import pyarrow as pa

            write_parquet(pa.Table.from_pandas(result.jobs[cell.policy.name], preserve_index=False),
                          flat / "jobs.parquet", metadata)
        if (scratch / "run" / "config.json").is_file():
            shutil.move(str(scratch / "run" / "config.json"), flat / "config.json")
    except Exception as exc:  # recorded, never raised: one bad cell must not stop the sweep
        status, error = "error", f"{type(exc).__name__}: {exc}".strip()
        log.info("cell %s (%s) failed: %s", cell.cell_id, cell.policy.label, error)
        for f in flat.iterdir():
            f.unlink()
    row.update(metrics)
    row.update(status=status, error=error, wall_s=time.perf_counter() - t0)
    try:
        if root:
            commit_cell(Path(root), cell.cell_id, row, flat, metadata)
            return {"row": row}
        files = {f.name: f.read_bytes() for f in sorted(flat.iterdir()) if f.is_file()}
        return {"row": row, "files": files}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
