"""`cosim sweep CONFIG --out DIR`: run a grid of simulations locally or on Ray, resumably."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from cli.numbers import ASCII_INT


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)


def sweep(
    config: Optional[Path] = typer.Argument(None, help="Sweep TOML file: keys traces, policies (required), clusters, "
                                            "contention, calibration, perf, progress, costs, max_gpus, seeds (axes), "
                                            "policy_costs, load_series, write_decisions, skip_invalid; "
                                            "see docs/sweeps.md and --example."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Sweep folder: cells/<id>/ and summary.parquet."),
    example: Optional[str] = typer.Option(None, "--example", help="Print the shipped example sweep NAME to stdout "
                                          "(e.g. --example small > small.toml); an unknown NAME or '' lists them."),
    workers: int = typer.Option(0, "--workers", "-j", click_type=ASCII_INT, help="Parallel cells (0 = one per CPU core)."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) or ray."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray instance)."),
    resume: bool = typer.Option(False, "--resume", help="Skip finished cells of an interrupted sweep; retry failed ones."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Clear an earlier sweep in OUT first (not with --resume)."),
) -> None:
    """Run every cell of a sweep: the product of its traces, clusters, policies (with parameter
    grids), contention, calibration, perf, progress, costs and seeds axes.

    The format, every key and its default, is in docs/sweeps.md; `--example NAME` prints a
    ready-to-run sweep file (`--example ''` lists the names).

    Each finished cell is committed atomically under OUT/cells/<id>/; OUT/summary.parquet has
    one row per cell (coordinates, every summary metric, status, error, wall_s). A failing cell
    is recorded and the sweep goes on; the exit code is 1 when any cell failed.
    """
    if example is not None:
        _print_example(example)
        return
    if config is None or out is None:
        from cosim.errors import InputError

        raise InputError.at(field="CONFIG" if config is None else "--out",
                            expected="a sweep TOML file and --out DIR (or --example NAME)")
    _sweep(config, out, workers, backend, address, resume, overwrite)


def _sweep(config: Path, out: Path, workers: int, backend: str, address: str | None, resume: bool,
           overwrite: bool = False) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from cosim.errors import InputError
    from cosim.progress import phase
    from cosim.tomlfile import check_utf8

    if resume and overwrite:
        raise InputError.at(field="--overwrite", expected="either --resume or --overwrite, not both")
    check_utf8(config, "sweep TOML file")
    from cosim.outdir import check_out_path

    check_out_path(out, "--out", folder=True)  # a file, or a path under one, fails before the grid is read
    phase("loading the sweep and the simulator")
    from experiments.sweep import load_sweep, run_sweep

    cfg = load_sweep(config)
    phase(f"sweep {cfg.name}: {len(cfg.cells())} cells into {out}")
    n_workers = workers or (os.cpu_count() or 1)
    console = Console(stderr=True)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("cells"),
               TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn())
    failed = 0
    with Progress(*columns, console=console, transient=False, disable=not console.is_terminal) as bar:
        task = bar.add_task(cfg.name, total=len(cfg.cells()), failed=0)

        def on_cell(done: int, total: int, row: dict) -> None:
            nonlocal failed
            if row.get("status") == "error":
                failed += 1
            bar.update(task, completed=done, failed=failed)

        result = run_sweep(cfg, out, workers=n_workers, backend=backend, address=address, resume=resume,
                           on_cell=on_cell, overwrite=overwrite)
    n = len(result.summary)
    typer.echo(f"{cfg.name}: {n} cells in {out / 'summary.parquet'} ({result.ran} run, {result.skipped} resumed, "
               f"{result.failed} failed)")
    from experiments.discrimination import sweep_warnings

    for line in sweep_warnings(result.summary.to_dict("records"), cfg):
        typer.echo(line, err=True)
    if result.failed:
        errs = result.summary[result.summary["status"] == "error"]
        for _, r in errs.head(5).iterrows():
            typer.echo(f"  failed {r['cell_id']} {r['policy_label']} on {r['trace']} seed {r['seed']}: {_short(r['error'])}",
                       err=True)
        if len(errs) > 5:
            typer.echo(f"  ... and {len(errs) - 5} more (see the error column)", err=True)
        raise typer.Exit(1)


def _print_example(name: str) -> None:
    from experiments.sweep.examples import example_names, example_text

    if name in example_names():
        typer.echo(example_text(name), nl=False)
        return
    typer.echo("example sweeps (cosim sweep --example NAME > NAME.toml):", err=True)
    for n in example_names():
        typer.echo(f"  {n}", err=True)
    if name:
        raise typer.Exit(2)


def _short(text: str, limit: int = 300) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
