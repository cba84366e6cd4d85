"""Cluster specification: frozen dataclasses loaded from TOML presets or a user's TOML file.

A cluster is a tree: GPUs in nodes, nodes under leaf (ToR / rack / rail-group) switches, leaves
under spine switches grouped in pods, pods joined by a core tier. Each node belongs to a *node
group* of one *node type* (GPU type, intra-node interconnect, NICs), so one cluster may mix GPU
types (FFT's T4/A10/V100 testbed, Aryl's V100 training + T4 inference servers).

Units are in the field names: ``_gbps`` gigabits per second (network datasheets), ``_GBps``
gigabytes per second (NVLink / PCIe datasheets), ``_us`` microseconds, ``_gb`` gigabytes of
memory. The compiled `Topology` converts everything to bytes/s and seconds.

TOML layout (see ``netmodel/presets/*.toml``; every key is documented there)::

    name = "..."; description = "..."
    nodes_per_leaf = 8      # nominal switch fan-out; also sizes leaf uplinks
    leaves_per_pod = 4
    [node_types.<name>]      gpu_type, gpu_mem_gb, gpus_per_node
    [node_types.<name>.intra]  kind = "nvswitch" | "nvlink-cube-mesh" | "pcie", ...
    [node_types.<name>.nic]    count, gbps, gpudirect, latency_us
    [[groups]]               name, node_type, nodes, gpus_per_node?, start_new_leaf?, start_new_pod?, pool?
    [[node_types.<name>.intra.dims]]  optional multi-dimensional intra-node layout for the
                             ``multidim`` collective: size, topology, GBps, latency_us, algorithm
    [tiers.leaf] / [tiers.spine] / [tiers.core]   name, kind, port_gbps, latency_us, oversubscription,
                                                  uplink_gbps? (explicit uplink of one switch),
                                                  dim_topology?, dim_GBps?, dim_latency_us?,
                                                  dim_algorithm? (this tier as a ``multidim`` dimension)
    [comm]                   optional `collectives.CommParams` overrides for this cluster
    [gpu_types.<name>]       optional GPU types this cluster adds (datasheet fields of
                             `calibration.gpu_types`), for node types that name them
    host = "..."             host regime of the machines (default "synthetic": GPU-bound, no
                             input pipeline); measured platforms name theirs, e.g. "pollux-aws"

Validation happens here, at load, and names the preset (or file) and the field.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from cosim.errors import InputError, UnknownNameError

INTRA_KINDS = ("nvswitch", "nvlink-cube-mesh", "pcie")
#: topologies of one dimension of the ``multidim`` (ASTRA-sim style) collective
DIM_TOPOLOGIES = ("ring", "fully-connected", "switch")
#: collective implementation inside one dimension
DIM_ALGORITHMS = ("ring", "direct")
#: the largest cluster cosim builds (2**17 GPUs, beyond today's largest training clusters): a typo such as
#: `--nodes 100000000` is a one-line error naming this bound instead of a topology that exhausts memory
MAX_CLUSTER_GPUS = 131072


@dataclass(frozen=True)
class DimSpec:
    """One dimension of a multi-dimensional (ASTRA-sim style) network, see `collectives.multidim`.

    `size` units joined by `topology` links of `GBps` (per link, per direction) and
    `latency_us` (per link); `algorithm` is the collective run inside the dimension (``ring``:
    size−1 neighbour steps; ``direct``: one step to all peers at once, fully-connected only).
    A ``switch`` hop crosses two links (unit → switch → unit), so it pays 2 × latency_us.
    """

    size: int
    topology: str
    GBps: float
    latency_us: float
    algorithm: str = "ring"
TIER_NAMES = ("leaf", "spine", "core")


@dataclass(frozen=True)
class IntraNode:
    """The GPU-to-GPU fabric inside one node.

    kind:
      - ``nvswitch``: every GPU reaches every other at ``gpu_GBps`` (per direction), non-blocking.
      - ``nvlink-cube-mesh``: DGX-1-style hybrid cube-mesh; each GPU has ``nvlinks_per_gpu`` links
        of ``nvlink_GBps``; a subset of n GPUs can use only links to members (see `ring_GBps`).
      - ``pcie``: a PCIe tree whose GPU-to-GPU traffic (and non-GPUDirect NIC traffic) crosses a
        shared host bridge of ``host_bridge_GBps`` (no P2P, as on consumer and many cloud GPUs).
    """

    kind: str
    latency_us: float
    gpu_GBps: float = 0.0            # nvswitch: per GPU per direction; pcie: per-GPU x16 link
    nvlink_GBps: float = 0.0         # cube-mesh: one NVLink, per direction
    nvlinks_per_gpu: int = 0         # cube-mesh
    host_bridge_GBps: float = 0.0    # pcie: shared root complex / inter-socket bridge
    dims: tuple[DimSpec, ...] = ()   # optional multidim layout (product of sizes = GPUs per node)

    def ring_GBps(self, n_gpus: int, gpus_per_node: int) -> float:
        """Per-GPU ring bandwidth (per direction) for a ring through `n_gpus` GPUs of this node.

        Cube-mesh rule: on average a GPU has ``links·(n−1)/(G−1)`` of its links to the other
        members of an n-subset of a G-GPU mesh; round, at least one. On a DGX-1V (6 links, G=8)
        that gives 1 link for a pair, 3 for a quad (its clique) and 6 for all 8 — the real
        structure. PCIe: min(x16 link, host bridge), because each ring direction crosses the
        bridge once.
        """
        if self.kind == "nvswitch":
            return self.gpu_GBps
        if self.kind == "nvlink-cube-mesh":
            share = self.nvlinks_per_gpu * (n_gpus - 1) / max(gpus_per_node - 1, 1)
            return self.nvlink_GBps * max(1, round(share))
        return min(self.gpu_GBps, self.host_bridge_GBps)

    def capacity_GBps(self, gpus_per_node: int) -> float:
        """Capacity of the node's intra link in the link table: what all GPUs together can send
        at once (the sum of their NVLink ports), or the shared host bridge for PCIe."""
        if self.kind == "nvswitch":
            return self.gpu_GBps * gpus_per_node
        if self.kind == "nvlink-cube-mesh":
            return self.nvlink_GBps * self.nvlinks_per_gpu * gpus_per_node
        return self.host_bridge_GBps


@dataclass(frozen=True)
class Nic:
    """A node's network interfaces: `count` NICs of `gbps` each, GPUDirect RDMA or host-staged."""

    count: int
    gbps: float
    gpudirect: bool
    latency_us: float


@dataclass(frozen=True)
class NodeType:
    name: str
    gpu_type: str
    gpu_mem_gb: float
    gpus_per_node: int
    intra: IntraNode
    nic: Nic


@dataclass(frozen=True)
class NodeGroup:
    """`nodes` nodes of `node_type`, each exposing `gpus_per_node` GPUs (≤ the type's)."""

    name: str
    node_type: str
    nodes: int
    gpus_per_node: int
    start_new_leaf: bool = False
    start_new_pod: bool = False
    #: the capacity pool the group's nodes belong to (`training`, `inference`, …): what a reclaim
    #: demand names (`simcore.capacity`); defaults to the group's name
    pool: str = ""

    def __post_init__(self) -> None:
        if not self.pool:
            object.__setattr__(self, "pool", self.name)


@dataclass(frozen=True)
class Tier:
    """One switch tier. `oversubscription` = downlink:uplink capacity ratio of one switch.

    `latency_us` is added once per switch of this tier a message crosses (switch + cable +
    protocol share); `uplink_gbps` (optional) overrides the uplink capacity of one switch that
    otherwise follows from its downlinks / oversubscription.
    """

    name: str
    kind: str
    port_gbps: float
    latency_us: float
    oversubscription: float = 1.0
    uplink_gbps: float | None = None
    dim_topology: str = "ring"           # this tier as one multidim dimension (see DimSpec)
    dim_GBps: float | None = None        # per GPU per direction; None: derived from NICs/uplinks
    dim_latency_us: float | None = None  # per link; None: the tier's latency_us
    dim_algorithm: str = "ring"


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    description: str
    source: str                       # preset name or file path (for error messages)
    nodes_per_leaf: int
    leaves_per_pod: int
    node_types: Mapping[str, NodeType]
    groups: tuple[NodeGroup, ...]
    leaf: Tier
    spine: Tier
    core: Tier
    rail_optimized: bool = False
    comm: Mapping[str, Any] = field(default_factory=dict)
    profile: str | None = None        # calibration profile: shipped name or file (calibration.stepform)
    #: host regime of the machines (`calibration.device_model.HOST_REGIMES`): the per-step host /
    #: input-pipeline part their single-GPU steps carry besides the GPU's own compute
    host: str = "synthetic"
    #: GPU types this file adds to the table (``[gpu_types.<name>]``, the fields of
    #: `calibration.gpu_types`), validated where the compute model registers them
    gpu_types: Mapping[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return sum(g.nodes for g in self.groups)

    @property
    def num_gpus(self) -> int:
        return sum(g.nodes * g.gpus_per_node for g in self.groups)

    def tiers(self) -> tuple[Tier, Tier, Tier]:
        return (self.leaf, self.spine, self.core)


# ----------------------------------------------------------------------------------- loading

def preset_names() -> list[str]:
    """Names of the presets shipped in `netmodel/presets/`."""
    pkg = resources.files("netmodel") / "presets"
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".toml"))


def _read_toml(name_or_path: str) -> tuple[dict, str]:
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or path.exists():
        if not path.is_file():
            raise InputError.at(name_or_path, expected="an existing cluster TOML file")
        source = str(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError.at(source, expected="UTF-8 text", detail=f"undecodable byte at offset {exc.start}") from None
        except OSError as exc:
            raise InputError.at(source, expected="a readable cluster TOML file", detail=exc.strerror) from None
    else:
        if name_or_path not in preset_names():
            raise UnknownNameError("cluster preset", name_or_path, preset_names())
        text = (resources.files("netmodel") / "presets" / f"{name_or_path}.toml").read_text()
        source = f"preset '{name_or_path}'"
    try:
        return tomllib.loads(text), source
    except tomllib.TOMLDecodeError as exc:
        raise InputError.at(source, expected="valid TOML", detail=str(exc)) from None


class _Fields:
    """Typed access to one TOML table, raising InputError naming source and dotted field."""

    def __init__(self, source: str, prefix: str, table: Any):
        if not isinstance(table, dict):
            raise InputError.at(source, field=prefix, expected="a table", got=table)
        self.source, self.prefix, self.t = source, prefix, table

    def _name(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def get(self, key: str, kind: type, default: Any = ..., positive: bool = False,
            minimum: float | None = None) -> Any:
        if key not in self.t:
            if default is ...:
                raise InputError.at(self.source, field=self._name(key), expected="a value (missing)")
            return default
        v = self.t[key]
        if kind is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if kind is int and isinstance(v, bool) or not isinstance(v, kind):
            raise InputError.at(self.source, field=self._name(key), expected=kind.__name__, got=v)
        if kind is float and not math.isfinite(v):
            raise InputError.at(self.source, field=self._name(key), expected="a finite number", got=v)
        if positive and not v > 0:
            raise InputError.at(self.source, field=self._name(key), expected="a positive number", got=v)
        if minimum is not None and v < minimum:
            raise InputError.at(self.source, field=self._name(key), expected=f"a number ≥ {minimum}", got=v)
        return v

    def sub(self, key: str) -> "_Fields":
        if key not in self.t:
            raise InputError.at(self.source, field=self._name(key), expected="a table (missing)")
        return _Fields(self.source, self._name(key), self.t[key])


def _choice(f: _Fields, key: str, choices: tuple[str, ...], default: str) -> str:
    v = f.get(key, str, default)
    if v not in choices:
        raise InputError.at(f.source, field=f._name(key), expected=" | ".join(choices), got=v)
    return v


def _dims(f: _Fields, gpus_per_node: int) -> tuple[DimSpec, ...]:
    raw = f.t.get("dims", [])
    if not isinstance(raw, list):
        raise InputError.at(f.source, field=f._name("dims"), expected="an array of [[...intra.dims]] tables", got=raw)
    dims = []
    for i, d in enumerate(raw):
        g = _Fields(f.source, f"{f._name('dims')}[{i}]", d)
        topo = _choice(g, "topology", DIM_TOPOLOGIES, "ring")
        algo = _choice(g, "algorithm", DIM_ALGORITHMS, "ring")
        if algo == "direct" and topo == "ring":
            raise InputError.at(f.source, field=g._name("algorithm"),
                                expected="ring on a ring topology (direct needs fully-connected or switch)", got=algo)
        dims.append(DimSpec(size=g.get("size", int, positive=True), topology=topo,
                            GBps=g.get("GBps", float, positive=True),
                            latency_us=g.get("latency_us", float, minimum=0.0), algorithm=algo))
    prod = 1
    for d in dims:
        prod *= d.size
    if dims and prod != gpus_per_node:
        raise InputError.at(f.source, field=f._name("dims"),
                            expected=f"dimension sizes whose product is gpus_per_node = {gpus_per_node}",
                            got=[d.size for d in dims])
    return tuple(dims)


def _intra(f: _Fields, gpus_per_node: int) -> IntraNode:
    kind = f.get("kind", str)
    if kind not in INTRA_KINDS:
        raise InputError.at(f.source, field=f._name("kind"), expected=" | ".join(INTRA_KINDS), got=kind)
    lat = f.get("latency_us", float, minimum=0.0)
    dims = _dims(f, gpus_per_node)
    if kind == "nvswitch":
        return IntraNode(kind, lat, gpu_GBps=f.get("gpu_GBps", float, positive=True), dims=dims)
    if kind == "nvlink-cube-mesh":
        return IntraNode(kind, lat, nvlink_GBps=f.get("nvlink_GBps", float, positive=True),
                         nvlinks_per_gpu=f.get("nvlinks_per_gpu", int, positive=True), dims=dims)
    return IntraNode(kind, lat, gpu_GBps=f.get("gpu_GBps", float, positive=True),
                     host_bridge_GBps=f.get("host_bridge_GBps", float, positive=True), dims=dims)


def _tier(f: _Fields, name: str) -> Tier:
    up = f.get("uplink_gbps", float, None, positive=True)
    return Tier(name=f.get("name", str, name), kind=f.get("kind", str, "infiniband"),
                port_gbps=f.get("port_gbps", float, positive=True),
                latency_us=f.get("latency_us", float, minimum=0.0),
                oversubscription=f.get("oversubscription", float, 1.0, minimum=1.0),
                uplink_gbps=up, dim_topology=_choice(f, "dim_topology", DIM_TOPOLOGIES, "ring"),
                dim_GBps=f.get("dim_GBps", float, None, positive=True),
                dim_latency_us=f.get("dim_latency_us", float, None, minimum=0.0),
                dim_algorithm=_choice(f, "dim_algorithm", DIM_ALGORITHMS, "ring"))


def spec_from_dict(data: Mapping[str, Any], source: str, **overrides: Any) -> ClusterSpec:
    """Validate a parsed TOML document (plus overrides) into a `ClusterSpec`."""
    top = _Fields(source, "", dict(data))
    types_tbl = top.sub("node_types")
    if not types_tbl.t:
        raise InputError.at(source, field="node_types", expected="at least one node type")
    node_types: dict[str, NodeType] = {}
    for tname in types_tbl.t:
        f = types_tbl.sub(tname)
        nic = f.sub("nic")
        gpn = f.get("gpus_per_node", int, positive=True)
        node_types[tname] = NodeType(
            name=tname, gpu_type=f.get("gpu_type", str), gpu_mem_gb=f.get("gpu_mem_gb", float, positive=True),
            gpus_per_node=gpn, intra=_intra(f.sub("intra"), gpn),
            nic=Nic(count=nic.get("count", int, positive=True), gbps=nic.get("gbps", float, positive=True),
                    gpudirect=nic.get("gpudirect", bool), latency_us=nic.get("latency_us", float, minimum=0.0)))
    groups_raw = data.get("groups")
    if not isinstance(groups_raw, list) or not groups_raw:
        raise InputError.at(source, field="groups", expected="a non-empty array of [[groups]] tables")
    groups = []
    for i, g in enumerate(groups_raw):
        f = _Fields(source, f"groups[{i}]", g)
        nt = f.get("node_type", str)
        if nt not in node_types:
            raise InputError.at(source, field=f"groups[{i}].node_type",
                                expected=f"one of {sorted(node_types)}", got=nt)
        gpn = f.get("gpus_per_node", int, node_types[nt].gpus_per_node, positive=True)
        if gpn > node_types[nt].gpus_per_node:
            raise InputError.at(source, field=f"groups[{i}].gpus_per_node",
                                expected=f"at most {node_types[nt].gpus_per_node} (node type '{nt}' has "
                                f"{node_types[nt].gpus_per_node} GPUs)", got=gpn)
        groups.append(NodeGroup(name=f.get("name", str, f"group{i}"), node_type=nt,
                                nodes=f.get("nodes", int, positive=True), gpus_per_node=gpn,
                                start_new_leaf=f.get("start_new_leaf", bool, False),
                                start_new_pod=f.get("start_new_pod", bool, False),
                                pool=f.get("pool", str, "")))
    tiers_tbl = top.sub("tiers")
    tiers = {t: _tier(tiers_tbl.sub(t), t) for t in TIER_NAMES}
    comm = data.get("comm", {})
    if not isinstance(comm, dict):
        raise InputError.at(source, field="comm", expected="a table", got=comm)
    spec = ClusterSpec(
        name=top.get("name", str), description=top.get("description", str, ""), source=source,
        nodes_per_leaf=top.get("nodes_per_leaf", int, positive=True),
        leaves_per_pod=top.get("leaves_per_pod", int, positive=True),
        node_types=node_types, groups=tuple(groups), leaf=tiers["leaf"], spine=tiers["spine"],
        core=tiers["core"], rail_optimized=top.get("rail_optimized", bool, False), comm=dict(comm),
        profile=top.get("profile", str, None), host=top.get("host", str, "synthetic"),
        gpu_types=_gpu_types_table(data, source))
    return _check_size(apply_overrides(spec, **overrides))


def _gpu_types_table(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    raw = data.get("gpu_types", {})
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise InputError.at(source, field="gpu_types", expected="[gpu_types.<name>] tables", got=raw)
    return dict(raw)


def _check_size(spec: ClusterSpec) -> ClusterSpec:
    gpus = sum(g.nodes * g.gpus_per_node for g in spec.groups)
    if gpus > MAX_CLUSTER_GPUS:
        raise InputError.at(spec.source, field="nodes", expected=f"at most MAX_CLUSTER_GPUS = {MAX_CLUSTER_GPUS} GPUs "
                            "in the cluster", got=f"{gpus} GPUs")
    return spec


def apply_overrides(spec: ClusterSpec, *, num_nodes: int | None = None, num_leaves: int | None = None,
                    **unknown: Any) -> ClusterSpec:
    """Resize a single-group cluster: `num_nodes` nodes, or `num_leaves` full leaves (racks)."""
    if unknown:
        raise InputError.at(spec.source, field=next(iter(unknown)),
                            expected="a known override: num_nodes, num_leaves")
    if num_nodes is None and num_leaves is None:
        return spec
    if num_nodes is not None and num_leaves is not None:
        raise InputError.at(spec.source, field="num_leaves", expected="either num_nodes or num_leaves, not both")
    if num_leaves is not None:
        if int(num_leaves) <= 0:
            raise InputError.at(spec.source, field="num_leaves", expected="a positive integer", got=num_leaves)
        num_nodes = int(num_leaves) * spec.nodes_per_leaf
    if int(num_nodes) <= 0:
        raise InputError.at(spec.source, field="num_nodes", expected="a positive integer", got=num_nodes)
    if len(spec.groups) != 1:
        raise InputError.at(spec.source, field="num_nodes",
                            expected="a single-group cluster (this one has groups "
                            f"{[g.name for g in spec.groups]}); write a TOML file instead")
    group = dataclasses.replace(spec.groups[0], nodes=int(num_nodes))
    return dataclasses.replace(spec, groups=(group,))


def load_cluster(name_or_path: str, **overrides: Any) -> ClusterSpec:
    """Load a shipped preset by name or a user TOML file by path; validate; apply overrides.

    Overrides: ``num_nodes`` (resize a single-group cluster, e.g. ``load_cluster("dgx-a100",
    num_nodes=8)``) or ``num_leaves`` (whole racks, e.g. ``dally-3tier`` with 2–16 racks).
    """
    data, source = _read_toml(str(name_or_path))
    overrides = {k: v for k, v in overrides.items() if v is not None}
    return spec_from_dict(data, source, **overrides)
