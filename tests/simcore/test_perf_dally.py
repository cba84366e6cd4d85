"""`--perf astra` (simcore.perf_dally): the Dally authors' ratio model on the engine's path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import netmodel
from collectives import CommModel, CommParams
from collectives.placement import placement_gpus
from simcore.perf_backends import make_perf


@pytest.fixture(scope="module")
def perf(shared_data):
    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    return make_perf("astra", topo, None, CommModel(topo, CommParams.for_cluster(topo.spec)), None,
                     contention=False), topo


def test_table_i_tiers_and_model_order(perf):
    p, topo = perf
    r = {m: [p.ratio(m, placement_gpus(topo, s)) for s in ("8", "4,4", "4/4")]
         for m in ("vgg11", "alexnet", "mobilenet_v3", "resnet18", "resnet50", "bert_large")}
    for m, (mc, rk, nw) in r.items():
        assert mc <= rk + 1e-9 <= nw + 2e-9, m
    net = [r[m][2] for m in ("mobilenet_v3", "resnet18", "bert_large", "alexnet", "resnet50", "vgg11")]
    assert all(a > b for a, b in itertools.pairwise(net))  # Table I's network-tier order
    assert r["mobilenet_v3"][1] == pytest.approx(9.40, rel=0.05)  # Table I: 940 %
    assert r["resnet50"][0] == pytest.approx(0.12, abs=0.01)  # Table I: 12 %


def test_phases_and_reference(perf):
    p, topo = perf
    g = placement_gpus(topo, "4/4")
    ph = p.phases("resnet18", g, 256)
    assert ph.compute_s == 1.0 and ph.solo_s == pytest.approx(1.0 + p.ratio("resnet18", g))
    assert ph.link_ids.size == 0  # no contention, as in the paper
    # the trace time is compute: the reference of any placement is 1 (paper's convention)
    assert p.solo_iter_s("resnet18", g, 256) == 1.0
    assert p.phases("resnet18", np.array([5]), 32).solo_s == 1.0
    assert p.missing("gpt2", 0) is not None and p.missing("resnet50", 0) is None
