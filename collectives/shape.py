"""Placement → shape: which nodes, leaves and pods a GPU set touches, and its cache signature.

A collective's cost depends only on the placement's *shape*: how many GPUs sit on each node, how
the nodes group under leaves and pods, the node types, and the capacity classes of the uplinks —
not on which particular node or leaf. `placement_shape` computes it in one numba pass (sort,
validate, run-length encode) and returns the signature as an int64 array whose bytes key the
cache. Nodes are taken in id order, which is pod-major, leaf-major (ids are assigned that way).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cosim.errors import InputError
from cosim.nsort import sorted_copy

OK, OUT_OF_RANGE, DUPLICATE, EMPTY = 0, 1, 2, 3


@njit(cache=True, no_cfunc_wrapper=True)
def _placement_shape(gpus, gpu_node, node_leaf, leaf_pod, node_type, leaf_class, pod_class):
    """Return (status, bad_gpu, nodes, counts, leaf_rank, pod_rank, leaves, pods, signature, link ids).

    Link ids follow the shape's local layout: n intra, n NIC, one per used leaf, one per used pod.
    """
    m = gpus.shape[0]
    g_total = gpu_node.shape[0]
    empty = np.empty(0, np.int64)
    if m == 0:
        return EMPTY, -1, empty, empty, empty, empty, empty, empty, empty, empty.astype(np.int32)
    s = gpus.astype(np.int64)   # a copy: the caller's array is never reordered
    for i in range(1, m):        # engines pass sorted placements: skip the O(m log m) sort then
        if s[i] < s[i - 1]:
            s = sorted_copy(s)  # cosim.nsort: numba's quicksort costs ≈ 1 s more to compile
            break
    for i in range(m):
        if s[i] < 0 or s[i] >= g_total:
            return OUT_OF_RANGE, s[i], empty, empty, empty, empty, empty, empty, empty, empty.astype(np.int32)
        if i > 0 and s[i] == s[i - 1]:
            return DUPLICATE, s[i], empty, empty, empty, empty, empty, empty, empty, empty.astype(np.int32)
    nodes = np.empty(m, np.int64)
    counts = np.zeros(m, np.int64)
    n = 0
    for i in range(m):
        nd = gpu_node[s[i]]
        if n == 0 or nodes[n - 1] != nd:
            nodes[n] = nd
            n += 1
        counts[n - 1] += 1
    nodes = nodes[:n]
    counts = counts[:n]
    leaf_rank = np.empty(n, np.int64)
    pod_rank = np.empty(n, np.int64)
    leaves = np.empty(n, np.int64)
    pods = np.empty(n, np.int64)
    nl = 0
    npd = 0
    for i in range(n):
        lf = node_leaf[nodes[i]]
        if nl == 0 or leaves[nl - 1] != lf:
            leaves[nl] = lf
            nl += 1
            pd = leaf_pod[lf]
            if npd == 0 or pods[npd - 1] != pd:
                pods[npd] = pd
                npd += 1
        leaf_rank[i] = nl - 1
        pod_rank[i] = npd - 1
    sig = np.empty(1 + 6 * n, np.int64)
    sig[0] = n
    for i in range(n):
        lf = node_leaf[nodes[i]]
        sig[1 + 6 * i] = leaf_rank[i]
        sig[2 + 6 * i] = pod_rank[i]
        sig[3 + 6 * i] = counts[i]
        sig[4 + 6 * i] = node_type[nodes[i]]
        sig[5 + 6 * i] = leaf_class[lf]
        sig[6 + 6 * i] = pod_class[leaf_pod[lf]]
    N = node_leaf.shape[0]
    L = leaf_pod.shape[0]
    ids = np.empty(2 * n + nl + npd, np.int32)
    for i in range(n):
        ids[i] = nodes[i]
        ids[n + i] = N + nodes[i]
    for j in range(nl):
        ids[2 * n + j] = 2 * N + leaves[j]
    for j in range(npd):
        ids[2 * n + nl + j] = 2 * N + L + pods[j]
    return OK, -1, nodes, counts, leaf_rank, pod_rank, leaves[:nl], pods[:npd], sig, ids


class Shape:
    """The placement's nodes (id order), GPUs per node, and leaf/pod membership."""

    __slots__ = ("nodes", "counts", "leaf_rank", "pod_rank", "leaves", "pods", "key", "link_ids")

    def __init__(self, nodes, counts, leaf_rank, pod_rank, leaves, pods, key, link_ids):
        self.nodes, self.counts, self.leaf_rank, self.pod_rank = nodes, counts, leaf_rank, pod_rank
        self.leaves, self.pods, self.key, self.link_ids = leaves, pods, key, link_ids

    @property
    def num_gpus(self) -> int:
        return int(self.counts.sum())


def placement_shape(topo, gpus: np.ndarray) -> Shape:
    """Validate a GPU id array against `topo` and compute its shape (errors name the GPU)."""
    arr = np.ascontiguousarray(gpus)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InputError.at(field="gpus", expected="a 1-D array of integer GPU ids", got=getattr(arr, "dtype", arr))
    if arr.flags.writeable:  # one kernel signature for every caller: numba types read-only arrays apart
        arr = arr.view()
        arr.flags.writeable = False
    status, bad, nodes, counts, lr, pr, leaves, pods, sig, ids = _placement_shape(
        arr, topo.gpu_node, topo.node_leaf, topo.leaf_pod, topo.node_type, topo.leaf_class, topo.pod_class)
    if status == OUT_OF_RANGE:
        raise InputError.at(field="gpus", expected=f"GPU ids in 0..{topo.num_gpus - 1} "
                            f"(cluster '{topo.spec.name}' has {topo.num_gpus} GPUs)", got=int(bad))
    if status == DUPLICATE:
        raise InputError.at(field="gpus", expected="each GPU at most once", got=f"GPU {int(bad)} named twice")
    if status == EMPTY:
        raise InputError.at(field="gpus", expected="at least one GPU", got="[]")
    return Shape(nodes, counts, lr, pr, leaves, pods, sig.tobytes(), ids)
