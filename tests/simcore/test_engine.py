"""Engine behaviour with hand-derived numbers (fake zoo/comm: see tests/simcore/fakes.py).

Fake model "small" at global batch 64 on type-A GPUs of one node:
4 GPUs → local 16, C = 0.026 s, M = 2·3/4·1e8/100e9 = 0.0015 s, s = 0.013 → t = 0.026 s;
2 GPUs → local 32, C = 0.042 s → t = 0.042 s; on one A and one B GPU (two nodes), C is the
slower B's 2·0.042 = 0.084 s, M = 2·1/2·1e8/10e9 = 0.01 s from s = 0.042 → t = 0.084 s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cosim.errors import PolicyError
from simcore.api import JobState
from simcore.costs import ChangeCosts
from simcore.events import Event, EventQueue, Priority
from simcore.work import WorkMode
from tests.simcore.fakes import FifoTest, fake_topology
from tests.simcore.helpers import Scripted, simulate


def test_queue_orders_by_time_then_priority_then_insertion():
    q = EventQueue()
    q.push(Event(5.0, Priority.ROUND))
    q.push(Event(5.0, Priority.ARRIVAL, job=2))
    q.push(Event(5.0, Priority.ARRIVAL, job=1))
    q.push(Event(4.0, Priority.WAKE))
    q.push(Event(5.0, Priority.RESTART_END, job=9))
    order = [(e.time, e.priority, e.job) for e in (q.pop() for _ in range(5))]
    assert order == [(4.0, Priority.WAKE, -1), (5.0, Priority.RESTART_END, 9), (5.0, Priority.ARRIVAL, 2),
                     (5.0, Priority.ARRIVAL, 1), (5.0, Priority.ROUND, -1)]
    assert Priority.COMPLETION < Priority.ARRIVAL < Priority.CAPACITY < Priority.ROUND


def test_replay_on_consolidated_placement_takes_the_trace_duration():
    res = simulate([dict(submit_time=3.0, num_gpus=4, duration=26.0)], FifoTest())
    j = res.jobs
    assert j.work_mode[0] == WorkMode.REPLAY
    assert j.work_iters[0] == pytest.approx(1000.0)
    assert j.end_time[0] == pytest.approx(29.0, abs=1e-9)
    assert j.attained_gpu_s[0] == pytest.approx(4 * 26.0)
    assert j.first_start[0] == 3.0 and j.state[0] == JobState.FINISHED


def test_spread_placement_is_slower_than_the_trace():
    # 2 GPUs on two nodes: M = 0.01 s starts at s = 0.021 → t = max(0.042, 0.031) = 0.042 (compute-bound)
    # the big model (1 GB, communication after compute: s = C): consolidated 2 GPUs t = 0.042 + 0.01 = 0.052; spread t = 0.042 + 0.1
    script = [(0.0, {0: ((0, 4), None)})]
    res = simulate([dict(submit_time=0.0, num_gpus=2, duration=52.0, model="big")], Scripted(script))
    assert res.jobs.work_iters[0] == pytest.approx(1000.0)
    assert res.jobs.end_time[0] == pytest.approx(1000 * 0.142)
    assert res.jobs.exposed_comm_s[0] == pytest.approx(1000 * 0.1)


def elastic(**kw):
    return dict(submit_time=0.0, num_gpus=4, min_gpus=1, max_gpus=4, duration=26.0, **kw)


def test_elastic_resize_at_fixed_global_batch():
    script = [(0.0, {0: ((0, 1, 2, 3), None)}), (13.0, {0: ((0, 1), None)})]
    res = simulate([elastic()], Scripted(script), costs=ChangeCosts(restart_s=30.0, resize_s=1.0))
    j = res.jobs
    assert j.work_mode[0] == WorkMode.SAMPLES
    # 500 iterations done at 13 s; 1 s in-place resize; 500 × 0.042 s on two GPUs
    assert j.end_time[0] == pytest.approx(13.0 + 1.0 + 21.0)
    assert j.restart_s[0] == pytest.approx(1.0)
    assert j.num_restarts[0] == 1
    assert j.attained_gpu_s[0] == pytest.approx(4 * 13.0 + 2 * 22.0)


def test_batch_size_change_counts_samples():
    script = [(0.0, {0: ((0, 1, 2, 3), None)}), (13.0, {0: ((0, 1, 2, 3), 128)})]
    res = simulate([elastic()], Scripted(script), costs=ChangeCosts(restart_s=30.0, batch_change_s=2.0))
    # remaining 500 reference iterations = 250 iterations at batch 128 (local 32: 0.042 s)
    assert res.jobs.end_time[0] == pytest.approx(13.0 + 2.0 + 250 * 0.042)
    assert res.jobs.batch_size[0] == 128


def test_heterogeneous_placement_runs_at_the_slowest_gpu():
    topo = fake_topology(nodes=2, gpus_per_node=4, types=(0, 1))
    script = [(0.0, {0: ((0, 4), None)})]
    res = simulate([dict(submit_time=0.0, num_gpus=2, duration=42.0)], Scripted(script), topo=topo)
    assert res.jobs.end_time[0] == pytest.approx(1000 * 0.084)


def test_capacity_loss_force_preempts_and_restart_costs():
    script = [(0.0, {0: ((0, 1, 2, 3), None)}), (5.0, {0: ((4, 5, 6, 7), None)})]
    res = simulate([dict(submit_time=0.0, num_gpus=4, duration=26.0)], Scripted(script),
                   costs=ChangeCosts(restart_s=30.0), capacity=[(5.0, 0, False)])
    j = res.jobs
    # 5 s of progress, evicted at 5 s, resumed on node 1 paying 30 s, 21 s left
    assert j.end_time[0] == pytest.approx(5.0 + 30.0 + 21.0)
    assert j.num_restarts[0] == 1 and j.restart_s[0] == pytest.approx(30.0)
    actions = res.decisions["action"]
    assert actions[:3] == ["start", "evicted", "resume"]
    assert res.timeline["online_gpus"][-1] == 12


def test_wake_at_lease_delays_a_start():
    script = [(0.0, {}), (7.0, {0: ((0, 1, 2, 3), None)})]
    pol = Scripted(script)
    res = simulate([dict(submit_time=0.0, num_gpus=4, duration=26.0)], pol)
    assert res.jobs.first_start[0] == 7.0
    assert res.jobs.end_time[0] == pytest.approx(33.0)
    assert 7.0 in pol.calls
    assert res.jobs.waiting_s[0] == pytest.approx(7.0)


def test_contention_slows_jobs_sharing_links():
    # two 2-node jobs of the big model across the same two uplinks: the fake solver doubles M
    rows = [dict(submit_time=0.0, num_gpus=2, duration=52.0, model="big") for _ in range(2)]
    script = [(0.0, {0: ((0, 4), None), 1: ((1, 5), None)})]
    on = simulate(rows, Scripted(script), contention=True)
    off = simulate(rows, Scripted(script), contention=False)
    assert off.jobs.end_time[0] == pytest.approx(1000 * 0.142)
    assert on.jobs.end_time[0] == pytest.approx(1000 * (0.042 + 0.2))


def test_double_booked_gpu_is_a_policy_error_naming_policy_job_gpu_time():
    script = [(0.0, {0: ((0, 1), None), 1: ((1, 2), None)})]
    with pytest.raises(PolicyError, match=r"scripted.*t=0\.000s.*GPU 1 given to both job j0 and job j1"):
        simulate([dict(submit_time=0.0, num_gpus=2, duration=5.0)] * 2, Scripted(script))


@pytest.mark.parametrize(
    "alloc, msg",
    [
        (((0, 1, 2), None), r"3 GPUs outside \[2, 2\]"),
        (((0, 99), None), "GPU 99 out of range"),
        (((0, 1), 1), "global batch 1 is smaller"),
        (((0, 0), None), "GPU 0 listed twice"),
    ],
)
def test_bad_decisions_are_rejected(alloc, msg):
    with pytest.raises(PolicyError, match=msg):
        simulate([dict(submit_time=0.0, num_gpus=2, duration=5.0)], Scripted([(0.0, {0: alloc})]))


def test_type_requirement_and_offline_gpu_are_checked():
    topo = fake_topology(nodes=2, gpus_per_node=2, types=(0, 1))
    with pytest.raises(PolicyError, match="GPU 2 is B, job requires A"):
        simulate([dict(submit_time=0.0, num_gpus=1, duration=5.0, gpu_type="A")], Scripted([(0.0, {0: ((2,), None)})]),
                 topo=topo)
    with pytest.raises(PolicyError, match="GPU 0 is offline"):
        simulate([dict(submit_time=1.0, num_gpus=1, duration=5.0)], Scripted([(0.0, {0: ((0,), None)})]),
                 capacity=[(0.5, 0, False)])


def test_memory_fit_without_accumulation():
    from simcore.perf import PerfModel
    from tests.simcore.fakes import FakeComm, FakeZoo

    topo = fake_topology(nodes=1, gpus_per_node=2, mem_gb=(16.0, 8.0))
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), None, allow_accumulation=False)
    assert perf.max_local_batch("small", 0) == 150  # 1 + 0.1·b ≤ 16
    assert perf.phases("small", np.array([0]), 150) is not None
    assert perf.phases("small", np.array([0]), 200) is None
    perf2 = PerfModel(topo, FakeZoo(), FakeComm(topo), None, allow_accumulation=True)
    p = perf2.phases("small", np.array([0]), 200)
    assert p.accumulation_steps == 2 and p.compute_s == pytest.approx(2 * (0.01 + 0.1))


class Boom(FifoTest):
    name = "boom"

    def decide(self, view, now):
        if now >= 4.0:
            raise ZeroDivisionError("oops")
        return super().decide(view, now)


def test_policy_that_raises_names_itself_and_the_time():
    rows = [dict(submit_time=0.0, num_gpus=1, duration=5.0), dict(submit_time=4.0, num_gpus=1, duration=5.0)]
    with pytest.raises(PolicyError, match=r"policy 'boom' raised ZeroDivisionError at t=4\.000s: oops"):
        simulate(rows, Boom())


def test_unrunnable_queue_ends_and_reports_unfinished():
    # node 0 leaves before anything runs and never returns; the 8-GPU job cannot fit the 12 left
    rows = [dict(submit_time=1.0, num_gpus=16, duration=5.0), dict(submit_time=0.0, num_gpus=2, duration=3.0)]
    res = simulate(rows, FifoTest(), capacity=[(0.5, 0, False)])
    assert res.stuck
    st = res.jobs.state
    assert sorted(st.tolist()) == [JobState.QUEUED, JobState.FINISHED]
    assert math.isnan(res.jobs.end_time[np.flatnonzero(st == JobState.QUEUED)[0]])


def test_interval_only_policy_waits_for_rounds():
    pol = FifoTest(interval_s=10.0, event_driven=False)
    res = simulate([dict(submit_time=3.0, num_gpus=1, duration=4.0), dict(submit_time=3.0, num_gpus=16, duration=4.0)],
                   pol)
    # round at 10 starts both? 16-GPU job needs all: j0 (submit order) first, 16-GPU waits for round 20
    j = res.jobs
    assert j.first_start.tolist() == [10.0, 20.0]
    assert j.end_time.tolist() == pytest.approx([14.0, 24.0])


class Peek(FifoTest):
    """Records what the view shows."""

    name = "peek"

    def __init__(self, needs=frozenset(), **kw):
        super().__init__(**kw)
        self.needs = needs
        self.seen = []

    def decide(self, view, now):
        self.seen.append((now, view.jobs.duration.copy(), view.jobs.remaining_s.copy(), view.active().copy(),
                          view.queued().copy(), view.running().copy(), dict(view.current)))
        d = super().decide(view, now)
        with pytest.raises(ValueError):
            view.jobs.progress[0] = 0.5  # read-only
        return d


def test_oracle_arrays_only_when_declared_and_view_sets():
    from simcore.api import NEED_DURATION_ORACLE

    rows = [dict(submit_time=0.0, num_gpus=16, duration=10.0), dict(submit_time=2.0, num_gpus=4, duration=5.0)]
    blind, seer = Peek(), Peek(needs=frozenset({NEED_DURATION_ORACLE}))
    simulate(rows, blind)
    simulate(rows, seer)
    assert np.isnan(blind.seen[0][1]).all() and np.isnan(blind.seen[0][2]).all()
    now, dur, rem, active, queued, running, current = seer.seen[1]  # at t=2: j0 ran 2 s of 10
    assert now == 2.0 and dur.tolist() == [10.0, 5.0]
    assert rem[0] == pytest.approx(8.0) and rem[1] == pytest.approx(5.0)
    assert active.tolist() == [0, 1] and queued.tolist() == [1] and running.tolist() == [0]
    assert list(current) == [0] and current[0].gpus == tuple(range(16))


def test_rounds_need_queue_skips_idle_rounds():
    rows = [dict(submit_time=0.0, num_gpus=1, duration=1000.0)]
    every = FifoTest(interval_s=10.0)
    lazy = FifoTest(interval_s=10.0)
    lazy.rounds_need_queue = True
    a, b = simulate(rows, every), simulate(rows, lazy)
    assert a.jobs.end_time[0] == b.jobs.end_time[0] == pytest.approx(1000.0)
    assert a.num_policy_calls >= 100 and b.num_policy_calls <= 2


def test_one_policy_exercises_every_mechanism_in_one_run():
    """Aryl/FFT/Ares/ONES/Dally mechanisms together on a heterogeneous cluster (nodes 0-1
    type A, 2-3 type B): a lease (wake-up) delays j0's start to t=2; j0 runs elastic on node 0,
    shrinks in place at 10, changes batch at 20; node 0 leaves at 30 (forced preemption) and
    j0 resumes on type-B node 2 at 30; j1 (requires type B) starts on node 3 at 0."""
    topo = fake_topology(nodes=4, gpus_per_node=4, types=(0, 0, 1, 1))
    rows = [dict(submit_time=0.0, num_gpus=4, min_gpus=1, max_gpus=4, duration=260.0),
            dict(submit_time=0.0, num_gpus=4, duration=26.0, gpu_type="B")]
    j1 = {1: ((12, 13, 14, 15), None)}
    script = [(0.0, dict(j1)), (2.0, {0: ((0, 1, 2, 3), None), **j1}), (10.0, {0: ((0, 1), None), **j1}),
              (20.0, {0: ((0, 1), 128), **j1}), (30.0, {0: ((8, 9, 10, 11), 128), **j1})]
    costs = ChangeCosts(restart_s=5.0, resize_s=1.0, batch_change_s=0.5)
    res = simulate(rows, Scripted(script), topo=topo, costs=costs, capacity=[(30.0, 0, False)])
    j = res.jobs
    acts = [(t, jid, a) for t, jid, a in zip(res.decisions["time_s"], res.decisions["job_id"], res.decisions["action"])]
    assert acts[:7] == [(0.0, "j1", "start"), (2.0, "j0", "start"), (10.0, "j0", "resize"), (20.0, "j0", "rebatch"),
                        (pytest.approx(26.0), "j1", "finish"), (30.0, "j0", "evicted"), (30.0, "j0", "resume")]
    # j0 work: 260 s / 0.026 s = 10,000 reference iterations at batch 64
    done = 8 / 0.026  # 2..10 on 4 A GPUs
    done += 9 / 0.042  # 11..20 on 2 A GPUs (local 32), after the 1 s resize
    done += 2 * 9.5 / 0.074  # 20.5..30 at batch 128 on 2 A GPUs (local 64): two reference iterations each
    # from 35 on 4 B GPUs at batch 128: local 32 on B = 2 × 0.042 s, two reference iterations each
    left = 10_000 - done
    assert j.end_time[0] == pytest.approx(35.0 + left / 2 * 0.084, rel=1e-9)
    assert j.num_restarts[0] == 3 and j.restart_s[0] == pytest.approx(1.0 + 0.5 + 5.0)
    # j1's reference placement is on its required type B, so it replays its 26 s exactly
    assert j.end_time[1] == pytest.approx(26.0)
