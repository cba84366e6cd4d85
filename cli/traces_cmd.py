"""`cosim traces`: convert raw traces, summarise, sample windows, synthesise look-alikes.

Every command reads any supported format (auto-detected, or `--format`), writes Parquet
atomically (nothing is left behind on error) and reports bad input as one line, exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from cli.numbers import ASCII_INT
from traces.likes import LIKES

FORMAT_HELP = "auto, parquet, philly-json, philly-csv, helios, sensetime, pollux or ones"



def _write(df, out: Path, metadata: dict) -> None:
    from cosim.errors import InputError
    from traces.io import write_jobs

    try:
        write_jobs(df, out, metadata)
    except OSError as exc:
        raise InputError.at(out, expected="a writable output path", detail=exc.strerror or str(exc)) from None


def _load(src: Path, fmt: str):
    from traces.formats import load_with_report

    return load_with_report(src, fmt)


def convert(
    src: Path = typer.Argument(..., help="Raw trace file (or canonical Parquet)."),
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
    format: str = typer.Option("auto", "--format", "-f", help=f"Input format: {FORMAT_HELP}."),
) -> None:
    """Convert a trace to the canonical job table (Parquet)."""
    df, report = _load(src, format)
    _write(df, out, {"source_file": src.name, "format": report.format, "load_report": {
        k: v for k, v in report.to_dict().items() if k != "source"}})
    typer.echo(f"{report.summary()} -> {out}")


def stats(
    file: Path = typer.Argument(..., help="Trace file: canonical Parquet or any raw format."),
    format: str = typer.Option("auto", "--format", "-f", help=f"Input format: {FORMAT_HELP}."),
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
) -> None:
    """Job count, time span, GPU-count histogram, duration quantiles, GPU-hours."""
    from traces.stats import format_summary, summarize

    df, _ = _load(file, format)
    s = summarize(df)
    if as_json:
        typer.echo(json.dumps(s, indent=1))
    else:
        for line in format_summary(s, file.name):
            typer.echo(line)


def sample(
    file: Path = typer.Argument(..., help="Trace file: canonical Parquet or any raw format."),
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-n", click_type=ASCII_INT, help="Number of jobs to sample."),
    window: Optional[str] = typer.Option(None, "--window", "-w", help="Submission window, e.g. 8h, 48h."),
    seed: int = typer.Option(0, "--seed", click_type=ASCII_INT, help="Random seed."),
    format: str = typer.Option("auto", "--format", "-f", help=f"Input format: {FORMAT_HELP}."),
    status: Optional[list[str]] = typer.Option(None, "--status", help="Keep these statuses (repeatable)."),
    min_gpus: Optional[int] = typer.Option(None, "--min-gpus", click_type=ASCII_INT, help="Keep jobs with ≥ this many GPUs."),
    max_gpus: Optional[int] = typer.Option(None, "--max-gpus", click_type=ASCII_INT, help="Keep jobs with at most this many GPUs."),
    vc: Optional[list[str]] = typer.Option(None, "--vc", help="Keep these virtual clusters (repeatable)."),
    cluster_gpus: Optional[int] = typer.Option(None, "--cluster-gpus",
                                               click_type=ASCII_INT, help="Rescale/cap GPU demand to a cluster of this many GPUs."),
    source_gpus: Optional[int] = typer.Option(None, "--source-gpus",
                                              click_type=ASCII_INT, help="GPUs of the trace's cluster (scale by cluster/source)."),
    assemble: bool = typer.Option(False, "--assemble", help="Fill model/batch by Ares size class."),
) -> None:
    """Sample N jobs within a time window (e.g. 160 jobs over 8 h, as Pollux/Sia/Ares do)."""
    from cosim.units import parse_seconds
    from cosim.validate import check_count, check_seed
    from traces.sample import filter_jobs, rescale_gpus, sample_window

    check_seed(seed)
    check_count(jobs, "--jobs")
    check_count(min_gpus, "--min-gpus", 0)
    check_count(max_gpus, "--max-gpus", 1)
    check_count(cluster_gpus, "--cluster-gpus")
    check_count(source_gpus, "--source-gpus")

    window_s = parse_seconds(window, field="--window") if window is not None else None
    df, report = _load(file, format)
    df = filter_jobs(df, status=status, min_gpus=min_gpus, max_gpus=max_gpus, vc=vc)
    if cluster_gpus is not None:
        df = rescale_gpus(df, cluster_gpus, source_gpus)
    df = sample_window(df, jobs=jobs, window_s=window_s, seed=seed)
    if assemble:
        from traces.workload import assemble as _assemble

        df = _assemble(df, seed)
    _write(df, out, {"source_file": file.name, "format": report.format, "seed": seed, "jobs": jobs,
                     "window_s": window_s, "assembled": assemble})
    typer.echo(f"sampled {len(df)} jobs from {file.name} -> {out}")


def synth(
    like: str = typer.Option(..., "--like", help=f"{', '.join(LIKES.names())}, or a fitted parameter JSON."),
    jobs: int = typer.Option(..., "--jobs", "-n", click_type=ASCII_INT, help="Number of jobs."),
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
    seed: int = typer.Option(0, "--seed", click_type=ASCII_INT, help="Random seed."),
    assemble: bool = typer.Option(False, "--assemble", help="Fill model/batch by Ares size class."),
) -> None:
    """Synthesise a trace statistically like Philly (as itself or as Pollux/Sia/Ares sample it), Helios-Saturn
    or SenseTime."""
    from cosim.validate import MAX_SYNTH_JOBS, check_count, check_seed
    from traces.synth import synthesize

    check_count(jobs, "--jobs", 1, MAX_SYNTH_JOBS)
    check_seed(seed)

    df = synthesize(like, jobs, seed)
    if assemble:
        from traces.workload import assemble as _assemble

        df = _assemble(df, seed)
    _write(df, out, {"synth_like": like if not Path(like).is_file() else Path(like).name, "seed": seed,
                     "jobs": jobs, "assembled": assemble})
    typer.echo(f"synthesised {len(df)} {like}-like jobs -> {out}")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(name="traces", help="Convert, summarise, sample and synthesise job traces.",
                      no_args_is_help=True)
    for name, fn in (("convert", convert), ("stats", stats), ("sample", sample), ("synth", synth)):
        sub.command(name)(fn)
    app.add_typer(sub, name="traces")
