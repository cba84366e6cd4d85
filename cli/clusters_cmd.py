"""`cosim clusters list` and `cosim clusters show NAME|PATH`: the shipped cluster presets."""

from __future__ import annotations

import json
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
                           published_speed_fp32=g.speed_fp32, source=g.source)
    if spec.host not in device_model.HOST_REGIMES:
        raise InputError.at(spec.source, field="host", expected=" | ".join(device_model.HOST_REGIMES), got=spec.host)
    return out



def _fmt_gbps(x: float) -> str:
    return f"{x:g} Gb/s"


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
        if as_json:
            typer.echo(json.dumps(d, sort_keys=True))
            return
        typer.echo(f"{d['name']}: {d['description']}")
        typer.echo(f"  {d['gpus']} GPUs, {d['nodes']} nodes, {d['leaves']} leaves ({d['nodes_per_leaf']} nodes "
                   f"each), {d['pods']} pods ({d['leaves_per_pod']} leaves each)"
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
                       + f"; source: {info['source']}")
        typer.echo(f"  host regime: {d['host']} ({d['host_doc']})")
        typer.echo(f"  leaf uplinks: {', '.join(_fmt_gbps(x) for x in d['leaf_uplink_gbps'])}; "
                   f"pod uplinks: {', '.join(_fmt_gbps(x) for x in d['pod_uplink_gbps'])}")

    app.add_typer(group, name="clusters")
