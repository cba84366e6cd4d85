"""`run_sweep`: expand the grid, skip finished cells, run the rest, keep the summary current.

Crash safety comes from the store (each cell commits atomically, the summary is a cache of
the committed rows); this module adds the policy: refuse to mix a fresh sweep into a folder
that already holds one unless `resume=True`, retry failed cells on resume, and write the
summary in grid order so it is identical whichever backend ran the cells and in whatever
order they finished.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pandas as pd

from cosim import __version__
from cosim.errors import CosimError, InputError
from cosim.outdir import claim_out_dir
from experiments.sweep import store
from experiments.sweep.backends import run_inprocess, run_local, run_ray
from experiments.sweep.cell import Runner, default_runner
from experiments.sweep.config import Cell, SweepConfig, TraceSpec, check_policy_params

log = logging.getLogger(__name__)

BACKENDS = ("local", "ray")
#: the summary is rewritten at most this often while cells finish (always at the end)
SUMMARY_EVERY_S = 2.0


@dataclass(frozen=True)
class SweepResult:
    summary: pd.DataFrame  # one row per cell of the grid that has a committed row
    ran: int  # cells run by this call
    skipped: int  # finished cells found on resume
    failed: int  # cells of the grid whose row says status == "error"
    out_dir: Path


def check_names(config: SweepConfig, factory: tuple[Any, Any] | None = None) -> None:
    """Fail before running anything on an unknown policy or policy parameter (lists valid
    names); cluster presets and files are checked when the sweep file is parsed.

    `factory` is the runner's policy registry `(make(name, params), names())`; None (a stand-in
    runner without one) skips the policy checks."""
    from cosim.errors import UnknownNameError

    if factory is not None:
        make, names = factory
        valid = names()
        for p in config.policies:
            if p.name not in valid:
                raise UnknownNameError("policy", p.name, valid)
        check_policy_params(config, lambda name, **params: make(name, params))


def _sample_key(trace: TraceSpec) -> str:
    key = hashlib.sha256(f"{trace.spec}|{trace.sample_jobs}|{trace.sample_window_s}|{trace.sample_seed}".encode())
    return key.hexdigest()[:16]


def sample_traces(config: SweepConfig, root: Path) -> dict[str, Any]:
    """The seeded samples the sweep's sampled traces ask for (label → job table), taken before
    the sweep claims its folder: a window or job count the file cannot give fails here, with
    nothing written. Samples already in `root` (a resumed sweep) are not taken again."""
    out: dict[str, Any] = {}
    for trace in config.traces:
        if trace.sample_jobs is None and trace.sample_window_s is None:
            continue
        if (root / "traces" / f"{_sample_key(trace)}.parquet").exists():
            continue
        try:
            from traces import load
            from traces.sample import sample_window
        except ImportError as exc:
            raise CosimError(f"sampling trace {trace.label} needs the traces package ({exc})") from None
        try:
            out[trace.label] = sample_window(load(trace.spec), jobs=trace.sample_jobs,
                                             window_s=trace.sample_window_s, seed=trace.sample_seed)
        except InputError as exc:  # name the sweep file and the trace entry, not only the sampler's field
            raise InputError.at(config.source, field=f"traces ({trace.label})", detail=exc.message) from None
    return out


def materialise_trace(trace: TraceSpec, root: Path, samples: Mapping[str, Any]) -> str:
    """The spec the runner gets: synth specs and whole files as given; a sampled file's sample
    (`sample_traces`) is written once into `DIR/traces/<hash>.parquet` so every cell sees the same jobs."""
    if trace.sample_jobs is None and trace.sample_window_s is None:
        return trace.spec
    out = root / "traces" / f"{_sample_key(trace)}.parquet"
    if out.exists():
        return str(out)
    from traces.io import write_jobs

    write_jobs(samples[trace.label], out, metadata={"sampled_from": trace.label})
    return str(out)


def _ordered_rows(cells: list[Cell], rows: dict[str, dict]) -> list[dict]:
    return [rows[c.cell_id] for c in cells if c.cell_id in rows]


def run_sweep(config: SweepConfig, out_dir: str | Path, *, workers: int = 1, backend: str = "local",
              address: str | None = None, resume: bool = False, runner: Runner | None = None,
              on_cell: Callable[[int, int, dict], None] | None = None, check: bool = True,
              overwrite: bool = False) -> SweepResult:
    """Run every cell of `config` not already finished in `out_dir`.

    `on_cell(done, total, row)` is called after each cell (the CLI's progress bar).
    `runner` runs each cell (default: `experiments.runner`; tests pass a stand-in).
    The folder is locked for the whole call (`cosim.outdir`): a second sweep into it fails at
    once instead of deleting this one's scratch folders; `overwrite` clears an earlier sweep first.
    """
    if backend not in BACKENDS:
        raise InputError.at(field="backend", expected=" or ".join(BACKENDS), got=backend)
    if workers < 1:
        raise InputError.at(field="workers", expected="a positive number of workers", got=workers)
    root = Path(out_dir)
    runner = runner if runner is not None else default_runner()
    if check and runner.policy_factory is not None:
        check_names(config, runner.policy_factory())
    cells = config.cells()
    existing = store.load_rows(root) if root.is_dir() else {}
    if existing and not resume and not overwrite:
        raise CosimError(f"{root} already holds a sweep ({len(existing)} finished cells); "
                         "add --resume to continue it, --overwrite to replace it, or choose a new --out folder")
    samples = sample_traces(config, root)  # everything is checked before the folder is claimed
    with claim_out_dir(root, overwrite=overwrite and not resume, resume=resume):
        return _run_locked(config, root, cells, workers, backend, address, runner, on_cell, samples)


def _cell_code(root: Path, reused: Mapping[str, Any], todo: list[Cell]) -> dict[str, str]:
    """Which code computed each finished cell (`version_line`: version and commit): the reused
    cells keep what the folder's sweep.json recorded (``unknown`` where it recorded nothing), the
    cells about to run get the running code. Reused cells from other code are named in a warning,
    so a resumed sweep never mixes code versions silently (`--overwrite` recomputes them)."""
    from experiments.reproduction_report import version_line

    now = version_line()
    try:
        before = json.loads((root / store.SWEEP_FILE).read_text()).get("cell_code") or {}
    except (OSError, ValueError):
        before = {}
    code = {cid: str(before.get(cid, "unknown")) for cid in sorted(reused)}
    other = sorted({v for v in code.values() if v != now})
    if other:
        n = sum(v != now for v in code.values())
        log.warning("%s: %d of %d finished cells were computed by other code (%s), not by %s; they are reused "
                    "as they are: --overwrite recomputes them", root, n, len(code), "; ".join(other), now)
    code.update({c.cell_id: now for c in todo})
    return dict(sorted(code.items()))


def _run_locked(config: SweepConfig, root: Path, cells: list[Cell], workers: int, backend: str,
                address: str | None, runner: Runner, on_cell: Callable[[int, int, dict], None] | None,
                samples: Mapping[str, Any]) -> SweepResult:
    existing = store.load_rows(root)
    removed = store.clean_partial(root)
    if removed:
        log.info("removed %d half-written cells left by an interrupted run", removed)
    meta = store.summary_metadata(config.raw, config.name)
    grid_ids = {c.cell_id for c in cells}
    rows = {cid: r for cid, r in existing.items() if cid in grid_ids and r.get("status") == "ok"}
    todo = [c for c in cells if c.cell_id not in rows]
    skipped = len(rows)
    cell_code = _cell_code(root, rows, todo)
    store.write_sweep_json(root, {
        "name": config.name, "version": __version__, "source": str(config.source) if config.source else None,
        "config": config.raw, "swept_axes": config.swept_axes(),
        "cells": {c.cell_id: c.coordinates() for c in cells}, "cell_code": cell_code,
    })
    specs = {t.label: materialise_trace(t, root, samples) for t in config.traces}
    work = [(c, specs[c.trace.label]) for c in todo]
    log.info("sweep %s: %d cells, %d finished, %d to run on %s", config.name, len(cells), skipped, len(todo), backend)

    stream: Iterator[tuple[Cell, dict]]
    if backend == "ray":
        stream = run_ray(work, root, runner, config.write_decisions, meta, address, workers if workers > 1 else None)
    elif workers == 1:
        stream = run_inprocess(work, root, runner, config.write_decisions, meta)
    else:
        stream = run_local(work, root, runner, config.write_decisions, meta, workers)

    last_write = time.monotonic()
    done = skipped
    if on_cell:
        on_cell(done, len(cells), {})
    try:
        for cell, result in stream:
            rows[cell.cell_id] = result["row"]
            done += 1
            if on_cell:
                on_cell(done, len(cells), result["row"])
            if time.monotonic() - last_write >= SUMMARY_EVERY_S:
                store.write_summary(root, _ordered_rows(cells, rows), meta)
                last_write = time.monotonic()
    finally:  # also on Ctrl-C: the summary then holds every committed cell
        for cid, r in store.load_rows(root).items():
            if cid in grid_ids and cid not in rows:
                rows[cid] = r
        if rows:
            store.write_summary(root, _ordered_rows(cells, rows), meta)
    summary = store.read_summary(root) if rows else pd.DataFrame()
    failed = int((summary["status"] == "error").sum()) if len(summary) else 0
    return SweepResult(summary, len(todo), skipped, failed, root)
