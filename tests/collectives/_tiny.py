"""A hand-made cluster for closed-form checks (imported by the collectives tests)."""

from __future__ import annotations

import netmodel
from collectives import CommModel, CommParams

TINY = {
    "name": "tiny", "description": "closed-form test cluster", "nodes_per_leaf": 2, "leaves_per_pod": 2,
    "node_types": {"box": {
        "gpu_type": "G1", "gpu_mem_gb": 16, "gpus_per_node": 8,
        "intra": {"kind": "nvswitch", "gpu_GBps": 100, "latency_us": 1.0},
        "nic": {"count": 1, "gbps": 100, "gpudirect": True, "latency_us": 2.0}}},
    "groups": [{"name": "main", "node_type": "box", "nodes": 8}],
    "tiers": {"leaf": {"port_gbps": 100, "latency_us": 1.0, "oversubscription": 1.0},
              "spine": {"port_gbps": 100, "latency_us": 3.0, "oversubscription": 1.0},
              "core": {"port_gbps": 100, "latency_us": 5.0, "oversubscription": 1.0}},
}

#: every protocol identical, no software α, efficiencies 1: only the fabric numbers remain
CLEAN = CommParams(base_latency_s=0.0, alpha_intra_s=0.0, alpha_net_s=0.0, alpha_spine_s=0.0, alpha_core_s=0.0,
                   host_staging_latency_s=0.0, beta_efficiency_intra=1.0, beta_efficiency_net=1.0,
                   ring_efficiency=1.0, tree_efficiency=1.0, hierarchical_efficiency=1.0, ll_bw_factor=1.0,
                   ll128_bw_factor=1.0, ll_step_latency_s=0.0, ll128_step_latency_s=0.0,
                   simple_step_latency_s=0.0)


def tiny_topology(nic_count: int = 1, leaf_oversub: float = 1.0, nodes: int = 8, spine_oversub: float = 1.0,
                  gpudirect: bool = True):
    import copy

    d = copy.deepcopy(TINY)
    d["node_types"]["box"]["nic"]["count"] = nic_count
    d["node_types"]["box"]["nic"]["gpudirect"] = gpudirect
    d["tiers"]["leaf"]["oversubscription"] = leaf_oversub
    d["tiers"]["spine"]["oversubscription"] = spine_oversub
    d["groups"][0]["nodes"] = nodes
    return netmodel.build_topology(netmodel.spec_from_dict(d, "tiny"))


def tiny_model(params: CommParams = CLEAN, **kw) -> CommModel:
    return CommModel(tiny_topology(**kw), params)
