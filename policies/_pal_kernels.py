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
keeps (nodes ascending). The GPUs are counted per (bin, type, node) in one pass in GPU order,
and the pool mask `take_gpus` reads is set on the chosen nodes only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies._kernels import consolidate_nodes, take_gpus


@njit(cache=True)
def lxv_candidates(avail, bins, types, typed, pm, gpu_type, gpu_local, type_nodes, type_leaf,
                   node_first_gpu, node_num_gpus, leaf_pod, num_leaves, num_pods, demand):
    """(gpus[k, demand] int32, max PM[k]) of the distinct candidates in search order (bin,
    then type; a placement found again at a later bin is kept at its first).

    `bins[g]` is GPU g's variability bin (0 = best); `types[i]` is the GPU type of column i (-1: any, `typed` False); row r of `type_nodes` /
    `type_leaf` the nodes holding GPU type r (ascending, padded; row 0: every node when
    untyped) and their leaves, `gpu_local[g]` the position of g's node in its type's row."""
    T = types.shape[0]
    W = type_nodes.shape[1]
    num_bins = 0
    for g in range(bins.shape[0]):
        num_bins = max(num_bins, bins[g] + 1)
    maxt = 0
    for i in range(T):
        maxt = max(maxt, types[i])
    tcol = np.full(maxt + 1, -1, np.int64)  # GPU type → column (-1: not searched)
    row = np.zeros(T, np.int64)  # column → row of the type tables
    for i in range(T):
        if types[i] >= 0:
            tcol[types[i]] = i
            row[i] = types[i]
    # usable GPUs per (bin, column, node of the column's type), in one pass in GPU order
    cnt = np.zeros((num_bins, T, W), np.int64)
    grow = np.zeros((num_bins, T), np.int64)
    for g in range(avail.shape[0]):
        if avail[g]:
            c = 0
            if typed:
                c = tcol[gpu_type[g]] if gpu_type[g] <= maxt else -1
            if c >= 0:
                cnt[bins[g], c, gpu_local[g]] += 1
                grow[bins[g], c] += 1
    # the pool (usable, bin ≤ b) is read by `take_gpus` on the chosen nodes only: it is set
    # there, for the bin at hand, instead of grown over every GPU bin by bin
    pool = np.zeros(avail.shape[0], np.bool_)
    size = np.zeros(T, np.int64)
    free = np.zeros((T, W), np.int64)  # usable GPUs of bins ≤ b per (column, node of its type)
    out = np.empty((num_bins * T, demand), np.int32)
    ot = np.empty(num_bins * T, np.int64)  # column of each candidate (the duplicate check)
    opm = np.empty(num_bins * T, np.float64)
    k = 0
    for b in range(num_bins):
        for i in range(T):
            if grow[b, i] == 0:  # bin b adds nothing of this type: the placement found before
                continue
            size[i] += grow[b, i]
            for n in range(W):
                free[i, n] += cnt[b, i, n]
            if size[i] < demand:
                continue
            r = row[i]
            local, counts = consolidate_nodes(free[i], demand, type_leaf[r], leaf_pod, num_leaves, num_pods)
            if local.shape[0] == 0:
                continue
            nodes = np.empty(local.shape[0], np.int64)
            for x in range(local.shape[0]):
                n = type_nodes[r, local[x]]
                nodes[x] = n
                for g in range(node_first_gpu[n], node_first_gpu[n] + node_num_gpus[n]):
                    pool[g] = avail[g] and bins[g] <= b
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
            ot[k] = i
            opm[k] = m
            k += 1
    return out[:k], opm[:k]
