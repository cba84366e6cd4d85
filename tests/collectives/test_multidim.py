"""The ``multidim`` (ASTRA-sim style) collective: hand-derived closed forms per shape.

Notation: S message bytes; a level of u units at per-step latency λ and per-GPU bandwidth B,
entered with d = the share of S each GPU still holds, costs (u−1)(λ + d/u·S/B) per phase
(ring), and an all-reduce runs every level twice (reduce-scatter out, all-gather back).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import netmodel
from collectives import CommModel
from collectives.placement import placement_gpus
from cosim.errors import InputError
from tests.collectives._tiny import CLEAN, TINY

MD = CLEAN.replace(algorithm="multidim")
S = 64e6


def model(intra=None, tiers=None, leaves_per_pod=2, params=MD):
    d = copy.deepcopy(TINY)
    d["leaves_per_pod"] = leaves_per_pod
    if intra is not None:
        d["node_types"]["box"]["intra"].update(intra)
    for name, extra in (tiers or {}).items():
        d["tiers"][name].update(extra)
    topo = netmodel.build_topology(netmodel.spec_from_dict(d, "tiny"))
    return CommModel(topo, params)


def t(cm, gpus, op="allreduce", nbytes=S):
    return cm.collective(op, np.asarray(gpus, dtype=np.int64), nbytes, np.array([nbytes]))


def test_nvswitch_default_is_one_fully_connected_dimension():
    cm = model()   # NVSwitch 100 GB/s, 1 µs: 8 GPUs = one level of 8 units, ring algorithm
    c = t(cm, range(8))
    assert c.algorithm == "multidim"
    assert c.seconds == pytest.approx(2 * 7 * 1e-6 + 2 * (7 / 8) * S / 100e9)
    assert t(cm, range(4)).seconds == pytest.approx(2 * 3 * 1e-6 + 2 * (3 / 4) * S / 100e9)
    # intra link bytes: 8 GPUs each send 2·(7/8)·S
    assert c.link_bytes.sum() == pytest.approx(14 * S)


def test_pcie_and_cube_mesh_defaults_are_rings_at_their_ring_bandwidth():
    pcie = model({"kind": "pcie", "gpu_GBps": 16, "host_bridge_GBps": 10})
    assert t(pcie, range(4)).seconds == pytest.approx(2 * 3 * 1e-6 + 2 * (3 / 4) * S / 10e9)   # bridge-bound
    mesh = model({"kind": "nvlink-cube-mesh", "nvlink_GBps": 25, "nvlinks_per_gpu": 6})
    # 8 of 8 GPUs use all 6 links (150 GB/s); 4 GPUs: round(6·3/7) = 3 links (75 GB/s)
    assert t(mesh, range(8)).seconds == pytest.approx(2 * 7 * 1e-6 + 2 * (7 / 8) * S / 150e9)
    assert t(mesh, range(4)).seconds == pytest.approx(2 * 3 * 1e-6 + 2 * (3 / 4) * S / 75e9)


DALLY_DIMS = {"dims": [{"size": 4, "topology": "fully-connected", "GBps": 600, "latency_us": 0.0},
                       {"size": 2, "topology": "ring", "GBps": 600, "latency_us": 0.5}]}


def test_fully_connected_by_ring_machine_closed_form():
    """Dally's FC(4) × Ring(2): 2·[3·(S/4/B) + (0.5 µs + S/8/B)] = 1 µs + 1.75·S/B; with an
    endpoint delay ε per step, + 8ε."""
    cm = model(DALLY_DIMS)
    assert t(cm, range(8)).seconds == pytest.approx(1e-6 + 1.75 * S / 600e9)
    eps = model(DALLY_DIMS, params=MD.replace(alpha_intra_s=1e-8))
    assert t(eps, range(8)).seconds == pytest.approx(1e-6 + 8e-8 + 1.75 * S / 600e9)
    assert t(cm, range(4)).seconds == pytest.approx(2 * 3 * (S / 4) / 600e9)            # FC(4) only
    assert t(cm, range(2)).seconds == pytest.approx(2 * (S / 2) / 600e9)                # FC(2)
    # 6 GPUs do not decompose (6 > 4, 4 ∤ 6): one ring of 6 at the slowest λ, lowest B
    assert t(cm, range(6)).seconds == pytest.approx(2 * 5 * 0.5e-6 + 2 * (5 / 6) * S / 600e9)
    # reduce-scatter and all-gather: one phase
    assert t(cm, range(8), "reduce_scatter").seconds == pytest.approx(0.5e-6 + 0.875 * S / 600e9)
    assert t(cm, range(8), "all_gather").seconds == pytest.approx(0.5e-6 + 0.875 * S / 600e9)


def test_node_level_uses_per_gpu_nic_share_and_counts_bytes():
    """Two full nodes under one leaf: intra (14 µs, 1.75/B_nvs) + node ring of 2 at λ = 1 µs
    (leaf latency), per-GPU NIC 12.5 GB/s / 8, d = 1/8: 2·(1 µs + S/16/B_gpu)."""
    cm = model()
    c = t(cm, range(16))
    b_gpu = 12.5e9 / 8
    assert c.seconds == pytest.approx(14e-6 + 1.75 * S / 100e9 + 2e-6 + 2 * (S / 16) / b_gpu)
    nic = c.link_bytes[np.isin(c.link_ids, [8, 9])]           # NIC links of nodes 0, 1 (ids N + node)
    assert nic == pytest.approx([S, S])                       # each node sends 2·(1/2)·S over its NIC


def test_switch_dimension_doubles_latency_and_direct_variants():
    tiers = {"spine": {"dim_topology": "switch", "dim_GBps": 10, "dim_latency_us": 4.0}}
    gpus = [0, 16, 32, 48]          # one GPU on nodes 0, 2, 4, 6 = four leaves of one pod
    ring = model(tiers=tiers, leaves_per_pod=4)
    assert t(ring, gpus).seconds == pytest.approx(2 * 3 * (8e-6 + (S / 4) / 10e9))
    direct = model(tiers={"spine": dict(tiers["spine"], dim_algorithm="direct")}, leaves_per_pod=4)
    assert t(direct, gpus).seconds == pytest.approx(2 * (8e-6 + 0.75 * S / 10e9))   # one port into the switch
    fc = model(tiers={"spine": {"dim_topology": "fully-connected", "dim_algorithm": "direct", "dim_GBps": 10,
                                "dim_latency_us": 4.0}}, leaves_per_pod=4)
    assert t(fc, gpus).seconds == pytest.approx(2 * (4e-6 + (S / 4) / 10e9))        # 3 links in parallel


def test_dally_preset_closed_forms():
    """`dally-3tier` as shipped: endpoint delay ε = 10 ns per step."""
    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    cm = CommModel(topo)
    eps = 1e-8

    def sec(shape):
        g = placement_gpus(topo, shape)
        return cm.allreduce(g, S, np.array([S])).seconds

    assert sec("8") == pytest.approx(1e-6 + 8 * eps + 1.75 * S / 600e9)
    # 4,4: FC(4) then a Ring of 2 machines, 5 µs, 200 GB/s, d = 1/4
    assert sec("4,4") == pytest.approx(6 * eps + 1.5 * S / 600e9 + 2 * (5e-6 + eps + (S / 8) / 200e9))
    # 4/4: FC(4) then a Switch of 2 racks: λ = 2 × 50 µs + ε, 400 GB/s
    assert sec("4/4") == pytest.approx(6 * eps + 1.5 * S / 600e9 + 2 * (100e-6 + eps + (S / 8) / 400e9))
    # uneven 3,5: node of 5 collapses to a ring of 5 at 0.5 µs (+ε); d = 1/3 into the rack ring
    assert sec("3,5") == pytest.approx(2 * 4 * (0.5e-6 + eps) + 2 * 0.8 * S / 600e9
                                       + 2 * (5e-6 + eps + (S / 6) / 200e9))


def test_stages_add_up_to_the_collective():
    """`multidim_stages`: RS per level, an all-reduce phase on the outermost, AG back."""
    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    cm = CommModel(topo)
    for shape in ("8", "4,4", "4/4", "2,2/2,2"):
        g = placement_gpus(topo, shape)
        secs, queues = cm.multidim_stages(g, S)
        assert secs.sum() == pytest.approx(cm.allreduce(g, S, np.array([S])).seconds)
        assert list(queues) == list(queues[::-1]) and queues.max() == queues[len(queues) // 2]
    secs, queues = cm.multidim_stages(placement_gpus(topo, "4/4"), S)
    assert list(queues) == [0, 1, 0]
    assert secs[1] == pytest.approx(2 * (100e-6 + 1e-8 + (S / 8) / 400e9))


def test_multidim_monotone_and_fallbacks():
    cm = model(DALLY_DIMS)
    sizes = [1e3, 1e5, 1e7, 1e9]
    times = [t(cm, range(8), nbytes=s).seconds for s in sizes]
    assert all(a < b for a, b in zip(times, times[1:]))
    # more nodes never cheaper
    assert t(cm, range(16)).seconds > t(cm, range(8)).seconds
    # no multidim form of broadcast: the ring, and "auto" never picks multidim
    assert t(cm, range(8), "broadcast").algorithm == "ring"
    auto = model(DALLY_DIMS, params=CLEAN)
    assert t(auto, range(16)).algorithm != "multidim"
    assert t(cm, [3]).seconds == 0.0


@pytest.mark.parametrize("dims,field", [
    ([{"size": 4, "topology": "ring", "GBps": 1, "latency_us": 0}], "dims"),                      # 4 ≠ 8
    ([{"size": 8, "topology": "torus", "GBps": 1, "latency_us": 0}], "topology"),
    ([{"size": 8, "topology": "ring", "GBps": 1, "latency_us": 0, "algorithm": "direct"}], "algorithm"),
    ([{"size": 8, "topology": "ring", "GBps": 0, "latency_us": 0}], "GBps"),
])
def test_bad_dims_name_the_field(dims, field):
    d = copy.deepcopy(TINY)
    d["node_types"]["box"]["intra"]["dims"] = dims
    with pytest.raises(InputError, match=field):
        netmodel.spec_from_dict(d, "tiny")


def test_bad_tier_dim_topology():
    d = copy.deepcopy(TINY)
    d["tiers"]["spine"]["dim_topology"] = "mesh"
    with pytest.raises(InputError, match="tiers.spine.dim_topology"):
        netmodel.spec_from_dict(d, "tiny")


def test_loaded_only_when_asked_for():
    """`collectives.model` imports `collectives.multidim` when a collective asks for it (≈ 1.4 ms of
    every other `cosim simulate`): a ring all-reduce leaves it unloaded, a multidim one loads it."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\nimport numpy as np\nimport netmodel\nfrom collectives import CommModel, CommParams\n"
            "topo = netmodel.build_topology(netmodel.load_cluster('dgx-a100'))\n"
            "cm = CommModel(topo, CommParams.for_cluster(topo.spec))\n"
            "gpus = np.arange(16, dtype=np.int64)\n"
            "cm.allreduce(gpus, 64e6, algorithm='ring')\n"
            "print('collectives.multidim' in sys.modules)\n"
            "cm.allreduce(gpus, 64e6, algorithm='multidim')\n"
            "print('collectives.multidim' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]
