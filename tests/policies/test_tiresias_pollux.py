"""The `tiresias-pollux` preset: the Pollux OSDI'21 simulator's Tiresias parameters."""

from __future__ import annotations

import dataclasses

import numpy as np

from policies import make
from tests.policies.conftest import Job, build_view, gpus_of


def test_preset_parameters_and_rounds_only():
    pol = make("tiresias-pollux")
    c = pol.config
    assert c.thresholds_gpu_s == (57600.0,) and c.promote_knob == 0 and c.skew_models == ()
    assert pol.interval_s == 60 and pol.event_driven is False


def test_no_wake_ups_demotion_waits_for_the_round():
    # a running 4-GPU job 1 GPU-h below the 16 GPU-h threshold, a queued job waiting
    jobs = [Job(gpus=4, alloc=(0, 1, 2, 3), attained=57600.0 - 3600.0, executed=50000.0, first_start=0.0),
            Job(gpus=4, submit=5.0)]
    view = build_view(jobs, nodes=1, gpus_per_node=4, leaves=1)
    assert make("tiresias").decide(view, 100.0).wake_at is not None
    assert make("tiresias-pollux").decide(view, 100.0).wake_at is None


def test_preset_follows_the_peer_semantics_options():
    c = make("tiresias-pollux").config
    assert (c.placement, c.queue_order, c.admission) == ("most-free", "entry", "gpu-count")
    d = make("tiresias").config  # the stock policy keeps the paper's walk
    assert (d.placement, d.queue_order, d.admission) == ("consolidate", "running-first", "placement")
    # demotion rounds are recorded exactly only if every round calls the policy
    assert make("tiresias-pollux").rounds_need_queue is False and make("tiresias").rounds_need_queue is True


def test_most_free_placement_takes_the_emptiest_nodes_first():
    from policies import placement as P
    from tests.policies.conftest import build_arrays
    c = build_arrays()  # 4 nodes x 4 GPUs
    avail = np.zeros(16, bool)
    avail[[0, 1]] = True  # node0: 2 free
    avail[[4, 5, 6, 7]] = True  # node1: 4 free
    avail[[8, 9, 10]] = True  # node2: 3 free
    avail[[12, 13, 14, 15]] = True  # node3: 4 free
    # the peer's Counter.most_common: node1 (4, lower index of the tie), then node3, then node2
    assert P.place(c, avail, 5, strategy="most-free").tolist() == [4, 5, 6, 7, 12]
    assert P.place(c, avail, 10, strategy="most-free").tolist() == [4, 5, 6, 7, 8, 9, 12, 13, 14, 15]
    # consolidate would take the best-fit node2 for 3 GPUs; most-free takes node1
    assert P.place(c, avail, 3, strategy="most-free").tolist() == [4, 5, 6]
    assert P.place(c, avail, 14, strategy="most-free") is None


def test_gpu_count_admission_lets_an_earlier_arrival_push_out_a_running_job():
    # one 4-GPU node; job 1 (2 GPUs, arrived later) runs; job 0 (4 GPUs, arrived first) waits,
    # both in queue 0. The peer walks queue 0 by arrival: job 0 fits by count (4 <= 4), job 1
    # no longer does (2 > 0) and is preempted. Stock Tiresias keeps running jobs ahead.
    jobs = [Job(gpus=4, submit=0.0), Job(gpus=2, submit=10.0, alloc=(0, 1), attained=100.0, executed=50.0,
                                         first_start=50.0)]
    view = build_view(jobs, nodes=1, gpus_per_node=4, leaves=1)
    peer = make("tiresias-pollux").decide(view, 100.0)
    assert gpus_of(peer, 0) == (0, 1, 2, 3) and gpus_of(peer, 1) == ()
    stock = make("tiresias").decide(view, 100.0)
    assert gpus_of(stock, 0) == () and gpus_of(stock, 1) == (0, 1)


def test_gpu_count_admission_skips_what_does_not_fit():
    # 8 GPUs requested on a 4-GPU cluster: skipped by count, the later 2-GPU job runs
    jobs = [Job(gpus=8, submit=0.0), Job(gpus=2, submit=5.0)]
    view = build_view(jobs, nodes=1, gpus_per_node=4, leaves=1)
    d = make("tiresias-pollux").decide(view, 100.0)
    assert gpus_of(d, 0) == () and len(gpus_of(d, 1)) == 2


def test_lower_queue_ordered_by_demotion_round_not_arrival():
    # jobs 0 and 1 (4 GPUs each) wait on one 4-GPU node. Job 1 crossed 16 GPU-h by the round at
    # t=60, job 0 only by t=120: in queue 1 job 1 comes first although job 0 arrived first.
    pol = make("tiresias-pollux")
    thr = 57600.0
    first = [Job(gpus=4, submit=0.0, attained=thr - 10.0, executed=1000.0, first_start=0.0),
             Job(gpus=4, submit=1.0, attained=thr + 10.0, executed=1000.0, first_start=0.0),
             Job(gpus=4, submit=2.0, alloc=(0, 1, 2, 3), attained=thr + 20.0, executed=1000.0, first_start=0.0)]
    pol.decide(build_view(first, now=60.0, nodes=1, gpus_per_node=4, leaves=1), 60.0)
    later = [dataclasses.replace(first[0], attained=thr + 10.0), first[1], dataclasses.replace(first[2], alloc=())]
    d = pol.decide(build_view(later, now=120.0, nodes=1, gpus_per_node=4, leaves=1), 120.0)
    assert gpus_of(d, 1) == (0, 1, 2, 3) and gpus_of(d, 0) == ()
    # stock order (arrival within the queue) would pick job 0
    d0 = make("tiresias", interval_s=60.0).decide(build_view(later, now=120.0, nodes=1, gpus_per_node=4,
                                                                  leaves=1), 120.0)
    assert gpus_of(d0, 0) == (0, 1, 2, 3)


def test_entry_order_needs_gpu_count_admission():
    import pytest

    from cosim.errors import InputError
    with pytest.raises((InputError, ValueError)):
        make("tiresias", queue_order="entry")


def test_gpu_count_admission_needs_promotion_off():
    import pytest

    from cosim.errors import InputError
    with pytest.raises((InputError, ValueError)):
        make("tiresias", admission="gpu-count")  # stock promote_knob = 8
    assert make("tiresias", admission="gpu-count", promote_knob=0.0).config.admission == "gpu-count"
