"""Cluster and fabric: presets → Topology (numpy arrays of GPUs, nodes, leaves, pods, links, routes).

    spec = netmodel.load_cluster("dgx-a100", num_nodes=8)   # or a path to a user TOML
    topo = netmodel.build_topology(spec)
"""

import cosim  # noqa: F401  first: OpenBLAS' kernels and threads are set before numpy loads (cosim.blas)

from netmodel.spec import (ClusterSpec, IntraNode, Nic, NodeGroup, NodeType, Tier, load_cluster,
                           preset_names, spec_from_dict)
from netmodel.topology import LINK_TIER_NAMES, Topology, build_topology

__all__ = ["ClusterSpec", "IntraNode", "Nic", "NodeGroup", "NodeType", "Tier", "Topology",
           "LINK_TIER_NAMES", "build_topology", "load_cluster", "preset_names", "spec_from_dict"]
