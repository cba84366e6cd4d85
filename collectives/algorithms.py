"""α–β cost of each collective algorithm on one placement shape.

Every algorithm is written once as *phases*. A phase has a number of steps, a per-step latency
(the slowest edge's fabric latency + tier α's: steps are synchronous, so the worst edge sets the
pace) and, for every link it uses, the bytes it puts on that link per byte of message (per
direction; traffic is symmetric) and the bandwidth the collective can use there. The phase's
per-byte time is the maximum over its links of coefficient / usable bandwidth — the slowest
path bounds the algorithm, which is how uneven placements (3 GPUs on one node, 5 on another,
a job split across racks) pay for their worst link. Phases run one after another, so α's and
β's add. A protocol (LL, LL128, Simple) then scales β by its bandwidth factor and adds its
per-step latency; the result for each (algorithm, protocol) is linear in the message size,
t = α + β·bytes, which `CommModel` evaluates per gradient bucket.

Closed forms on a uniform placement of p GPUs as n nodes × k GPUs (message S bytes; B_intra per-
GPU NVLink/PCIe bandwidth, B_nic the NIC bandwidth a node's k GPUs can drive; λ per-step latency):

- ring all-reduce:        2(p−1)·λ_max + 2(p−1)/p · S / min(B_intra, B_nic)   (one ring through all GPUs)
- double binary tree:     2(⌊log2 n⌋·λ_net + (k−1)·λ_intra) + S · max(2/B_nic, c_k/B_intra)
  (c_k = 2 for k > 2: an interior GPU of the intra-node chain sends S up and S down; 1 for k = 2)
- hierarchical:           2(k−1)·λ_intra + 2(n−1)·λ_net + 2(k−1)/k·S/B_intra + 2(n−1)/n·S/B_nic
  (intra-node reduce-scatter → all-reduce among nodes over all rails → intra-node all-gather)

The ASTRA-sim style per-dimension collective (``multidim``, never chosen by "auto") lives in
`collectives.multidim`; NVSwitch / NVLink cube-mesh / PCIe enter here through the per-GPU ring
bandwidth (`netmodel.IntraNode.ring_GBps`) and a ring step's latency is the intra latency
once per step (a switch is one hop whatever the ring distance).

Local link layout of a shape (mapped to real link ids by `CommModel`): n intra links, n NIC
links, one uplink per used leaf, one per used pod.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from collectives.params import CommParams
from collectives.shape import Shape

OPS = ("allreduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all")
OP_CODE = {op: i for i, op in enumerate(OPS)}
ALGO_NAMES = ("ring", "tree", "hierarchical", "direct", "none")
RING, TREE, HIER, DIRECT, NONE = range(5)


# ----------------------------------------------------------------------------- numba helpers
@njit(cache=True, no_cfunc_wrapper=True)
def _beta(coef, edges, ring_Bps, intra_cap, nic_usable, leaf_cap, pod_cap, sc):
    """max over links of coef / (usable bandwidth × tier efficiency): the slowest link."""
    n = ring_Bps.shape[0]
    nl = leaf_cap.shape[0]
    t = 0.0
    for i in range(n):
        if coef[i] > 0:
            usable = min(max(edges[i], 1.0) * ring_Bps[i], intra_cap[i]) * sc[4]
            t = max(t, coef[i] / usable)
        if coef[n + i] > 0:
            t = max(t, coef[n + i] / (nic_usable[i] * sc[5]))
    for j in range(nl):
        if coef[2 * n + j] > 0:
            t = max(t, coef[2 * n + j] / (leaf_cap[j] * sc[5]))
    for j in range(pod_cap.shape[0]):
        if coef[2 * n + nl + j] > 0:
            t = max(t, coef[2 * n + nl + j] / (pod_cap[j] * sc[5]))
    return t


@njit(cache=True, no_cfunc_wrapper=True)
def _next_pair_max(nic_lat, leaf_rank, pod_rank, leaf_lat, pod_lat, staged, sc):
    """max over i of the latency of the network step i → i+1 (wrap-around included); the
    pair latency is written out in the loop: a numba call with array arguments inside a
    loop pays reference counting on every array (~20 ns per call; it was half of an uncached
    4,096-GPU query)."""
    n = nic_lat.shape[0]
    lat = 0.0
    for a in range(n):
        b = a + 1 if a + 1 < n else 0
        la, lb = leaf_rank[a], leaf_rank[b]
        pa, pb = pod_rank[a], pod_rank[b]
        v = nic_lat[a] + nic_lat[b] + sc[0]
        if la != lb:
            v += leaf_lat[la] + leaf_lat[lb] + sc[1]
        if pa != pb:
            v += pod_lat[pa] + pod_lat[pb] + sc[2]
        if staged[a] or staged[b]:
            v += sc[3]
        if v > lat:
            lat = v
    return lat


@njit(cache=True, no_cfunc_wrapper=True)
def _ring_latency(k, intra_lat, nic_lat, leaf_rank, pod_rank, leaf_lat, pod_lat, staged, sc):
    """Slowest step of a ring through all GPUs in node order (wrap-around edge included)."""
    n = k.shape[0]
    lat = 0.0
    for i in range(n):
        if k[i] > 1:
            lat = max(lat, intra_lat[i])
    if n > 1:
        lat = max(lat, _next_pair_max(nic_lat, leaf_rank, pod_rank, leaf_lat, pod_lat, staged, sc))
    return lat


@njit(cache=True, no_cfunc_wrapper=True)
def _shape_costs(op, k, ring_Bps, intra_cap, intra_lat, nic_usable, nic_lat, staged, leaf_rank, pod_rank,
                 leaf_cap, leaf_lat, pod_cap, pod_lat, sc):
    """α (without base/protocol), steps, β and per-link coefficients of every algorithm.

    sc = [alpha_net, alpha_spine, alpha_core, host_staging, eff_intra, eff_net,
          eff_ring, eff_tree, eff_hier]. Returns (valid[5], alpha0[5], steps[5], beta[5], coef[5, K]).
    """
    n = k.shape[0]
    nl = leaf_cap.shape[0]
    npd = pod_cap.shape[0]
    K = 2 * n + nl + npd
    valid = np.zeros(5, np.bool_)
    alpha0 = np.zeros(5)
    steps = np.zeros(5)
    beta = np.zeros(5)
    coef = np.zeros((5, K))
    P = 0.0  # loops, not k.sum() / k.max(): numba's array reductions are separate compiles
    for i in range(n):
        P += k[i]
    if P <= 1:
        valid[NONE] = True
        return valid, alpha0, steps, beta, coef
    kmax = k[0]
    for i in range(1, n):
        kmax = max(kmax, k[i])
    intra_max = 0.0
    for i in range(n):
        if k[i] > 1:
            intra_max = max(intra_max, intra_lat[i])
    edges = np.empty(n)

    if op == 4:  # all-to-all: direct pairwise exchange, S/p to every peer
        gl = np.zeros(nl)
        gp = np.zeros(npd)
        for i in range(n):
            coef[DIRECT, i] = k[i] * (k[i] - 1) / P + staged[i] * k[i] * (P - k[i]) / P
            coef[DIRECT, n + i] = k[i] * (P - k[i]) / P
            gl[leaf_rank[i]] += k[i]
            gp[pod_rank[i]] += k[i]
            edges[i] = k[i]  # every GPU sends through its own port
        if nl > 1:
            for j in range(nl):
                coef[DIRECT, 2 * n + j] = gl[j] * (P - gl[j]) / P
        if npd > 1:
            for j in range(npd):
                coef[DIRECT, 2 * n + nl + j] = gp[j] * (P - gp[j]) / P
        lat = _ring_latency(k, intra_lat, nic_lat, leaf_rank, pod_rank, leaf_lat, pod_lat, staged, sc)
        per_peer = sc[0] if n > 1 else 0.0
        valid[DIRECT] = True
        alpha0[DIRECT] = lat + (P - 1) * per_peer
        steps[DIRECT] = 1.0
        beta[DIRECT] = _beta(coef[DIRECT], edges, ring_Bps, intra_cap, nic_usable, leaf_cap, pod_cap, sc)
        return valid, alpha0, steps, beta, coef

    # ---- ring through all GPUs, node-major; every ring edge carries factor·S
    if op == 0:
        factor, nsteps = 2 * (P - 1) / P, 2 * (P - 1)
    elif op == 3:
        factor, nsteps = 1.0, P - 1
    else:
        factor, nsteps = (P - 1) / P, P - 1
    for i in range(n):
        if n == 1:
            edges[i] = k[i]
        else:
            edges[i] = k[i] - 1 + staged[i]
            coef[RING, n + i] = factor
        coef[RING, i] = edges[i] * factor
    if n > 1:
        if nl > 1:
            for j in range(2 * n, 2 * n + nl):  # loops, not slice assignment: cheaper to compile
                coef[RING, j] = factor
        if npd > 1:
            for j in range(2 * n + nl, K):
                coef[RING, j] = factor
    lat = _ring_latency(k, intra_lat, nic_lat, leaf_rank, pod_rank, leaf_lat, pod_lat, staged, sc)
    valid[RING] = True
    alpha0[RING] = nsteps * lat
    steps[RING] = nsteps
    beta[RING] = _beta(coef[RING], edges, ring_Bps, intra_cap, nic_usable, leaf_cap, pod_cap, sc) / sc[6]
    if n == 1 or op == 3:
        return valid, alpha0, steps, beta, coef

    # ---- hierarchical: intra ring RS (k edges/node) → ring among nodes over all rails → intra AG
    if kmax > 1:
        inter = 2 * (n - 1) / n if op == 0 else (n - 1) / n
        inter_steps = 2 * (n - 1) if op == 0 else n - 1
        intra_phases = 2.0 if op == 0 else 1.0
        ci = np.zeros(K)
        cn = np.zeros(K)
        for i in range(n):
            edges[i] = k[i]
            ci[i] = intra_phases * (k[i] - 1)
            cn[i] = staged[i] * inter
            cn[n + i] = inter
        if nl > 1:
            for j in range(2 * n, 2 * n + nl):
                cn[j] = inter
        if npd > 1:
            for j in range(2 * n + nl, K):
                cn[j] = inter
        net_lat = _next_pair_max(nic_lat, leaf_rank, pod_rank, leaf_lat, pod_lat, staged, sc)
        b_intra = _beta(ci, edges, ring_Bps, intra_cap, nic_usable, leaf_cap, pod_cap, sc)
        b_net = _beta(cn, edges, ring_Bps, intra_cap, nic_usable, leaf_cap, pod_cap, sc)
        valid[HIER] = True
        alpha0[HIER] = intra_phases * (kmax - 1) * intra_max + inter_steps * net_lat
        steps[HIER] = intra_phases * (kmax - 1) + inter_steps
        beta[HIER] = (b_intra + b_net) / sc[8]
        for j in range(K):  # a loop, not `coef[HIER] = ci + cn`: the array expression's shape
            coef[HIER, j] = ci[j] + cn[j]  # check compiles an error formatter (2.3 s on first run)

    # ---- double binary tree (all-reduce only): heap tree + its mirror; S/2 per tree
    if op == 0:
        deg = np.zeros(n)
        tree_lat = 0.0
        for t in range(2):
            for c in range(1, n):
                par = (c - 1) // 2
                a, b = (par, c) if t == 0 else (n - 1 - par, n - 1 - c)
                deg[a] += 1
                deg[b] += 1
                la, lb = leaf_rank[a], leaf_rank[b]
                pa, pb = pod_rank[a], pod_rank[b]
                v = nic_lat[a] + nic_lat[b] + sc[0]   # the pair latency, written out (see `_next_pair_max`)
                if la != lb:
                    coef[TREE, 2 * n + la] += 0.5
                    coef[TREE, 2 * n + lb] += 0.5
                    v += leaf_lat[la] + leaf_lat[lb] + sc[1]
                if pa != pb:
                    coef[TREE, 2 * n + nl + pa] += 0.5
                    coef[TREE, 2 * n + nl + pb] += 0.5
                    v += pod_lat[pa] + pod_lat[pb] + sc[2]
                if staged[a] or staged[b]:
                    v += sc[3]
                if v > tree_lat:
                    tree_lat = v
        for i in range(n):
            # intra-node chain: k−1 edges carry S each way (reduce up, broadcast down); an
            # interior GPU sends 2S through its one NVLink/PCIe port, an end GPU S
            chain = max(k[i] - 1, 0.0)
            coef[TREE, i] = 2 * chain + staged[i] * 0.5 * deg[i]
            edges[i] = chain if k[i] > 2 else 2.0
            coef[TREE, n + i] = 0.5 * deg[i]
        depth = np.floor(np.log2(n))
        valid[TREE] = True
        alpha0[TREE] = 2 * (depth * tree_lat + (kmax - 1) * intra_max)
        steps[TREE] = 2 * (depth + kmax - 1)
        beta[TREE] = _beta(coef[TREE], edges, ring_Bps, intra_cap, nic_usable, leaf_cap, pod_cap, sc) / sc[7]
    return valid, alpha0, steps, beta, coef


NODE_ATTR_COLUMNS = ("node_type", "intra_latency_s", "nic_Bps", "nic_count", "gpus_max", "gpudirect")


def node_attributes(topo) -> np.ndarray:
    """Per-node attributes packed in one float64[N, 6] matrix (one numba argument, not six)."""
    return np.column_stack([topo.node_type, topo.node_intra_latency_s, topo.node_nic_Bps,
                            topo.node_nic_count, topo.node_gpus_max, topo.node_gpudirect]).astype(np.float64)


@njit(cache=True, no_cfunc_wrapper=True)
def _gather_and_cost(op, nodes, counts, leaf_rank, pod_rank, leaves, pods, node_attr, ring_table, cap, lat,
                     n_nodes, n_leaves, sc, proto):
    """Gather a shape's per-node / per-leaf / per-pod arrays from the topology, cost every
    algorithm, and expand to (algorithm × protocol) α and β.

    proto rows: [bandwidth factor, per-step latency]; sc[9] = base latency, sc[10] = α_intra.
    Returns (valid[5], alpha[5, 3], beta[5, 3], coef[5, K]).
    """
    n = nodes.shape[0]
    k = np.empty(n)
    ring = np.empty(n)
    icap = np.empty(n)
    ilat = np.empty(n)
    nic = np.empty(n)
    nlat = np.empty(n)
    staged = np.empty(n, np.bool_)
    for i in range(n):
        nd = nodes[i]
        k[i] = counts[i]
        ring[i] = ring_table[int(node_attr[nd, 0]), counts[i]]
        icap[i] = cap[nd]
        ilat[i] = node_attr[nd, 1] + sc[10]
        c = node_attr[nd, 3]
        # np.rint, not np.round: equal for every float64 (half to even), without numba's
        # round(x, ndigits) helpers (0.25 s of a first run's compile)
        rails = min(max(1.0, np.rint(c * counts[i] / node_attr[nd, 4])), c)
        nic[i] = node_attr[nd, 2] * rails / c
        nlat[i] = lat[n_nodes + nd]
        staged[i] = node_attr[nd, 5] == 0.0
    lcap = np.empty(leaves.shape[0])
    llat = np.empty(leaves.shape[0])
    for j in range(leaves.shape[0]):
        lcap[j] = cap[2 * n_nodes + leaves[j]]
        llat[j] = lat[2 * n_nodes + leaves[j]]
    pcap = np.empty(pods.shape[0])
    plat = np.empty(pods.shape[0])
    for j in range(pods.shape[0]):
        pcap[j] = cap[2 * n_nodes + n_leaves + pods[j]]
        plat[j] = lat[2 * n_nodes + n_leaves + pods[j]]
    valid, alpha0, steps, beta0, coef = _shape_costs(op, k, ring, icap, ilat, nic, nlat, staged, leaf_rank,
                                                     pod_rank, lcap, llat, pcap, plat, sc)
    npr = proto.shape[0]
    alpha = np.zeros((5, npr))
    beta = np.zeros((5, npr))
    for a in range(5):
        if valid[a] and a != NONE:
            for q in range(npr):
                alpha[a, q] = sc[9] + alpha0[a] + steps[a] * proto[q, 1]
                beta[a, q] = beta0[a] / proto[q, 0]
    return valid, alpha, beta, coef


# ----------------------------------------------------------------------------- python side
def scalar_params(params: CommParams) -> np.ndarray:
    return np.array([params.alpha_net_s, params.alpha_spine_s, params.alpha_core_s,
                     params.host_staging_latency_s, params.beta_efficiency_intra, params.beta_efficiency_net,
                     params.ring_efficiency, params.tree_efficiency, params.hierarchical_efficiency,
                     params.base_latency_s, params.alpha_intra_s])


def protocol_array(params: CommParams) -> np.ndarray:
    """rows LL, LL128, Simple: [bandwidth factor, per-step latency]."""
    return np.array(params.protocol_table(), dtype=np.float64)


def algorithm_costs(topo, shape: Shape, op: str, node_attr: np.ndarray, ring_Bps_table: np.ndarray,
                    scalars: np.ndarray, proto: np.ndarray):
    """(names, alpha[A, 3], beta[A, 3], coef[A, K]) of the algorithms applicable to `op`."""
    valid, alpha, beta, coef = _gather_and_cost(
        OP_CODE[op], shape.nodes, shape.counts, shape.leaf_rank, shape.pod_rank, shape.leaves, shape.pods,
        node_attr, ring_Bps_table, topo.link_capacity_Bps, topo.link_latency_s, topo.num_nodes,
        topo.num_leaves, scalars, proto)
    idx = np.flatnonzero(valid)
    return tuple(ALGO_NAMES[i] for i in idx), alpha[idx], beta[idx], coef[idx]


__all__ = ["ALGO_NAMES", "OPS", "algorithm_costs", "node_attributes", "protocol_array", "scalar_params"]
