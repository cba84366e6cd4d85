"""`reproduce(name, size, out_dir, workers, backend)`: run an experiment's grids, compare, report.

Each grid the chosen figures need runs as one sweep (`experiments.sweep.run_sweep` with the
`experiments.runner` runner) in `OUT/runs/<grid>/`, always resuming: a rerun into the same
folder reuses every finished cell, and the local process pool or Ray fan the rest out. Then:

    OUT/cells.parquet          every cell of the run (sweep summary + grid, group, fallback columns)
    OUT/timing.parquet         grid, cell_id and the clock's columns (wall_s, solver seconds), which
                               cells.parquet leaves out so that reruns write the same bytes
    OUT/<figure>.parquet       the figure's table: row, policy, value (mean), std, n, paper
    OUT/<figure>.png           the figure (when matplotlib is installed)
    OUT/REPORT.md              per figure: paper | cosim | direction | margin ratio | seeds | verdict,
                               then commands, runtime, version
    OUT/claims.csv             the same claims, one row each (`reproduction_report.CLAIM_COLUMNS`): what
                               `cosim reproduce --summary` reads

An experiment's `hooks` module (`experiments.spec`) may add per-cell columns (`cell_metrics`,
from the cell folders and the experiment's `[settings]`, before the tables are built) and
extra REPORT.md sections (`extra_sections`). A grid's `variants` become its policy points,
and the cells' `policy_label` is the variant's name (what tables and claims name).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import pyarrow as pa

from cosim.atomic import write_parquet
from cosim.columns import TIMING_COLUMNS
from cosim.errors import CosimError, UnknownNameError
from cosim.plotting import INSTALL_HINT
from cosim.paths import for_display
from experiments import compare, reproduction_report as report
from experiments.catalog_traces import TraceEntry, resolve_traces
from experiments.spec import REPO, Experiment, load_experiment

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Reproduction:
    experiment: Experiment
    size: str
    out_dir: Path
    report: Path
    cells: pd.DataFrame
    tables: dict[str, pd.DataFrame]  # figure → table
    verdicts: dict[str, list[compare.Verdict]]
    figures: dict[str, Path | None]
    wall_s: float
    failed: int
    ran: int  # cells run by this call
    resumed: int  # finished cells found in OUT and reused


def sweep_config(exp: Experiment, grid: str, size: str, traces: list[TraceEntry]):
    """The grid at `size` as a validated `SweepConfig` whose traces are the resolved entries."""
    from experiments.sweep import TraceSpec, parse_sweep

    from experiments.sweep import PolicyPoint

    table = {k: v for k, v in exp.grid(grid, size).items() if k not in ("traces", "variants", "variant_params")}
    base = exp.source.parent if exp.source is not None else Path.cwd()
    if isinstance(table.get("clusters"), list):  # cluster files next to the experiment file
        table["clusters"] = [str(base / c) if isinstance(c, str) and c.endswith(".toml") else c
                             for c in table["clusters"]]
    variants = exp.variants(grid, size)
    data = dict(table, name=f"{exp.name}-{grid}-{size}", traces=["synth:placeholder:1"])
    if variants:  # the variants' policies stand in for the check; the points are the variants
        data["policies"] = list(dict.fromkeys(p for p, _ in variants.values()))
    cfg = parse_sweep(data, source=f"{exp.source or exp.name} [grids.{grid}] ({size})", base_dir=base)
    specs = tuple(TraceSpec(label=t.name, spec=t.spec, path=t.path) for t in traces)
    raw = dict(table, name=data["name"], traces=[{"name": t.name, "spec": t.spec, "group": t.group} for t in traces])
    if variants:
        raw["variants"] = {v: {"policy": p, "params": prm} for v, (p, prm) in variants.items()}
        return dataclasses.replace(cfg, traces=specs, raw=raw, policies=tuple(
            PolicyPoint(p, tuple(sorted(prm.items()))) for p, prm in variants.values()))
    return dataclasses.replace(cfg, traces=specs, raw=raw)


def variant_names(exp: Experiment, grid: str, size: str) -> dict[str, str]:
    """Policy-point label → variant name for a grid declared by variants (empty otherwise)."""
    from experiments.sweep import PolicyPoint

    return {PolicyPoint(p, tuple(sorted(prm.items()))).label: v for v, (p, prm) in exp.variants(grid, size).items()}


def hooks(exp: Experiment):
    """The experiment's hooks module, or None."""
    return importlib.import_module(exp.hooks) if exp.hooks else None


def _commands(exp: Experiment, size: str, out: Path, figures: Sequence[str] | None, workers: int, backend: str,
              traces: dict[str, list[TraceEntry]]) -> list[str]:
    def here(spec: str) -> str:
        """A file named relative to the experiment file, as a path from the repository root."""
        p = exp.source.parent / spec if exp.source is not None else Path(spec)
        return os.path.relpath(p, REPO) if p.is_file() and p.resolve().is_relative_to(REPO) else spec

    cmd = f"cosim reproduce {exp.name} --size {size} --out {shlex.quote(str(out))}"
    if figures:
        cmd += "".join(f" --figure {f}" for f in figures)
    cmd += f" --workers {workers} --backend {backend}"
    lines = [cmd, "", "# one trace at a time (the same simulations, printed as a table):"]
    for grid, ts in traces.items():
        g = exp.grid(grid, size)
        params = isinstance(g.get("policies"), dict) and any(g["policies"].values()) or "variants" in g
        pols = list(g["policies"]) if isinstance(g.get("policies"), (list, dict)) else [g.get("policies")]
        if "variants" in g:
            pols = list(dict.fromkeys(p for p, _ in exp.variants(grid, size).values()))
        clusters = g.get("clusters", ["dgx-a100"])
        for t in ts:
            for c in clusters if isinstance(clusters, list) else [clusters]:
                preset, nodes = (c, None) if isinstance(c, str) else (c.get("preset"), c.get("nodes"))
                for n in nodes if isinstance(nodes, list) else [nodes]:
                    for seed in g.get("seeds", [0]):
                        src = f"--synth {t.spec[len('synth:'):]}" if t.spec.startswith("synth:") else \
                            f"--trace {shlex.quote(for_display(t.spec))}"
                        line = f"cosim simulate {src} --cluster {here(preset)}" + (f" --nodes {n}" if n else "") + \
                            f" --policy {','.join(pols)} --seed {seed}"
                        if g.get("contention", [True]) in (False, [False]):
                            line += " --no-contention"
                        if isinstance(g.get("load_series"), str):
                            line += f" --load-series {shlex.quote(here(g['load_series']))}"
                        for axis in ("perf", "progress", "calibration", "costs"):  # single-valued engine axes
                            v = g.get(axis)
                            v = v[0] if isinstance(v, list) and len(v) == 1 else v
                            if isinstance(v, (str, int, float)) and not (axis == "calibration" and v == "default"):
                                line += f" --{axis} {v}"
                        lines.append(line + ("  # policy parameters: see the experiment file" if params else ""))
    return lines


def failure_reasons(cells: pd.DataFrame, limit: int = 5) -> list[str]:
    """The distinct errors of the failed cells, most frequent first: "N cell(s) (policies): error"."""
    bad = cells[cells["status"] == "error"]
    if not len(bad):
        return []
    label = "policy_label" if "policy_label" in bad.columns else "policy"
    err = bad["error"].fillna("no error recorded").astype(str) if "error" in bad.columns else \
        pd.Series("no error recorded", index=bad.index)
    out = []
    for why, g in sorted(bad.groupby(err, sort=False), key=lambda kv: -len(kv[1])):
        pols = ", ".join(dict.fromkeys(g[label].astype(str)))
        out.append(f"{len(g)} cell(s) ({pols}): {why}")
    return out[:limit] + ([f"{len(out) - limit} other error(s): see the error column of cells.parquet"]
                          if len(out) > limit else [])


def reproduce(name: str, size: str = "small", out_dir: str | Path | None = None, workers: int = 1,
              backend: str = "local", figures: Sequence[str] | None = None, address: str | None = None,
              shared_data: str | Path | None = None,
              on_cell: Callable[[int, int, dict], None] | None = None) -> Reproduction:
    """Run experiment `name` at `size` into `out_dir` (default `reproduce/<name>-<size>`) and write its report."""
    from experiments.sweep import run_sweep

    t0 = time.perf_counter()
    version = report.version_line()  # the checkout that runs, before this run writes into it
    exp = load_experiment(name)
    if size not in exp.sizes:
        raise UnknownNameError("size", size, list(exp.sizes))
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    chosen = [exp.figure(f) for f in dict.fromkeys(figures)] if figures else list(exp.figures_at(size))
    out = Path(out_dir) if out_dir is not None else Path("reproduce") / f"{name}-{size}"
    grids = list(dict.fromkeys(g for f in chosen for g in f.all_grids()))
    traces = {g: resolve_traces(exp, g, size, shared_data) for g in grids}
    frames, ran, resumed, cells_s = [], 0, 0, 0.0
    for g in grids:
        cfg = sweep_config(exp, g, size, traces[g])
        res = run_sweep(cfg, out / "runs" / g, workers=workers, backend=backend, address=address, resume=True,
                        on_cell=on_cell)
        ran, resumed = ran + res.ran, resumed + res.skipped
        s = res.summary.copy()
        if len(s) and (s["status"] == "error").all():  # nothing to report: say why now, write no report
            raise CosimError(f"{exp.name} ({size}): all {len(s)} cells of grid {g!r} failed; "
                             + "; ".join(failure_reasons(s, limit=2)))
        group = {t.name: t.group for t in traces[g]}
        fallback = {t.name: t.fallback for t in traces[g]}
        s.insert(0, "grid", g)
        s.insert(1, "group", s["trace"].map(group))
        named = variant_names(exp, g, size)
        if named:
            s["policy_label"] = s["policy_label"].map(lambda lab: named.get(lab, lab))
        s["fallback"] = s["trace"].map(fallback).astype(bool)
        cells_s += float(s["wall_s"].sum())
        frames.append(s)
    cells = pd.concat(frames, ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    hook = hooks(exp)
    if hook is not None and hasattr(hook, "cell_metrics"):
        cells = hook.cell_metrics(cells, out, exp, size, traces)
    meta = {"kind": "reproduction", "experiment": exp.name, "size": size, "version": version}
    clock = [c for c in cells.columns if c in TIMING_COLUMNS]
    write_parquet(pa.Table.from_pandas(cells.drop(columns=clock), preserve_index=False), out / "cells.parquet", meta)
    write_parquet(pa.Table.from_pandas(cells[["grid", "cell_id", *clock]], preserve_index=False),
                  out / "timing.parquet", meta)
    failed = int((cells["status"] == "error").sum())
    tables, found, images, sections, notes = {}, {}, {}, [], []
    for fig in chosen:
        table = compare.figure_table(cells, fig)
        tables[fig.name] = table
        write_parquet(pa.Table.from_pandas(table, preserve_index=False), out / f"{fig.name}.parquet",
                      dict(meta, figure=fig.name, metric=fig.metric))
        found[fig.name] = compare.verdicts(table, fig, report.formatter(fig.metric),
                                           seeds=compare.seed_values(cells, fig), size=size)
        note = None
        if fig.metric not in cells.columns:
            note = f"the run summary has no column {fig.metric!r}; nothing to compare"
        image = report.plot_figure(table, fig, out / f"{fig.name}.png") if len(table) else None
        if image is None and len(table):
            note = f"figure skipped: matplotlib is not installed ({INSTALL_HINT})"
        images[fig.name] = image
        sections.append(report.figure_section(fig, table, found[fig.name], image.name if image else None, note))
    if hook is not None and hasattr(hook, "extra_sections"):
        sections += hook.extra_sections(exp, size, cells, out)
    report.write_claims(out / report.CLAIMS_FILE, report.claims_frame(exp, size, found))
    wall = time.perf_counter() - t0
    path = report.write_report(out / "REPORT.md", exp, size, sections, traces,
                               _commands(exp, size, out, figures, workers, backend, traces),
                               {"wall_s": wall, "cells_s": cells_s, "cells": ran, "resumed": resumed}, failed, notes,
                               version, cells=cells, found=found, failures=failure_reasons(cells))
    return Reproduction(exp, size, out, path, cells, tables, found, images, wall, failed, ran, resumed)
