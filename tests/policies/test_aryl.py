"""Aryl (EuroSys'22): the paper's worked examples (aryl.md §2.2-2.4) and reclaim properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.aryl import knapsack, reclaim

# Figure 5 as the notes reconstruct it from Table 1 (8-GPU servers): a on 1+2 (half each),
# b alone on 3, c 80 % on 4 and 20 % on 5, d 80 % on 6 and 20 % on 5. GPU counts per server.
FIG5 = {0: {1: 4, 2: 4}, 1: {3: 8}, 2: {4: 8, 5: 2}, 3: {6: 8, 5: 2}}
SERVERS = [1, 2, 3, 4, 5, 6]


def test_table1_costs_on_fig5():
    assert reclaim.server_cost(FIG5, SERVERS, "job_count") == {1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 1}
    gf = reclaim.server_cost(FIG5, SERVERS, "gpu_fraction")
    assert [round(gf[s], 2) for s in SERVERS] == [0.5, 0.5, 1.0, 0.8, 0.4, 0.8]
    sf = reclaim.server_cost(FIG5, SERVERS, "server_fraction")
    assert [sf[s] for s in SERVERS] == [0.5, 0.5, 1.0, 0.5, 1.0, 0.5]


def test_greedy_on_fig5_returns_1_2_with_one_preemption():
    for tb in ("gpu_fraction", "server_id"):
        chosen = reclaim.greedy_reclaim(FIG5, SERVERS, 2, tie_break=tb)
        assert sorted(chosen) == [1, 2]
        assert len(reclaim.preempted_jobs(FIG5, chosen)) == 1
    assert reclaim.exhaustive_reclaim(FIG5, SERVERS, 2) == ([1, 2], 1)
    # the rejected GPU-fraction cost would pick server 5 first (cost 0.4), preempting 2 jobs
    gf = reclaim.server_cost(FIG5, SERVERS, "gpu_fraction")
    assert min(SERVERS, key=lambda s: gf[s]) == 5 and len(reclaim.preempted_jobs(FIG5, [5])) == 2
    # plain job-count knapsack may pick {3, 4}: 2 preemptions
    assert len(reclaim.preempted_jobs(FIG5, [3, 4])) == 2


def test_static_no_update_is_worse_on_fig5():
    # without UPDATECOST, after server 1 the costs stay 0.5 for 2, 4, 6: id order still gives 2
    assert sorted(reclaim.greedy_reclaim(FIG5, SERVERS, 2, update=False)) == [1, 2]
    # but on 3 servers the static order picks {1, 2, 4} and the updated one {1, 2, 4} too: both 2 jobs
    assert len(reclaim.preempted_jobs(FIG5, reclaim.greedy_reclaim(FIG5, SERVERS, 3))) == 2


def test_baselines_random_scf():
    scf = reclaim.scf_reclaim(FIG5, SERVERS, 2)
    assert scf == [1, 2]  # fewest jobs (1 each), lowest ids
    r = reclaim.random_reclaim(SERVERS, 3, seed=1)
    assert len(set(r)) == 3 and set(r) <= set(SERVERS)
    assert r == reclaim.random_reclaim(SERVERS, 3, seed=1)


def test_table3_and_table4_arithmetic():
    # Table 2: A w 2..6, 50 s at w_max -> work 300; B 2..6, 20 s -> work 120; 8 workers
    wmax = (6, 6)
    rows = {(6, 2): (50, 53.33), (2, 6): (63.33, 20), (4, 4): (60, 30)}
    for alloc, (ja, jb) in rows.items():
        a, b = knapsack.two_job_jct((300, 120), alloc, wmax)
        assert (round(a, 2), round(b, 2)) == (ja, jb)
    avg = {k: sum(knapsack.two_job_jct((300, 120), k, wmax)) / 2 for k in rows}
    assert [round(avg[k], 2) for k in rows] == [51.67, 41.67, 45.0]
    assert round(avg[(6, 2)] / avg[(2, 6)] - 1, 2) == 0.24  # "24 %" worst to best
    # Table 4: A 2..3, 100 s at w_max -> work 300
    fa = knapsack.two_job_jct((300, 120), (3, 5), (3, 6))
    fb = knapsack.two_job_jct((300, 120), (2, 6), (3, 6))
    assert (round(fa[0], 2), round(fa[1], 2), round(sum(fa) / 2, 2)) == (100, 24, 62)
    assert (round(fb[0], 2), round(fb[1], 2), round(sum(fb) / 2, 2)) == (106.67, 20, 63.33)


def test_fig6_item_values_and_weights():
    # Table 4 with A at 2 GPUs/worker (T^max = 300/2 = 150) and B at 1 GPU/worker (120/2 = 60)
    wa, va = knapsack.mckp_items(150, 2, 3, gpus_per_worker=2)
    assert (wa, va) == ([2], [50.0])
    wb, vb = knapsack.mckp_items(60, 2, 6, gpus_per_worker=1)
    assert wb == [1, 2, 3, 4] and [round(v, 6) for v in vb] == [20, 30, 36, 40]
    assert knapsack.mckp_items(150, 2, 3, 2, literal_weights=True)[0] == [6]
    assert knapsack.mckp_items(60, 2, 6, 1, literal_weights=True)[0] == [3, 4, 5, 6]


def test_mckp_on_table4_gives_a3_b5():
    # 1 GPU per worker, 8 workers: phase 1 gives A = B = 2, the knapsack gets 4
    groups = [knapsack.mckp_items(150, 2, 3), knapsack.mckp_items(60, 2, 6)]
    extra = knapsack.allocate_flexible(groups, 4)
    assert extra == [1, 3]  # value 50 + 36 = 86 > 40 of B + 4
    jct = knapsack.two_job_jct((300, 120), (2 + extra[0], 2 + extra[1]), (3, 6))
    assert round(sum(jct) / 2, 2) == 62.0


def test_mckp_on_table2_is_not_optimal():
    groups = [knapsack.mckp_items(150, 2, 6), knapsack.mckp_items(60, 2, 6)]
    assert knapsack.allocate_flexible(groups, 4) == [3, 1]  # A = 5, B = 3 (value 110); the optimum is B = 6


def test_generalised_value_equals_linear_form():
    t = [60 * 2 / (2 + w) for w in range(5)]
    w, v = knapsack.generalised_items(t, 2)
    assert w == [1, 2, 3, 4] and np.allclose(v, knapsack.mckp_items(60, 2, 6)[1])


def test_imperfect_scaling_factor():
    assert knapsack.imperfect_factor(4, 2, 6) == 1.0  # midpoint 4
    assert knapsack.imperfect_factor(6, 2, 6) == pytest.approx(0.8)
    assert knapsack.imperfect_factor(6, 2, 6, form="compounding") == pytest.approx(0.81)


@st.composite
def hostings(draw, max_servers=8):
    n = draw(st.integers(2, max_servers))
    servers = list(range(n))
    jobs = draw(st.integers(0, 8))
    host = {}
    for j in range(jobs):
        span = draw(st.lists(st.sampled_from(servers), min_size=1, max_size=3, unique=True))
        host[j] = {s: draw(st.integers(1, 8)) for s in span}
    return host, servers


@settings(max_examples=150, deadline=None)
@given(hostings())
def test_nr1_is_brute_force(hs):
    host, servers = hs
    g = reclaim.greedy_reclaim(host, servers, 1)
    assert len(reclaim.preempted_jobs(host, g)) == reclaim.exhaustive_reclaim(host, servers, 1)[1]


@settings(max_examples=150, deadline=None)
@given(hostings(), st.data())
def test_greedy_never_beats_optimum_and_returns_distinct(hs, data):
    host, servers = hs
    n_r = data.draw(st.integers(0, len(servers)))
    g = reclaim.greedy_reclaim(host, servers, n_r)
    assert len(g) == n_r == len(set(g)) and set(g) <= set(servers)
    assert len(reclaim.preempted_jobs(host, g)) >= reclaim.exhaustive_reclaim(host, servers, n_r)[1]


@settings(max_examples=200, deadline=None)
@given(hostings(max_servers=9), st.data())
def test_greedy_equals_exhaustive_when_jobs_are_single_server(hs, data):
    """With every job on one server (|S_j| = 1, the Basic scenario's common case) the cost is the
    job count and the greedy is exact for every N_R < 10."""
    host, servers = hs
    host = {j: {min(w): w[min(w)]} for j, w in host.items()}
    n_r = data.draw(st.integers(0, len(servers)))
    g = reclaim.greedy_reclaim(host, servers, n_r)
    assert len(reclaim.preempted_jobs(host, g)) == reclaim.exhaustive_reclaim(host, servers, n_r)[1]


# ---- the policy through the engine ---------------------------------------------------------

class _Cluster:
    """The arrays `reclaim_servers` reads: 4 nodes of 8 GPUs."""

    def __init__(self, owner):
        self.gpu_owner = np.asarray(owner, np.int32)
        self.node_first_gpu = np.arange(0, 32, 8, dtype=np.int32)
        self.node_num_gpus = np.full(4, 8, np.int32)


def test_reclaim_order_idle_then_flexible_only_then_algorithm1():
    from policies.aryl import reclaim_servers

    owner = [-1] * 32
    owner[0:4] = [0] * 4        # node 0: job 0's base (preemptible)
    owner[8:12] = [0] * 4       # node 1: job 0's flexible workers only
    owner[16:24] = [1] * 8      # node 2: job 1 (inelastic)
    host = {0: {0: 4}, 1: {2: 8}}  # node 3 idle
    cand = np.arange(4)
    c = _Cluster(owner)
    assert reclaim_servers(host, cand, [1], c, 1) == [3]
    assert reclaim_servers(host, cand, [1], c, 2) == [3, 1]
    assert sorted(reclaim_servers(host, cand, [1], c, 3)) == [0, 1, 3]  # tie 1 vs 1: lower GPU fraction... id
    assert len(reclaim.preempted_jobs(host, reclaim_servers(host, cand, [1], c, 3))) == 1


def _toy_trace(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 40
    g = rng.choice([1, 2, 4, 8], n).astype("int32")
    df = pd.DataFrame(dict(job_id=[f"j{i}" for i in range(n)], submit_time=np.sort(rng.uniform(0, 4 * 3600, n)),
                           num_gpus=g, duration=rng.uniform(300, 7200, n), model="resnet50",
                           min_gpus=np.where(np.arange(n) % 6 == 0, np.maximum(1, g // 2), g).astype("int32"),
                           max_gpus=g, gpu_type=np.where(np.arange(n) % 3 == 0, None, "V100-32GB")))
    p = tmp_path / "toy.parquet"
    df.to_parquet(p)
    return p


@pytest.mark.parametrize("params", [{}, {"loaning": False, "scaling": "none", "order": "fifo"},
                                    {"scaling": "gandiva"}, {"reclaim": "random"}, {"special_placement": False},
                                    {"mix_types": True}, {"event_driven": False}])
def test_aryl_runs_through_the_engine(tmp_path, params):
    from experiments.runner import RunConfig, run

    cfg = RunConfig(trace=str(_toy_trace(tmp_path)), cluster="aryl-testbed", policies=("aryl",),
                    policy_params={"aryl": params}, contention=False, perf="linear", costs="aryl",
                    load_series="diurnal:0.05", write_decisions=True)
    r = run(cfg, None)
    jobs, dec = r.jobs["aryl"], r.decisions["aryl"]
    assert jobs["finished"].all()
    assert "migrate" not in set(dec["action"])  # flexible workers change monotonically: resizes only
    assert set(r.reclaims["aryl"]["answered_by"]) == {"aryl"}
    gpus = [int(x) for s in dec.loc[dec["action"].isin(["start", "resize", "resume"]), "gpus"] for x in s.split(",")]
    if params.get("loaning", True) is False:
        assert max(gpus) < 32  # the 4 inference servers (GPUs 32-63) are never used
    else:
        assert max(gpus) >= 32
    if params.get("scaling") == "none":
        assert "resize" not in set(dec["action"])


# ---- heterogeneous jobs last, Aryl+TunedJobs, imperfect scaling ----------

def _mixed_view(jobs):
    from tests.policies.conftest import build_view

    # node 0: type 0 (training V100), node 1: type 1 (T4); no inference group needed here
    return build_view(jobs, now=0.0, nodes=2, gpus_per_node=4, leaves=1, gpu_types=[0] * 4 + [1] * 4)


@pytest.mark.parametrize("hetero_last", [True, False])
def test_heterogeneous_capable_jobs_are_placed_last(hetero_last):
    """A short type-agnostic job ahead in SJF order must not take the only V100 server a longer
    V100-only job can use (§5.3 'heterogeneous jobs lastly on the remaining resources')."""
    from policies import make
    from tests.policies.conftest import Job

    jobs = [Job(gpus=4, type_req=0, remaining=1000.0, duration=1000.0),
            Job(gpus=4, type_req=-1, remaining=100.0, duration=100.0)]
    pol = make("aryl", mix_types=True, hetero_last=hetero_last)
    d = pol.decide(_mixed_view(jobs), 0.0)
    got = {j: a.gpus for j, a in d.allocations.items() if a.gpus}
    if hetero_last:
        assert got == {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}
    else:  # SJF alone gives the agnostic job the first best fit, the V100 job waits
        assert got == {1: (0, 1, 2, 3)}


def test_batch_tuning_pollux_sets_best_batch(monkeypatch):
    """batch_tuning=pollux: an elastic job's allocation carries policies.pollux.best_batch's
    batch for its GPUs; inelastic jobs and batch_tuning=none keep the trace's batch."""
    import policies.pollux as pollux_mod
    from policies import make
    from tests.policies.conftest import Job

    seen = []

    def fake_best(view, j, gpus):
        seen.append((j, len(gpus)))
        return 64 * len(gpus)

    monkeypatch.setattr(pollux_mod, "best_batch", fake_best)
    jobs = [Job(gpus=4, min_gpus=2, max_gpus=4, type_req=0, remaining=500.0, duration=500.0),
            Job(gpus=2, type_req=0, remaining=100.0, duration=100.0)]
    d = make("aryl", batch_tuning="pollux").decide(_mixed_view(jobs), 0.0)
    assert d.allocations[0].batch_size == 64 * len(d.allocations[0].gpus) and seen == [(0, len(d.allocations[0].gpus))]
    assert d.allocations[1].batch_size is None
    d2 = make("aryl").decide(_mixed_view(jobs), 0.0)
    assert d2.allocations[0].batch_size is None


def test_imperfect_scaling_makes_mckp_stop_at_the_useful_size():
    """Under the backend's scaling loss the MCKP values are T(w_min) − T(w_min + w) on that
    curve: with loss 0.3 per GPU past the midpoint of [4, 8] (6), 7 GPUs are slower than 6,
    so an idle cluster gives the elastic job 6, not 8 (linear: 8)."""
    import dataclasses

    from policies import make
    from simcore.perf_backends import LinearPerf
    from tests.policies.conftest import Job

    perf = LinearPerf.__new__(LinearPerf)
    perf.imperfect_loss, perf.imperfect_form = 0.3, "additive"

    class _WhatIf:  # the what-if API's scaling members (`simcore.whatif.WhatIf`), on the linear backend's curve
        per_job_scaling = True
        scaling_factor = staticmethod(perf.scaling_factor)

    jobs = [Job(gpus=8, min_gpus=4, max_gpus=8, type_req=0, remaining=800.0, duration=800.0)]
    view = _mixed_view(jobs)
    view = dataclasses.replace(view, cluster=dataclasses.replace(view.cluster, gpu_type=np.zeros(8, np.int16)))
    assert len(make("aryl").decide(view, 0.0).allocations[0].gpus) == 8
    d = make("aryl").decide(dataclasses.replace(view, whatif=_WhatIf()), 0.0)
    assert len(d.allocations[0].gpus) == 6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0.25, 0.31, 0.39, 1.0]), st.floats(1e-3, 10.0)), min_size=1,
                max_size=40))
def test_median_is_numpys_bit_for_bit(xs):
    """The knapsack capacity's median inference speed (`knapsack.median`) is `np.median`'s value,
    bit for bit, on repeated and distinct speeds, odd and even counts."""
    x = np.array(xs, float)
    assert knapsack.median(x) == float(np.median(x)) and isinstance(knapsack.median(x), float)
    assert knapsack.median(x[:1]) == xs[0] and knapsack.median(np.ones(4)) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(1.0, 1e6), st.integers(1, 32), st.integers(0, 32)), min_size=0, max_size=12),
       st.booleans())
def test_flat_items_equal_per_group_items(groups, literal):
    t = np.array([g[0] for g in groups], float)
    wmin = np.array([g[1] for g in groups], np.int64)
    span = np.array([g[2] for g in groups], np.int64)
    w, v, offs = knapsack.mckp_items_flat(t, wmin, span, literal)
    for i, (tm, lo, s) in enumerate(groups):
        ww, vv = knapsack.mckp_items(tm, lo, lo + s, 1, literal)
        assert w[offs[i]:offs[i + 1]].tolist() == ww and v[offs[i]:offs[i + 1]].tolist() == vv  # bit-equal


def test_event_driven_option():
    from policies import make

    assert make("aryl").event_driven is True
    assert make("aryl", event_driven=False).event_driven is False


def test_imperfect_scaling_run_never_uses_a_dead_size(tmp_path):
    """linear:imperfect_loss=1: one GPU past the midpoint leaves no throughput, so the engine
    cannot run it; the policy (which reads the curve) must never ask for it, and every job ends."""
    from experiments.runner import RunConfig, run

    import pandas as pd

    trace = _toy_trace(tmp_path)
    cfg = RunConfig(trace=str(trace), cluster="aryl-testbed", policies=("aryl",),
                    policy_params={"aryl": {}}, contention=False, perf="linear:imperfect_loss=1.0", costs="aryl",
                    load_series="diurnal:0.05", write_decisions=True)
    r = run(cfg, None)
    jobs, dec = r.jobs["aryl"], r.decisions["aryl"]
    assert jobs["finished"].all()
    df = pd.read_parquet(trace)
    rng = {str(a): (int(lo), int(hi)) for a, lo, hi in zip(df["job_id"], df["min_gpus"], df["max_gpus"])}
    sizes = [(rng[str(j)], len(str(g).split(","))) for j, g in zip(dec["job_id"], dec["gpus"])
             if isinstance(g, str) and g]
    assert any(hi > lo for (lo, hi), _ in sizes)  # elastic jobs ran
    assert all(n <= -(-(lo + hi) // 2) for (lo, hi), n in sizes if hi > lo)


@pytest.mark.parametrize("base_training", [True, False])
def test_heterogeneous_elastic_base_goes_to_training_servers(base_training):
    """§6: a heterogeneous-capable elastic job's base workers go to training servers first (false:
    to on-loan servers like any elastic job under special placement)."""
    import dataclasses

    from policies import make
    from tests.policies.conftest import Job

    view = _mixed_view([Job(gpus=4, min_gpus=2, max_gpus=4, type_req=-1, remaining=100.0, duration=100.0),
                        Job(gpus=4, type_req=0, remaining=50.0, duration=50.0, state=None, alloc=(0, 1))])
    cl = dataclasses.replace(view.cluster, node_group=np.array([0, 1], np.int8),
                             node_group_names=("training", "inference"))
    view = dataclasses.replace(view, cluster=cl)
    pol = make("aryl", mix_types=True, hetero_base_training=base_training)
    pol.decide(view, 0.0)
    base = set(pol.base[0])
    assert len(base) == 2 and (base <= {2, 3} if base_training else base <= {4, 5, 6, 7})


@pytest.mark.parametrize("hetero_jobs", ["agnostic", "vc"])
def test_hetero_jobs_vc_keeps_other_agnostic_jobs_single_type(hetero_jobs):
    """hetero_jobs=vc: only type-agnostic jobs of virtual cluster "hetero" may span GPU types (the
    Advanced scenario's 10 %); another type-agnostic job keeps one GPU type and is not placed last.
    2 V100 + 4 T4 free: a 4-GPU agnostic job fits only as a mixed gang or on the 4 T4s."""
    import dataclasses

    from policies import make
    from tests.policies.conftest import Job

    jobs = [Job(gpus=2, type_req=0, alloc=(0, 1)),  # two of the V100s busy
            Job(gpus=4, type_req=-1, remaining=100.0, duration=100.0),  # plain type-agnostic
            Job(gpus=4, type_req=-1, remaining=50.0, duration=50.0, submit=1.0)]  # in vc "hetero", shorter
    view = _mixed_view(jobs)
    view = dataclasses.replace(view, jobs=dataclasses.replace(view.jobs, vc=np.array(["", "", "hetero"], object)))
    d = make("aryl", mix_types=True, hetero_jobs=hetero_jobs).decide(view, 0.0)
    got = {j: a.gpus for j, a in d.allocations.items() if a.gpus and j > 0}
    if hetero_jobs == "agnostic":  # both heterogeneous-capable: SJF order, job 2 first, as a best fit on the T4s
        assert got == {2: (4, 5, 6, 7)}
    else:  # job 1 is not heterogeneous-capable: placed first (job 2 last), single type = the 4 T4s
        assert got == {1: (4, 5, 6, 7)}


# ---- incremental bookkeeping (what keeps a paper-size round cheap, benchmarks/bench_aryl.py) --------

@pytest.mark.parametrize("params", [{}, {"mix_types": True}, {"event_driven": False}])
def test_incremental_state_matches_a_recount(tmp_path, monkeypatch, params):
    """The policy keeps per-job base/flexible GPU arrays and per-GPU base counts incrementally
    (revisiting only jobs whose GPU count changed); after every round they equal a recount from
    scratch: the held GPUs are the engine's, base ∪ flexible = held, `_base_n` = Σ base sets."""
    from experiments.runner import RunConfig, run
    from policies.aryl import Aryl

    checked = []
    decide = Aryl.decide

    def checking(self, view, now):
        d = decide(self, view, now)
        n = np.zeros(view.cluster.gpu_owner.shape[0], np.int64)
        for j, b in self.base.items():
            n[list(b)] += 1
            assert self._base_gpus[j].tolist() == list(b)
        assert np.array_equal(n, self._base_n)
        for j in view.running().tolist():
            held = tuple(sorted(int(x) for x in view.allocation_of(j)))
            assert self._held[j] == held and self._n_held[j] == len(held)
            assert self._flex[j].tolist() == [x for x in held if x not in self.base[j]]
        checked.append(len(self._held))
        return d

    monkeypatch.setattr(Aryl, "decide", checking)
    cfg = RunConfig(trace=str(_toy_trace(tmp_path)), cluster="aryl-testbed", policies=("aryl",),
                    policy_params={"aryl": params}, contention=False, perf="linear", costs="aryl",
                    load_series="diurnal:0.05", write_decisions=True)
    r = run(cfg, None)
    assert r.jobs["aryl"]["finished"].all()
    assert len(checked) > 10 and max(checked) > 0


class _SpeedWhatIf:
    """The what-if members the engine-speed knapsack reads: a T4 runs at `r` of a V100, a mixed
    gang at `eff` of its summed speed (the linear backend's hetero_efficiency)."""

    per_job_scaling = False

    def __init__(self, r: float, eff: float) -> None:
        self.r = r
        self.perf = type("P", (), {"hetero_efficiency": eff})()

    def iteration_time(self, j, n, gpu_type=None):
        return 1.0 / n if gpu_type == "V100" else 1.0 / (self.r * n)


def _loan_view(jobs, whatif):
    import dataclasses

    view = _mixed_view(jobs)
    cl = dataclasses.replace(view.cluster, node_group=np.array([0, 1], np.int8),
                             node_group_names=("training", "inference"), gpu_type_names=("V100", "T4"))
    return dataclasses.replace(view, cluster=cl, whatif=whatif)


@pytest.mark.parametrize("worker_value", ["engine", "paper"])
def test_engine_worker_value_adds_no_t4_worker_that_slows_a_mixed_gang(worker_value):
    """A heterogeneous-capable elastic job with its base of 2 on V100s: 2 more T4 workers at 1/4
    of a V100 in a mixed gang at 0.7 of the summed speed run at 0.7 × 2.5 = 1.75 V100s, slower
    than the base alone. worker_value=engine values that (T(2) − T(2 + w) < 0: no flexible
    worker); the paper's reading values every worker alike and weighs it at its base's V100, so
    the 4 free T4s (1 V100 at t4_ratio 1/4) buy one."""
    from policies import make
    from tests.policies.conftest import Job

    job = Job(gpus=4, min_gpus=2, max_gpus=4, type_req=-1, remaining=100.0, duration=100.0)
    blocker = Job(gpus=2, type_req=0, remaining=50.0, duration=50.0, alloc=(0, 1))
    view = _loan_view([job, blocker], _SpeedWhatIf(0.25, 0.7))
    pol = make("aryl", mix_types=True, worker_value=worker_value)
    got = pol.decide(view, 0.0).allocations[0].gpus
    assert set(pol.base[0]) == {2, 3}
    assert len(got) == (2 if worker_value == "engine" else 3)
    # at the engine's own T4 speed for the zoo's resnet50 (0.57) the mixed gang is faster: 0.7 × 3.14 > 2
    pol = make("aryl", mix_types=True, worker_value="engine")
    assert len(pol.decide(_loan_view([job, blocker], _SpeedWhatIf(0.57, 0.7)), 0.0).allocations[0].gpus) == 4
