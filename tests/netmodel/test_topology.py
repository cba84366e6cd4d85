"""Topology arrays follow docs/architecture.md; routes agree with networkx; 100k GPUs build fast."""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import netmodel
from netmodel.topology import TIER_INTRA, TIER_LEAF_UP, TIER_NIC, TIER_POD_UP


def test_contract_arrays_and_dtypes(tiny_toml):
    t = netmodel.build_topology(netmodel.load_cluster(tiny_toml()))
    assert t.gpu_node.dtype == np.int32 and t.gpu_node.shape == (32,)
    assert t.gpu_type.dtype == np.int16
    assert t.node_leaf.dtype == np.int32 and t.node_leaf.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert t.leaf_pod.dtype == np.int32 and t.leaf_pod.tolist() == [0, 0, 1, 1]
    assert t.node_first_gpu.tolist() == [0, 4, 8, 12, 16, 20, 24, 28]
    assert t.node_num_gpus.tolist() == [4] * 8
    assert t.gpu_type_names == ("G1",) and t.gpu_type_mem_gb.tolist() == [16.0]
    # links: 8 intra, 8 nic, 4 leaf-up, 2 pod-up
    assert t.num_links == 22
    assert t.link_tier.tolist() == [TIER_INTRA] * 8 + [TIER_NIC] * 8 + [TIER_LEAF_UP] * 4 + [TIER_POD_UP] * 2
    assert t.link_capacity_Bps[0] == 4 * 100e9          # NVSwitch: 4 GPUs x 100 GB/s
    assert t.link_capacity_Bps[8] == 100e9 / 8          # one 100 Gb/s NIC
    assert t.link_capacity_Bps[16] == 2 * 100e9 / 8     # 2 nodes / oversubscription 1
    assert t.link_capacity_Bps[20] == 2 * 2 * 100e9 / 8
    assert t.link_names[0] == "node0/intra" and t.link_names[16] == "leaf0/up" and t.link_names[21] == "pod1/up"


def test_route_latency_counts_each_switch_once(tiny_toml):
    t = netmodel.build_topology(netmodel.load_cluster(tiny_toml()))
    us = 1e-6
    assert np.isclose(t.route_latency_s(0, 0), 1 * us)                     # NVSwitch
    assert np.isclose(t.route_latency_s(0, 1), (2 + 2 + 1) * us)           # nic, leaf, nic
    assert np.isclose(t.route_latency_s(0, 2), (2 + 2 + 1 + 1 + 3) * us)   # + second leaf, spine
    assert np.isclose(t.route_latency_s(0, 7), (2 + 2 + 1 + 1 + 3 + 3 + 5) * us)  # + spine, core
    assert t.route(0, 7).tolist() == [8, 16, 20, 21, 19, 15]


def test_oversubscription_shrinks_uplinks(tiny_toml):
    t = netmodel.build_topology(netmodel.load_cluster(tiny_toml(
        ("oversubscription = 1.0\n[tiers.spine]", "oversubscription = 4.0\n[tiers.spine]"))))
    assert t.link_capacity_Bps[16] == 2 * 100e9 / 8 / 4


def _nx_route(t, a, b):
    """Link ids on the networkx shortest path between nodes a and b."""
    path = nx.shortest_path(t.graph(), f"node{a}", f"node{b}")
    ids = []
    for u, v in zip(path, path[1:]):
        for x, y in ((u, v), (v, u)):
            if x.startswith("node") and y.startswith("leaf"):
                ids.append(t.link_id(TIER_NIC, int(x[4:])))
            elif x.startswith("leaf") and y.startswith("pod"):
                ids.append(t.link_id(TIER_LEAF_UP, int(x[4:])))
            elif x.startswith("pod") and y == "core":
                ids.append(t.link_id(TIER_POD_UP, int(x[3:])))
    return sorted(ids)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 415), st.integers(0, 415))
def test_routes_match_networkx(a, b):
    t = _PHILLY
    if a == b:
        assert t.route(a, b).tolist() == [a]
    else:
        assert sorted(t.route(a, b).tolist()) == _nx_route(t, a, b)


_PHILLY = netmodel.build_topology(netmodel.load_cluster("philly"))


def test_heterogeneous_groups_share_or_split_leaves():
    t = _PHILLY
    two = t.node_group == 1
    # the 2-GPU group starts on a new leaf (start_new_leaf = true)
    assert not set(t.node_leaf[two].tolist()) & set(t.node_leaf[~two].tolist())
    fft = netmodel.build_topology(netmodel.load_cluster("fft-hetero"))
    assert fft.num_leaves == 1   # three GPU types under one 10 Gb/s switch


def test_graph_is_a_tree():
    assert nx.is_tree(_PHILLY.graph())


@pytest.mark.parametrize("preset", ["philly", "dgx-a100", "fft-hetero"])
def test_array_tree_check_agrees_with_networkx(preset):
    """build_topology checks the tree from the parent arrays (no networkx at simulate time); it must
    say what networkx's is_tree says of the same graph, for real presets and for broken arrays."""
    from netmodel.topology import _build_graph, _is_tree

    t = netmodel.build_topology(netmodel.load_cluster(preset))
    cases = [(t.node_leaf, t.leaf_pod)]
    bad = t.node_leaf.copy()
    bad[-1] = t.num_leaves  # a node under a leaf that does not exist
    cases.append((bad, t.leaf_pod))
    neg = t.node_leaf.copy()
    neg[0] = -1
    cases.append((neg, t.leaf_pod))
    got = [_is_tree(nl, lp) for nl, lp in cases]
    assert got == [nx.is_tree(_build_graph(nl, lp)) for nl, lp in cases] == [True, False, False]


def test_100k_gpus_build_fast_and_small():
    t0 = time.perf_counter()
    topo = netmodel.build_topology(netmodel.load_cluster("dgx-a100", num_nodes=12_500))
    elapsed = time.perf_counter() - t0
    assert topo.num_gpus == 100_000
    nbytes = sum(v.nbytes for v in vars(topo).values() if isinstance(v, np.ndarray))
    assert elapsed < 10.0 and nbytes < 2e9
    r = topo.route(0, 12_499)
    assert r[0] == topo.link_id(TIER_NIC, 0) and r[-1] == topo.link_id(TIER_NIC, 12_499)
