"""`cosim bench`: run the benchmark suite in `benchmarks/` and write the results as Parquet."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import typer

from cosim.paths import source_checkout

#: the source checkout (benchmarks/ is not part of the installed wheel); None after a plain install
REPO = source_checkout() or Path(__file__).resolve().parents[1]


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)


def bench(
    only: list[str] = typer.Option(None, "--only", help="Run only this area, function or pattern (repeatable)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the results (+ machine description) to this Parquet."),
    list_only: bool = typer.Option(False, "--list", help="List the benchmarks and exit."),
) -> None:
    """Measure speed and scale (trace conversion, simulations, collectives, contention, policies, sweeps)."""
    if not (REPO / "benchmarks" / "run.py").is_file():
        typer.echo("error: cosim bench needs the source checkout's benchmarks/ folder, which pip does not install: "
                   "clone the repository and run `pip install -e .` (or `python -m cli.app bench`) there", err=True)
        raise typer.Exit(2)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    runner = importlib.import_module("benchmarks.run")
    found = runner.discover(REPO / "benchmarks", only or ())
    if list_only:
        for b in found:
            typer.echo(b.key)
        return
    if not found:
        typer.echo(f"error: no benchmark matches {', '.join(only or [])}", err=True)
        raise typer.Exit(2)
    mach = runner.machine()
    rows = runner.run_all(found, on_result=lambda r: typer.echo(
        f"  {r['area']}: {r['name']} = {runner.format_value(r['value'])} {r['unit']} ({r['status']})", err=True))
    runner.print_table(rows, mach)
    if out:
        runner.write_results(rows, out, mach)
        typer.echo(f"wrote {out}")
    if any(r["status"] == "error" for r in rows):
        raise typer.Exit(1)
