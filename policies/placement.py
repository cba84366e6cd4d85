"""Placement helpers shared by every policy: which GPUs a job of `demand` GPUs gets.

All helpers take the static topology in `simcore.api.ClusterArrays` and a boolean mask
`avail[G]` of the GPUs the caller may hand out now (the caller decides what is free: online,
unclaimed this round, not held by a job that keeps running). They return the chosen GPU
ids as a sorted int32 array, or None when the demand cannot be met.

Strategies (`STRATEGIES`):

- ``consolidate``: fewest nodes, then fewest leaves, then fewest pods; among equals the
  best fit (the node/leaf/pod with the least usable GPUs that still holds the job), so
  large holes stay whole for later large jobs. Exact when the job fits one node or one
  leaf; across leaves, the k−1 fullest nodes (ties: fuller leaf) plus the best-fit last node.
- ``topo``: topology-aware best fit. The smallest enclosing tier first (one node, else one
  leaf, else one pod, else the cluster), the best-fit unit of that tier, then consolidate
  inside it. Unlike ``consolidate`` it prefers one leaf with more nodes over fewer nodes
  spread across leaves (for jobs whose collectives suffer most at the leaf→spine tier).
- ``spread``: one GPU per node per round, fullest nodes first (load spreading).
- ``random``: uniformly random usable GPUs from a seeded `numpy.random.Generator`.
- ``most-free``: all usable GPUs of the node with the most, then of the next (ties: lower
  node index), until the demand is met: the Pollux OSDI'21 simulator's Tiresias/Optimus
  allocation (`Counter.most_common(1)` per step), which ignores leaves and pods.

Plus `affinity_fit` (Gandiva's per-demand machine affinity) and `span` (nodes, leaves, pods
a placement touches).

GPU types: a job with `gpu_type >= 0` gets only that type. A job that accepts any type
(`gpu_type = -1`) still gets a single type, because a synchronous data-parallel gang runs
at the pace of its slowest GPU; with several candidate types the placement with the
smallest span wins (ties: lower type index), or for ``spread``/``random`` the type with the
most usable GPUs. `accept(gpus) -> bool` lets a caller veto a candidate (e.g. memory fit
through the engine's what-if query); the next candidate type is then tried.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from policies import _kernels as K
from simcore.api import ClusterArrays

STRATEGIES = ("consolidate", "topo", "spread", "random", "most-free")
TIERS = ("node", "leaf", "pod", "cluster")

Accept = Callable[[np.ndarray], bool]


def _num_leaves(c: ClusterArrays) -> int:
    return int(c.leaf_pod.shape[0])


def _num_pods(c: ClusterArrays) -> int:
    return c.num_pods


def free_mask(c: ClusterArrays) -> np.ndarray:
    """GPUs that are online and unallocated (the default `avail`)."""
    return np.asarray(c.gpu_online, bool) & (np.asarray(c.gpu_owner) < 0)


def span(c: ClusterArrays, gpus: np.ndarray) -> tuple[int, int, int]:
    """(nodes, leaves, pods) touched by a placement."""
    g = np.asarray(gpus, np.int64)
    if g.size == 0:
        return (0, 0, 0)
    nodes = np.unique(c.gpu_node[g])
    leaves = np.unique(c.node_leaf[nodes])
    pods = np.unique(c.leaf_pod[leaves])
    return (int(nodes.size), int(leaves.size), int(pods.size))


def tier_of(c: ClusterArrays, gpus: np.ndarray) -> int:
    """Index into `TIERS` of the smallest unit holding the placement (0 = one node)."""
    n, lf, p = span(c, gpus)
    return 0 if n <= 1 else 1 if lf <= 1 else 2 if p <= 1 else 3


def _node_free(c: ClusterArrays, avail: np.ndarray, want_type: int) -> np.ndarray:
    return K.node_free_counts(avail, c.gpu_node, c.gpu_type, int(want_type), c.node_first_gpu, c.node_num_gpus)


def _take(c: ClusterArrays, avail, want_type, nodes, counts) -> np.ndarray | None:
    if nodes.size == 0:
        return None
    return K.take_gpus(avail, c.gpu_type, int(want_type), c.node_first_gpu, c.node_num_gpus, nodes, counts)


def _consolidate_f(c: ClusterArrays, f: np.ndarray, demand: int):
    return K.consolidate_nodes(f, int(demand), c.node_leaf, c.leaf_pod, _num_leaves(c), _num_pods(c))


def _topo_f(c: ClusterArrays, f: np.ndarray, demand: int):
    if f.size and f.max() >= demand:
        return _consolidate_f(c, f, demand)  # one node, best fit
    for group_of, num in ((c.node_leaf, _num_leaves(c)), (c.leaf_pod[c.node_leaf], _num_pods(c))):
        tot = np.bincount(group_of, weights=f, minlength=num)
        ok = np.flatnonzero(tot >= demand)
        if ok.size:
            unit = ok[np.argmin(tot[ok])]  # best fit: least usable GPUs, lowest index on ties
            return _consolidate_f(c, np.where(group_of == unit, f, 0), demand)
    return _consolidate_f(c, f, demand)


def _one_type(c, avail, demand, want_type, strategy, rng) -> np.ndarray | None:
    if strategy == "random":
        ok = avail if want_type < 0 else avail & (c.gpu_type == want_type)
        idx = np.flatnonzero(ok)
        if idx.size < demand:
            return None
        if rng is None:
            raise ValueError("random placement needs a seeded numpy Generator (rng=)")
        return np.sort(rng.choice(idx, size=demand, replace=False)).astype(np.int32)
    if strategy == "consolidate":
        g = K.consolidate_gpus(avail, c.gpu_node, c.gpu_type, int(want_type), c.node_first_gpu, c.node_num_gpus,
                               c.node_leaf, c.leaf_pod, _num_leaves(c), _num_pods(c), int(demand))
        return g if g.size else None
    f = _node_free(c, avail, want_type)
    if strategy == "topo":
        nodes, counts = _topo_f(c, f, demand)
    elif strategy == "spread":
        nodes, counts = K.spread_nodes(f, int(demand))
    elif strategy == "most-free":
        nodes, counts = _most_free_nodes(f, int(demand))
    else:
        raise ValueError(f"unknown placement strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    return _take(c, avail, want_type, nodes, counts)


def _most_free_nodes(f: np.ndarray, demand: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes by free GPUs, most first (stable: lower index on ties), each emptied in turn."""
    if demand <= 0 or int(f.sum()) < demand:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(-f, kind="stable")
    fo = f[order]
    take = np.minimum(fo, np.maximum(demand - (np.cumsum(fo) - fo), 0))
    keep = take > 0
    return order[keep].astype(np.int64, copy=False), take[keep].astype(np.int64, copy=False)


def place(
    c: ClusterArrays,
    avail: np.ndarray | None,
    demand: int,
    *,
    gpu_type: int = -1,
    strategy: str = "consolidate",
    rng: np.random.Generator | None = None,
    accept: Accept | None = None,
    max_tier: int | None = None,
) -> np.ndarray | None:
    """GPU ids for `demand` GPUs out of `avail` with `strategy`, or None.

    `max_tier` (index into `TIERS`) rejects placements wider than that tier (Tiresias'
    consolidation constraint). `accept` vetoes candidates (see the module docstring).
    """
    demand = int(demand)
    if demand <= 0:
        return None
    avail = free_mask(c) if avail is None else np.asarray(avail, bool)
    num_types = len(c.gpu_type_names)
    if num_types <= 1:  # one GPU type: the common fast path
        if gpu_type > 0 or np.count_nonzero(avail) < demand:
            return None
        g = _one_type(c, avail, demand, -1, strategy, rng)
        if g is None or (max_tier is not None and tier_of(c, g) > max_tier) or (accept is not None and not accept(g)):
            return None
        return g
    tc = K.type_counts(avail, c.gpu_type, num_types)
    if gpu_type >= 0:
        types = [int(gpu_type)] if gpu_type < num_types and tc[gpu_type] >= demand else []
    else:
        types = [int(t) for t in np.flatnonzero(tc >= demand)]
    if not types:
        return None
    if len(types) == 1:
        cands = [_one_type(c, avail, demand, types[0] if num_types > 1 else -1, strategy, rng)]
    elif strategy in ("spread", "random"):
        types.sort(key=lambda t: (-tc[t], t))
        cands = [_one_type(c, avail, demand, types[0], strategy, rng)]
        if accept is not None:  # only pay for further types when the first may be vetoed
            cands += [_one_type(c, avail, demand, t, strategy, rng) for t in types[1:]]
    else:
        found = [(_one_type(c, avail, demand, t, strategy, rng), t) for t in types]
        found = [(g, t) for g, t in found if g is not None]
        found.sort(key=lambda gt: (span(c, gt[0]), gt[1]))
        cands = [g for g, _ in found]
    for g in cands:
        if g is None:
            continue
        if max_tier is not None and tier_of(c, g) > max_tier:
            continue
        if accept is not None and not accept(g):
            continue
        return g
    return None


def consolidate(c, avail, demand, gpu_type=-1, **kw):
    """Fewest nodes → leaves → pods, best fit (see the module docstring)."""
    return place(c, avail, demand, gpu_type=gpu_type, strategy="consolidate", **kw)


def topo_best_fit(c, avail, demand, gpu_type=-1, **kw):
    """Smallest enclosing tier, best-fit unit, consolidated inside it."""
    return place(c, avail, demand, gpu_type=gpu_type, strategy="topo", **kw)


def spread(c, avail, demand, gpu_type=-1, **kw):
    """One GPU per node per round, fullest nodes first."""
    return place(c, avail, demand, gpu_type=gpu_type, strategy="spread", **kw)


def random_fit(c, avail, demand, gpu_type=-1, *, rng: np.random.Generator, **kw):
    """Uniformly random usable GPUs (seeded generator)."""
    return place(c, avail, demand, gpu_type=gpu_type, strategy="random", rng=rng, **kw)


def node_affinity(c: ClusterArrays, gpu_demand: np.ndarray) -> np.ndarray:
    """Per node, the GPU demand of the jobs it hosts (Gandiva's affinity), -1 if it hosts none.

    `gpu_demand[g]` is the GPU count of the job on GPU g (-1 if free). A node hosting jobs of
    different demands takes the demand holding most of its GPUs (smaller demand on ties).
    """
    return K.node_mode(np.asarray(gpu_demand, np.int64), c.node_first_gpu, c.node_num_gpus)


def update_node_affinity(c: ClusterArrays, gpu_demand: np.ndarray, affinity: np.ndarray, gpus: np.ndarray) -> None:
    """Recompute `affinity` (from `node_affinity`) in place for the nodes holding `gpus`."""
    nodes = np.unique(c.gpu_node[np.asarray(gpus, np.int64)]).astype(np.int64)
    K.node_mode_into(np.asarray(gpu_demand, np.int64), c.node_first_gpu, c.node_num_gpus, nodes, affinity)


def affinity_fit(
    c: ClusterArrays,
    avail: np.ndarray,
    demand: int,
    affinity: np.ndarray,
    gpu_type: int = -1,
    accept: Accept | None = None,
) -> np.ndarray | None:
    """One node for a job of `demand` GPUs, by Gandiva's per-demand machine affinity.

    Among nodes with room: first those already affine to this demand, then nodes hosting
    nothing (affinity -1), then any; within a class the node with the most usable GPUs
    (as in the Dally authors' Gandiva), lowest index on ties. None if no single node fits.
    """
    demand = int(demand)
    avail = np.asarray(avail, bool)
    types = [int(gpu_type)] if gpu_type >= 0 else [-1]
    if gpu_type < 0 and len(c.gpu_type_names) > 1:
        types = [int(t) for t in np.unique(c.gpu_type[avail])]
    best = None
    for t in types:
        f = _node_free(c, avail, t)
        ok = np.flatnonzero(f >= demand)
        if ok.size == 0:
            continue
        cls = np.where(affinity[ok] == demand, 0, np.where(affinity[ok] < 0, 1, 2))
        order = np.lexsort((ok, -f[ok], cls))
        for i in order:
            n = ok[i]
            key = (int(cls[i]), -int(f[n]), int(n), t)
            if best is not None and key >= best[0]:
                break
            g = _take(c, avail, t, np.array([n], np.int64), np.array([demand], np.int64))
            if accept is None or accept(g):
                best = (key, g)
                break
    return None if best is None else best[1]
