"""`cosim calibrate …`: measure collectives and compute, import measured sets, fit a profile."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from cli.numbers import ASCII_FLOAT, ASCII_INT

calibrate_app = typer.Typer(help="Measure on real hardware, import measured sets, fit calibration profiles.",
                            no_args_is_help=True)


def _write(df, out: Path, kind: str, extra: dict | None = None) -> None:
    import pyarrow as pa

    from cosim import __version__
    from cosim.atomic import write_parquet

    meta = {"kind": kind, "version": __version__, **(extra or {})}
    write_parquet(pa.Table.from_pandas(df, preserve_index=False), out, meta)
    typer.echo(f"wrote {len(df)} rows to {out}")


@calibrate_app.command("collectives")
def collectives(
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
    backend: str = typer.Option("nccl", help="nccl (one process per GPU) or gloo (one per CPU rank)."),
    gpus: Optional[int] = typer.Option(None, "--gpus", click_type=ASCII_INT, help="Ranks (default: all GPUs for nccl, min(CPUs, 8) for gloo)."),
    sizes: str = typer.Option("8B..1GB", help="Message sizes: LOW..HIGH (powers of two) or a comma list."),
    ops: str = typer.Option("all_reduce,all_gather,reduce_scatter", help="Collectives to sweep."),
    group_sizes: Optional[str] = typer.Option(None, help="Comma list of group sizes (default 2..N)."),
    warmup: int = typer.Option(5, click_type=ASCII_INT, help="Untimed calls per point."),
    iters: int = typer.Option(20, click_type=ASCII_INT, help="Timed calls per point (median reported)."),
) -> None:
    """Sweep collectives over sizes and group sizes like nccl-tests (time, algbw, busbw)."""
    from calibration import measure

    groups = [int(x) for x in group_sizes.split(",")] if group_sizes else None
    df = measure.sweep_collectives(backend, gpus, measure.size_sweep(sizes), tuple(o.strip() for o in ops.split(",")),
                                   groups, warmup, iters)
    _write(df, out, "collectives", {"backend": backend})


@calibrate_app.command("import-nccl-tests")
def import_nccl_tests(
    log: Path = typer.Argument(..., help="An nccl-tests *_perf output log."),
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
    op: Optional[str] = typer.Option(None, help="all_reduce | all_gather | reduce_scatter (default: from the log)."),
) -> None:
    """Convert an nccl-tests log into the collectives Parquet format."""
    from calibration import measure

    _write(measure.import_nccl_tests(log, op), out, "collectives", {"imported_from": str(log)})


@calibrate_app.command("compute")
def compute(
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
    models: str = typer.Option("resnet18,resnet50,bert_base", help="Comma list of zoo models."),
    batches: str = typer.Option("1,2,4,8,16,32,64", help="Comma list of local batch sizes."),
    precision: str = typer.Option("fp32", "--precision", help="Comma list of fp32 (PyTorch defaults), tf32 "
                                  "(TF32 matmuls too), bf16, fp16 (autocast); each model runs at each."),
    device: Optional[str] = typer.Option(None, help="torch device (default cuda if present, else cpu)."),
    warmup: int = typer.Option(5, click_type=ASCII_INT, help="Untimed iterations per point."),
    repeats: int = typer.Option(20, click_type=ASCII_INT, help="Timed iterations per point (median reported)."),
) -> None:
    """Time forward+backward+optimizer per model, precision and local batch on the local GPU.

    The file is rewritten after each model, so an interrupted sweep keeps what it measured."""
    import pandas as pd

    from calibration import measure, zoo

    names = [zoo.resolve(m.strip()) for m in models.split(",") if m.strip()]
    bs = sorted({int(b) for b in batches.split(",") if b.strip()})
    if not bs or bs[0] <= 0:
        from cosim.errors import InputError

        raise InputError.at(field="batches", expected="positive integers", got=batches)
    precs = measure.parse_precisions(precision)
    parts = []
    for name in names:
        parts.append(measure.measure_compute([name], bs, device, warmup, repeats, precisions=precs))
        df = pd.concat(parts, ignore_index=True)
        _write(df, out, "compute", measure.compute_provenance(df, warmup))


@calibrate_app.command("import-profiles")
def import_profiles(
    path: Path = typer.Argument(..., help="A profiles folder (pollux-sia/, gavel/) or one of its files."),
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
) -> None:
    """Import the public measured sets (Pollux/Sia placements, Gavel throughputs) into one table."""
    from calibration import importers

    _write(importers.read_any(path), out, "steps", {"imported_from": str(path)})


@calibrate_app.command("fit")
def fit(
    measurements: List[Path] = typer.Argument(..., help="Measurement files: step tables (Parquet from import-profiles), "
                                              "compute tables (Parquet from calibrate compute), collectives Parquet, "
                                              "Pollux CSVs or a profiles folder."),
    out: Path = typer.Option(..., "-o", "--out", help="Output profile (TOML), read by simulate --calibration."),
    preset: Optional[str] = typer.Option(None, help="netmodel preset (name or file) the collectives sweep ran on: "
                                         "fits the [comm] CommParams on it."),
    platforms_file: Optional[Path] = typer.Option(None, "--platforms", help="Platforms file (TOML: platform → preset, "
                                                  "gpu_type, notes) for the measured step tables."),
    gpu_types: Optional[Path] = typer.Option(None, "--gpu-types", help="GPU-types TOML file adding to the table "
                                             "(a type measured here is stored under its own name)."),
    max_error: float = typer.Option(0.10, click_type=ASCII_FLOAT, help="Refuse to write if the cross-validated median abs error exceeds this."),
    force: bool = typer.Option(False, "--force", help="Write the profile even if the error bound is exceeded."),
    folds: int = typer.Option(5, click_type=ASCII_INT, help="Cross-validation folds."),
) -> None:
    """Fit the engine's iteration model (step form, compute curves, [comm]); write a calibration profile."""
    import math

    from calibration import fit as fitmod
    from calibration import importers
    from cosim.errors import CosimError, InputError
    from experiments.runner import engine_for

    from cosim.outdir import check_out_path

    check_out_path(out, "--out")  # a path under a file fails now, not after the fit
    fitmod.set_engine(engine_for)  # fitted on and scored by the PerfModel simulate builds
    if gpu_types is not None:
        from calibration import zoo

        zoo.load_gpu_types(gpu_types)

    if preset is not None:
        import netmodel

        try:
            netmodel.load_cluster(preset)
        except CosimError as exc:
            raise InputError.at(field="--preset", expected="a netmodel preset name or file",
                                detail=exc.format_message()) from None
    pmap = importers.read_platforms(platforms_file)
    report = fitmod.fit_files(measurements, preset=preset, folds=folds, platforms=pmap)
    typer.echo(report.summary())
    err = report.cv_median_abs_err
    if report.results and not math.isfinite(err):
        raise CosimError(f"cross-validated median abs error is {err}; not writing {out}")
    if not (err <= max_error) and math.isfinite(err) and not force:
        raise CosimError(f"cross-validated median abs error {err:.1%} exceeds the bound "
                         f"{max_error:.1%}; not writing {out} (use --force to write anyway)")
    fitmod.write_profile(report, out)
    typer.echo(f"wrote {out}")


@calibrate_app.command("profiles")
def profiles() -> None:
    """List the shipped calibration profiles (`simulate --calibration NAME`, a catalog's `calibration`):
    the presets each has step forms for (with the default form's host slope h where it is not 0),
    the models it has compute curves for, and the first sentence of its own description."""
    import re

    from calibration.stepform import PROFILES_DIR, read_profile

    for path in sorted(PROFILES_DIR.glob("*.toml")):
        prof = read_profile(path)
        steps = []
        for preset, sp in prof.step.items():
            extra = [f"{len(sp.models)} fitted models"] if sp.models else []
            if sp.default.host_slope:
                extra.append(f"default host slope h = {sp.default.host_slope:g}")
            steps.append(preset + (f" ({', '.join(extra)})" if extra else ""))
        head = []  # the leading comment, to its first sentence or colon
        for ln in path.read_text().splitlines():
            if not ln.startswith("#"):
                break
            head.append(ln.lstrip("#").strip())
        about = re.split(r"(?<=[\w)])[.:](?:\s|$)", " ".join(head), maxsplit=1)[0]
        typer.echo(f"{path.stem}\n  step forms: {'; '.join(steps) or 'none (the generic form)'}\n"
                   f"  compute curves: {', '.join(sorted(prof.compute)) or 'none (the zoo)'}\n  {about}")


def register(app: typer.Typer) -> None:
    app.add_typer(calibrate_app, name="calibrate")
