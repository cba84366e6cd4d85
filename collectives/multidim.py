"""The ``multidim`` collective: ASTRA-sim-style hierarchical all-reduce over network dimensions.

ASTRA-sim (1.0, analytical backend) describes a system as a stack of *dimensions*, each with a
unit count, a topology (ring, fully-connected, switch), a link bandwidth and a link latency,
and runs an all-reduce as a reduce-scatter through the dimensions from the innermost out,
then an all-gather back in (``all-reduce-implementation: ring_ring_…``: the ring algorithm in
every dimension). The Dally authors fed it FullyConnected(4) × Ring(2) inside the machine
(0 / 500 ns, 600 GB/s per link), a Ring of machines inside a rack (5 µs, 200 GB/s) and a
Switch of racks (50 µs per link, 400 GB/s) [notes/dally.md §3.1, §3.3]. This module computes
that collective for any placement shape, so a preset can state those inputs literally.

Levels of a placement (innermost first): the node's intra dimensions (`IntraNode.dims`, or one
dimension derived from the intra kind), then one dimension per network tier the placement
spans — nodes under a leaf (`tiers.leaf`), leaves under a pod (`tiers.spine`), pods
(`tiers.core`); a level whose groups all have one unit is skipped.

Per level with u units, d = the fraction of the message each GPU still holds (1 at the
start, divided by u after the level), per-step latency λ and per-GPU bandwidth B:

- ring:               (u−1) steps of  λ + d/u · S / B
- direct, fully-conn: 1 step of       λ + d/u · S / B      (u−1 links in parallel)
- direct, switch:     1 step of       λ + (u−1)·d/u · S / B  (one port into the switch)

λ = link latency × (2 on a switch: unit → switch → unit; 1 otherwise) + the CommParams α of
the tier (`alpha_intra_s` inside a node; `alpha_net_s` (+ `alpha_spine_s`, + `alpha_core_s`)
for the network levels — ASTRA-sim's ``endpoint-delay`` goes there). All-reduce = reduce-
scatter + all-gather, so its time is twice the sum over levels; reduce-scatter and all-gather
alone are the sum once; ``base_latency_s`` is added once per call. Closed form for Dally's
machine (S bytes, FC(4) at 0 ns × Ring(2) at 500 ns, 600 GB/s, endpoint delay ε)::

    t = 2·[3·(ε + S/4/B) + (0.5 µs + ε + S/8/B)] = 1 µs + 8ε + 1.75·S/B

Intra-node decomposition of k GPUs on a node with dimensions (n₁, n₂, …) (the GPUs of a
placement on one node are taken contiguous): walk the dimensions; if k ≤ nᵢ it is the last
level (k units of dimension i); if nᵢ divides k take all nᵢ units and continue with k/nᵢ;
otherwise the node does not decompose and becomes one ring of k units at the slowest latency
and lowest bandwidth of the dimensions it spans (the Dally artifact likewise collapses a level
that does not divide evenly into one dimension). Default dimension when a preset gives none:
NVSwitch = fully-connected (every peer one hop away at ``gpu_GBps``), NVLink cube-mesh and
PCIe = a ring at `IntraNode.ring_GBps` (the cube-mesh links among the k GPUs; PCIe limited by
the shared host bridge).

Uneven placements (3 GPUs on one node, 5 on another): a level's steps are set by its largest
group and its data by the smallest group of the previous level (that GPU holds the largest
shard): the slowest group bounds the level, as in the other algorithms. Network bandwidth per
GPU: the tier's ``dim_GBps`` when the preset gives it (the authors' per-GPU link), else the
node's NIC bandwidth shared by its k GPUs, and for the leaf / pod levels also the uplink shared
by the GPUs behind it. There are no NCCL protocols here (ASTRA-sim has none): only the Simple
row is finite, so payload bytes equal wire bytes.

`astra_stages` turns the same levels into the stages ASTRA-sim 1.0 itself runs for one
all-reduce under a system file (`AstraSystem`: its ``collective-optimization``, GiB/s link
reading and links-count bandwidth scalars); Dally Table I (`collectives.layers.ASTRA_RATIO`)
uses it with the authors' system file (`DALLY_ASTRA_SYSTEM`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collectives.params import CommParams
from collectives.shape import Shape
from cosim.errors import InputError

_PHASES = {"allreduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}
MULTIDIM_OPS = tuple(_PHASES)


@dataclass(frozen=True)
class Level:
    """One dimension as a placement uses it."""

    tier: str            # "intra" | "leaf" | "spine" | "core"
    units: int           # largest group
    units_min: int       # smallest group (its GPUs hold the largest shard afterwards)
    topology: str
    algorithm: str
    latency_s: float     # per step, α's and switch doubling included
    Bps: float           # per GPU per direction


def _step_latency(topology: str, link_latency_s: float, alpha_s: float) -> float:
    return link_latency_s * (2.0 if topology == "switch" else 1.0) + alpha_s


def _level_cost(lv: Level, d: float) -> tuple[float, float, float]:
    """(α seconds, β seconds per byte, bytes sent per GPU per message byte) of one phase."""
    u = lv.units
    if u <= 1:
        return 0.0, 0.0, 0.0
    share = d / u
    sent = (u - 1) * share
    if lv.algorithm == "direct":
        wire = sent if lv.topology == "switch" else share
        return lv.latency_s, wire / lv.Bps, sent
    return (u - 1) * lv.latency_s, sent / lv.Bps, sent


def intra_levels(intra, k: int, gpus_per_node: int, alpha_intra_s: float) -> list[Level]:
    """The intra-node levels of k GPUs of one node (see the module docstring)."""
    if k <= 1:
        return []
    dims = intra.dims
    if not dims:
        if intra.kind == "nvswitch":
            return [Level("intra", k, k, "fully-connected", "ring",
                          _step_latency("fully-connected", intra.latency_us * 1e-6, alpha_intra_s),
                          intra.gpu_GBps * 1e9)]
        return [Level("intra", k, k, "ring", "ring", intra.latency_us * 1e-6 + alpha_intra_s,
                      intra.ring_GBps(k, gpus_per_node) * 1e9)]
    out: list[Level] = []
    rest = k
    for dim in dims:
        if rest == 1:
            break
        take = rest if rest <= dim.size else dim.size
        if rest > dim.size and rest % dim.size:
            spanned, prod = [], 1
            for d in dims:   # the dimensions k contiguous GPUs reach
                spanned.append(d)
                prod *= d.size
                if prod >= k:
                    break
            lat = max(_step_latency(d.topology, d.latency_us * 1e-6, alpha_intra_s) for d in spanned)
            return [Level("intra", k, k, "ring", "ring", lat, min(d.GBps for d in spanned) * 1e9)]
        out.append(Level("intra", take, take, dim.topology, dim.algorithm,
                         _step_latency(dim.topology, dim.latency_us * 1e-6, alpha_intra_s), dim.GBps * 1e9))
        rest //= take
    return out


def _net_level(tier_name: str, tier, groups: np.ndarray, bw_default_Bps: float, alpha_s: float) -> Level | None:
    if groups.size == 0 or groups.max() <= 1:
        return None
    lat = (tier.latency_us if tier.dim_latency_us is None else tier.dim_latency_us) * 1e-6
    bw = bw_default_Bps if tier.dim_GBps is None else tier.dim_GBps * 1e9
    return Level(tier_name, int(groups.max()), int(groups.min()), tier.dim_topology, tier.dim_algorithm,
                 _step_latency(tier.dim_topology, lat, alpha_s), bw)


def multidim_cost(topo, shape: Shape, op: str, params: CommParams):
    """(alpha seconds, beta seconds/byte, coef[K] link bytes per message byte, levels) of the
    ``multidim`` collective on `shape`, or None when `op` has no multidim form."""
    if op not in _PHASES:
        return None
    phases = _PHASES[op]
    spec = topo.spec
    nodes, k = shape.nodes, shape.counts.astype(np.int64)
    n, nl, npd = nodes.size, shape.leaves.size, shape.pods.size
    K = 2 * n + nl + npd
    coef = np.zeros(K)
    if int(k.sum()) <= 1:
        return 0.0, 0.0, coef, []
    # ---- intra levels: per distinct (node type, k); the slowest node sets each level's time
    types = topo.node_type[nodes].astype(np.int64)
    uniq, inv = np.unique(types * (int(k.max()) + 1) + k, return_inverse=True)
    intra_t = []
    for u in uniq.tolist():
        ti, ku = divmod(u, int(k.max()) + 1)
        nt = spec.node_types[topo.node_type_names[ti]]
        lv = intra_levels(nt.intra, ku, nt.gpus_per_node, params.alpha_intra_s)
        a = b = sent = 0.0
        d = 1.0
        for level in lv:
            la, lb, ls = _level_cost(level, d)
            a, b, sent = a + la, b + lb, sent + ls
            d /= level.units
        intra_t.append((a, b, sent, lv))
    coef[:n] = phases * k * np.array([v[2] for v in intra_t])[inv.reshape(-1)]
    alpha = max(v[0] for v in intra_t)
    beta = max(v[1] for v in intra_t)
    levels = max(intra_t, key=lambda v: v[0] + v[1])[3]
    d = 1.0 / float(k.min())
    # ---- network levels: nodes per leaf, leaves per pod, pods
    nic_Bps = topo.node_nic_Bps[nodes].astype(np.float64)
    per_gpu_nic = float((nic_Bps / k).min())
    nodes_per_leaf = np.bincount(shape.leaf_rank, minlength=nl)
    gpus_per_leaf = np.bincount(shape.leaf_rank, weights=k, minlength=nl)
    leaf_pod_rank = np.zeros(nl, np.int64)
    leaf_pod_rank[shape.leaf_rank] = shape.pod_rank
    leaves_per_pod = np.bincount(leaf_pod_rank, minlength=npd)
    gpus_per_pod = np.bincount(shape.pod_rank, weights=k, minlength=npd)
    cap = topo.link_capacity_Bps
    leaf_up = cap[2 * topo.num_nodes + shape.leaves]
    pod_up = cap[2 * topo.num_nodes + topo.num_leaves + shape.pods]
    a_net = params.alpha_net_s
    plan = [
        ("leaf", spec.leaf, nodes_per_leaf, per_gpu_nic, a_net, None),
        ("spine", spec.spine, leaves_per_pod, min(per_gpu_nic, float((leaf_up / gpus_per_leaf).min())),
         a_net + params.alpha_spine_s, (2 * n, nl, shape.leaf_rank)),
        ("core", spec.core, np.array([npd]), min(per_gpu_nic, float((pod_up / gpus_per_pod).min())),
         a_net + params.alpha_spine_s + params.alpha_core_s, (2 * n + nl, npd, shape.pod_rank)),
    ]
    for tier_name, tier, groups, bw, a_s, up in plan:
        lv = _net_level(tier_name, tier, groups, bw, a_s)
        if lv is None:
            continue
        la, lb, ls = _level_cost(lv, d)
        alpha, beta = alpha + la, beta + lb
        # bytes: every GPU sends ls·S over its NIC (and the uplinks above it) in this level
        coef[n:2 * n] += phases * k * ls
        if up is not None:
            off, cnt, rank = up
            coef[off:off + cnt] += phases * np.bincount(rank, weights=k * ls, minlength=cnt)
            if tier_name == "core":   # the pod level also crosses the leaf uplinks
                coef[2 * n:2 * n + nl] += phases * np.bincount(shape.leaf_rank, weights=k * ls, minlength=nl)
        levels = levels + [lv]
        d /= lv.units_min
    return phases * alpha + params.base_latency_s, phases * beta, coef, levels


def level_phases(levels: list[Level], first_gpus: int) -> list[tuple[int, float, float]]:
    """One reduce-scatter phase per level as (level index, α seconds, β seconds per byte of the
    whole message): the stages ASTRA-sim pipelines collectives through (`collectives.layers`).
    `first_gpus`: GPUs of the smallest node (network levels start from a 1/k shard)."""
    out = []
    d = 1.0
    for j, lv in enumerate(levels):
        if lv.tier != "intra" and (j == 0 or levels[j - 1].tier == "intra"):
            d = 1.0 / first_gpus
        a, b, _ = _level_cost(lv, d)
        out.append((j, a, b))
        d /= lv.units_min if lv.tier != "intra" else lv.units
    return out


#: ASTRA-sim 1.0's ``collective-optimization`` values (see `AstraSystem`)
COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")
#: ASTRA-sim's analytical backend reads ``link-bandwidth`` in GB/s and converts with
#: ``bw × (1 << 30) / 1e9`` B/ns (its ``main``): the number is used as GiB/s
ASTRA_GIB = 2.0**30 / 1e9


@dataclass(frozen=True)
class AstraSystem:
    """How ASTRA-sim 1.0 (analytical backend, the Dally authors' simulator) turns the levels of
    a placement into the stages of one all-reduce (`astra_stages`). Each field is a behaviour
    of the public ASTRA-sim 1.0 sources (system layer ``Sys.cc``; analytical backend ``main``
    and ``HierarchicalTopology``, the version that reads the ``links-count`` / ``dimension-type``
    fields ArtISt-sim writes; the authors' fork as stored holds only the workload layer), each
    switchable for comparison:

    - `optimization`: the system file's ``collective-optimization``. ``baseline`` (the Dally
      authors' generated system file, notes/dally.md §3.3): ``Sys::generate_collective`` gives
      an all-reduce one *all-reduce* phase of the whole chunk per dimension, innermost first
      (``collective_type != All_Reduce || collectiveOptimization == Baseline`` branch) — with
      the ring implementation 2(u−1) steps of S/u per dimension. ``localBWAware``: the
      hierarchical form (reduce-scatter in, all-reduce on the outermost, all-gather out) that
      `level_phases` / `CommModel.multidim_stages` build.
    - `gib`: the analytical ``main`` converts ``link-bandwidth`` as GiB/s (`ASTRA_GIB`).
    - `links`: ``HierarchicalTopology`` multiplies each dimension's link bandwidth by a scalar
      from its ``links-count``: Ring — links (even); FullyConnected — links // (units − 1)
      (integer division); Switch — links. ArtISt-sim writes links-count = units, a Ring's
      rounded up to even and 2 → 4 (``IntraJobScheduler.astra_sim`` [R]); `links_scalar`.
    """

    optimization: str = "baseline"
    gib: bool = True
    links: bool = True

    def __post_init__(self):
        if self.optimization not in COLLECTIVE_OPTIMIZATIONS:
            raise InputError.at(field="collective-optimization", expected=" | ".join(COLLECTIVE_OPTIMIZATIONS),
                                got=self.optimization)


#: the Dally authors' ASTRA-sim system: baseline collectives, GiB/s links, links-count scalars
DALLY_ASTRA_SYSTEM = AstraSystem()


def links_scalar(topology: str, units: int) -> int:
    """ASTRA-sim analytical ``HierarchicalTopology``'s bandwidth multiplier of a dimension of
    `units` units whose links-count ArtISt-sim sets as in `AstraSystem` (see there)."""
    if units <= 1:
        return 1
    if topology == "ring":
        links = units + units % 2
        return 4 if links == 2 else links
    if topology == "fully-connected":
        return max(1, units // (units - 1))   # links-count = units; C++ integer division
    return units                                # switch: links-count = units


def astra_stages(levels: list[Level], first_gpus: int, nbytes: float, system: AstraSystem = DALLY_ASTRA_SYSTEM,
                 base_latency_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """One all-reduce of `nbytes` as ASTRA-sim's pipeline stages (seconds[j], queue[j]) under
    `system`; queue = the level (dimension) index. `levels` from `multidim_cost`;
    `first_gpus`: GPUs of the smallest node (``localBWAware`` only)."""
    f = ASTRA_GIB if system.gib else 1.0
    lv2 = [Level(lv.tier, lv.units, lv.units_min, lv.topology, lv.algorithm, lv.latency_s,
                 lv.Bps * f * (links_scalar(lv.topology, lv.units) if system.links else 1))
           for lv in levels]
    S = float(nbytes)
    if system.optimization == "localBWAware":
        rs = [(q, a + b * S) for q, a, b in level_phases(lv2, first_gpus)]
        st = rs[:-1] + [(rs[-1][0], 2 * rs[-1][1])] + rs[-2::-1] if rs else []
    else:   # baseline: a whole-chunk all-reduce per dimension, innermost first
        st = []
        for j, lv in enumerate(lv2):
            a, b, _ = _level_cost(lv, 1.0)
            if lv.units > 1:
                st.append((j, 2.0 * (a + b * S)))
    secs = np.array([t for _, t in st], dtype=np.float64)
    if secs.size:
        secs[0] += base_latency_s
    return secs, np.array([q for q, _ in st], np.int64)


__all__ = ["ASTRA_GIB", "AstraSystem", "COLLECTIVE_OPTIMIZATIONS", "DALLY_ASTRA_SYSTEM", "Level", "MULTIDIM_OPS",
           "astra_stages", "intra_levels", "level_phases", "links_scalar", "multidim_cost"]
