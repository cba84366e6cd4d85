"""`cosim net allreduce`: the collective cost calculator (what the simulator charges a placement)."""

from __future__ import annotations

import json

import typer

from cli.numbers import ASCII_INT



def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Network calculators: collective cost of a placement.", no_args_is_help=True)

    @group.command("allreduce")
    def allreduce_cmd(
        cluster: str = typer.Option("dgx-a100", "--cluster", help="Preset name or cluster TOML path."),
        placement: str = typer.Option(..., "--placement",
                                      help="GPUs per node: ',' within a leaf, '/' between leaves, '|' between "
                                      "pods (8, 4,4, 4/4, 8,8/8,8)."),
        size: str = typer.Option(..., "--bytes", help="Message size: 100MB, 1GiB, 4096."),
        algo: str = typer.Option("auto", "--algo", help="auto | ring | tree | hierarchical | multidim"),
        bucket: str = typer.Option(None, "--bucket", help="Split into DDP buckets of this size (default: one "
                                   "message)."),
        calibration: str = typer.Option(None, "--calibration", help="Calibration TOML with a [comm] section."),
        nodes: int = typer.Option(None, "--nodes", click_type=ASCII_INT, help="Resize the cluster to N nodes."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Time and bus bandwidth of one all-reduce on a placement shape."""
        import netmodel
        from collectives import CommModel, CommParams
        from collectives.placement import placement_gpus
        from cosim.errors import InputError
        from cosim.units import parse_bytes

        if algo not in ("auto", "ring", "tree", "hierarchical", "multidim"):
            raise InputError.at(field="--algo", expected="auto | ring | tree | hierarchical | multidim", got=algo)
        nbytes = parse_bytes(size, field="--bytes")
        spec = netmodel.load_cluster(cluster, num_nodes=nodes)
        topo = netmodel.build_topology(spec, check_graph=False)
        params = CommParams.for_cluster(spec, calibration)
        gpus = placement_gpus(topo, placement)
        bucket_bytes = parse_bytes(bucket, field="--bucket") if bucket else max(nbytes, 1.0)
        cost = CommModel(topo, params).allreduce(gpus, nbytes, bucket_bytes, algorithm=algo)
        out = dict(cluster=spec.name, placement=placement, gpus=int(gpus.size), bytes=nbytes,
                   seconds=cost.seconds, algorithm=cost.algorithm, protocol=cost.protocol,
                   bus_bandwidth=cost.bus_bandwidth_Bps,
                   algorithm_bandwidth=(nbytes / cost.seconds) if cost.seconds > 0 else 0.0,
                   links={topo.link_name(int(i)): float(b) for i, b in zip(cost.link_ids, cost.link_bytes)})
        if as_json:
            typer.echo(json.dumps(out, sort_keys=True))
            return
        typer.echo(f"{spec.name} placement {placement} ({gpus.size} GPUs), {nbytes:.6g} bytes: "
                   f"{cost.seconds * 1e6:.2f} us, {cost.algorithm}/{cost.protocol}, "
                   f"bus bandwidth {cost.bus_bandwidth_Bps / 1e9:.2f} GB/s")
        for name, b in out["links"].items():
            typer.echo(f"  {name:16s} {b / 1e6:12.3f} MB")

    app.add_typer(group, name="net")
