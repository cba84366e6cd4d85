"""PAL: the L×V traversal on a hand-built variability/locality case, the bins, the seeded
variability model, the preemptive order, and round invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make
from policies.pal import kmeans_bins, lxv_place, variability_multipliers
from simcore.api import NEED_DURATION_ORACLE
from tests.policies.conftest import Job, build_arrays, build_view

# two nodes of 4 GPUs; the only fast GPUs (PM 1.0) are GPU 0 on node 0 and GPU 4 on node 1
PM = np.array([1.0, 1.2, 1.2, 1.2, 1.0, 1.2, 1.2, 1.2])


def _cost(cross_node_s):
    def it(g):
        return 1.0 if len({int(x) // 4 for x in g}) == 1 else cross_node_s
    return it


def test_lxv_prefers_locality_when_crossing_nodes_costs_more_than_the_slow_gpu():
    """A 2-GPU job. Bin 0 (PM 1.0) holds GPUs 0 and 4 only: its placement crosses nodes,
    predicted 1.5 s × 1.0 = 1.5. Bins ≤ 1: one node, 1.0 s × 1.2 = 1.2 — PAL takes the local,
    slower pair."""
    c = build_arrays(2, 4, 1)
    bins = kmeans_bins(PM, 4)
    g = lxv_place(c, np.ones(8, bool), 2, PM, bins, _cost(1.5))
    assert len({int(x) // 4 for x in g}) == 1 and PM[g].max() == pytest.approx(1.2)


def test_lxv_prefers_fast_gpus_when_crossing_nodes_is_cheap():
    """Same case, crossing nodes costs 1.1 s: 1.1 × 1.0 = 1.1 < 1.2 — PAL takes the two fast
    GPUs across nodes (0 and 4)."""
    c = build_arrays(2, 4, 1)
    g = lxv_place(c, np.ones(8, bool), 2, PM, kmeans_bins(PM, 4), _cost(1.1))
    assert g.tolist() == [0, 4]


def test_lxv_with_no_variability_is_plain_consolidation():
    c = build_arrays(2, 4, 1)
    avail = np.ones(8, bool)
    avail[[0, 1, 2]] = False
    ones = np.ones(8)
    g = lxv_place(c, avail, 3, ones, kmeans_bins(ones, 4), _cost(2.0))
    assert len({int(x) // 4 for x in g}) == 1  # node 1, the only one holding 3 free GPUs
    assert lxv_place(c, avail, 6, ones, kmeans_bins(ones, 4), _cost(2.0)) is None


def test_kmeans_bins_split_at_the_gap_best_first():
    assert kmeans_bins(np.array([1.21, 1.0, 1.2, 1.01]), 2).tolist() == [1, 0, 1, 0]
    assert kmeans_bins(np.ones(5), 4).tolist() == [0] * 5


def test_seeded_variability_within_the_spreads_and_correlated_across_classes():
    pm = variability_multipliers(1000, (0.22, 0.03), seed=7)
    assert pm.shape == (2, 1000)
    assert pm.min() >= 1.0 and pm[0].max() < 1.22 and pm[1].max() < 1.03
    assert pm[0].max() > 1.2  # the range is used
    assert (np.argsort(pm[0]) == np.argsort(pm[1])).all()  # a slow GPU is slow for every class
    assert np.array_equal(pm, variability_multipliers(1000, (0.22, 0.03), seed=7))


def test_las_order_preempts_the_job_with_more_service():
    """4 GPUs, job 0 runs on all of them with 1e5 GPU-s attained; job 1 (4 GPUs, no service)
    waits: under LAS job 1 takes the GPUs, under FIFO job 0 keeps them."""
    jobs = [Job(gpus=4, submit=0.0, alloc=(0, 1, 2, 3), attained=1e5), Job(gpus=4, submit=10.0)]
    v = build_view(jobs, now=400.0, nodes=1, gpus_per_node=4, leaves=1)
    d = make("pal").decide(v, 400.0)
    assert 0 not in d.allocations and len(d.allocations[1].gpus) == 4
    d = make("pal", order="fifo").decide(v, 400.0)
    assert d.allocations[0].gpus == (0, 1, 2, 3) and 1 not in d.allocations
    assert NEED_DURATION_ORACLE in make("pal", order="srtf").needs and not make("pal").needs


def test_job_that_does_not_fit_leaves_its_turn_to_later_jobs():
    """8 GPUs; in LAS order a 6-GPU job, then an 8-GPU one (does not fit after it), then a 2-GPU one."""
    jobs = [Job(gpus=6, submit=0.0), Job(gpus=8, submit=1.0, attained=5.0), Job(gpus=2, submit=2.0, attained=9.0)]
    d = make("pal").decide(build_view(jobs, now=400.0, nodes=2, gpus_per_node=4, leaves=1), 400.0)
    assert sorted(d.allocations) == [0, 2]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_round_invariants(data):
    """No GPU twice, each job at its requested count, at most the cluster's GPUs, kept jobs keep their GPUs."""
    n = data.draw(st.integers(1, 10))
    jobs, held = [], set()
    for i in range(n):
        g = data.draw(st.sampled_from([1, 2, 3, 4, 8]))
        alloc = ()
        if g <= 4 and data.draw(st.booleans()):
            start = data.draw(st.sampled_from([0, 4, 8, 12]))
            cand = tuple(range(start, start + g))
            if not held & set(cand):
                alloc = cand
                held |= set(cand)
        jobs.append(Job(gpus=g, submit=data.draw(st.floats(0, 100)), alloc=alloc,
                        attained=data.draw(st.floats(0, 1e4)), model=data.draw(st.sampled_from(["resnet50", "bert"]))))
    pol = make("pal", order=data.draw(st.sampled_from(["las", "fifo"])), seed=data.draw(st.integers(0, 3)),
               model_classes=("resnet*:0", "*:1"), variability_spreads=(0.2, 0.05))
    v = build_view(jobs, now=500.0, nodes=4, gpus_per_node=4, leaves=2,
                   iteration_time=lambda j, g, b: 1.0 + 0.3 * (len({int(x) // 4 for x in g}) - 1))
    d = pol.decide(v, 500.0)
    used = [g for a in d.allocations.values() for g in a.gpus]
    assert len(used) == len(set(used)) and len(used) <= 16
    for j, a in d.allocations.items():
        assert len(a.gpus) == jobs[j].gpus
        if jobs[j].alloc:  # a running job that runs on does not move
            assert tuple(a.gpus) == jobs[j].alloc


def test_config_checks():
    from cosim.errors import InputError

    for bad in (dict(order="sjf"), dict(num_bins=0), dict(model_classes=("resnet*",)),
                dict(model_classes=("*:3",)), dict(variability_spreads=())):
        with pytest.raises(InputError):
            make("pal", **bad)


def _lxv_reference(c, avail, demand, pm, bins, cost, gpu_type=-1):
    """The L×V traversal as PAL states it, one `placement.place` per (bin, type) — the
    specification `lxv_place` (one numba call for the candidates) must reproduce exactly."""
    from policies import placement as P

    best, best_key = None, None
    types = [gpu_type] if gpu_type >= 0 else (list(range(len(c.gpu_type_names))) if len(c.gpu_type_names) > 1
                                              else [-1])
    seen = set()
    for b in range(int(bins.max()) + 1 if bins.size else 0):
        pool = avail & (bins <= b)
        if np.count_nonzero(pool) < demand:
            continue
        for t in types:
            g = P.place(c, pool, demand, gpu_type=t, strategy="consolidate")
            if g is None or g.tobytes() in seen:
                continue
            seen.add(g.tobytes())
            it = float(cost(g))
            if not np.isfinite(it):
                continue
            key = (it * float(pm[g].max()), b, t)
            if best_key is None or key < best_key:
                best, best_key = g, key
    return best


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_lxv_place_equals_the_per_bin_per_type_search(data):
    """Random clusters (1-3 types, per node or mixed within nodes, 1-4 leaves, 1-4 pods), free masks, multipliers, bin counts, demands,
    type requests and locality costs (some placements infeasible): the same placement as the
    reference search."""
    nodes = data.draw(st.integers(2, 8))
    gpn = data.draw(st.sampled_from([2, 4]))
    ntypes = data.draw(st.integers(1, 3))
    g = nodes * gpn
    seed = data.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    if data.draw(st.booleans()):  # one type per node
        node_types = data.draw(st.lists(st.integers(0, ntypes - 1), min_size=nodes, max_size=nodes))
        node_types[:ntypes] = list(range(ntypes))[:nodes]
        gpu_types = np.repeat(node_types, gpn)
    else:  # nodes of mixed types, some type on few nodes (the kernel's per-type node rows differ in length)
        gpu_types = rng.integers(0, ntypes, g)
        gpu_types[:ntypes] = np.arange(ntypes)
    leaves = data.draw(st.integers(1, min(4, nodes)))
    c = build_arrays(nodes, gpn, leaves=leaves, pods=data.draw(st.integers(1, leaves)), gpu_types=gpu_types)
    avail = rng.random(g) < data.draw(st.floats(0.2, 1.0))
    pm = 1.0 + np.round(rng.random(g) * data.draw(st.floats(0.0, 0.5)), 3)
    bins = kmeans_bins(pm, data.draw(st.integers(1, 5)))
    demand = data.draw(st.integers(1, g))
    req = data.draw(st.integers(-1, ntypes - 1))
    cross = data.draw(st.floats(1.0, 1.3))

    def cost(gp):
        n = len({int(x) // gpn for x in gp})
        return np.inf if n > 3 else 1.0 + (n - 1) * (cross - 1.0) + 0.01 * int(c.gpu_type[gp[0]])

    got = lxv_place(c, avail, demand, pm, bins, cost, req)
    want = _lxv_reference(c, avail, demand, pm, bins, cost, req)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.tolist() == want.tolist()


def _random_view(seed: int):
    """A seeded view: 6-12 nodes of 4 GPUs in 1-3 leaves, 1-3 GPU types (mixed within nodes
    for some seeds), 10-40 jobs of 1-8 GPUs (some with a type requirement, some running on
    GPUs of one node), and an iteration time that grows with the nodes spanned and (but for
    every third seed) the type."""
    rng = np.random.default_rng(seed)
    nodes, gpn = int(rng.integers(6, 13)), 4
    g = nodes * gpn
    ntypes = int(rng.integers(1, 4))
    if seed % 2:
        gpu_types = rng.integers(0, ntypes, g)
    else:
        gpu_types = np.repeat(rng.integers(0, ntypes, nodes), gpn)
    gpu_types[:ntypes] = np.arange(ntypes)
    free = np.ones(g, bool)
    jobs = []
    for _ in range(int(rng.integers(10, 41))):
        n = int(rng.choice([1, 2, 3, 4, 8]))
        alloc = ()
        if n <= gpn and rng.random() < 0.4:
            node = int(rng.integers(nodes))
            ids = [x for x in range(node * gpn, node * gpn + gpn) if free[x]][:n]
            if len(ids) == n:
                alloc = tuple(ids)
                free[ids] = False
        req = int(rng.integers(ntypes)) if ntypes > 1 and not alloc and rng.random() < 0.3 else -1
        jobs.append(Job(gpus=n, submit=float(rng.uniform(0, 100)), alloc=alloc, type_req=req,
                        attained=float(rng.uniform(0, 1e4)), model=str(rng.choice(["resnet50", "bert"]))))

    per_type = 0.1 if seed % 3 else 0.0  # 0: every type equally fast, ties broken by (bin, type)

    def it(j, gp, b):
        spanned = len({int(x) // gpn for x in gp})
        return 1.0 + 0.25 * (spanned - 1) + per_type * int(gpu_types[int(gp[0])]) + 0.01 * (j % 3)

    leaves = int(rng.integers(1, 4))
    return build_view(jobs, now=500.0, nodes=nodes, gpus_per_node=gpn, leaves=leaves, gpu_types=gpu_types,
                      type_names=[f"t{i}" for i in range(ntypes)], iteration_time=it)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("params", [{}, {"order": "fifo", "num_bins": 2, "seed": 3},
                                    {"model_classes": ("resnet*:0", "*:1"), "variability_spreads": (0.2, 0.05)},
                                    {"variability": "none"}])
def test_decide_equals_the_reference_search_on_seeded_views(seed, params, monkeypatch):
    """A whole round (keeps, preemptions, placements in order) is the one the specification
    search (`_lxv_reference`, one `placement.place` per bin and type) gives: same jobs, same
    GPUs, same order; on the first round and on a second one of the same policy."""
    import policies.pal as pal_module

    view = _random_view(seed)
    got = make("pal", **params)
    want = make("pal", **params)
    fast = [[(j, a.gpus) for j, a in got.decide(view, t).allocations.items()] for t in (500.0, 860.0)]

    def reference(c, avail, demand, pm, bins, cost, gpu_type=-1, tables=None, order=None):
        if demand <= 0 or np.count_nonzero(avail) < demand or (len(c.gpu_type_names) <= 1 and gpu_type > 0):
            return None
        return _lxv_reference(c, np.asarray(avail, bool), demand, pm, bins, cost, gpu_type)

    monkeypatch.setattr(pal_module, "lxv_place", reference)
    slow = [[(j, a.gpus) for j, a in want.decide(view, t).allocations.items()] for t in (500.0, 860.0)]
    assert fast == slow
    assert fast[0]  # the round places something
