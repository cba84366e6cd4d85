"""The policy view's contract: oracle facts only behind `needs`, observable counters always
present and right."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import PolicyError
from simcore.api import NEED_DURATION_ORACLE, NEED_PROGRESS_ORACLE, Allocation, ClusterView, Decision, JobState
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import frame

ORACLE_FIELDS = {NEED_PROGRESS_ORACLE: ("progress",), NEED_DURATION_ORACLE: ("duration", "remaining_s")}
COUNTERS = ("samples_done", "epochs_done", "iters_per_s", "waiting_s", "exposed_comm_s", "num_restarts",
            "last_gpu_type", "vc", "user", "attained_gpu_s", "executed_s")


@dataclass
class Greedy:
    """Starts queued jobs first-fit on free GPUs; records what it could read at every call."""

    needs: frozenset = frozenset()
    name: ClassVar[str] = "greedy-recorder"
    interval_s: float | None = 7.0
    event_driven: bool = True
    seen: list = field(default_factory=list)

    def decide(self, view: ClusterView, now: float) -> Decision:
        a = view.active()
        jv = view.jobs
        self.seen.append({k: np.asarray(getattr(jv, k))[a].copy() for k in
                          ("progress", "duration", "remaining_s") + COUNTERS} | {"active": a.copy()})
        free = list(view.cluster.free_gpus())
        allocs = view.keep_running()
        for j in view.queued():
            n = int(jv.num_gpus[j])
            if n <= len(free):
                allocs[int(j)] = Allocation(tuple(free[:n]))
                free = free[n:]
        return Decision(allocs)


def _engine(rows, policy, topo=None, costs=None):
    topo = topo or fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    return Engine(jobs, ClusterState.from_topology(topo), perf, policy, costs or ChangeCosts(restart_s=0.0),
                  options=EngineOptions(check_invariants=True)), perf


job_rows = st.lists(st.fixed_dictionaries(dict(
    submit_time=st.floats(0, 200, allow_nan=False), num_gpus=st.sampled_from([1, 2, 4, 8]),
    duration=st.floats(10, 500, allow_nan=False))), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=job_rows, needs=st.sets(st.sampled_from(sorted(ORACLE_FIELDS))))
def test_no_oracle_field_readable_without_needs(rows, needs):
    """Every policy call: an oracle array is all NaN unless its need is declared (then it is
    the real value on active jobs); the observable counters are always present and finite."""
    pol = Greedy(needs=frozenset(needs))
    res = _engine(rows, pol)[0].run()
    assert pol.seen and (res.jobs.state == JobState.FINISHED).all()
    for s in pol.seen:
        for need, names in ORACLE_FIELDS.items():
            for k in names:
                if need in needs:
                    assert np.isfinite(s[k]).all(), (k, s[k])
                else:
                    assert np.isnan(s[k]).all(), (k, s[k])
        for k in COUNTERS:
            assert s[k].shape == s["active"].shape
        for k in ("samples_done", "iters_per_s", "waiting_s", "exposed_comm_s"):
            assert np.isfinite(s[k]).all() and (s[k] >= 0).all(), k


def test_oracle_arrays_are_nan_and_read_only_without_needs():
    eng, _ = _engine([dict(submit_time=0.0, num_gpus=1, duration=10.0)], Greedy())
    jv = eng._jobs_view
    assert np.isnan(jv.progress).all() and np.isnan(jv.duration).all() and np.isnan(jv.remaining_s).all()
    for k in ("progress",) + COUNTERS:
        arr = getattr(jv, k)
        with pytest.raises(ValueError):
            arr[0] = arr[0]


@dataclass
class Script:
    """Job 0 on GPU 0 at batch 64; at `switch_s` batch 128; records the view at wake-ups."""

    wakes: tuple
    switch_s: float
    name: ClassVar[str] = "script"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = frozenset()
    seen: dict = field(default_factory=dict)

    def decide(self, view: ClusterView, now: float) -> Decision:
        jv = view.jobs
        self.seen[now] = {k: np.asarray(getattr(jv, k)).copy() for k in COUNTERS}
        nxt = next((w for w in self.wakes if w > now + 1e-12), None)
        if jv.state[0] == JobState.FINISHED:
            return Decision({}, wake_at=nxt)
        return Decision({0: Allocation((0,), 128 if now >= self.switch_s - 1e-12 else 64)}, wake_at=nxt)


def test_counters_on_a_hand_built_run():
    """Job 0: 4 epochs of 6,400 samples at batch 64 (100 iterations per epoch) on one GPU, batch
    doubled after 150 iterations; job 1 (4 GPUs, one node of 4) waits behind it the whole time."""
    topo = fake_topology(nodes=1, gpus_per_node=4)
    perf0 = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve)
    one = np.array([0], np.int32)
    i64, i128 = perf0.solo_iter_s("small", one, 64), perf0.solo_iter_s("small", one, 128)
    t_sw = 150 * i64
    t_2 = t_sw + 40 * i128  # epoch 2 ends 25 iterations of 128 after the switch
    rows = [dict(submit_time=0.0, num_gpus=1, global_batch=64, epochs=4, epoch_size=6400, vc="vc-a", user="u1"),
            dict(submit_time=2 * i64, num_gpus=4, global_batch=64, total_iterations=10, vc="vc-b", user="u2")]
    pol = Script(wakes=(100.5 * i64, t_sw, t_2), switch_s=t_sw)
    eng, _ = _engine(rows, pol, topo=topo)
    res = eng.run()
    s = pol.seen
    w1 = min(s, key=lambda t: abs(t - 100.5 * i64))
    assert w1 == pytest.approx(100.5 * i64)
    assert s[w1]["samples_done"][0] == pytest.approx(100.5 * 64, rel=1e-9)
    assert s[w1]["epochs_done"][0] == 1
    assert s[w1]["iters_per_s"][0] == pytest.approx(1 / i64, rel=1e-9)
    assert s[w1]["waiting_s"][1] == pytest.approx(w1 - 2 * i64, rel=1e-9)
    assert s[w1]["waiting_s"][0] == 0.0 and s[w1]["iters_per_s"][1] == 0.0
    assert s[w1]["last_gpu_type"].tolist() == [0, -1]
    assert s[w1]["exposed_comm_s"][0] == 0.0  # one GPU: nothing to communicate
    assert list(s[w1]["vc"]) == ["vc-a", "vc-b"] and list(s[w1]["user"]) == ["u1", "u2"]
    w2 = min(s, key=lambda t: abs(t - t_2))
    assert s[w2]["samples_done"][0] == pytest.approx(150 * 64 + 40 * 128, rel=1e-9)
    assert s[w2]["epochs_done"][0] == 2
    assert s[w2]["iters_per_s"][0] == pytest.approx(1 / i128, rel=1e-9)
    assert s[w2]["num_restarts"][0] == 0  # a free rebatch is no restart
    end0 = res.jobs.end_time[0]
    assert end0 == pytest.approx(t_sw + 125 * i128, rel=1e-12)
    last = s[max(s)]
    assert last["samples_done"][0] == pytest.approx(25600, rel=1e-9) and last["epochs_done"][0] == 4
    assert last["waiting_s"][1] == pytest.approx(end0 - 2 * i64, rel=1e-9)


def test_node_pools_in_the_cluster_view():
    import netmodel

    topo = netmodel.build_topology(netmodel.load_cluster("aryl"))  # 443 training + 520 inference servers
    arr = ClusterState.from_topology(topo).arrays()
    assert arr.node_group_names == ("training", "inference")
    assert np.bincount(arr.node_group).tolist() == [443, 520]
    np.testing.assert_array_equal(arr.node_group, topo.node_group)


@dataclass
class Milestones:
    needs: frozenset = frozenset()
    milestones: tuple = (0.5,)
    name: ClassVar[str] = "milestones"
    interval_s: float | None = None
    event_driven: bool = True

    def decide(self, view, now):
        return Decision({})


def test_milestones_need_the_progress_oracle():
    row = [dict(submit_time=0.0, num_gpus=1, duration=10.0)]
    with pytest.raises(PolicyError, match=r"'milestones'.*progress_oracle"):
        _engine(row, Milestones())
    _engine(row, Milestones(needs=frozenset({NEED_PROGRESS_ORACLE})))  # declared: accepted
    with pytest.raises(PolicyError, match=r"unknown needs \['psychic'\]"):
        _engine(row, Milestones(needs=frozenset({"psychic"}), milestones=()))


def test_policies_declare_what_they_read():
    """Clairvoyant baselines declare the duration oracle; the others declare nothing."""
    import policies

    want = {"sjf": {NEED_DURATION_ORACLE}, "srtf": {NEED_DURATION_ORACLE},
            "fifo-backfill": {NEED_DURATION_ORACLE},  # EASY reservations: the estimated end of running jobs
            # remaining work: Optimus (as the Pollux simulator's Optimus+Oracle), SRJF (Ares' Lucid
            # stand-in), AFS with its default gain=job_fraction (aryl.md §6)
            "optimus": {NEED_DURATION_ORACLE}, "srjf": {NEED_DURATION_ORACLE}, "afs": {NEED_DURATION_ORACLE},
            "allox": {NEED_DURATION_ORACLE},  # AlloX: processing time = remaining work / throughput
            # Themis: ρ needs the remaining time (its agents' estimate); themis-ftf-lp is Gavel's FTF LP
            "themis": {NEED_DURATION_ORACLE}, "themis-ftf-lp": {NEED_DURATION_ORACLE},
            # Ares: L_j (GPU-seconds at the requested count) read once at arrival
            "ares": {NEED_DURATION_ORACLE}, "ares-artifact": {NEED_DURATION_ORACLE},
            # FFT: the JCT term phi from remaining epochs; tiresias-typed: A11's fastest-finish type rule
            "fft": {NEED_DURATION_ORACLE}, "tiresias-typed": {NEED_DURATION_ORACLE},
            # Aryl: SJF-with-skip on running-time estimates (with injected error as an option)
            "aryl": {NEED_DURATION_ORACLE}}
    for name in policies.POLICIES:
        p = policies.make(name)
        assert set(p.needs) == want.get(name, set()), name



def test_work_mode_is_observable():
    """A policy can tell fixed-iteration jobs from replayed ones (a batch change speeds up only
    sample- or epoch-counted work): the engine's view carries the job table's modes, read-only."""
    from simcore.work import WorkMode

    seen = []

    @dataclass
    class Recorder(Greedy):
        def decide(self, view, now):
            seen.append(view.jobs.work_mode)
            return super().decide(view, now)

    rows = [dict(submit_time=0.0, num_gpus=1, duration=10.0), dict(submit_time=0.0, num_gpus=1, total_iterations=50.0)]
    eng, _ = _engine(rows, Recorder())
    eng.run()
    assert seen and seen[0].tolist() == [int(WorkMode.REPLAY), int(WorkMode.ITERATIONS)]
    assert not seen[0].flags.writeable
