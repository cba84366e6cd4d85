"""A small hand-made cluster TOML every netmodel/collectives test can edit."""

from __future__ import annotations

import pytest

BASE_TOML = '''
name = "tiny"
description = "hand-made test cluster"
nodes_per_leaf = 2
leaves_per_pod = 2

[node_types.box]
gpu_type = "G1"
gpu_mem_gb = 16
gpus_per_node = 4
[node_types.box.intra]
kind = "nvswitch"
gpu_GBps = 100
latency_us = 1.0
[node_types.box.nic]
count = 1
gbps = 100
gpudirect = true
latency_us = 2.0

[[groups]]
name = "main"
node_type = "box"
nodes = 8

[tiers.leaf]
name = "leaf"
port_gbps = 100
latency_us = 1.0
oversubscription = 1.0
[tiers.spine]
name = "spine"
port_gbps = 100
latency_us = 3.0
oversubscription = 1.0
[tiers.core]
name = "core"
port_gbps = 100
latency_us = 5.0
oversubscription = 1.0
'''


@pytest.fixture
def tiny_toml(tmp_path):
    """Write BASE_TOML (optionally edited by `replace` pairs) and return its path."""

    def make(*replace: tuple[str, str], text: str | None = None):
        body = BASE_TOML if text is None else text
        for old, new in replace:
            assert old in body, old
            body = body.replace(old, new)
        path = tmp_path / "tiny.toml"
        path.write_text(body)
        return str(path)

    return make
