"""`cosim validate`: how far predicted step and all-reduce times are from measured ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

DEFAULT_PROFILES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "profiles"


def validate(
    profiles: Path = typer.Option(DEFAULT_PROFILES, "--profiles", help="Measured sets (pollux-sia/ inside)."),
    platform: Optional[str] = typer.Option(None, "--platform", help="Only this platform (aws, dgx, dgx-ext, rtx)."),
    as_json: bool = typer.Option(False, "--json", help="Print the error table as JSON."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write predicted-vs-measured scatter plots (PNG)."),
    leave_one_platform_out: bool = typer.Option(False, "--leave-one-platform-out",
                                                help="Also predict each platform with comm parameters fitted on the others."),
    folds: int = typer.Option(5, help="Cross-validation folds (over placements)."),
    dally: bool = typer.Option(False, "--dally", help="Also print Dally Table I (dally-3tier preset)."),
) -> None:
    """Predict step and all-reduce time for every measured row; report median/p90 errors vs noise."""
    from calibration import validate as v
    from cosim.errors import InputError

    plats = [platform] if platform else None
    if platform and leave_one_platform_out:
        raise InputError.at(field="--platform", expected="no --platform with --leave-one-platform-out "
                            "(the other platforms are needed to fit)")
    rep, table = v.run(profiles, plats, folds, leave_one_platform_out)
    if as_json:
        out = {"errors": json.loads(table.to_json(orient="records")),
               "params": {n: dict(beta_efficiency_intra=float(r.theta[0]), beta_efficiency_net=float(r.theta[1]),
                                  latency_multiplier=float(r.theta[2]), overlap_start_frac=r.overlap_start_frac)
                          for n, r in rep.results.items()}}
        if dally:
            out["dally_table_i"] = json.loads(v.dally_table().to_json(orient="records"))
        typer.echo(json.dumps(out, indent=1))
    else:
        typer.echo(v.format_table(table))
        typer.echo("")
        typer.echo(rep.summary())
        typer.echo(v.targets_line(table))
        if dally:
            typer.echo("\nDally Table I (exposed comm % of compute, 8 GPUs; machine tier calibrated):")
            typer.echo(v.dally_table().round(1).to_string(index=False))
    if plot:
        v.plot(rep, plot)
        typer.echo(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
