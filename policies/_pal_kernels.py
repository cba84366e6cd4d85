"""PAL's L×V candidate search in one numba call (`policies.pal.lxv_place` scores them).

For each variability bin b (best first) and each allowed GPU type, the consolidated
placement among the usable GPUs of bins ≤ b — `_kernels.consolidate_gpus`, the kernel
`placement.place` runs, taken apart: its per-node free counts are kept per type and grown bin
by bin instead of recounted over every GPU, then the same `consolidate_nodes` and `take_gpus`
— searched only when bin b adds usable GPUs of that type (otherwise the pool, hence the
placement, is the one already found) and the pool holds the demand. One dispatch per job
instead of one Python placement call per (bin, type).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies._kernels import consolidate_nodes, take_gpus


@njit(cache=True)
def lxv_candidates(avail, bins, num_bins, types, typed, pm, gpu_node, gpu_type, node_first_gpu, node_num_gpus,
                   node_leaf, leaf_pod, num_leaves, num_pods, demand):
    """(gpus[k, demand] int32, bin[k], type index[k], max PM[k]) of the distinct candidates in
    search order (bin, then type; a placement found again at a later bin is kept at its first).
    `types[i]` is the GPU type of column i (-1: any, `typed` False)."""
    G = avail.shape[0]
    T = types.shape[0]
    # each usable GPU's column (the i with types[i] == its type; 0 when untyped; -1: none),
    # and the usable GPUs bucketed by bin (one pass each, instead of a pass over every GPU per
    # bin and a scan of the columns per GPU)
    maxt = 0
    for i in range(T):
        maxt = max(maxt, types[i])
    tcol = np.full(maxt + 1, -1, np.int64)
    for i in range(T):
        if types[i] >= 0:
            tcol[types[i]] = i
    col = np.full(G, -1, np.int64)
    per_bin = np.zeros(num_bins + 1, np.int64)
    grow = np.zeros((num_bins, T), np.int64)
    for g in range(G):
        if avail[g]:
            per_bin[bins[g] + 1] += 1
            if not typed:
                col[g] = 0
            elif gpu_type[g] <= maxt:
                col[g] = tcol[gpu_type[g]]
            if col[g] >= 0:
                grow[bins[g], col[g]] += 1
    for b in range(num_bins):
        per_bin[b + 1] += per_bin[b]
    order = np.empty(per_bin[num_bins], np.int64)
    fill = per_bin[:num_bins].copy()
    for g in range(G):
        if avail[g]:
            order[fill[bins[g]]] = g
            fill[bins[g]] += 1
    pool = np.zeros(G, np.bool_)
    size = np.zeros(T, np.int64)
    free = np.zeros((T, node_num_gpus.shape[0]), np.int64)  # usable GPUs per (type column, node)
    out = np.empty((num_bins * T, demand), np.int32)
    ob = np.empty(num_bins * T, np.int64)
    ot = np.empty(num_bins * T, np.int64)
    opm = np.empty(num_bins * T, np.float64)
    k = 0
    for b in range(num_bins):
        for q in range(per_bin[b], per_bin[b + 1]):
            g = order[q]
            pool[g] = True
            if col[g] >= 0:
                free[col[g], gpu_node[g]] += 1
        for i in range(T):
            size[i] += grow[b, i]
            if grow[b, i] == 0 or size[i] < demand:
                continue
            nodes, counts = consolidate_nodes(free[i], demand, node_leaf, leaf_pod, num_leaves, num_pods)
            if nodes.shape[0] == 0:
                continue
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
