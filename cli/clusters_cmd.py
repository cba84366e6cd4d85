"""`cosim clusters list` and `cosim clusters show NAME|PATH`: the shipped cluster presets."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import typer

from cli.numbers import ASCII_INT


def _gpu_types(spec, extra: Optional[Path]) -> dict:
    """The cluster's GPU types as the compute model sees them (its file's own [gpu_types] and
    `--gpu-types` added); an unknown one is an error naming the cluster file and field."""
    from calibration import device_model, zoo
    from cosim.errors import InputError, UnknownNameError

    if extra is not None:
        zoo.load_gpu_types(extra)
    if spec.gpu_types:
        zoo.register_gpu_types(spec.gpu_types, f"{spec.source}: gpu_types")
    out = {}
    dm = zoo.device_model()
    for nt in spec.node_types.values():
        try:
            g = zoo.get_gpu(nt.gpu_type)
        except UnknownNameError:
            raise InputError.at(spec.source, field=f"node_types.{nt.name}.gpu_type",
                                expected="a GPU type of the table (--gpu-types FILE, or a [gpu_types.<name>] "
                                "table in the cluster file)", got=nt.gpu_type) from None
        out[g.name] = dict(display=g.display, mem_gb=g.mem_gb, peak_tflops=g.peak_tflops, tf32_tflops=g.tf32_tflops,
                           tensor_tflops=g.tensor_tflops, mem_bw_GBps=g.mem_bw_GBps,
                           speed_conv=dm.relative_speed(g.name, "conv"), speed_matmul=dm.relative_speed(g.name, "matmul"),
                           published_speed_fp32=g.speed_fp32, source=g.source,
                           benchmark=(dict(ref=g.benchmark_ref, ratio=g.benchmark_ratio, source=g.benchmark_source)
                                      if g.benchmark_ratio else None))
    if spec.host not in device_model.HOST_REGIMES:
        raise InputError.at(spec.source, field="host", expected=" | ".join(device_model.HOST_REGIMES), got=spec.host)
    return out



def _fmt_gbps(x: float) -> str:
    return f"{x:g} Gb/s"


def _sources(spec) -> str:
    """The "Sources:" paragraph of the cluster file's opening comment (datasheets the numbers
    come from), or "" when it has none."""
    from importlib import resources

    src = str(spec.source)
    preset = re.fullmatch(r"preset '(.+)'", src)
    if preset:
        text = (resources.files("netmodel") / "presets" / f"{preset.group(1)}.toml").read_text()
    else:
        try:
            text = Path(src).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""
    out, on = [], False
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line.lstrip("#").strip()
        if body.lower().startswith("sources:") or body.lower().startswith("source:"):
            on, body = True, body.split(":", 1)[1].strip()
        if on:
            out.append(body)
    return " ".join(out).strip()


def _profile(spec) -> dict | None:
    """The cluster's shipped calibration profile: its file, the measured platforms it was fitted
    on and its cross-validated median step error; None when the cluster names none."""
    if not spec.profile:
        return None
    from calibration.stepform import profile_path
    from cosim.tomlfile import read_toml

    path = profile_path(spec.profile, spec.source if str(spec.source).endswith(".toml") else None)
    steps = read_toml(path, "calibration profile (cosim calibrate fit)").get("step", {})
    step = steps.get(spec.name) or (next(iter(steps.values())) if len(steps) == 1 else {})
    return dict(name=spec.profile, file=path.name, platforms=list(step.get("platforms", [])),
                cv_median_step_error=step.get("cv_median_step_error"))


def _counts(n: int, one: str, many: str) -> str:
    """"1 leaf" / "3 leaves"."""
    return f"{n} {one if n == 1 else many}"


def _layout(topo, spec) -> str:
    """Leaves and pods as built: how many nodes each leaf holds and leaves each pod holds (the
    preset's nodes_per_leaf and leaves_per_pod are the most they take, not what this size fills)."""
    import numpy as np

    per_leaf = np.bincount(topo.node_leaf, minlength=topo.num_leaves).tolist()
    per_pod = np.bincount(topo.leaf_pod, minlength=topo.num_pods).tolist()

    def spread(xs: list[int], unit: str, units: str) -> str:
        if len(set(xs)) == 1:
            return f"{_counts(xs[0], unit, units)}" + (" each" if len(xs) > 1 else "")
        if len(xs) > 8:
            return f"{min(xs)} to {max(xs)} {units}"
        return f"{', '.join(map(str, xs))} {units}"

    return (f"{_counts(topo.num_leaves, 'leaf', 'leaves')} ({spread(per_leaf, 'node', 'nodes')}; at most "
            f"{spec.nodes_per_leaf} a leaf), {_counts(topo.num_pods, 'pod', 'pods')} "
            f"({spread(per_pod, 'leaf', 'leaves')}; at most {spec.leaves_per_pod} a pod)")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Cluster presets: list them and show their fabric.", no_args_is_help=True)

    @group.command("list")
    def list_cmd() -> None:
        """List the shipped presets with GPU counts."""
        import netmodel

        for name in netmodel.preset_names():
            spec = netmodel.load_cluster(name)
            types = sorted({spec.node_types[g.node_type].gpu_type for g in spec.groups})
            typer.echo(f"{name:16s} {spec.num_gpus:6d} GPUs  {spec.num_nodes:5d} nodes  "
                       f"{'+'.join(types):24s} {spec.description}")

    @group.command("show")
    def show_cmd(
        name: str = typer.Argument(..., help="Preset name or path to a cluster TOML file."),
        num_nodes: int = typer.Option(None, "--nodes", click_type=ASCII_INT, help="Resize a single-group cluster to N nodes."),
        num_leaves: int = typer.Option(None, "--leaves", click_type=ASCII_INT, help="Resize to N full leaves (racks)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        gpu_types: Optional[Path] = typer.Option(None, "--gpu-types", help="GPU-types TOML file adding to the "
                                                 "table (datasheet numbers, aliases, source)."),
    ) -> None:
        """Tiers, node groups, GPU counts and link speeds of a cluster; its GPU types and host regime."""
        import netmodel

        spec = netmodel.load_cluster(name, num_nodes=num_nodes, num_leaves=num_leaves)
        topo = netmodel.build_topology(spec)
        d = topo.describe()
        d["host"] = spec.host
        d["gpu_types"] = _gpu_types(spec, gpu_types)
        from calibration.device_model import HOST_REGIMES

        d["host_doc"] = HOST_REGIMES[spec.host]
        d["layout"] = _layout(topo, spec)
        d["profile"] = _profile(spec)
        d["sources"] = _sources(spec)
        if as_json:
            typer.echo(json.dumps(d, sort_keys=True))
            return
        typer.echo(f"{d['name']}: {d['description']}")
        typer.echo(f"  {d['gpus']} GPUs, {d['nodes']} nodes, {d['layout']}"
                   + (", rail-optimised" if d["rail_optimized"] else ""))
        typer.echo("  node groups:")
        for g in d["groups"]:
            typer.echo(f"    {g['name']:12s} {g['nodes']:5d} x {g['gpus_per_node']} {g['gpu_type']} "
                       f"({g['gpu_mem_gb']:g} GB)  intra {g['intra']} {g['intra_gpu_GBps']:g} GB/s/GPU "
                       f"{g['intra_latency_us']:g} us  NICs {g['nics']} x {_fmt_gbps(g['nic_gbps'])}"
                       f"{' GPUDirect' if g['gpudirect'] else ' host-staged'}")
        typer.echo("  tiers:")
        for t in d["tiers"]:
            typer.echo(f"    {t['tier']:6s} {t['name']} [{t['kind']}] ports {_fmt_gbps(t['port_gbps'])}, "
                       f"{t['latency_us']:g} us, oversubscription {t['oversubscription']:g}:1")
        for g, info in d["gpu_types"].items():
            typer.echo(f"  GPU type {g}: {info['display']}, {info['mem_gb']:g} GB, fp32 {info['peak_tflops']:g} / "
                       f"TF32 {info['tf32_tflops']:g} / fp16 tensor {info['tensor_tflops']:g} TFLOP/s, "
                       f"{info['mem_bw_GBps']:g} GB/s; fp32 speed (V100 = 1, fitted on its datasheet and the "
                       f"measurements) {info['speed_conv']:.2f} on convolutions / {info['speed_matmul']:.2f} on matmuls"
                       + (f" (published {info['published_speed_fp32']:.2f})" if info['published_speed_fp32'] else "")
                       + (f"; speed prior: {info['benchmark']['ratio']:g}x the {info['benchmark']['ref']} on convolutions"
                          f" ({info['benchmark']['source']})" if info['benchmark'] else "")
                       + f"; source: {info['source']}")
        typer.echo(f"  host regime: {d['host']} ({d['host_doc']})")
        typer.echo(f"  leaf uplinks: {', '.join(_fmt_gbps(x) for x in d['leaf_uplink_gbps'])}; "
                   f"pod uplinks: {', '.join(_fmt_gbps(x) for x in d['pod_uplink_gbps'])}")
        prof = d["profile"]
        if prof is None:
            typer.echo("  calibration profile: none (the engine's uncalibrated defaults; see cosim calibrate fit)")
        else:
            err = prof["cv_median_step_error"]
            typer.echo(f"  calibration profile: {prof['name']} (shipped {prof['file']})"
                       + (f", fitted on the measured platforms {', '.join(prof['platforms'])}" if prof["platforms"]
                          else "")
                       + (f"; cross-validated median step error {err:.1%}" if isinstance(err, float) else ""))
        if d["sources"]:
            typer.echo(f"  sources: {d['sources']}")

    app.add_typer(group, name="clusters")
