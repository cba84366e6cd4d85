"""The comm model's per-shape result cache: a placement of a shape already evaluated gets the
same seconds, algorithm, protocol and per-link bytes as a fresh model computes for it, with
its own link ids (the cache keeps link positions, not ids)."""

from __future__ import annotations

import numpy as np
import pytest

import netmodel
from collectives.model import CommModel


@pytest.fixture(scope="module")
def topo():
    return netmodel.build_topology(netmodel.load_cluster("philly"))


@pytest.mark.parametrize("op", ["allreduce", "all_to_all", "broadcast"])
@pytest.mark.parametrize("alg", ["auto", "ring", "tree"])
def test_same_shape_other_nodes(topo, op, alg):
    g = int(topo.node_num_gpus[0])
    a = np.arange(0, 2 * g, dtype=np.int32)  # two whole nodes of one leaf
    b = a + 2 * g  # the next two nodes: same shape, other links
    warm = CommModel(topo)
    ca = warm.collective(op, a, 1e8, None, alg)
    cb = warm.collective(op, b, 1e8, None, alg)  # served from the shape cache
    fresh = CommModel(topo).collective(op, b, 1e8, None, alg)
    assert len(warm._by_shape) == 1
    assert (cb.seconds, cb.algorithm, cb.protocol, cb.num_gpus, cb.bus_bandwidth_Bps) == \
           (fresh.seconds, fresh.algorithm, fresh.protocol, fresh.num_gpus, fresh.bus_bandwidth_Bps)
    assert cb.link_ids.dtype == fresh.link_ids.dtype == np.int32
    assert cb.link_ids.tolist() == fresh.link_ids.tolist()
    assert cb.link_bytes.tolist() == fresh.link_bytes.tolist()
    assert not cb.link_ids.flags.writeable and not cb.link_bytes.flags.writeable
    if cb.link_ids.shape[0]:
        assert cb.link_ids.tolist() != ca.link_ids.tolist()  # its own links, not the first placement's
