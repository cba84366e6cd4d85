"""Presets load; bad cluster files fail with the file and the dotted field named."""

from __future__ import annotations

import pytest

import netmodel
from cosim.errors import InputError, UnknownNameError

EXPECTED_PRESETS = {"dgx-a100", "dgx-h100", "v100-nvlink", "t4-pcie", "rtx2080ti-pcie", "philly", "dally-3tier",
                    "ares-testbed", "aryl", "fft-hetero", "ones-longhorn"}


def test_all_presets_ship_and_build():
    assert EXPECTED_PRESETS <= set(netmodel.preset_names())
    for name in netmodel.preset_names():
        topo = netmodel.build_topology(netmodel.load_cluster(name))
        assert topo.num_gpus == topo.spec.num_gpus > 0


@pytest.mark.parametrize("name,gpus,types", [
    ("dgx-a100", 64, ("A100-80GB",)),
    ("ares-testbed", 16, ("RTX2080Ti",)),
    ("aryl", 443 * 8 + 520 * 8, ("T4", "V100-32GB")),
    ("fft-hetero", 36, ("A10", "T4", "V100-16GB")),
    ("ones-longhorn", 64, ("V100-16GB",)),
    ("dally-3tier", 512, ("H100-80GB",)),
])
def test_paper_cluster_sizes(name, gpus, types):
    topo = netmodel.build_topology(netmodel.load_cluster(name))
    assert topo.num_gpus == gpus
    assert topo.gpu_type_names == types


def test_fft_has_twelve_of_each_type():
    topo = netmodel.build_topology(netmodel.load_cluster("fft-hetero"))
    counts = {topo.gpu_type_names[t]: int((topo.gpu_type == t).sum()) for t in range(3)}
    assert counts == {"T4": 12, "A10": 12, "V100-16GB": 12}
    assert set(topo.node_num_gpus.tolist()) == {4}


def test_philly_mixes_2_and_8_gpu_nodes():
    topo = netmodel.build_topology(netmodel.load_cluster("philly"))
    assert set(topo.node_num_gpus.tolist()) == {2, 8}
    assert topo.num_leaves > 1


def test_overrides_resize():
    assert netmodel.load_cluster("dgx-a100", num_nodes=3).num_gpus == 24
    assert netmodel.load_cluster("dally-3tier", num_leaves=2).num_gpus == 128
    assert netmodel.load_cluster("dally-3tier", num_leaves=16).num_gpus == 1024
    with pytest.raises(InputError, match="single-group"):
        netmodel.load_cluster("aryl", num_nodes=4)
    with pytest.raises(InputError, match="num_nodes"):
        netmodel.load_cluster("dgx-a100", num_nodes=0)
    with pytest.raises(InputError, match="known override"):
        netmodel.load_cluster("dgx-a100", racks=2)


def test_unknown_preset_lists_valid_names():
    with pytest.raises(UnknownNameError, match="dgx-a100"):
        netmodel.load_cluster("no-such-cluster")


def test_user_toml_loads(tiny_toml):
    spec = netmodel.load_cluster(tiny_toml())
    assert spec.name == "tiny" and spec.num_gpus == 32 and spec.source.endswith("tiny.toml")


@pytest.mark.parametrize("edit,field", [
    (("[tiers.core]\nname = \"core\"\nport_gbps = 100\nlatency_us = 5.0\noversubscription = 1.0\n", ""), "tiers.core"),
    (("gbps = 100", "gbps = 0"), "node_types.box.nic.gbps"),
    (("gpu_GBps = 100", "gpu_GBps = -3"), "node_types.box.intra.gpu_GBps"),
    (("nodes = 8", "nodes = 8\ngpus_per_node = 6"), "groups[0].gpus_per_node"),
    (('node_type = "box"', 'node_type = "crate"'), "groups[0].node_type"),
    (('kind = "nvswitch"', 'kind = "carrier-pigeon"'), "node_types.box.intra.kind"),
    (("oversubscription = 1.0\n[tiers.spine]", "oversubscription = 0.5\n[tiers.spine]"), "tiers.leaf.oversubscription"),
    (("nodes_per_leaf = 2", "nodes_per_leaf = \"two\""), "nodes_per_leaf"),
    (("gpudirect = true", "gpudirect = 1"), "node_types.box.nic.gpudirect"),
])
def test_bad_cluster_files_name_file_and_field(tiny_toml, edit, field):
    path = tiny_toml(edit)
    with pytest.raises(InputError) as err:
        netmodel.load_cluster(path)
    msg = err.value.format_message()
    assert "tiny.toml" in msg and f"'{field}'" in msg, msg


def test_more_gpus_than_node_type_mentions_limit(tiny_toml):
    with pytest.raises(InputError, match="at most 4"):
        netmodel.load_cluster(tiny_toml(("nodes = 8", "nodes = 8\ngpus_per_node = 6")))


def test_invalid_toml_syntax(tiny_toml):
    with pytest.raises(InputError, match="valid TOML"):
        netmodel.load_cluster(tiny_toml(text="name = ["))
