"""Ring / tree / hierarchical match hand-derived closed forms on the tiny cluster.

Tiny cluster (tests/collectives/_tiny.py): 8 GPUs per node on NVSwitch at 100 GB/s per GPU
(1 µs), one 100 Gb/s NIC per node (12.5 GB/s, 2 µs), 2 nodes per leaf (leaf switch 1 µs),
2 leaves per pod (spine 3 µs), core 5 µs. CLEAN params: no software α, all efficiencies 1,
protocols identical. A network step between two nodes under one leaf costs
2·(2 + 1/2) = 5 µs; across leaves 5 + 2·(1/2 + 3/2) = 9 µs.
"""

from __future__ import annotations

import numpy as np
import pytest

from collectives.placement import placement_gpus

from ._tiny import tiny_model

S = 1e9
US = 1e-6


def cost(model, shape, algo="auto", op="allreduce", nbytes=S):
    gpus = placement_gpus(model.topo, shape)
    return model.collective(op, gpus, nbytes, nbytes, algorithm=algo)


def test_single_node_ring():
    m = tiny_model()
    c = cost(m, "8")
    # 2(p−1) = 14 steps of 1 µs; each GPU sends 2·7/8·S at 100 GB/s
    assert c.algorithm == "ring"
    assert c.seconds == pytest.approx(14 * US + 1.75 * S / 100e9, rel=1e-12)
    assert c.bus_bandwidth_Bps == pytest.approx(S / c.seconds * 1.75)
    assert c.link_ids.tolist() == [0] and c.link_bytes.tolist() == pytest.approx([8 * 1.75 * S])


def test_two_nodes_one_leaf_each_algorithm():
    m = tiny_model()
    ring = cost(m, "4,4", "ring")
    tree = cost(m, "4,4", "tree")
    hier = cost(m, "4,4", "hierarchical")
    # ring: 14 steps at the slower (network, 5 µs) edge; NIC carries 2·7/8·S at 12.5 GB/s
    assert ring.seconds == pytest.approx(14 * 5 * US + 1.75 * S / 12.5e9, rel=1e-12)
    # tree: 2·(1 level · 5 µs + 3 chain steps · 1 µs); NIC carries S (two trees · S/2)
    assert tree.seconds == pytest.approx(2 * (5 + 3) * US + S / 12.5e9, rel=1e-12)
    # hierarchical: RS (3 steps, 3/4·S at 100 GB/s) + ring of 2 nodes (2 steps, S on the NIC) + AG
    assert hier.seconds == pytest.approx((2 * 3 * 1 + 2 * 5) * US + 2 * 0.75 * S / 100e9 + S / 12.5e9, rel=1e-12)
    assert cost(m, "4,4").algorithm == "tree"
    assert cost(m, "4,4").seconds == pytest.approx(tree.seconds)
    # bytes on links: ring puts 2·7/8·S on each NIC and (k−1)·2·7/8·S through each NVSwitch
    b = dict(zip(ring.link_ids.tolist(), ring.link_bytes.tolist()))
    nic0, nic1 = m.topo.num_nodes + 0, m.topo.num_nodes + 1
    assert b[nic0] == pytest.approx(1.75 * S) and b[nic1] == pytest.approx(1.75 * S)
    assert b[0] == pytest.approx(3 * 1.75 * S)


def test_cross_leaf_ring_and_oversubscription():
    base = cost(tiny_model(), "4/4", "ring")
    assert base.seconds == pytest.approx(14 * 9 * US + 1.75 * S / 12.5e9, rel=1e-12)
    over = cost(tiny_model(leaf_oversub=4.0), "4/4", "ring")
    # leaf uplink = 2 nodes · 12.5 GB/s / 4 = 6.25 GB/s is now the narrowest link
    assert over.seconds == pytest.approx(14 * 9 * US + 1.75 * S / 6.25e9, rel=1e-12)
    assert over.seconds > base.seconds
    # a placement under one leaf does not see the leaf uplinks
    assert cost(tiny_model(leaf_oversub=4.0), "4,4", "ring").seconds == cost(tiny_model(), "4,4", "ring").seconds


def test_uneven_placement_slowest_node_bounds_ring():
    m = tiny_model(nic_count=8)   # 8 NICs: k GPUs drive k of them
    even = cost(m, "4,4", "ring")
    uneven = cost(m, "3,5", "ring")
    assert even.seconds == pytest.approx(14 * 5 * US + 1.75 * S / (4 * 12.5e9), rel=1e-12)
    assert uneven.seconds == pytest.approx(14 * 5 * US + 1.75 * S / (3 * 12.5e9), rel=1e-12)
    assert uneven.seconds > even.seconds


def test_four_node_tree_link_loads():
    m = tiny_model()
    tree = cost(m, "2,2/2,2", "tree")
    b = dict(zip(tree.link_ids.tolist(), tree.link_bytes.tolist()))
    n = m.topo.num_nodes
    # heap tree + mirror over 4 nodes: every node has 3 tree edges, S/2 each way per edge
    assert [b[n + i] for i in range(4)] == pytest.approx([1.5 * S] * 4)
    depth = 2
    assert tree.seconds == pytest.approx(2 * (depth * 9 + 1 * 1) * US + 1.5 * S / 12.5e9, rel=1e-12)


def test_other_collectives_closed_forms():
    m = tiny_model()
    rs = cost(m, "8", "ring", "reduce_scatter")
    ag = cost(m, "8", "ring", "all_gather")
    bc = cost(m, "8", "ring", "broadcast")
    a2a = cost(m, "8", "auto", "all_to_all")
    assert rs.seconds == pytest.approx(7 * US + 7 / 8 * S / 100e9, rel=1e-12) == ag.seconds
    assert bc.seconds == pytest.approx(7 * US + S / 100e9, rel=1e-12)
    # all-to-all inside one node: 8 GPUs send 7/8·S each through the switch at 100 GB/s
    assert a2a.algorithm == "direct"
    assert a2a.seconds == pytest.approx(1 * US + 7 / 8 * S / 100e9, rel=1e-12)
    rs2 = cost(m, "4,4", "hierarchical", "reduce_scatter")
    assert rs2.seconds == pytest.approx((3 + 5) * US + 0.75 * S / 100e9 + 0.5 * S / 12.5e9, rel=1e-12)


def test_single_gpu_costs_nothing():
    c = tiny_model().allreduce(np.array([5]), 1e9)
    assert c.seconds == 0.0 and c.link_ids.size == 0 and c.bus_bandwidth_Bps == 0.0


def test_tree_on_one_node_falls_back_to_ring():
    m = tiny_model()
    assert cost(m, "8", "tree").algorithm == "ring"
    assert cost(m, "8", "hierarchical").seconds == cost(m, "8", "ring").seconds
