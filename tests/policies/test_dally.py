"""Dally (IEEE BigData'25): Algorithm 1 decision sequence, the Algorithm 2 auto-tuner, Nw_sens order.

The cluster of the hand-built cases: 2 racks x 2 machines x 4 GPUs (GPUs 0-3 machine 0, 4-7
machine 1 in rack 0; 8-11 machine 2, 12-15 machine 3 in rack 1).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import policies
from policies.dally.tuner import MACHINE, NETWORK, RACK, DelayTuner
from tests.policies.conftest import Job, build_view, gpus_of

H = 3600.0


def view(jobs, now, *, last_start=None, exposed=None):
    """A 2-rack view (4 machines x 4 GPUs) with the engine's `last_start` / `exposed_comm_s`."""
    v = build_view(jobs, now, nodes=4, gpus_per_node=4, leaves=2)
    n = len(jobs)
    jv = dataclasses.replace(
        v.jobs,
        last_start=np.array(last_start if last_start is not None else [np.nan] * n, float),
        exposed_comm_s=np.array(exposed if exposed is not None else [0.0] * n, float))
    return dataclasses.replace(v, jobs=jv)


def manual(t_mc=100.0, t_rk=300.0, lease=1e9):
    return policies.make("dally-manual", machine_timer_s=t_mc, rack_timer_s=t_rk, lease_s=lease)


def fillers(per_node_used):
    """Running 1-GPU jobs using the first `k` GPUs of each machine (leases not expired)."""
    out = []
    for node, k in enumerate(per_node_used):
        out += [Job(gpus=1, alloc=(4 * node + i,), executed=1.0) for i in range(k)]
    return out


def test_machine_placement_is_accepted_at_once():
    p = manual()
    jobs = fillers([3, 0, 2, 2]) + [Job(gpus=4, submit=0.0)]
    j = len(jobs) - 1
    d = p.decide(view(jobs, 0.0, last_start=[0.0] * j + [np.nan]), 0.0)
    assert gpus_of(d, j) == (4, 5, 6, 7)  # the only machine with 4 free GPUs
    assert p.accepts[-1][1:] == (j, MACHINE, 0.0)
    # Algorithm 1 records every machine/rack acceptance (the timers of dally-manual stay fixed)
    assert list(p.tuner.lists[(MACHINE, 4)].q) == [(0.0, 0.0)]
    # a 2-GPU job takes the best-fit machine (2 free) rather than the empty one
    p2 = manual()
    jobs2 = fillers([3, 0, 2, 2]) + [Job(gpus=2, submit=0.0)]
    d2 = p2.decide(view(jobs2, 0.0, last_start=[0.0] * (len(jobs2) - 1) + [np.nan]), 0.0)
    assert gpus_of(d2, len(jobs2) - 1) == (10, 11)


def test_rack_after_machine_timer_then_network_after_rack_timer():
    # every machine has 2 free GPUs: a 4-GPU job fits no machine, but each rack
    p = manual(t_mc=100.0, t_rk=300.0)
    jobs = fillers([2, 2, 2, 2]) + [Job(gpus=4, submit=0.0)]
    j = len(jobs) - 1
    ls = [0.0] * j + [np.nan]
    d = p.decide(view(jobs, 50.0, last_start=ls), 50.0)
    assert gpus_of(d, j) == ()  # starvation 50 s < T_Mc: reject
    assert d.wake_at == pytest.approx(100.0)  # woken when T_Mc runs out
    d = p.decide(view(jobs, 100.0, last_start=ls), 100.0)
    assert gpus_of(d, j) == (2, 3, 6, 7)  # rack 0 (tie with rack 1: lower index), two machines
    assert p.accepts[-1][1:] == (j, RACK, 100.0)

    # every machine has 1 free GPU: each rack has 2, so the job needs the network
    p = manual(t_mc=100.0, t_rk=300.0)
    jobs = fillers([3, 3, 3, 3]) + [Job(gpus=4, submit=0.0)]
    j = len(jobs) - 1
    ls = [0.0] * j + [np.nan]
    for now, want in ((99.0, ()), (150.0, ()), (299.0, ())):
        d = p.decide(view(jobs, now, last_start=ls), now)
        assert gpus_of(d, j) == want, now
    assert d.wake_at == pytest.approx(300.0)
    d = p.decide(view(jobs, 300.0, last_start=ls), 300.0)
    assert gpus_of(d, j) == (3, 7, 11, 15)
    assert p.accepts[-1][1:] == (j, NETWORK, 300.0)


def test_lease_expiry_preempts_and_resets_the_starvation_clock():
    # job 0 runs on a rack placement (2 GPUs on machines 0 and 1) since t=0; everything else
    # is taken by 1-GPU jobs whose leases run until 1000 + 500
    lease = 1000.0
    p = manual(t_mc=100.0, t_rk=300.0, lease=lease)
    big = Job(gpus=4, submit=0.0, alloc=(2, 3, 6, 7), executed=1000.0)
    rest = [Job(gpus=1, alloc=(g,), executed=1.0) for g in (0, 1, 4, 5, *range(8, 16))]
    jobs = [big] + rest
    ls = [0.0] + [500.0] * len(rest)
    d = p.decide(view(jobs, 999.0, last_start=ls), 999.0)
    assert gpus_of(d, 0) == (2, 3, 6, 7)  # lease not expired: kept as it is
    assert d.wake_at == pytest.approx(1000.0)
    # at expiry its own GPUs are offered back, but they are a rack placement and its clock
    # restarted (0 s < T_Mc), so it rejects them and is preempted -- although it arrived 1000 s ago
    d = p.decide(view(jobs, 1000.0, last_start=ls), 1000.0)
    assert gpus_of(d, 0) == ()
    assert p.last_assign[0] == 1000.0
    assert d.wake_at == pytest.approx(1100.0)
    queued = dataclasses.replace(big, alloc=(), state=None)
    d = p.decide(view([queued] + rest, 1099.0, last_start=ls), 1099.0)
    assert gpus_of(d, 0) == ()
    d = p.decide(view([queued] + rest, 1100.0, last_start=ls), 1100.0)
    assert gpus_of(d, 0) == (2, 3, 6, 7)
    assert p.accepts[-1][1:] == (0, RACK, 100.0)


def test_machine_placed_job_renews_its_lease_on_its_own_gpus():
    p = manual(lease=1000.0)
    jobs = [Job(gpus=4, submit=0.0, alloc=(4, 5, 6, 7), executed=1000.0)]
    d = p.decide(view(jobs, 1000.0, last_start=[0.0]), 1000.0)
    assert gpus_of(d, 0) == (4, 5, 6, 7)  # continues, no restart
    assert p.lease_start[0] == 1000.0
    assert p.tuner.lists == {}  # a renewal is not a waiting time (record_renewals=False)


def test_oversized_jobs_have_zero_timers():
    p = manual(t_mc=math.inf, t_rk=math.inf)
    p.decide(view([Job(gpus=1)], 0.0), 0.0)
    assert p.timers(4, 0.0) == (math.inf, math.inf)
    assert p.timers(8, 0.0) == (0.0, math.inf)  # larger than a machine, fits a rack
    assert p.timers(12, 0.0) == (0.0, 0.0)  # larger than a rack


def test_fully_consolidated_waits_forever_nowait_never():
    jobs = fillers([2, 2, 2, 2]) + [Job(gpus=4, submit=0.0)]
    j = len(jobs) - 1
    ls = [0.0] * j + [np.nan]
    fc = policies.make("dally-fullyconsolidated", lease_s=1e9)
    d = fc.decide(view(jobs, 1e7, last_start=ls), 1e7)
    assert gpus_of(d, j) == () and d.wake_at == 1e9  # only the fillers' lease expiry wakes it
    nw = policies.make("dally-nowait", lease_s=1e9)
    d = nw.decide(view(jobs, 0.0, last_start=ls), 0.0)
    assert gpus_of(d, j) == (2, 3, 6, 7)


def test_autotuner_mean_plus_two_sigma():
    waits = [1 * H, 2 * H, 3 * H]
    t = DelayTuner("paper", history_s=24 * H, lease_s=H, manual_machine_s=12 * H, manual_rack_s=24 * H)
    assert t.timers(4, 0.0) == (12 * H, 24 * H)  # cold start: the manual defaults
    for i, w in enumerate(waits):
        assert t.record(MACHINE, 4, float(i), w)
    t.record(RACK, 4, 0.0, 5 * H)
    assert not t.record(NETWORK, 4, 0.0, 9 * H)  # network acceptances are not recorded
    t_mc, t_rk = t.timers(4, 10.0)
    assert t_mc == pytest.approx(2 * H + 2 * 1 * H)  # mean 2 h, sample sigma 1 h
    assert t_rk == pytest.approx(5 * H)  # one entry: sigma 0
    assert t.timers(8, 10.0) == (12 * H, 24 * H)  # per demand
    # the history window is age-based: entries recorded more than 24 h ago drop out
    t.record(MACHINE, 4, 20 * H, 6 * H)
    assert t.timers(4, 24 * H + 1.5)[0] == pytest.approx(np.mean([3, 6]) * H + 2 * np.std([3, 6], ddof=1) * H)

    a = DelayTuner("artifact", history_s=24 * H, lease_s=H, manual_machine_s=12 * H, manual_rack_s=24 * H)
    assert not a.record(MACHINE, 4, 0.0, 0.5 * H)  # under one lease: not recorded
    assert a.timers(4, 0.0) == (6 * H, 12 * H)  # empty -> 1 lease, then the floors 6 / 12
    for i, w in enumerate([10 * H, 20 * H, 30 * H]):
        a.record(MACHINE, 4, float(i), w)
    # population sigma 8.165 leases: ceil(20 + 16.33) = 37 > cap ceil(0.8 x 24) = 20
    assert a.timers(4, 10.0)[0] == 20 * H
    a.record(RACK, 4, 0.0, 13 * H)
    assert a.timers(4, 10.0)[1] == 13 * H


def test_never_run_jobs_first_then_increasing_nw_sens():
    p = manual()
    jobs = [Job(gpus=1, submit=0.0, executed=100.0), Job(gpus=1, submit=5.0, executed=100.0),
            Job(gpus=1, submit=9.0), Job(gpus=1, submit=1.0, executed=100.0)]
    v = view(jobs, 10.0, exposed=[50.0, 10.0, 0.0, 80.0])
    p.decide(v, 10.0)
    ns = p.nw_sens(v)
    assert ns[0] == pytest.approx(0.5) and ns[1] == pytest.approx(0.9) and np.isnan(ns[2])
    order = p.order(v, np.arange(4))
    assert order.tolist() == [2, 3, 0, 1]
    # and the offers follow it: with one free GPU the never-run job gets it
    busy = fillers([4, 4, 4, 3])
    v2 = view(busy + jobs, 10.0, last_start=[0.0] * len(busy) + [np.nan] * 4,
              exposed=[0.0] * len(busy) + [50.0, 10.0, 0.0, 80.0])
    d = policies.make("dally").decide(v2, 10.0)
    assert gpus_of(d, len(busy) + 2) == (15,)


def test_offer_order_las_ranks_by_attained_service_not_nw_sens():
    # job 0 paid communication (Nw_sens 0.5) but attained much service; job 1 paid none (Nw_sens 1,
    # last under the published order) with little service: least attained service offers job 1 first
    jobs = [Job(gpus=1, submit=0.0, executed=100.0, attained=800.0), Job(gpus=1, submit=1.0, executed=100.0,
            attained=100.0), Job(gpus=1, submit=9.0)]
    v = view(jobs, 10.0, exposed=[50.0, 0.0, 0.0])
    published, las = manual(), policies.make("dally-manual", offer_order="las")
    published.decide(v, 10.0)
    las.decide(v, 10.0)
    assert published.order(v, np.arange(3)).tolist() == [2, 0, 1]
    assert las.order(v, np.arange(3)).tolist() == [2, 1, 0]
    # the order is the only change: the same never-run job, one free GPU, wins under both
    busy = fillers([4, 4, 4, 3])
    v2 = view(busy + jobs[:2], 10.0, last_start=[0.0] * len(busy) + [np.nan] * 2,
              exposed=[0.0] * len(busy) + [50.0, 0.0])
    assert gpus_of(policies.make("dally", offer_order="las").decide(v2, 10.0), len(busy) + 1) == (15,)
    assert gpus_of(policies.make("dally").decide(v2, 10.0), len(busy)) == (15,)


def test_config_rejects_bad_values():
    from cosim.errors import InputError

    with pytest.raises(InputError):
        policies.make("dally", lease_s=0)
    with pytest.raises(InputError):
        policies.make("dally", mode="literal")
    with pytest.raises(InputError):
        policies.make("dally", offer_order="fifo")


def test_tiresias_as_dally_runs_it_least_service_first_and_skew_timers():
    # every machine has 2 free GPUs: a skewed 4-GPU AlexNet job waits for a machine forever, a
    # ResNet-50 job takes a rack placement at once
    fill = fillers([2, 2, 2, 2])
    jobs = fill + [Job(gpus=4, submit=0.0, model="alexnet"), Job(gpus=4, submit=0.0, model="resnet50")]
    a, b = len(fill), len(fill) + 1
    p = policies.make("tiresias-dally", lease_s=1e9)
    d = p.decide(view(jobs, 1e6, last_start=[0.0] * len(fill) + [np.nan] * 2), 1e6)
    assert gpus_of(d, a) == ()
    assert gpus_of(d, b) == (2, 3, 6, 7)
    # order: never-run first, then least attained GPU-seconds
    q = [Job(gpus=1, executed=10.0, attained=500.0), Job(gpus=1, executed=10.0, attained=100.0), Job(gpus=1)]
    v = view(q, 10.0)
    assert p.order(v, np.arange(3)).tolist() == [2, 1, 0]


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100 * H), st.floats(0, 48 * H)), min_size=0, max_size=30),
       st.floats(1 * H, 50 * H))
def test_autotuner_window_statistic_matches_numpy(entries, history):
    """Running sums over an age-limited window equal mean + 2 sample sigma of the kept waits."""
    entries = sorted(entries)
    t = DelayTuner("paper", history_s=history, lease_s=H, manual_machine_s=12 * H, manual_rack_s=24 * H)
    for when, w in entries:
        t.record(MACHINE, 8, when, w)
    now = entries[-1][0] if entries else 0.0
    kept = np.array([w for when, w in entries if when >= now - history])
    got = t.timers(8, now)[0]
    if kept.size == 0:
        assert got == 12 * H
    else:
        want = kept.mean() + 2 * (kept.std(ddof=1) if kept.size > 1 else 0.0)
        assert got == pytest.approx(want, rel=1e-6, abs=1e-3)
