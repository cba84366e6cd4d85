"""numba kernels behind `policies.placement` (one call per placement attempt, O(G + N log N)).

Everything works on a per-node count `f[n]` of usable GPUs (available and of the wanted
type), so the topology enters only through `node_leaf`/`leaf_pod` and the contiguous GPU
ranges `node_first_gpu[n] .. + node_num_gpus[n]` that `simcore.api.ClusterArrays` promises.
A selection is a pair (nodes, counts); `take_gpus` turns it into GPU ids.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cosim.nsort import argsort_stable, sorted_copy

_NONE = 4611686018427387904  # 2**62: 'impossible' (a plain int, so numba inlines it)


@njit(cache=True, no_cfunc_wrapper=True)
def _eight_per_node(n_gpus, node_first_gpu, node_num_gpus):
    """Whether node n holds exactly GPUs 8n .. 8n+7 for every n (DGX-style fabrics)."""
    if n_gpus != 8 * node_first_gpu.shape[0]:
        return False
    for n in range(node_first_gpu.shape[0]):
        if node_first_gpu[n] != 8 * n or node_num_gpus[n] != 8:
            return False
    return True


@njit(cache=True, no_cfunc_wrapper=True)
def node_free_counts(avail, gpu_node, gpu_type, want_type, node_first_gpu, node_num_gpus):
    """Usable GPUs per node: `avail[g]` and (any type or `gpu_type[g] == want_type`).

    For any type on a fabric of 8-GPU nodes each node's flags are one 8-byte word whose bytes
    (0 or 1) one multiplication sums into its top byte: a word per node instead of a scattered
    increment per GPU (the same counts, several times faster)."""
    n_nodes = node_first_gpu.shape[0]
    f = np.zeros(n_nodes, np.int64)
    if want_type < 0 and _eight_per_node(avail.shape[0], node_first_gpu, node_num_gpus):
        words = avail.view(np.uint64)
        ones = np.uint64(0x0101010101010101)
        top = np.uint64(56)
        for n in range(n_nodes):
            f[n] = (words[n] * ones) >> top
        return f
    for g in range(avail.shape[0]):
        if avail[g] and (want_type < 0 or gpu_type[g] == want_type):
            f[gpu_node[g]] += 1
    return f


@njit(cache=True, no_cfunc_wrapper=True)
def type_counts(avail, gpu_type, num_types):
    c = np.zeros(num_types, np.int64)
    for g in range(avail.shape[0]):
        if avail[g]:
            c[gpu_type[g]] += 1
    return c


@njit(cache=True, no_cfunc_wrapper=True)
def take_gpus(avail, gpu_type, want_type, node_first_gpu, node_num_gpus, nodes, counts):
    """The lowest-numbered usable GPUs: `counts[i]` of them on node `nodes[i]`; sorted ids."""
    total = 0
    for i in range(counts.shape[0]):
        total += counts[i]
    out = np.empty(total, np.int64)  # sorted as int64: one `sorted_copy` for every kernel here
    k = 0
    for i in range(nodes.shape[0]):
        n = nodes[i]
        c = counts[i]
        s = node_first_gpu[n]
        for g in range(s, s + node_num_gpus[n]):
            if c == 0:
                break
            if avail[g] and (want_type < 0 or gpu_type[g] == want_type):
                out[k] = g
                k += 1
                c -= 1
    s = sorted_copy(out)
    ids = np.empty(total, np.int32)
    for i in range(total):
        ids[i] = s[i]
    return ids


@njit(cache=True, no_cfunc_wrapper=True)
def _best_fit_node(f, demand):
    """Node with the fewest usable GPUs that still holds `demand` (lowest index on ties), or -1.
    Two passes: the fewest such GPUs (a branch-free minimum, which vectorises), then the first
    node with that many (stopping there)."""
    none = np.iinfo(np.int64).max
    m = none
    for n in range(f.shape[0]):
        v = f[n]
        m = min(m, v if v >= demand else none)
    if m == none:
        return -1
    for n in range(f.shape[0]):
        if f[n] == m:
            return n
    return -1


@njit(cache=True, no_cfunc_wrapper=True)
def _max_count(f):
    """The largest per-node count (0 when none is positive)."""
    maxf = 0
    for n in range(f.shape[0]):
        if f[n] > maxf:
            maxf = f[n]
    return maxf


@njit(cache=True, no_cfunc_wrapper=True)
def _fewest_from_counts(hist, demand):
    """Fewest nodes, fullest first, whose usable GPUs add up to `demand`, from `hist[v]` = the
    number of nodes with v usable GPUs (`_NONE` if impossible): the nodes with v GPUs are
    taken together, so a count needs no sort."""
    acc = 0
    nodes = 0
    for v in range(hist.shape[0] - 1, 0, -1):
        c = hist[v]
        if c == 0:
            continue
        if acc + c * v >= demand:
            return nodes + (demand - acc + v - 1) // v
        acc += c * v
        nodes += c
    return _NONE


@njit(cache=True, no_cfunc_wrapper=True)
def _min_nodes(f, demand):
    """Fewest nodes whose usable GPUs add up to `demand` (`_NONE` if impossible)."""
    hist = np.zeros(_max_count(f) + 1, np.int64)
    for n in range(f.shape[0]):
        if f[n] > 0:
            hist[f[n]] += 1
    return _fewest_from_counts(hist, demand)


@njit(cache=True, no_cfunc_wrapper=True)
def _group_nodes_needed(f, group_of, num_groups, demand):
    """Per group (leaf or pod): fewest of its nodes that hold `demand`, and its usable total
    (from each group's count of nodes per number of usable GPUs)."""
    width = _max_count(f) + 1
    hist = np.zeros((num_groups, width), np.int64)
    total = np.zeros(num_groups, np.int64)
    for n in range(f.shape[0]):
        if f[n] > 0:
            hist[group_of[n], f[n]] += 1
            total[group_of[n]] += f[n]
    needed = np.full(num_groups, _NONE, np.int64)
    for grp in range(num_groups):
        if total[grp] >= demand:
            needed[grp] = _fewest_from_counts(hist[grp], demand)
    return needed, total


@njit(cache=True, no_cfunc_wrapper=True)
def _select(f, member, demand, k, node_leaf, leaf_total):
    """Pick exactly `k` nodes among `member` nodes holding `demand` GPUs.

    The k-1 fullest nodes (ties: fuller leaf, then lower index) are taken whole; the last node
    is the best fit for the remainder, preferring a leaf already used, so the placement spans
    the fewest leaves this greedy can find and leaves large holes intact elsewhere. The k-1
    come from one pass keeping the smallest keys seen, in order (the keys are distinct: they
    end in the node id), so the candidates are never sorted whole; the last node's rule is a
    total order (used leaf, fewer GPUs, lower index), so the pass over the others finds it in
    any order.
    """
    n_nodes = f.shape[0]
    maxf = 0
    maxl = 0
    for n in range(n_nodes):
        if member[n] and f[n] > 0:
            if f[n] > maxf:
                maxf = f[n]
            if leaf_total[node_leaf[n]] > maxl:
                maxl = leaf_total[node_leaf[n]]
    top = k - 1
    best_keys = np.empty(max(top, 1), np.int64)  # the smallest keys so far, ascending
    best_nodes = np.empty(max(top, 1), np.int64)
    held = 0
    for n in range(n_nodes):
        if not (member[n] and f[n] > 0) or top == 0:
            continue
        key = ((maxf - f[n]) * (maxl + 1) + (maxl - leaf_total[node_leaf[n]])) * (n_nodes + 1) + n
        if held == top and key >= best_keys[top - 1]:
            continue
        i = held if held < top else top - 1
        while i > 0 and best_keys[i - 1] > key:
            if i < top:
                best_keys[i] = best_keys[i - 1]
                best_nodes[i] = best_nodes[i - 1]
            i -= 1
        best_keys[i] = key
        best_nodes[i] = n
        if held < top:
            held += 1
    nodes = np.empty(k, np.int64)
    counts = np.empty(k, np.int64)
    used_leaf = np.zeros(leaf_total.shape[0], np.bool_)
    taken = np.zeros(n_nodes, np.bool_)
    acc = 0
    for i in range(top):
        n = best_nodes[i]
        nodes[i] = n
        counts[i] = f[n]
        acc += f[n]
        used_leaf[node_leaf[n]] = True
        taken[n] = True
    rem = demand - acc
    best = -1
    for n in range(n_nodes):
        if not (member[n] and f[n] > 0) or taken[n] or f[n] < rem:
            continue
        if best < 0:
            best = n
            continue
        bu = used_leaf[node_leaf[best]]
        nu = used_leaf[node_leaf[n]]
        if (nu and not bu) or (nu == bu and (f[n] < f[best] or (f[n] == f[best] and n < best))):
            best = n
    nodes[k - 1] = best
    counts[k - 1] = rem
    return nodes, counts


@njit(cache=True, no_cfunc_wrapper=True)
def consolidate_nodes(f, demand, node_leaf, leaf_pod, num_leaves, num_pods):
    """Fewest nodes, then fewest leaves, then fewest pods; best fit among equals.

    Returns (nodes, counts); empty arrays when the usable GPUs cannot hold `demand`.
    Exact for one-node and one-leaf fits; across leaves it is the greedy of `_select`.
    """
    empty = np.empty(0, np.int64)
    total = 0
    for n in range(f.shape[0]):
        total += f[n]
    if demand <= 0 or total < demand:
        return empty, empty
    bn = _best_fit_node(f, demand)
    if bn >= 0:
        return np.array([bn], np.int64), np.array([demand], np.int64)
    k = _min_nodes(f, demand)
    node_leaf64 = np.empty(f.shape[0], np.int64)  # int64 as node_pod: one `_group_nodes_needed` to compile
    for n in range(f.shape[0]):
        node_leaf64[n] = node_leaf[n]
    leaf_needed, leaf_total = _group_nodes_needed(f, node_leaf64, num_leaves, demand)
    best = -1
    for lf in range(num_leaves):
        if leaf_needed[lf] == k and (best < 0 or leaf_total[lf] < leaf_total[best]):
            best = lf
    member = np.zeros(f.shape[0], np.bool_)
    if best >= 0:
        for n in range(f.shape[0]):
            member[n] = node_leaf[n] == best
        return _select(f, member, demand, k, node_leaf, leaf_total)
    node_pod = np.empty(f.shape[0], np.int64)
    for n in range(f.shape[0]):
        node_pod[n] = leaf_pod[node_leaf[n]]
    pod_needed, pod_total = _group_nodes_needed(f, node_pod, num_pods, demand)
    bp = -1
    for p in range(num_pods):
        if pod_needed[p] == k and (bp < 0 or pod_total[p] < pod_total[bp]):
            bp = p
    for n in range(f.shape[0]):
        member[n] = bp < 0 or node_pod[n] == bp
    return _select(f, member, demand, k, node_leaf, leaf_total)


@njit(cache=True, no_cfunc_wrapper=True)
def spread_nodes(f, demand):
    """One GPU per node per round, fullest nodes first: the widest placement (worst fit)."""
    empty = np.empty(0, np.int64)
    total = 0
    for n in range(f.shape[0]):
        total += f[n]
    if demand <= 0 or total < demand:
        return empty, empty
    order = argsort_stable(-f)
    counts = np.zeros(f.shape[0], np.int64)
    left = demand
    r = 0
    while left > 0:
        for i in range(order.shape[0]):
            n = order[i]
            if f[n] > r:
                counts[n] += 1
                left -= 1
                if left == 0:
                    break
        r += 1
    nodes = np.flatnonzero(counts > 0)
    return nodes.astype(np.int64), counts[nodes]


@njit(cache=True, no_cfunc_wrapper=True)
def _mode_of_node(gpu_value, s, e):
    """The most frequent non-negative value of gpu_value[s:e] (smaller on ties), else -1."""
    best = -1
    best_cnt = 0
    for g in range(s, e):
        v = gpu_value[g]
        if v < 0:
            continue
        cnt = 0
        for h in range(s, e):
            if gpu_value[h] == v:
                cnt += 1
        if cnt > best_cnt or (cnt == best_cnt and v < best):
            best = v
            best_cnt = cnt
    return best


@njit(cache=True, no_cfunc_wrapper=True)
def node_mode(gpu_value, node_first_gpu, node_num_gpus):
    """Per node, the most frequent non-negative `gpu_value` on its GPUs (smaller on ties), else -1."""
    n_nodes = node_first_gpu.shape[0]
    out = np.full(n_nodes, -1, np.int64)
    for n in range(n_nodes):
        out[n] = _mode_of_node(gpu_value, node_first_gpu[n], node_first_gpu[n] + node_num_gpus[n])
    return out


@njit(cache=True, no_cfunc_wrapper=True)
def node_mode_into(gpu_value, node_first_gpu, node_num_gpus, nodes, out):
    """`node_mode` recomputed only for `nodes`, written into `out`."""
    for i in range(nodes.shape[0]):
        n = nodes[i]
        out[n] = _mode_of_node(gpu_value, node_first_gpu[n], node_first_gpu[n] + node_num_gpus[n])


@njit(cache=True, no_cfunc_wrapper=True)
def consolidate_gpus(avail, gpu_node, gpu_type, want_type, node_first_gpu, node_num_gpus, node_leaf, leaf_pod,
                     num_leaves, num_pods, demand):
    """`consolidate_nodes` on the usable GPUs and `take_gpus` of the result, in one call
    (the common placement of every policy: one dispatch instead of three). Empty if none."""
    f = node_free_counts(avail, gpu_node, gpu_type, want_type, node_first_gpu, node_num_gpus)
    nodes, counts = consolidate_nodes(f, demand, node_leaf, leaf_pod, num_leaves, num_pods)
    if nodes.shape[0] == 0:
        return np.empty(0, np.int32)
    return take_gpus(avail, gpu_type, want_type, node_first_gpu, node_num_gpus, nodes, counts)
