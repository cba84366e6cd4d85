"""`cosim simulate`: run a trace on a cluster under one or more policies, print a comparison.

With no arguments it runs the embedded default — 160 synthetic Philly jobs as Pollux/Sia/Ares
sample them (multi-GPU training runs) arriving over 4 h (`synth:philly-sia:160:4h`), on the
64-GPU `dgx-a100` preset under the registered baselines — and prints the table.
Outputs (`--out DIR`): DIR/<policy>/jobs.parquet, timeline.parquet[, decisions.parquet][,
solver.parquet], DIR/summary.parquet (the same bytes for the same run), DIR/timing.parquet (wall and
solver seconds), DIR/config.json.
"""

# No `from __future__ import annotations` here: typer reads the command's parameter types with
# `typing.get_type_hints`, which compiles and evaluates every string annotation (50 compiles,
# ≈ 0.7-1 ms of each `cosim simulate`); evaluated when the module loads, they cost nothing more.
from pathlib import Path
from typing import Any, Optional

import typer

from cli.numbers import ASCII_FLOAT, ASCII_INT

from cosim.errors import InputError
from experiments.defaults import DEFAULT_CLUSTER, DEFAULT_CONTENTION, DEFAULT_TRACE, PREFERRED_POLICIES
from traces.likes import LIKES


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)


def simulate(
    trace: Optional[Path] = typer.Option(None, "--trace", help=f"Trace file (canonical Parquet or any raw format); default, with neither --trace nor --synth: {DEFAULT_TRACE}."),
    synth: Optional[str] = typer.Option(None, "--synth", help=f"Synthetic workload LIKE:JOBS[:WINDOW], LIKE one of {', '.join(LIKES.names())}; e.g. {DEFAULT_TRACE.removeprefix('synth:')}."),
    cluster: str = typer.Option(DEFAULT_CLUSTER, "--cluster", help="Cluster preset name or TOML file."),
    nodes: Optional[int] = typer.Option(None, "--nodes", click_type=ASCII_INT, help="Resize the cluster to N nodes."),
    policy: Optional[str] = typer.Option(None, "--policy", help=f"Policy name(s), comma-separated; default: the baselines {', '.join(PREFERRED_POLICIES)} (`cosim policies list`)."),
    contention: bool = typer.Option(DEFAULT_CONTENTION, "--contention/--no-contention", help="Cross-job network contention."),
    calibration: Optional[Path] = typer.Option(None, "--calibration", help="Calibration profile (TOML from calibrate fit); default: the preset's shipped profile, if any; none: no profile."),
    seed: int = typer.Option(0, "--seed", click_type=ASCII_INT, help="Seed for synthesis, workload assembly and --gpu-variability. A policy's own random choices are seeded by its `seed` parameter (--set POLICY.seed=N, default 0), so repeats over --seed vary the workload, not the policy."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write Parquet outputs to this folder."),
    decisions: bool = typer.Option(False, "--decisions", help="Also write decisions.parquet (every allocation change)."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Run without jobs that can never run (reported)."),
    costs: Optional[list[str]] = typer.Option(None, "--costs", help="Change costs: flat30, aryl, ares-paper, inplace, free, migrate-state, pollux-sim, or seconds; POLICY=PRESET sets one policy's (repeatable); fields after commas edit the preset, e.g. --costs 20 --costs ones=inplace,restart_s=20,migrate_s=1."),
    capacity: Optional[Path] = typer.Option(None, "--capacity", help="CSV time_s,node,online: nodes leaving/joining."),
    load_series: Optional[str] = typer.Option(None, "--load-series", help="Inference load lending/reclaiming pool nodes: "
                                              "CSV time_s,pool,nodes_needed, or diurnal:H (seeded daily load, headroom H); "
                                              "writes reclaims.parquet."),
    perf: str = typer.Option("network", "--perf", help="Iteration-time backend: network, linear, measured, trace, astra (Dally: trace time x Table-I-style ratio) or measured-pollux-sim (measured + the Pollux simulator's step-time quirks: yolov3 max local batch 8, extra accumulation step on 1 GPU)."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="Policy parameter POLICY.KEY=VALUE, e.g. "
                                             "tiresias.promote_knob=4 (repeatable; see `cosim policies show`)."),
    progress: str = typer.Option("plain", "--progress", help="Progress model: plain, goodput (Pollux statistical efficiency, epochs of each pollux-sia application), or batch-history (ONES: epochs to target depend on the batch history)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Clear a non-empty --out folder of an earlier run first."),
    ftf_reference: str = typer.Option("gps", "--ftf-reference", help="FTF reference: gps (each job up to its request), gps-uncapped (the Ares paper's: any share of the cluster), gps-artifact (the Ares artifact's: up to the model's 32-64 GPUs), gps-capped (each job up to its max GPUs) or hetero-1-over-n (1/N of every GPU type)."),
    max_gpus: str = typer.Option("2x", "--max-gpus", help="Per-job GPU cap of assembled jobs without a max_gpus: 2x (twice the request), <k>x, or artifact (the Ares artifact's per-model 32-64)."),
    gpu_types: Optional[Path] = typer.Option(None, "--gpu-types", help="GPU-types TOML file adding to the table "
                                             "(datasheet numbers, aliases, source), for clusters whose nodes name them."),
    gpu_variability: float = typer.Option(0.0, "--gpu-variability", click_type=ASCII_FLOAT, help="Per-GPU speed variability: each GPU's compute up to this fraction slower (seeded by --seed; a job runs at its slowest GPU's pace; 0.22 = PAL's compute-bound range); 0: off."),
) -> None:
    """Simulate policies on a trace and print a comparison table."""
    from cosim.outdir import claim_out_dir
    from cosim.progress import phase
    from cosim.validate import check_costs, check_seed

    if trace is not None and synth is not None:
        raise InputError.at(field="--trace/--synth", expected="at most one of --trace and --synth")
    check_seed(seed)
    if out is not None:  # a file, or a path under one, fails now; the folder is claimed after every input is read
        from cosim.outdir import check_out_path

        check_out_path(out, "--out", folder=True)
    for item in costs or ():  # seconds must be finite and ≥ 0, globally or per policy
        check_costs(item.partition("=")[2].strip() if "=" in item else item.strip())
    from simcore.perf_backends import check_perf

    check_perf(perf)  # what can be checked now fails before anything loads
    if gpu_types is not None:
        from calibration import zoo

        zoo.load_gpu_types(gpu_types)
    params = policy_overrides(set_ or ())
    global_costs, per_policy_costs = parse_costs(costs or ())
    primer = None
    if trace is None and not policy and contention and perf == "network" and progress == "plain":  # default kernels
        from cosim.warmup import start

        primer = start(phase)  # first run only: a worker compiles while this process imports
    phase("loading the simulator (numba kernels compile on the first run, then load from the cache)")
    from experiments.run_inputs import load_capacity
    from experiments.runner import DEFAULT_TRACE, RunConfig, run

    if primer is not None:
        primer.finish()  # this process compiles the units the worker has not taken

    spec = str(trace) if trace is not None else (f"synth:{synth}" if synth else DEFAULT_TRACE)
    pols = tuple(p.strip() for p in policy.split(",") if p.strip()) if policy else ()
    cfg = RunConfig(trace=spec, cluster=cluster, cluster_nodes=nodes, policies=pols, contention=contention,
                    calibration=None if calibration is None else str(calibration), seed=seed,
                    write_decisions=decisions, skip_invalid=skip_invalid, costs=global_costs,
                    policy_costs=per_policy_costs,
                    capacity_changes=load_capacity(capacity) if capacity is not None else (),
                    capacity_source="" if capacity is None else str(capacity), policy_params=params,
                    perf=perf, progress=progress, ftf_reference=ftf_reference, max_gpus=max_gpus,
                    load_series=_load_series(load_series),
                    gpu_variability=gpu_variability, gpu_variability_seed=seed,
                    gpu_types=None if gpu_types is None else str(gpu_types))
    # --out naming a file, a folder another run holds, or a non-empty one fails in one line; the
    # runner claims it only after every input is checked, so a rejected run leaves no folder behind
    claim = (lambda: claim_out_dir(out, overwrite=overwrite)) if out is not None else None
    phase(f"simulating {', '.join(pols) or 'the default policies'} on {spec}")
    result = run(cfg, out, progress=True, claim=claim)
    _print_table(result, cfg)
    if result.excluded:
        typer.echo(f"the trace's loader left out {sum(result.excluded.values())} row(s) that are not runnable jobs "
                   f"({', '.join(f'{k}: {v}' for k, v in sorted(result.excluded.items()))}); "
                   "summary columns trace_rows_excluded, trace_excluded", err=True)

    from experiments.discrimination import warnings
    from simcore.tables import table_rows

    for line in warnings(table_rows(result.summary_table), ["policy"]):
        typer.echo(line, err=True)
    if result.invalid:
        typer.echo(f"skipped {len(result.invalid)} job(s) that can never run (see config.json)", err=True)
    if out is not None:
        typer.echo(f"wrote {out}/summary.parquet and one folder per policy")


def _load_series(spec: Optional[str]) -> Optional[str]:
    """`--load-series`: `diurnal:H` as given, else an existing CSV file (checked here, one line)."""
    if spec is None or spec.startswith("diurnal:"):
        return spec
    if not Path(spec).is_file():
        raise InputError.at(spec, field="--load-series", expected="a CSV file time_s,pool,nodes_needed or diurnal:H")
    return str(Path(spec))


def parse_costs(items) -> tuple[Any, dict[str, Any]]:
    """`--costs` texts → (the run's setting, {policy: setting}): `PRESET` (or seconds) sets the
    run's, `POLICY=PRESET` one policy's; a later one of the same target wins. Either may add
    fields of a cost table after commas, `PRESET,FIELD=SECONDS,…` (`migrate_s=state` as in a
    sweep TOML), which makes it the table `{base = PRESET, FIELD = SECONDS, …}`: e.g.
    `--costs ones=inplace,restart_s=20,migrate_s=1` is the ONES catalog's `policy_costs.ones`.
    Every setting is checked here, before anything runs."""
    from simcore.costs import resolve_costs

    run_costs: Any = "flat30"
    per: dict[str, Any] = {}
    for item in items:
        head, _, fields_ = item.partition(",")
        lhs, eq, value = head.partition("=")
        name, where = (lhs.strip(), f"--costs {lhs.strip()}") if eq else ("", "--costs")
        value = (value if eq else head).strip()
        if (eq and not name) or not value:
            raise InputError.at(field="--costs", expected="PRESET or POLICY=PRESET, then ,FIELD=SECONDS …, "
                                "e.g. ones=inplace,restart_s=20", got=item)
        setting: Any = value
        if fields_:
            setting = {"base": value}
            for part in fields_.split(","):
                key, eq2, val = (x.strip() for x in part.partition("="))
                if not eq2 or not key or not val:
                    raise InputError.at(field=where, expected="FIELD=SECONDS after the preset, e.g. restart_s=20",
                                        got=part)
                setting[key] = val if val == "state" else _cost_seconds(val, f"{where}.{key}")
        resolve_costs(setting, where)
        if eq:
            per[name] = setting
        else:
            run_costs = setting
    return run_costs, per


def _cost_seconds(text: str, where: str) -> float:
    from cosim.validate import parse_number

    return parse_number(text, where, minimum=0.0)


def policy_overrides(items) -> dict[str, dict]:
    """`--set POLICY.KEY=VALUE` texts → {policy: {key: typed value}}, validated by the policy's
    Config (an unknown policy or key, or a bad value, is a one-line error before anything runs).
    A later `--set` of the same key wins."""
    import policies

    raw: dict[str, dict[str, str]] = {}
    for item in items:
        lhs, eq, value = item.partition("=")
        name, dot, key = lhs.strip().rpartition(".")
        if not eq or not dot or not name or not key:
            raise InputError.at(field="--set", expected="POLICY.KEY=VALUE, e.g. tiresias.promote_knob=4", got=item)
        raw.setdefault(name, {})[key] = value.strip()
    out = {}
    for name, kv in raw.items():
        cfg = policies.make_config(name, **kv)
        out[name] = {k: getattr(cfg, k) for k in kv}
    return out


def _print_table(result, cfg) -> None:
    from rich.console import Console
    from rich.table import Table

    excl = sum(result.excluded.values())
    t = Table(caption=f"{excl} trace row(s) left out by the loader: "
              + ", ".join(f"{k} {v}" for k, v in sorted(result.excluded.items())) if excl else None,
              title=f"{cfg.trace} on {cfg.cluster}" + (f" ({cfg.cluster_nodes} nodes)" if cfg.cluster_nodes else "")
              + (", contention" if cfg.contention else ", no contention")
              + (f", perf {cfg.perf}" if cfg.perf != "network" else ""))
    cols = [("policy", "policy", "{}"), ("done", "finished", "{}"), ("avg JCT h", "avg_jct_s", "h"),
            ("p99 JCT h", "p99_jct_s", "h"), ("makespan h", "makespan_s", "h"), ("avg queue h", "avg_queueing_s", "h"),
            ("util", "gpu_utilization", "{:.2f}"), ("unfair", "unfair_fraction", "{:.2f}"),
            ("worst FTF", "worst_ftf", "{:.2f}"), ("restarts /job", "avg_restarts", "{:.2f}"),
            ("wall s", None, "{:.2f}")]
    for head, *_ in cols:
        t.add_column(head, justify="left" if head == "policy" else "right", no_wrap=head in ("policy", "done"))
    from simcore.tables import table_rows

    for row in table_rows(result.summary_table):  # not result.summary: that imports pandas
        cells = []
        for _, key, fmt in cols:
            if key is None:
                cells.append(fmt.format(result.wall_s.get(row["policy"], float("nan"))))
            elif key == "finished":
                cells.append(f"{row['finished']}/{row['jobs']}")
            elif fmt == "h":
                cells.append(f"{row[key] / 3600:.2f}")
            else:
                cells.append(fmt.format(row[key]))
        t.add_row(*cells)
    # The cells are plain text (numbers, policy names, the trace path), never rich markup or
    # `:emoji:` codes: without those two passes a path with `[...]` or `:name:` in it prints as
    # it is, and the first print skips importing rich's 3,600-entry emoji table and parsing
    # each cell as markup (≈ 4 ms of a ≈ 0.6-s cached `cosim simulate`; same output otherwise).
    console = Console(markup=False, emoji=False)
    if console.width < 120:  # pipes and narrow terminals: keep the table on one line per policy
        console = Console(width=120, markup=False, emoji=False)
    console.print(t)
    compiled = {n: m.get("compile_s", 0.0) for n, m in result.timing.items()}
    if sum(compiled.values()) >= 0.5:  # a cold kernel cache: say where the time went, apart from wall s
        console.print("numba kernels compiled or loaded during the runs (not in wall s): "
                      + ", ".join(f"{n} {s:.1f} s" for n, s in compiled.items() if s >= 0.05))
