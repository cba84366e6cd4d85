"""`cosim reproduce PAPER`: run a paper's experiment and write REPORT.md and claims.csv (paper | cosim |
direction | cosim/paper margin | seeds | verdict).

`cosim reproduce --list` prints the experiment registry (`experiments/catalog/*.toml`);
`cosim reproduce --summary` gathers the committed reports' claims into docs/reproductions/README.md
and the README's reproductions block (`experiments.reproduction_summary`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from cli.numbers import ASCII_INT


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce)


def reproduce(
    paper: Optional[str] = typer.Argument(None, help="Experiment name (see --list)."),
    size: str = typer.Option("small", "--size", help="small (CI: under a minute), medium (where the experiment "
                             "declares one) or full (the paper's size)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default reproduce/PAPER-SIZE)."),
    workers: int = typer.Option(0, "--workers", "-j", click_type=ASCII_INT, help="Parallel cells (0 = one per CPU core)."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) or ray."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray)."),
    figure: Optional[List[str]] = typer.Option(None, "--figure", help="Only this figure (repeatable)."),
    list_: bool = typer.Option(False, "--list", help="List the registered experiments and exit."),
    summary: bool = typer.Option(False, "--summary", help="Gather the committed reports' claims.csv "
                                 "(docs/reproductions) into docs/reproductions/README.md and README.md's "
                                 "reproductions block, then exit."),
) -> None:
    """Run an experiment's grids as resumable sweeps; write cells.parquet, one table and figure per
    figure, and REPORT.md comparing cosim with the paper's numbers or orderings."""
    from cosim.errors import CosimError, InputError

    if list_:
        _list()
        return
    if summary:
        from experiments.reproduction_summary import write

        for line in write():
            typer.echo(line)
        return
    if paper is None:
        from experiments.spec import names

        raise InputError.at(field="PAPER", expected=f"an experiment name ({', '.join(names())}) or --list")
    from experiments.reproduction import reproduce as run

    n_workers = workers or (os.cpu_count() or 1)
    if n_workers < 1:
        raise CosimError("--workers must be positive")
    res = run(paper, size, out, workers=n_workers, backend=backend, figures=figure or None, address=address)
    from experiments.compare import NOT_CHECKED, VERDICTS

    for name, vs in res.verdicts.items():
        counts = {k: sum(v.result == k for v in vs) for k in ("yes", "tie", "no", "n/a")}
        levels = {k: sum(v.verdict == k for v in vs) for k in VERDICTS + (NOT_CHECKED,)}
        typer.echo(f"{name}: same ordering yes {counts['yes']}, tie {counts['tie']}, no {counts['no']}"
                   + (f", n/a {counts['n/a']}" if counts["n/a"] else "") + f" of {len(vs)} claims"
                   + "".join(f"; {k} {n}" if i == 0 else f", {k} {n}"
                             for i, (k, n) in enumerate((k, n) for k, n in levels.items() if n)))
    typer.echo(f"wrote {res.report} ({len(res.cells)} cells, {res.failed} failed, {res.wall_s:.1f} s)")
    if res.failed:
        from experiments.reproduction import failure_reasons

        typer.echo(f"error: {res.failed} of {len(res.cells)} cells failed: "
                   + "; ".join(failure_reasons(res.cells, limit=2)), err=True)
        raise typer.Exit(1)


def _list() -> None:
    from experiments.spec import load_experiment, names

    for n in names():
        exp = load_experiment(n)
        typer.echo(f"{exp.name}: {exp.paper}")
        typer.echo(f"  figures: {', '.join(f.name for f in exp.figures)}")
        for s, desc in exp.sizes.items():
            typer.echo(f"  {s}: {desc}")
