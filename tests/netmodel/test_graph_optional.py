"""networkx is optional (no command needs it): without it `Topology.graph()` says what
to install, and the rest of a topology works."""

from __future__ import annotations

import sys

import pytest

import netmodel


def test_graph_without_networkx_says_what_to_install(monkeypatch):
    topo = netmodel.build_topology(netmodel.load_cluster("dgx-a100", num_nodes=2))
    monkeypatch.setitem(sys.modules, "networkx", None)  # `import networkx` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'cosim\[graph\]'"):
        topo.graph()
    assert topo.num_gpus == 16 and topo.route_latency_s(0, 1) > 0
