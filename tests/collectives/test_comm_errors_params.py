"""Bad placements and bad parameter files: clear one-line errors, never a number."""

from __future__ import annotations

import numpy as np
import pytest

import netmodel
from collectives import CommModel, CommParams
from collectives.placement import parse_shape, placement_gpus
from cosim.errors import InputError

from ._tiny import tiny_model


def test_gpu_out_of_range_named():
    m = tiny_model()
    with pytest.raises(InputError, match=r"got 64") as err:
        m.allreduce(np.array([0, 64]), 1e6)
    assert "64 GPUs" in err.value.format_message()
    with pytest.raises(InputError, match="got -1"):
        m.allreduce(np.array([-1, 3]), 1e6)


def test_gpu_named_twice():
    with pytest.raises(InputError, match="GPU 3 named twice"):
        tiny_model().allreduce(np.array([1, 3, 2, 3]), 1e6)


def test_empty_and_non_integer_placements():
    with pytest.raises(InputError, match="at least one GPU"):
        tiny_model().allreduce(np.array([], dtype=np.int64), 1e6)
    with pytest.raises(InputError, match="integer GPU ids"):
        tiny_model().allreduce(np.array([0.0, 1.0]), 1e6)


def test_bad_sizes_and_algorithms():
    m = tiny_model()
    with pytest.raises(InputError, match="nbytes"):
        m.allreduce(np.arange(4), -5.0)
    with pytest.raises(InputError, match="bucket"):
        m.allreduce(np.arange(4), 1e6, 0.0)
    with pytest.raises(InputError, match="algorithm"):
        m.allreduce(np.arange(4), 1e6, algorithm="butterfly")


def test_shape_text_errors():
    assert parse_shape("8,8/8|4") == [[[8, 8], [8]], [[4]]]
    topo = tiny_model().topo
    with pytest.raises(InputError, match="at most 8 GPUs"):
        placement_gpus(topo, "9")
    with pytest.raises(InputError, match="fits cluster 'tiny'"):
        placement_gpus(topo, "8,8,8")            # 2 nodes per leaf
    with pytest.raises(InputError, match="GPUs per node"):
        placement_gpus(topo, "4,x")
    with pytest.raises(InputError, match="positive"):
        placement_gpus(topo, "0,4")
    assert placement_gpus(topo, "2|2").tolist() == [0, 1, 32, 33]   # second pod starts at node 4


def test_params_from_calibration_toml(tmp_path):
    p = tmp_path / "cal.toml"
    p.write_text("[comm]\nbase_latency_s = 1e-5\nbeta_efficiency_net = 0.5\nalgorithm = \"ring\"\n")
    params = CommParams.from_toml(p)
    assert params.base_latency_s == 1e-5 and params.beta_efficiency_net == 0.5 and params.algorithm == "ring"
    assert params.alpha_net_s == CommParams().alpha_net_s
    spec = netmodel.load_cluster("dgx-a100")
    assert CommParams.for_cluster(spec, p, alpha_net_s=0.0).alpha_net_s == 0.0
    topo = netmodel.build_topology(spec)
    slow = CommModel(topo, params).allreduce(np.arange(16), 1e9, 1e9)
    fast = CommModel(topo).allreduce(np.arange(16), 1e9, 1e9)
    assert slow.algorithm == "ring" and slow.seconds > fast.seconds


@pytest.mark.parametrize("body,match", [
    ("[comm]\nbogus = 1\n", "comm.bogus"),
    ("[comm]\nbase_latency_s = -1\n", "comm.base_latency_s"),
    ("[comm]\ntree_efficiency = 0\n", "comm.tree_efficiency"),
    ("[comm]\nalgorithm = \"butterfly\"\n", "comm.algorithm"),
    ("[comm]\nalpha_net_s = \"fast\"\n", "comm.alpha_net_s"),
    ("comm = 3\n", "comm"),
])
def test_bad_calibration_files(tmp_path, body, match):
    p = tmp_path / "cal.toml"
    p.write_text(body)
    with pytest.raises(InputError, match=match) as err:
        CommParams.from_toml(p)
    assert "cal.toml" in err.value.format_message() or match == "comm.algorithm"


def test_preset_comm_section_is_applied(tmp_path):
    from tests.netmodel.conftest import BASE_TOML

    p = tmp_path / "c.toml"
    p.write_text(BASE_TOML + "\n[comm]\nbase_latency_s = 0.001\n")
    spec = netmodel.load_cluster(str(p))
    m = CommModel(netmodel.build_topology(spec))
    assert m.params.base_latency_s == 0.001
    assert m.allreduce(np.arange(4), 10.0).seconds > 0.001


@pytest.mark.parametrize("field,value", [("alpha_net_s", 9.2e18), ("simple_step_latency_s", 1.0),
                                         ("beta_efficiency_net", 1.5), ("ring_efficiency", 2.0),
                                         ("bucket_bytes", 1e15)])
def test_params_outside_physical_ranges_are_refused_naming_the_field(field, value):
    """A profile value no fabric comes near (a misplaced exponent, an efficiency above 1) is an
    error naming its field, not a run on nonsense."""
    from cosim.errors import InputError

    with pytest.raises(InputError, match=f"comm.{field}"):
        CommParams(**{field: value})
