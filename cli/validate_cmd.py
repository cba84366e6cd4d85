"""`cosim validate`: how far predicted step and all-reduce times are from measured ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from cli.numbers import ASCII_INT


def validate(
    profiles: Optional[Path] = typer.Option(None, "--profiles", help="Measured sets (pollux-sia/ inside); default: $COSIM_SHARED_DATA/profiles or the checkout's ../shared/data/profiles."),
    platform: Optional[str] = typer.Option(None, "--platform", help="Only this platform (aws, dgx, dgx-ext, rtx)."),
    platforms_file: Optional[Path] = typer.Option(None, "--platforms", help="Platforms file (TOML: platform → preset, "
                                                  "gpu_type, notes); default: the shipped one (aws, dgx, dgx-ext, rtx)."),
    as_json: bool = typer.Option(False, "--json", help="Print the error table as JSON."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write predicted-vs-measured scatter plots (PNG)."),
    leave_one_platform_out: bool = typer.Option(False, "--leave-one-platform-out",
                                                help="Also predict each platform with models fitted only on "
                                                     "other hardware (see --loo-by)."),
    loo_by: str = typer.Option("hardware", "--loo-by",
                               help="Leave-one-out grouping: hardware (dgx and dgx-ext, the same DGX-A100, are held "
                                    "out together) or platform (one data set at a time)."),
    folds: int = typer.Option(5, click_type=ASCII_INT, help="Cross-validation folds (over placements)."),
    gpu_types: Optional[Path] = typer.Option(None, "--gpu-types", help="GPU-types TOML file adding to the table "
                                             "(datasheet numbers, aliases, source)."),
    leave_one_gpu_type_out: bool = typer.Option(
        False, "--leave-one-gpu-type-out", help="Only the single-GPU compute check: each measured GPU type of each "
        "source predicted from the other types and sources (median error per type)."),
    dally: bool = typer.Option(False, "--dally", help="Also print Dally Table I (dally-3tier preset)."),
    models: Optional[str] = typer.Option(None, "--models", help="Only these models (comma-separated), e.g. for a fast check."),
    layers: Optional[Path] = typer.Option(None, "--layers", help="Dally per-layer workload files "
                                          "(default: models/layers next to --profiles)."),
) -> None:
    """Predict step and exposed all-reduce time for every measured row through the engine's
    iteration model (what `cosim simulate` runs); report median/p90 errors vs noise."""
    from calibration import fit
    from calibration import validate as v
    from cosim.errors import InputError
    from cosim.paths import shared_data_dir
    from experiments.runner import engine_for

    if plot is not None:  # before the minutes of fitting, not after
        from cosim.plotting import pyplot

        pyplot("cosim validate --plot")
    if gpu_types is not None:
        from calibration import zoo

        zoo.load_gpu_types(gpu_types)
    if leave_one_gpu_type_out:
        rows, t = v.leave_one_gpu_type_out()
        if as_json:
            typer.echo(json.dumps({"leave_one_gpu_type_out": json.loads(t.to_json(orient="records"))}, indent=1))
        else:
            typer.echo("Single-GPU step, each GPU type predicted from a fit without it (all sources):")
            typer.echo(t.round(3).to_string(index=False))
            typer.echo(f"overall median abs error {rows['abs_error'].median():.1%} over {len(rows)} points")
        return
    profiles = profiles or shared_data_dir("profiles", option="--profiles")
    fit.set_engine(engine_for)  # every row is predicted by the PerfModel simulate builds

    plats = [platform] if platform else None
    if platform and leave_one_platform_out:
        raise InputError.at(field="--platform", expected="no --platform with --leave-one-platform-out "
                            "(the other platforms are needed to fit)")
    rep, table = v.run(profiles, plats, folds, leave_one_platform_out,
                       models=[m.strip() for m in models.split(",") if m.strip()] if models else None, loo_by=loo_by,
                       platforms_file=platforms_file)
    layers_dir = layers or profiles.parent / "models" / "layers"
    if as_json:
        out = {"errors": json.loads(table.to_json(orient="records")),
               "params": {n: dict(preset=r.preset, gpu_type=r.gpu_type, step=r.section)
                          for n, r in rep.results.items()}}
        if dally:
            t = v.dally_table_layers(layers_dir)
            out["dally_table_i"] = json.loads(t.to_json(orient="records"))
            out["dally_checks"] = v.dally_checks(t)
            tp = v.dally_table_layers(layers_dir, v.dally_comm_params("preset"))
            out["dally_table_i_preset_comm"] = json.loads(tp.to_json(orient="records"))
            out["dally_table_i_zoo"] = json.loads(v.dally_table().to_json(orient="records"))
        typer.echo(json.dumps(out, indent=1))
    else:
        typer.echo(v.format_table(table))
        typer.echo("")
        typer.echo(rep.summary())
        typer.echo(v.targets_line(table))
        if dally:
            for kind, what in (("astra", "ASTRA-sim-equivalent CommParams"), ("preset", "NCCL-like costs on the dally-3tier links")):
                t = v.dally_table_layers(layers_dir, v.dally_comm_params(kind))
                typer.echo(f"\nDally Table I, the paper's method (authors' per-layer inputs and compute scale, "
                           f"dally-3tier, {what}; exposed comm % of compute, 8 GPUs; machine 8, rack 4,4, network 4/4):")
                typer.echo(t.drop(columns="compute_s").round(1).to_string(index=False))
                typer.echo("  " + "; ".join(f"{k}: {'yes' if ok else 'no'}" for k, ok in v.dally_checks(t).items()))
            typer.echo("\nDally Table I from the zoo (our H100 compute, machine tier calibrated to the paper):")
            typer.echo(v.dally_table().round(1).to_string(index=False))
    if plot:
        v.plot(rep, plot)
        typer.echo(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
