"""Topology: a `ClusterSpec` compiled to flat numpy arrays (the form every hot loop reads).

The fabric is a tree, so nothing all-pairs is stored: the route between two nodes follows from
their leaf and pod indices (`route`), which keeps a 100,000-GPU cluster at a few MB.

Link table (ids are contiguous blocks; every link is full duplex and its capacity is per
direction — the collectives in `collectives/` put equal bytes on both directions):

    [0, N)              node n's intra-node fabric (NVSwitch aggregate / cube-mesh / PCIe host bridge)
    [N, 2N)             node n's NICs to its leaf (all NICs aggregated: rails run in parallel)
    [2N, 2N+L)          leaf l's uplinks to the spine tier of its pod
    [2N+L, 2N+L+P)      pod p's uplinks to the core

`link_tier` holds 0..3 for these four kinds (`LINK_TIER_NAMES`). A route between nodes a ≠ b is
``nic(a) [leafup(a) [podup(a) podup(b)] leafup(b)] nic(b)`` and its latency is the sum of
`link_latency_s` over it: a NIC link carries the NIC latency plus half a leaf switch, a leaf
uplink half a leaf plus half a spine switch, a pod uplink half a spine plus half the core, so
the sum counts each switch crossed exactly once.

Rail-optimised fabrics (``rail_optimized = true``, dgx-h100): NIC i of every node in a leaf group
goes to rail switch i; the rails of one group are aggregated into one "leaf" here, which is exact
for NCCL's rail-aligned (PXN) traffic and optimistic only for cross-rail traffic inside a group.

The switch tree is checked at build time from the parent arrays (every node's leaf exists, so
core – pods – leaves – nodes is connected with one edge per vertex: a tree); networkx builds the
same tree as a graph on demand (`Topology.graph()`, for `show`/tests) and is imported only then,
so a simulation never loads it; it is an optional dependency (the `graph` and `test` extras).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import networkx as nx

from cosim.errors import InputError
from netmodel.spec import ClusterSpec

LINK_TIER_NAMES = ("intra", "nic", "leaf-up", "pod-up")
TIER_INTRA, TIER_NIC, TIER_LEAF_UP, TIER_POD_UP = 0, 1, 2, 3


@dataclass(frozen=True, eq=False)
class Topology:
    spec: ClusterSpec
    gpu_node: np.ndarray          # int32[G]
    gpu_type: np.ndarray          # int16[G]
    node_leaf: np.ndarray         # int32[N]
    leaf_pod: np.ndarray          # int32[L]
    node_first_gpu: np.ndarray    # int32[N]
    node_num_gpus: np.ndarray     # int32[N]
    node_type: np.ndarray         # int16[N] index into node_type_names
    node_group: np.ndarray        # int16[N] index into spec.groups
    gpu_type_names: tuple[str, ...]
    gpu_type_mem_gb: np.ndarray   # float64[T]
    node_type_names: tuple[str, ...]
    link_capacity_Bps: np.ndarray  # float64[K]
    link_latency_s: np.ndarray    # float64[K]
    link_tier: np.ndarray         # int8[K]
    # per node, for the collective cost model
    node_intra_latency_s: np.ndarray   # float64[N]
    node_nic_Bps: np.ndarray           # float64[N] all NICs together
    node_nic_count: np.ndarray         # int32[N]
    node_gpudirect: np.ndarray         # bool[N]
    node_gpus_max: np.ndarray          # int32[N] GPUs the node type has
    leaf_class: np.ndarray             # int32[L] ids of distinct (uplink capacity) classes
    pod_class: np.ndarray              # int32[P]
    _graph: nx.Graph | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ sizes and names
    @property
    def num_gpus(self) -> int:
        return int(self.gpu_node.shape[0])

    @property
    def num_nodes(self) -> int:
        return int(self.node_leaf.shape[0])

    @property
    def num_leaves(self) -> int:
        return int(self.leaf_pod.shape[0])

    @property
    def num_pods(self) -> int:
        return int(self.leaf_pod.max()) + 1 if self.leaf_pod.size else 0

    @property
    def num_links(self) -> int:
        return int(self.link_capacity_Bps.shape[0])

    def link_id(self, tier: int, index: int) -> int:
        """Id of the `index`-th link of kind `tier` (node, node, leaf, pod index)."""
        base = (0, self.num_nodes, 2 * self.num_nodes, 2 * self.num_nodes + self.num_leaves)[tier]
        return base + int(index)

    def link_name(self, link: int) -> str:
        tier = int(self.link_tier[link])
        idx = link - self.link_id(tier, 0)
        return ("node{}/intra", "node{}/nic", "leaf{}/up", "pod{}/up")[tier].format(idx)

    @cached_property
    def link_names(self) -> tuple[str, ...]:
        """All link names, built on first use (`node12/nic`, `leaf3/up`, …)."""
        return tuple(self.link_name(i) for i in range(self.num_links))

    # ------------------------------------------------------------------ routing
    def route(self, node_a: int, node_b: int) -> np.ndarray:
        """Link ids on the path between two nodes (one intra link when a == b)."""
        n, nl = self.num_nodes, self.num_leaves
        a, b = int(node_a), int(node_b)
        if a == b:
            return np.array([a], dtype=np.int32)
        la, lb = int(self.node_leaf[a]), int(self.node_leaf[b])
        if la == lb:
            return np.array([n + a, n + b], dtype=np.int32)
        pa, pb = int(self.leaf_pod[la]), int(self.leaf_pod[lb])
        if pa == pb:
            return np.array([n + a, 2 * n + la, 2 * n + lb, n + b], dtype=np.int32)
        return np.array([n + a, 2 * n + la, 2 * n + nl + pa, 2 * n + nl + pb, 2 * n + lb, n + b],
                        dtype=np.int32)

    def route_latency_s(self, node_a: int, node_b: int) -> float:
        return float(self.link_latency_s[self.route(node_a, node_b)].sum())

    def graph(self) -> nx.Graph:
        """The switch tree as a networkx graph (core – pods – leaves – nodes)."""
        return self._graph if self._graph is not None else _build_graph(self.node_leaf, self.leaf_pod)

    def describe(self) -> dict:
        """A plain summary (for `cosim clusters show` and logs)."""
        s = self.spec
        groups = []
        for gi, g in enumerate(s.groups):
            nt = s.node_types[g.node_type]
            mask = self.node_group == gi
            groups.append(dict(
                name=g.name, node_type=g.node_type, gpu_type=nt.gpu_type, gpu_mem_gb=nt.gpu_mem_gb,
                nodes=g.nodes, gpus_per_node=g.gpus_per_node, gpus=g.nodes * g.gpus_per_node,
                intra=nt.intra.kind, intra_latency_us=nt.intra.latency_us,
                intra_gpu_GBps=nt.intra.ring_GBps(g.gpus_per_node, nt.gpus_per_node),
                nics=nt.nic.count, nic_gbps=nt.nic.gbps, gpudirect=nt.nic.gpudirect,
                leaf_range=[int(self.node_leaf[mask].min()), int(self.node_leaf[mask].max())]))
        tiers = []
        for tname, t in zip(("leaf", "spine", "core"), s.tiers()):
            tiers.append(dict(tier=tname, name=t.name, kind=t.kind, port_gbps=t.port_gbps,
                              latency_us=t.latency_us, oversubscription=t.oversubscription))
        leaf_up = self.link_capacity_Bps[2 * self.num_nodes: 2 * self.num_nodes + self.num_leaves]
        pod_up = self.link_capacity_Bps[2 * self.num_nodes + self.num_leaves:]
        return dict(name=s.name, description=s.description, gpus=self.num_gpus, nodes=self.num_nodes,
                    leaves=self.num_leaves, pods=self.num_pods, nodes_per_leaf=s.nodes_per_leaf,
                    leaves_per_pod=s.leaves_per_pod, rail_optimized=s.rail_optimized, groups=groups,
                    tiers=tiers,
                    leaf_uplink_gbps=sorted({round(float(x) * 8e-9, 3) for x in leaf_up}),
                    pod_uplink_gbps=sorted({round(float(x) * 8e-9, 3) for x in pod_up}),
                    gpu_types=list(self.gpu_type_names))


def _build_graph(node_leaf: np.ndarray, leaf_pod: np.ndarray) -> nx.Graph:
    try:
        import networkx as nx
    except ImportError as exc:  # an optional dependency: no command needs it
        raise ImportError("Topology.graph() needs networkx: pip install 'cosim[graph]' (or networkx)") from exc

    g = nx.Graph()
    g.add_node("core")
    g.add_edges_from((("core", f"pod{p}") for p in np.unique(leaf_pod).tolist()))
    g.add_edges_from(((f"pod{p}", f"leaf{l}") for l, p in enumerate(leaf_pod.tolist())))
    g.add_edges_from(((f"leaf{l}", f"node{n}") for n, l in enumerate(node_leaf.tolist())))
    return g


def _is_tree(node_leaf: np.ndarray, leaf_pod: np.ndarray) -> bool:
    """Whether `_build_graph`'s graph is a tree, without building it: every pod hangs off the core
    and every leaf off its pod by construction, so the graph has one edge per non-core vertex and
    is a tree exactly when it is connected, i.e. when every node names an existing leaf (a leaf
    index outside 0..L-1 would be a vertex with no path to the core). tests/netmodel checks this
    against networkx's `is_tree`."""
    return bool(node_leaf.size == 0 or (node_leaf.min() >= 0 and node_leaf.max() < leaf_pod.shape[0]))


def _classes(values: np.ndarray) -> np.ndarray:
    _, inv = np.unique(np.round(values, 3), return_inverse=True)
    return inv.astype(np.int32)


def build_topology(spec: ClusterSpec, *, check_graph: bool = True) -> Topology:
    """Compile `spec` to arrays and check the switch tree is one (skip with check_graph=False)."""
    # --- nodes → leaves → pods, group by group
    n_nodes = spec.num_nodes
    node_leaf = np.empty(n_nodes, np.int32)
    node_group = np.empty(n_nodes, np.int16)
    node_gpus = np.empty(n_nodes, np.int32)
    leaf_pod_list: list[int] = []
    leaf_fill, pod_fill, n = spec.nodes_per_leaf, spec.leaves_per_pod, 0  # "full" → open new
    pod = -1
    for gi, g in enumerate(spec.groups):
        if g.start_new_pod and n:
            leaf_fill, pod_fill = spec.nodes_per_leaf, spec.leaves_per_pod
        elif g.start_new_leaf and n:
            leaf_fill = spec.nodes_per_leaf
        # whole blocks are written vectorised: a group is a run of nodes
        remaining = g.nodes
        while remaining:
            if leaf_fill >= spec.nodes_per_leaf:
                if pod_fill >= spec.leaves_per_pod:
                    pod += 1
                    pod_fill = 0
                leaf_pod_list.append(pod)
                pod_fill += 1
                leaf_fill = 0
            take = min(remaining, spec.nodes_per_leaf - leaf_fill)
            node_leaf[n:n + take] = len(leaf_pod_list) - 1
            node_group[n:n + take] = gi
            node_gpus[n:n + take] = g.gpus_per_node
            n += take
            leaf_fill += take
            remaining -= take
    leaf_pod = np.asarray(leaf_pod_list, np.int32)
    n_leaves, n_pods = leaf_pod.shape[0], int(leaf_pod.max()) + 1

    # --- per node-type tables
    type_names = tuple(spec.node_types)
    gpu_names = tuple(sorted({nt.gpu_type for nt in spec.node_types.values()}))
    gpu_mem = np.zeros(len(gpu_names))
    for nt in spec.node_types.values():
        gpu_mem[gpu_names.index(nt.gpu_type)] = max(gpu_mem[gpu_names.index(nt.gpu_type)], nt.gpu_mem_gb)
    group_type = np.array([type_names.index(g.node_type) for g in spec.groups], np.int16)
    node_type = group_type[node_group]

    def per_type(fn, dtype=np.float64):
        return np.array([fn(spec.node_types[t]) for t in type_names], dtype=dtype)[node_type]

    leaf = spec.leaf
    port_Bps = leaf.port_gbps * 1e9 / 8
    nic_Bps = per_type(lambda t: t.nic.count * min(t.nic.gbps * 1e9 / 8, port_Bps))
    intra_cap = per_type(lambda t: t.intra.capacity_GBps(t.gpus_per_node) * 1e9)
    intra_lat = per_type(lambda t: t.intra.latency_us * 1e-6)
    nic_lat = per_type(lambda t: t.nic.latency_us * 1e-6)

    # --- GPUs
    node_first = np.zeros(n_nodes, np.int32)
    np.cumsum(node_gpus[:-1], out=node_first[1:])
    gpu_node = np.repeat(np.arange(n_nodes, dtype=np.int32), node_gpus)
    gpu_type_of_node = np.array([gpu_names.index(spec.node_types[t].gpu_type) for t in type_names],
                                np.int16)[node_type]
    gpu_type = gpu_type_of_node[gpu_node]

    # --- uplinks: downlink capacity of a nominal full switch / oversubscription (or explicit)
    leaf_nic_max = np.zeros(n_leaves)
    np.maximum.at(leaf_nic_max, node_leaf, nic_Bps)
    if leaf.uplink_gbps is not None:
        leaf_up = np.full(n_leaves, leaf.uplink_gbps * 1e9 / 8)
    else:
        leaf_up = spec.nodes_per_leaf * leaf_nic_max / leaf.oversubscription
    spine = spec.spine
    pod_leaf_max = np.zeros(n_pods)
    np.maximum.at(pod_leaf_max, leaf_pod, leaf_up)
    if spine.uplink_gbps is not None:
        pod_up = np.full(n_pods, spine.uplink_gbps * 1e9 / 8)
    else:
        pod_up = spec.leaves_per_pod * pod_leaf_max / spine.oversubscription

    half = 0.5e-6
    cap = np.concatenate([intra_cap, nic_Bps, leaf_up, pod_up])
    lat = np.concatenate([intra_lat, nic_lat + half * leaf.latency_us,
                          np.full(n_leaves, half * (leaf.latency_us + spine.latency_us)),
                          np.full(n_pods, half * (spine.latency_us + spec.core.latency_us))])
    tier = np.concatenate([np.full(n_nodes, TIER_INTRA, np.int8), np.full(n_nodes, TIER_NIC, np.int8),
                           np.full(n_leaves, TIER_LEAF_UP, np.int8), np.full(n_pods, TIER_POD_UP, np.int8)])
    if not np.all(cap > 0):
        bad = int(np.argmin(cap))
        raise InputError.at(spec.source, field=("intra", "nic", "tiers.leaf", "tiers.spine")[int(tier[bad])],
                            expected="positive bandwidth")

    graph = None
    if check_graph and not _is_tree(node_leaf, leaf_pod):  # pragma: no cover - construction guarantees it
        raise InputError.at(spec.source, expected="a tree-shaped fabric")

    return Topology(
        spec=spec, gpu_node=gpu_node, gpu_type=gpu_type, node_leaf=node_leaf, leaf_pod=leaf_pod,
        node_first_gpu=node_first, node_num_gpus=node_gpus, node_type=node_type, node_group=node_group,
        gpu_type_names=gpu_names, gpu_type_mem_gb=gpu_mem, node_type_names=type_names,
        link_capacity_Bps=cap, link_latency_s=lat, link_tier=tier,
        node_intra_latency_s=intra_lat, node_nic_Bps=nic_Bps,
        node_nic_count=per_type(lambda t: t.nic.count, np.int32),
        node_gpudirect=per_type(lambda t: t.nic.gpudirect, np.bool_),
        node_gpus_max=per_type(lambda t: t.gpus_per_node, np.int32),
        leaf_class=_classes(leaf_up), pod_class=_classes(pod_up), _graph=graph)
