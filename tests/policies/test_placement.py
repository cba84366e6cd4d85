"""Placement helpers: hand-derived placements on small clusters (4 nodes × 4 GPUs, 2 leaves unless said)."""

from __future__ import annotations

import numpy as np
import pytest

from policies import placement as P
from tests.policies.conftest import build_arrays


def mask(g: int, free: list[int]) -> np.ndarray:
    m = np.zeros(g, bool)
    m[free] = True
    return m


def gpus_on(node: int, count: int, per: int = 4) -> list[int]:
    return list(range(node * per, node * per + count))


def test_consolidate_best_fit_node():
    c = build_arrays()
    # node0: 3 free, node1: 2 free, node2: 4 free → a 2-GPU job takes node1 (tightest fit)
    avail = mask(16, gpus_on(0, 3) + gpus_on(1, 2) + gpus_on(2, 4))
    assert P.consolidate(c, avail, 2).tolist() == [4, 5]
    assert P.consolidate(c, avail, 3).tolist() == [0, 1, 2]  # node0 (3) beats node2 (4)
    assert P.consolidate(c, avail, 4).tolist() == [8, 9, 10, 11]


def test_consolidate_fewest_nodes_then_one_leaf():
    c = build_arrays()
    # leaf0 = nodes 0,1: 4 + 1 free; leaf1 = nodes 2,3: 3 + 3 free. 6 GPUs need 2 nodes at least;
    # only leaf1 does it with 2 nodes → nodes 2 and 3, one leaf
    avail = mask(16, gpus_on(0, 4) + gpus_on(1, 1) + gpus_on(2, 3) + gpus_on(3, 3))
    g = P.consolidate(c, avail, 6)
    assert g.tolist() == [8, 9, 10, 12, 13, 14]
    assert P.span(c, g) == (2, 1, 1)


def test_consolidate_prefers_fewer_nodes_over_one_leaf_but_topo_prefers_one_leaf():
    c = build_arrays(nodes=6, leaves=2)  # leaf0 = nodes 0-2, leaf1 = nodes 3-5
    # leaf0: 2,2,2 free (one leaf, 3 nodes); leaf1: node3 has 3 free → 3 + 2 = two nodes across leaves
    avail = mask(24, gpus_on(0, 2) + gpus_on(1, 2) + gpus_on(2, 2) + gpus_on(3, 3))
    g = P.consolidate(c, avail, 5)
    assert P.span(c, g) == (2, 2, 1)
    assert g.tolist() == [0, 1, 12, 13, 14]  # node3 whole, then best-fit node0 for the 2 left
    t = P.topo_best_fit(c, avail, 5)
    assert P.span(c, t) == (3, 1, 1)
    assert t.tolist() == [0, 1, 4, 5, 8]


def test_consolidate_across_leaves_and_pods():
    c = build_arrays(nodes=4, leaves=4, pods=2)  # one node per leaf; pods {0,1} {2,3}
    avail = mask(16, gpus_on(0, 4) + gpus_on(2, 4) + gpus_on(3, 4))
    g = P.consolidate(c, avail, 8)
    assert P.span(c, g) == (2, 2, 1)  # nodes 2 and 3 share pod 1
    assert g.tolist() == list(range(8, 16))


def test_topo_picks_best_fit_leaf():
    c = build_arrays()
    # leaf0 has 8 free, leaf1 has 5 free (4 + 1): a 5-GPU job takes leaf1 (best fit)
    avail = mask(16, gpus_on(0, 4) + gpus_on(1, 4) + gpus_on(2, 4) + gpus_on(3, 1))
    g = P.topo_best_fit(c, avail, 5)
    assert g.tolist() == [8, 9, 10, 11, 12]


def test_spread_one_gpu_per_node():
    c = build_arrays()
    assert P.spread(c, None, 4).tolist() == [0, 4, 8, 12]
    avail = mask(16, gpus_on(0, 1) + gpus_on(1, 3) + gpus_on(2, 2))
    assert P.spread(c, avail, 4).tolist() == [0, 4, 5, 8]  # round 1: nodes 1,2,0; round 2: node 1


def test_random_is_seeded_and_within_avail():
    c = build_arrays()
    avail = mask(16, list(range(3, 14)))
    a = P.random_fit(c, avail, 5, rng=np.random.default_rng(7))
    b = P.random_fit(c, avail, 5, rng=np.random.default_rng(7))
    assert a.tolist() == b.tolist()
    assert len(set(a.tolist())) == 5 and avail[a].all()
    assert P.random_fit(c, avail, 12, rng=np.random.default_rng(7)) is None


def test_demand_that_cannot_be_met_is_none():
    c = build_arrays()
    avail = mask(16, [0, 1, 2])
    for s in ("consolidate", "topo", "spread"):
        assert P.place(c, avail, 4, strategy=s) is None
    assert P.place(c, avail, 0) is None


def test_gpu_type_constraint_and_single_type_for_any():
    types = [0] * 8 + [1] * 8  # nodes 0,1 type 0; nodes 2,3 type 1
    c = build_arrays(gpu_types=types)
    avail = mask(16, [0, 1, 2, 8, 9, 12, 13, 14, 15])
    g = P.consolidate(c, avail, 2, gpu_type=1)
    assert (c.gpu_type[g] == 1).all() and g.tolist() == [8, 9]
    assert P.consolidate(c, avail, 4, gpu_type=0) is None  # only 3 type-0 GPUs free
    # any type: the placement on one type with the smallest span wins (node3 holds 4 of type 1)
    g = P.consolidate(c, avail, 4)
    assert g.tolist() == [12, 13, 14, 15]
    # never mixes types: 3 type-0 + 6 type-1 free, a 7-GPU job of any type cannot run
    assert P.consolidate(c, avail, 7) is None
    # accept() vetoes a type: the other type is tried
    g = P.consolidate(c, avail, 3, accept=lambda gg: c.gpu_type[gg[0]] == 0)
    assert g.tolist() == [0, 1, 2]


def test_max_tier_rejects_wider_placements():
    c = build_arrays()
    avail = mask(16, gpus_on(0, 2) + gpus_on(2, 2))
    assert P.place(c, avail, 4, strategy="topo", max_tier=0) is None
    assert P.place(c, avail, 4, strategy="topo", max_tier=1) is None  # two leaves
    assert P.span(c, P.place(c, avail, 4, strategy="topo", max_tier=3)) == (2, 2, 1)
    assert P.tier_of(c, [0, 1]) == 0 and P.tier_of(c, [0, 4]) == 1 and P.tier_of(c, [0, 8]) == 2


def test_affinity_fit_classes():
    c = build_arrays()
    avail = mask(16, gpus_on(0, 2) + gpus_on(1, 4) + gpus_on(2, 3) + gpus_on(3, 1))
    aff = np.array([2, -1, 1, 4])
    assert P.affinity_fit(c, avail, 2, aff).tolist() == [0, 1]  # node0 is affine to 2-GPU jobs
    assert P.affinity_fit(c, avail, 1, aff).tolist() == [8]  # node2 is affine to 1-GPU jobs
    assert P.affinity_fit(c, avail, 3, aff).tolist() == [4, 5, 6]  # no 3-affinity: the empty node
    aff2 = np.array([2, 2, 1, 4])
    assert P.affinity_fit(c, avail, 3, aff2).tolist() == [4, 5, 6]  # none empty: most free node1
    assert P.affinity_fit(c, avail, 5, aff) is None


def test_node_affinity_from_allocations():
    c = build_arrays()
    gpu_demand = np.full(16, -1)
    gpu_demand[[0, 1]] = 2
    gpu_demand[2] = 1
    gpu_demand[8:12] = 4
    aff = P.node_affinity(c, gpu_demand)
    assert aff.tolist() == [2, -1, 4, -1]  # node0: 2 GPUs for demand 2 vs 1 for demand 1


@pytest.mark.parametrize("strategy", ["consolidate", "topo", "spread"])
def test_large_cluster_is_fast(strategy):
    import time

    c = build_arrays(nodes=256, gpus_per_node=8, leaves=32, pods=4)
    rng = np.random.default_rng(0)
    avail = rng.random(2048) < 0.4
    P.place(c, avail, 24, strategy=strategy)  # compile
    t = time.perf_counter()
    for d in (1, 2, 4, 8, 16, 32, 64) * 20:
        g = P.place(c, avail, d, strategy=strategy)
        assert g is not None and len(g) == d and avail[g].all()
    per_call = (time.perf_counter() - t) / 140
    assert per_call < 2e-3, per_call


@pytest.mark.parametrize("per, nodes", [(8, 300), (8, 1), (4, 50), (16, 20)])
def test_free_counts_per_node_word_equal_the_per_gpu_count(per, nodes):
    """`node_free_counts` gives exactly the per-GPU counts, through its 8-GPU-node word count on
    the fabrics it takes (8 GPUs at 8n, any type) and its per-GPU loop on the others and per type."""
    from policies import _kernels as K

    rng = np.random.default_rng(per * nodes)
    g = per * nodes
    gpu_node = (np.arange(g) // per).astype(np.int32)
    gpu_type = np.zeros(g, np.int16)
    first = (np.arange(nodes) * per).astype(np.int32)
    num = np.full(nodes, per, np.int32)
    for p in (0.0, 0.2, 0.7, 1.0):
        avail = rng.random(g) < p
        want = np.bincount(gpu_node[avail], minlength=nodes)
        got = K.node_free_counts(avail, gpu_node, gpu_type, -1, first, num)
        assert got.tolist() == want.tolist()
        assert K.node_free_counts(avail, gpu_node, gpu_type, 0, first, num).tolist() == want.tolist()
        assert not K.node_free_counts(avail, gpu_node, gpu_type, 1, first, num).any()
