"""Capacity as a protocol: pools, joins, reclaim demands answered by a
policy's choice or by the default answer, scale-in before eviction, the reclaim log, the
load-series drivers (CSV and diurnal), and the property that reclaim deadlines are met and no
GPU is held on a returned node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import netmodel
from cosim.errors import InputError, PolicyError
from simcore import capacity as cap
from simcore.api import Allocation, ClusterView, Decision, ReclaimAnswer, ReclaimDemand
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from experiments.runner import RunConfig, run
from simcore.state import ClusterState
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import RandomElastic, fake_backends, frame, rows_of

# 4 nodes × 4 GPUs: nodes 0-1 training, 2-3 inference (GPUs 8-11 and 12-15)
POOLS = cap.Pools(("training", "inference"), np.array([0, 0, 1, 1], np.int16))


def series(rows, grace_s=0.0) -> cap.CapacityPlan:
    df = pd.DataFrame(rows, columns=["time_s", "pool", "nodes_needed"])
    return cap.plan_from_series(df, POOLS, grace_s)


@dataclass
class PlaceOnce:
    """Starts the scripted allocations at t=0, then keeps whatever runs (no restarts)."""

    start: dict
    name: ClassVar[str] = "place-once"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = field(default_factory=frozenset)

    def decide(self, view: ClusterView, now: float) -> Decision:
        if now == 0.0:
            return Decision({j: Allocation(tuple(g)) for j, g in self.start.items()})
        return Decision(view.keep_running())


@dataclass
class Chooser(PlaceOnce):
    """Answers reclaims by choice: the highest-id candidates, returned at the deadline (or a
    scripted bad answer)."""

    name: ClassVar[str] = "chooser"
    answers_reclaims: bool = True
    bad: str = ""
    demands: list = field(default_factory=list)

    def answer_reclaim(self, view: ClusterView, demand: ReclaimDemand) -> ReclaimAnswer:
        self.demands.append(demand)
        nodes = tuple(int(n) for n in demand.candidates[::-1][:demand.count])
        if self.bad == "few":
            nodes = nodes[:-1]
        elif self.bad == "pool":
            nodes = (0,) + nodes[1:]
        elif self.bad == "late":
            return ReclaimAnswer(nodes, demand.deadline_s + 10.0)
        elif self.bad == "twice":
            nodes = (nodes[0],) * len(nodes)
        return ReclaimAnswer(nodes, demand.deadline_s)


def engine(rows, policy, plan, restart_s=0.0):
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    return Engine(jobs, ClusterState.from_topology(topo), perf, policy, ChangeCosts(restart_s=restart_s),
                  options=EngineOptions(record_decisions=True, check_invariants=True), capacity_plan=plan)


# job 0: elastic, 8 GPUs on training node 0 and inference node 2; job 1: rigid, inference node 3
ROWS = [dict(submit_time=0.0, num_gpus=8, min_gpus=1, max_gpus=8, duration=1000.0),
        dict(submit_time=0.0, num_gpus=4, duration=1000.0)]
START = {0: list(range(0, 4)) + list(range(8, 12)), 1: list(range(12, 16))}


def test_default_answer_scales_in_before_evicting():
    plan = series([(0, "inference", 0), (100, "inference", 1)])
    assert [(d.time_s, d.kind, d.count) for d in plan.demands] == [(0.0, "join", 2), (100.0, "reclaim", 1)]
    res = engine(ROWS, PlaceOnce(START), plan).run()
    r = res.reclaims.frame()
    assert len(r) == 1
    row = r.iloc[0]
    # node 2 costs (0 preemptions, 4 GPUs scaled in), node 3 (1 preemption): node 2 goes
    assert (row.returned_nodes, row.jobs_scaled_in, row.jobs_evicted) == ("2", "j0", "")
    assert row.deadline_met and row.answered_by == "default" and row.returned_at_s == 100.0
    d = res.decisions
    acts = [(t, a, j, g) for t, a, j, g in zip(d["time_s"], d["action"], d["job_id"], d["gpus"]) if t == 100.0]
    assert acts == [(100.0, "resize", "j0", "0,1,2,3")]
    assert res.jobs.num_restarts[0] == 1 and res.jobs.end_time[1] == pytest.approx(1000.0)


def test_two_nodes_evict_the_rigid_job():
    res = engine(ROWS, PlaceOnce(START), series([(0, "inference", 0), (100, "inference", 2)])).run()
    row = res.reclaims.frame().iloc[0]
    assert (row.returned_nodes, row.jobs_scaled_in, row.jobs_evicted) == ("2,3", "j0", "j1")


def test_policy_answers_by_choice_and_keeps_nodes_until_the_deadline():
    pol = Chooser(START)
    res = engine(ROWS, pol, series([(0, "inference", 0), (100, "inference", 1)], grace_s=50.0)).run()
    (dem,) = pol.demands
    assert (dem.pool, dem.count, dem.deadline_s, dem.candidates.tolist()) == ("inference", 1, 150.0, [2, 3])
    row = res.reclaims.frame().iloc[0]
    assert (row.returned_nodes, row.jobs_evicted, row.returned_at_s, row.answered_by) == ("3", "j1", 150.0, "chooser")
    assert row.deadline_met
    tl = pd.DataFrame(res.timeline)
    online_at = lambda t: int(tl[tl.time_s <= t].online_gpus.iloc[-1])  # noqa: E731
    assert online_at(120.0) == 16 and online_at(150.0) == 12


@pytest.mark.parametrize("bad,msg", [("few", "returned 0 node(s) [], the demand is 1"),
                                     ("pool", "node 0 is not a node of pool 'inference'"),
                                     ("late", "returned at t=110.000s, after the deadline t=100.000s"),
                                     ("twice", "node 3 named twice")])
def test_bad_answers_name_policy_node_and_time(bad, msg):
    plan = series([(0, "inference", 0), (100, "inference", 1 if bad != "twice" else 2)])
    with pytest.raises(PolicyError) as e:
        engine(ROWS, Chooser(START, bad=bad), plan).run()
    text = str(e.value)
    assert "policy 'chooser'" in text and "t=100.000s" in text and msg in text


def test_aryl_figure_5_default_answer():
    """Aryl Table 1 / Fig. 5 (notes §2.2): a on servers 1+2, b on 3, c 80 % on 4 and 20 % on 5,
    d 80 % on 6 and 20 % on 5; reclaiming 2 servers returns {1, 2} with one preemption."""
    first, num = np.arange(6) * 10, np.full(6, 10)
    owner = np.full(60, -1)
    alloc = {0: tuple(range(0, 10)) + tuple(range(10, 20)), 1: tuple(range(20, 30)),
             2: tuple(range(30, 38)) + (40, 41), 3: tuple(range(50, 58)) + (42, 43)}
    for j, g in alloc.items():
        owner[list(g)] = j
    rigid = np.array([20, 10, 10, 10])
    d = ReclaimDemand("inference", 2, 0.0, np.arange(6, dtype=np.int32))
    assert cap.default_answer(d, first, num, owner, alloc, rigid, 0.0).nodes == (0, 1)
    # idle nodes go first, whatever their ids
    owner2 = owner.copy()
    owner2[20:30] = -1
    alloc2 = {k: v for k, v in alloc.items() if k != 1}
    assert cap.default_answer(d, first, num, owner2, alloc2, rigid, 0.0).nodes == (0, 2)
    ans = cap.default_answer(ReclaimDemand("inference", 1, 0.0, np.arange(6, dtype=np.int32)), first, num, owner2,
                             alloc2, rigid, 0.0)
    assert ans.nodes == (2,)
    # an elastic c (min 1 GPU) scales in off node 3 (cost 0 preemptions, 8 GPUs); nodes 4 and 5
    # would preempt the rigid d (1/|S_d| = 1/2 each): node 3 goes
    elastic = np.array([20, 10, 1, 10])
    one = ReclaimDemand("inference", 1, 0.0, np.array([3, 4, 5], np.int32))
    assert cap.default_answer(one, first, num, owner, alloc, elastic, 0.0).nodes == (3,)


def test_node_changes_follow_the_engine_online_counts():
    """The FTF reference's view of a load series (`node_changes`) has the engine's online GPUs."""
    from simcore.gps import capacity_steps

    plan = series([(0, "inference", 2), (50, "inference", 0), (100, "inference", 1), (200, "inference", 2),
                   (300, "inference", 0)])
    rows = [dict(submit_time=0.0, num_gpus=4, duration=400.0)]
    res = engine(rows, PlaceOnce({0: [0, 1, 2, 3]}), plan).run()
    tl = pd.DataFrame(res.timeline)
    times, gpus = capacity_steps(plan.node_changes(), np.full(4, 4))
    assert gpus.tolist() == [8, 16, 12, 8, 16]
    for t, g in zip(times, gpus):
        assert int(tl[tl.time_s <= t].online_gpus.iloc[-1]) == g


def test_csv_series_by_hand_and_bad_rows(tmp_path):
    p = tmp_path / "load.csv"
    p.write_text("time_s,pool,nodes_needed\n0,inference,2\n300,inference,0\n600,inference,1\n900,inference,1\n")
    plan = cap.plan_from_series(cap.read_load_series(p, POOLS), POOLS, 30.0)
    assert plan.offline_at_start.tolist() == [2, 3]
    assert [(d.time_s, d.kind, d.count, d.deadline_s) for d in plan.demands] == [
        (300.0, "join", 2, 300.0), (600.0, "reclaim", 1, 630.0)]
    for text, field_ in (("0,gpu,1", "pool"), ("0,inference,3", "nodes_needed"), ("-5,inference,1", "time_s")):
        p.write_text("time_s,pool,nodes_needed\n" + text + "\n")
        with pytest.raises(InputError) as e:
            cap.read_load_series(p, POOLS)
        assert "row 1" in str(e.value) and field_ in str(e.value)


def test_diurnal_formula_by_hand():
    u = cap.diurnal_utilisation(np.array([0.0, 1.0, 4.0, 13.0, 22.0]) * 3600)
    lo = 0.95 / 2.2
    assert u == pytest.approx([0.95, 0.95 - (0.95 - lo) / 2, lo, (0.95 + lo) / 2, 0.95])
    s = cap.diurnal_series("inference", 520, 0.1, 2 * 86400, seed=3)
    assert s.time_s.iloc[1] == 300.0 and len(s) == 2 * 288 + 1
    want = np.minimum(520, np.ceil(520 * (np.clip(cap.diurnal_utilisation(s.time_s.to_numpy())
                                                  + np.random.default_rng(3).normal(0, 0.02, len(s)), 0, 1) + 0.1) - 1e-9))
    assert np.array_equal(s.nodes_needed.to_numpy(), want)
    assert not s.equals(cap.diurnal_series("inference", 520, 0.1, 2 * 86400, seed=4))
    loaned = 520 - s.nodes_needed
    assert loaned.min() == 0 and 200 < loaned.max() < 300  # trough: 520·(1 − 0.43 − 0.1) ≈ 243


def test_aryl_preset_pools():
    topo = netmodel.build_topology(netmodel.load_cluster("aryl"))
    pools = cap.Pools.from_topology(topo)
    assert pools.names == ("training", "inference")
    tr, inf = pools.nodes("training"), pools.nodes("inference")
    assert len(tr) == 443 and len(inf) == 520
    names = topo.gpu_type_names
    assert {names[t] for t in np.asarray(topo.gpu_type)[np.asarray(topo.node_first_gpu)[inf]]} == {"T4"}
    assert {names[t] for t in np.asarray(topo.gpu_type)[np.asarray(topo.node_first_gpu)[tr]]} == {"V100-32GB"}


@dataclass
class RandomChooser(RandomElastic):
    """Random decisions, and reclaim answers chosen at random (nodes and time)."""

    name: ClassVar[str] = "random-chooser"
    answers_reclaims: bool = True

    def answer_reclaim(self, view, demand):
        nodes = self.rng.choice(demand.candidates, size=demand.count, replace=False)
        at = float(self.rng.uniform(view.now, demand.deadline_s))
        return ReclaimAnswer(tuple(int(n) for n in nodes), at)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.lists(st.fixed_dictionaries(dict(
           submit_time=st.floats(0, 200).map(lambda x: round(x, 1)), num_gpus=st.sampled_from([1, 2, 4, 8]),
           duration=st.floats(1, 300), model=st.sampled_from(["small", "big"]), elastic=st.booleans())),
           min_size=1, max_size=8),
       needs=st.lists(st.integers(0, 2), min_size=1, max_size=12), grace=st.sampled_from([0.0, 7.0, 60.0]),
       choose=st.booleans(), seed=st.integers(0, 99))
def test_reclaim_deadlines_met_and_no_gpu_on_returned_nodes(jobs, needs, grace, choose, seed):
    plan = series([(30.0 * i, "inference", k) for i, k in enumerate(needs)], grace_s=grace)
    pol = RandomChooser(seed=seed) if choose else RandomElastic(seed=seed)
    eng = engine(rows_of(jobs), pol, plan, restart_s=5.0)
    res = eng.run()  # check_invariants: after every decision and every return, no job holds an offline GPU
    r = res.reclaims.frame()
    # the run ends with its last job: demands after that are never issued
    assert len(r) == sum(1 for d in plan.demands if d.kind == "reclaim" and d.time_s <= res.end_time)
    assert r.deadline_met.all() and r.returned_at_s.notna().all()
    assert (r.returned_at_s <= r.deadline_s + 1e-9).all() and (r.returned_at_s >= r.time_s).all()
    counts = r.returned_nodes.map(lambda s: len(s.split(",")) if s else 0)
    assert (counts == np.minimum(r.demanded, r.available)).all()
    # replay: a returned node's GPUs are never given to a job until the pool lends it again
    d = pd.DataFrame(res.decisions)
    joins = [x.time_s for x in plan.demands if x.kind == "join"]
    for _, row in r.iterrows():
        if not row.returned_nodes:
            continue
        gone = {g for n in map(int, row.returned_nodes.split(",")) for g in range(4 * n, 4 * n + 4)}
        nxt = min([t for t in joins if t > row.returned_at_s], default=np.inf)
        later = d[(d.time_s > row.returned_at_s) & (d.time_s < nxt) & (d.gpus != "")]
        for gs in later.gpus:
            assert not gone & {int(x) for x in gs.split(",")}


def test_runner_writes_reclaims_and_cli_checks_the_file(tmp_path, monkeypatch):
    df = frame([dict(submit_time=0.0, num_gpus=4, duration=500.0), dict(submit_time=10.0, num_gpus=8, duration=500.0)])
    p = tmp_path / "load.csv"
    p.write_text("time_s,pool,nodes_needed\n0,default,0\n200,default,2\n400,default,0\n")
    res = run(RunConfig(policies=("fifo-test",), load_series=str(p)), tmp_path / "out", backends=fake_backends(df))
    r = pd.read_parquet(tmp_path / "out" / "fifo-test" / "reclaims.parquet")
    assert list(r.columns) == list(cap.RECLAIM_COLUMNS) and len(r) == 1 and r.deadline_met.all()
    assert r.demanded.iloc[0] == 2 and res.reclaims["fifo-test"].equals(r)
    import experiments.runner as sr
    from cli.app import app

    monkeypatch.setattr(sr, "real_backends", lambda cfg: fake_backends(df))
    out = CliRunner().invoke(app, ["simulate", "--policy", "fifo-test", "--load-series", str(tmp_path / "nope.csv")])
    assert out.exit_code == 2 and "--load-series" in out.output
    out = CliRunner().invoke(app, ["simulate", "--policy", "fifo-test", "--load-series", "diurnal:x"])
    assert out.exit_code == 2 and "diurnal:H" in out.output
    out = CliRunner().invoke(app, ["simulate", "--policy", "fifo-test", "--load-series", "diurnal:0.1",
                                   "--out", str(tmp_path / "d")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "d" / "fifo-test" / "reclaims.parquet").is_file()
