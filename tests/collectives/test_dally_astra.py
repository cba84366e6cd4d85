"""ASTRA-sim 1.0 collective plan and link semantics (`collectives.multidim.astra_stages`),
hand-derived on the `dally-3tier` preset (the Dally authors' inputs, notes/dally.md §3.1):
FullyConnected(4) × Ring(2) in the machine (0 / 500 ns, 600 GB/s per link), a Ring of machines
(5 µs, 200 GB/s), a Switch of racks (50 µs per link, 2 links per hop, 400 GB/s), endpoint delay
ε = 10 ns per step; ``collective-optimization: baseline`` → one whole all-reduce per dimension
(2(u−1) ring steps of S/u); link-bandwidth read as GiB/s; links-count scalars Ring(2) → ×4,
FC(4) → ×1 (4 // 3), Switch(2) → ×2.
"""

from __future__ import annotations

import numpy as np
import pytest

import netmodel
from collectives import CommModel
from collectives.multidim import ASTRA_GIB, AstraSystem, astra_stages, links_scalar, multidim_cost
from collectives.placement import placement_gpus
from collectives.shape import placement_shape

S = 64e6
EPS = 1e-8
G = 2**30 / 1e9


@pytest.fixture(scope="module")
def dally():
    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    return topo, CommModel(topo)


def stages(dally, shape, system=AstraSystem(), nbytes=S):
    topo, cm = dally
    sh = placement_shape(topo, placement_gpus(topo, shape))
    levels = multidim_cost(topo, sh, "allreduce", cm.params)[3]
    return astra_stages(levels, int(sh.counts.min()), nbytes, system)


def test_links_scalar_follows_artist_sim_links_count():
    assert [links_scalar("ring", u) for u in (1, 2, 3, 4, 5, 8)] == [1, 4, 4, 4, 6, 8]
    assert [links_scalar("fully-connected", u) for u in (2, 3, 4, 8)] == [2, 1, 1, 1]
    assert [links_scalar("switch", u) for u in (2, 4, 16)] == [2, 4, 16]
    assert ASTRA_GIB == pytest.approx(1.073741824)


def test_baseline_machine_rack_network_closed_forms(dally):
    fc = 2 * 3 * (EPS + (S / 4) / (600e9 * G))                          # FC(4), scalar 1
    secs, q = stages(dally, "8")
    assert q.tolist() == [0, 1]
    assert secs == pytest.approx([fc, 2 * (0.5e-6 + EPS + (S / 2) / (600e9 * G * 4))])
    secs, q = stages(dally, "4,4")
    assert secs == pytest.approx([fc, 2 * (5e-6 + EPS + (S / 2) / (200e9 * G * 4))])
    secs, q = stages(dally, "4/4")
    assert secs == pytest.approx([fc, 2 * (100e-6 + EPS + (S / 2) / (400e9 * G * 2))])
    secs, q = stages(dally, "2,2,2,2")                                   # FC(2) ×2, Ring(4) ×4
    assert secs == pytest.approx([2 * (EPS + (S / 2) / (600e9 * G * 2)),
                                  2 * 3 * (5e-6 + EPS + (S / 4) / (200e9 * G * 4))])


def test_switches_off_and_local_bw_aware_is_the_hierarchical_multidim(dally):
    topo, cm = dally
    plain = AstraSystem(gib=False, links=False)
    secs, _ = stages(dally, "8", plain)
    assert secs == pytest.approx([2 * 3 * (EPS + (S / 4) / 600e9), 2 * (0.5e-6 + EPS + (S / 2) / 600e9)])
    hier = AstraSystem(optimization="localBWAware", gib=False, links=False)
    for shape in ("8", "4,4", "4/4", "2,2/2,2"):
        a, qa = stages(dally, shape, hier)
        b, qb = cm.multidim_stages(placement_gpus(topo, shape), S)
        assert a == pytest.approx(b) and qa.tolist() == qb.tolist(), shape
    # ASTRA-sim's scalars make the hierarchical and baseline forms cost the same bytes on the
    # machine (1.5/600 + 1/2400 = 1.75/600 per byte) but not their step latencies' order
    base = stages(dally, "8", AstraSystem(gib=False))[0].sum()
    assert base == pytest.approx(cm.allreduce(placement_gpus(topo, "8"), S, np.array([S])).seconds)


def test_astra_stages_monotone_and_bad_option(dally):
    small = stages(dally, "4/4", nbytes=1e3)[0].sum()
    big = stages(dally, "4/4", nbytes=1e8)[0].sum()
    assert 200e-6 < small < big
    assert stages(dally, "8")[0].sum() < stages(dally, "4,4")[0].sum() < stages(dally, "4/4")[0].sum()
    from cosim.errors import InputError

    with pytest.raises(InputError, match="collective-optimization"):
        AstraSystem(optimization="fastest")


def test_astra_ring_stages_hand_derived(dally):
    """ASTRA-sim 1.0's ring phase on u units: (2u−1) hand-offs of ε = 10 ns, 2(u−1) messages of
    ⌊S/u⌋ bytes at ⌊λ + msg/B⌋ ns, (u−1) reductions of 3·⌊msg / 500000⌋ ns. Machine ``8``:
    FC(4) B = 600·GiB·1 = 644.245 B/ns, Ring(2) B = 2576.98 B/ns, λ 0 / 500 ns.
    S = 1728: FC msg 432 → ⌊0.67⌋ = 0: 7·10 = 70 ns; Ring msg 864 → ⌊500.34⌋ = 500:
    3·10 + 2·500 = 1030 ns (α–β form: 64.02 and 1020.67 ns).
    S = 4,096,000: FC msg 1,024,000 → ⌊1589.45⌋ = 1589, memory 3·2: 70 + 6·1589 + 3·6 = 9622 ns;
    Ring msg 2,048,000 → ⌊1294.73⌋ = 1294, memory 3·4: 30 + 2·1294 + 12 = 2630 ns.
    Network ``4/4``: the Switch(2) hop is 2 links of 50 µs, B = 400·GiB·2: S = 1728 →
    ⌊100001.006⌋ → 30 + 2·100001 = 200032 ns. Rack ``4,4``: Ring(2) of machines, 5 µs,
    B = 200·GiB·4: S = 4,096,000 → ⌊7384.2⌋ → 30 + 2·7384 + 12 = 14810 ns."""
    from collectives.layers import astra_ring_stages

    topo, cm = dally

    def ring(shape, nbytes):
        sh = placement_shape(topo, placement_gpus(topo, shape))
        levels = multidim_cost(topo, sh, "allreduce", cm.params)[3]
        return astra_ring_stages(levels, nbytes, params=cm.params)

    secs, q = ring("8", 1728)
    assert q.tolist() == [0, 1] and (secs * 1e9) == pytest.approx([70.0, 1030.0], abs=1e-6)
    assert (ring("8", 4_096_000)[0] * 1e9) == pytest.approx([9622.0, 2630.0], abs=1e-6)
    assert (ring("4/4", 1728)[0] * 1e9) == pytest.approx([70.0, 200032.0], abs=1e-6)
    assert (ring("4,4", 4_096_000)[0] * 1e9)[1] == pytest.approx(14810.0, abs=1e-6)
    ab = stages(dally, "8", nbytes=1728)[0] * 1e9
    assert ab == pytest.approx([64.02, 1020.67], abs=0.01)
    from cosim.errors import InputError

    sh = placement_shape(topo, placement_gpus(topo, "8"))
    levels = multidim_cost(topo, sh, "allreduce", cm.params)[3]
    with pytest.raises(InputError, match="baseline"):
        astra_ring_stages(levels, 1728, AstraSystem(optimization="localBWAware"), cm.params)
