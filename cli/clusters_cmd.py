"""`cosim clusters list` and `cosim clusters show NAME|PATH`: the shipped cluster presets."""

from __future__ import annotations

import json

import typer

from cli.numbers import ASCII_INT



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
    ) -> None:
        """Tiers, node groups, GPU counts and link speeds of a cluster."""
        import netmodel

        topo = netmodel.build_topology(netmodel.load_cluster(name, num_nodes=num_nodes, num_leaves=num_leaves))
        d = topo.describe()
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
        typer.echo(f"  leaf uplinks: {', '.join(_fmt_gbps(x) for x in d['leaf_uplink_gbps'])}; "
                   f"pod uplinks: {', '.join(_fmt_gbps(x) for x in d['pod_uplink_gbps'])}")

    app.add_typer(group, name="clusters")
