"""PAL's L×V candidate search in one numba call (`policies.pal.lxv_place` scores them).

For each variability bin b (best first) and each allowed GPU type, the consolidated
placement among the usable GPUs of bins ≤ b — `_kernels.consolidate_gpus`, the kernel
`placement.place` runs, taken apart: its per-node free counts are kept per type and grown bin
by bin instead of recounted over every GPU, then the same `consolidate_nodes` and `take_gpus`
— searched only when bin b adds usable GPUs of that type (otherwise the pool, hence the
placement, is the one already found) and the pool holds the demand. One dispatch per job
instead of one Python placement call per (bin, type).

The per-type free counts are kept over the nodes that hold that type only (`type_nodes`, built
once per cluster by `policies.pal.lxv_tables`), not over every node of the cluster: on a
cluster of T types of equal size each `consolidate_nodes` scans 1/T of the nodes. The
placement is the same: a node without GPUs of the type has no free GPU of it, and
`consolidate_nodes` skips such nodes and breaks its ties by node order, which the compaction
keeps (nodes ascending). The GPUs are visited bin by bin from a per-class order built once per
run (`bin_order`) instead of being bucketed by bin on every call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies._kernels import consolidate_nodes, take_gpus


@njit(cache=True)
def lxv_candidates(avail, bin_gpus, bin_off, types, typed, pm, gpu_type, gpu_local, tn_nodes, tn_leaf,
                   node_first_gpu, node_num_gpus, leaf_pod, num_leaves, num_pods, demand):
    """(gpus[k, demand] int32, bin[k], type index[k], max PM[k]) of the distinct candidates in
    search order (bin, then type; a placement found again at a later bin is kept at its first).

    `types[i]` is the GPU type of column i (-1: any, `typed` False); `bin_gpus[bin_off[b]:
    bin_off[b + 1]]` the GPUs of bin b; row r of `tn_nodes` / `tn_leaf` the nodes holding GPU
    type r (ascending; row 0: every node when untyped) and their leaves, `gpu_local[g]` the
    index of g's node in its type's row."""
    T = types.shape[0]
    num_bins = bin_off.shape[0] - 1
    maxt = 0
    for i in range(T):
        maxt = max(maxt, types[i])
    tcol = np.full(maxt + 1, -1, np.int64)  # GPU type → column (-1: not searched)
    row = np.zeros(T, np.int64)  # column → row of the type tables
    for i in range(T):
        if types[i] >= 0:
            tcol[types[i]] = i
            row[i] = types[i]
    pool = np.zeros(avail.shape[0], np.bool_)
    size = np.zeros(T, np.int64)
    grew = np.full(T, -1, np.int64)  # the last bin that added usable GPUs of the column
    free = np.zeros((T, tn_nodes.shape[1]), np.int64)  # usable GPUs per (column, node of its type)
    out = np.empty((num_bins * T, demand), np.int32)
    ob = np.empty(num_bins * T, np.int64)
    ot = np.empty(num_bins * T, np.int64)
    opm = np.empty(num_bins * T, np.float64)
    k = 0
    for b in range(num_bins):
        for q in range(bin_off[b], bin_off[b + 1]):
            g = bin_gpus[q]
            if not avail[g]:
                continue
            pool[g] = True
            c = 0
            if typed:
                c = tcol[gpu_type[g]] if gpu_type[g] <= maxt else -1
            if c >= 0:
                free[c, gpu_local[g]] += 1
                size[c] += 1
                grew[c] = b
        for i in range(T):
            if grew[i] != b or size[i] < demand:
                continue
            r = row[i]
            local, counts = consolidate_nodes(free[i], demand, tn_leaf[r], leaf_pod, num_leaves, num_pods)
            if local.shape[0] == 0:
                continue
            nodes = np.empty(local.shape[0], np.int64)
            for x in range(local.shape[0]):
                nodes[x] = tn_nodes[r, local[x]]
            gp = take_gpus(pool, gpu_type, types[i], node_first_gpu, node_num_gpus, nodes, counts)
            dup = False  # the same GPUs found at an earlier bin (same type): counted there
            for q in range(k):
                if ot[q] == i:
                    same = True
                    for x in range(demand):
                        if out[q, x] != gp[x]:
                            same = False
                            break
                    if same:
                        dup = True
                        break
            if dup:
                continue
            m = 0.0
            for x in range(demand):
                out[k, x] = gp[x]
                m = max(m, pm[gp[x]])
            ob[k] = b
            ot[k] = i
            opm[k] = m
            k += 1
    return out[:k], ob[:k], ot[:k], opm[:k]
