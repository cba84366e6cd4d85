"""`cosim report DIR [-o OUT]`: figures and one self-contained HTML page from a run or sweep."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    run_dir: Path = typer.Argument(..., help="A `cosim simulate --out` or `cosim sweep --out` folder."),
    out: Path = typer.Option(None, "--out", "-o", help="Where to write report.html and the PNGs (default DIR/report)."),
    baseline: str = typer.Option(None, "--baseline", help="Sweeps: the policy every other is compared with, cell "
                                 "by cell on the same trace, cluster and seed (a policy label or name; default: "
                                 "the sweep's first policy)."),
) -> None:
    """Plot JCT / queueing / fairness CDFs, utilisation, per-policy bars and (sweeps) each policy's
    ratio to a baseline policy on the same cells, overall and against every swept axis.

    Exit code 1 when the sweep is incomplete (cells not run or failed; the report covers the
    rest), 2 when nothing can be reported (no summary, every cell failed).
    """
    from cosim.outdir import check_out_path
    from experiments.report import make_report

    if out is not None:
        check_out_path(out, "--out", folder=True)
    rep = make_report(run_dir, out, baseline)
    typer.echo(f"{rep.html} ({len(rep.figures)} figures: {', '.join(p.name for p in rep.figures)})")
    for note in rep.notes:
        typer.echo(f"  note: {note}", err=True)
    if rep.incomplete:
        typer.echo(f"incomplete sweep: {'; '.join(rep.incomplete)}", err=True)
        raise typer.Exit(1)
