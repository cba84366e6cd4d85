"""`consolidate_nodes` across several nodes (the per-node counts of usable GPUs on random
fabrics): a valid selection of the fewest nodes, inside one leaf whenever a leaf can hold the
demand on that many nodes, its first nodes the fullest, taken whole."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policies._kernels import consolidate_nodes


@st.composite
def fabrics(draw):
    nodes = draw(st.integers(1, 40))
    gpn = draw(st.sampled_from((1, 2, 4, 8, 16)))
    leaves = draw(st.integers(1, nodes))
    pods = draw(st.integers(1, leaves))
    node_leaf = np.array(sorted(draw(st.lists(st.integers(0, leaves - 1), min_size=nodes, max_size=nodes))), np.int32)
    leaf_pod = np.array(sorted(draw(st.lists(st.integers(0, pods - 1), min_size=leaves, max_size=leaves))), np.int32)
    full = draw(st.floats(0, 1))
    seed = draw(st.integers(0, 10**6))
    rng = np.random.default_rng(seed)
    f = np.where(rng.random(nodes) < full, gpn, rng.integers(0, gpn + 1, nodes)).astype(np.int64)
    demand = draw(st.integers(1, int(f.sum()) + 2))
    return f, demand, node_leaf, leaf_pod, leaves, pods


def _fewest(f: np.ndarray, demand: int) -> int | None:
    acc = 0
    for i, v in enumerate(sorted(f.tolist(), reverse=True)):
        if v <= 0:
            break
        acc += v
        if acc >= demand:
            return i + 1
    return None


@settings(max_examples=400, deadline=None)
@given(fabrics())
def test_fewest_nodes_fullest_first(fab):
    f, demand, node_leaf, leaf_pod, leaves, pods = fab
    nodes, counts = consolidate_nodes(f, demand, node_leaf, leaf_pod, leaves, pods)
    k = _fewest(f, demand)
    if k is None:
        assert nodes.shape[0] == 0
        return
    nodes, counts = nodes.tolist(), counts.tolist()
    assert len(nodes) == k and len(set(nodes)) == k  # the fewest nodes, each once
    assert sum(counts) == demand and all(0 < c <= f[n] for n, c in zip(nodes, counts))
    one_leaf = [lf for lf in range(leaves) if _fewest(f[node_leaf == lf], demand) == k]
    if one_leaf:  # a leaf holds it on k nodes: the selection stays in one such leaf
        assert len({int(node_leaf[n]) for n in nodes}) == 1 and int(node_leaf[nodes[0]]) in one_leaf
    if k > 1:  # the first k-1 are taken whole, fullest first, none emptier than an unused node of their group
        assert all(c == f[n] for n, c in zip(nodes[:-1], counts[:-1]))
        assert [f[n] for n in nodes[:-1]] == sorted((f[n] for n in nodes[:-1]), reverse=True)
        group = node_leaf == node_leaf[nodes[0]] if one_leaf else np.ones(f.shape[0], bool)
        unused = [int(f[n]) for n in np.flatnonzero(group) if n not in nodes]
        if unused and not one_leaf and pods == 1:
            assert min(f[n] for n in nodes[:-1]) >= max(unused)
        if one_leaf:
            assert not unused or min(f[n] for n in nodes[:-1]) >= max(unused)
