"""Exact decisions of each baseline policy on hand-built views (4 nodes × 4 GPUs, 2 leaves).

GPU ids: node n holds GPUs 4n..4n+3; leaf 0 = nodes 0,1; leaf 1 = nodes 2,3.
"""

from __future__ import annotations

import numpy as np
import pytest

import policies
from simcore.api import NEED_DURATION_ORACLE, JobState, Policy
from tests.policies.conftest import Job, build_view, gpus_of

R12 = tuple(range(12))  # nodes 0-2 busy


def test_every_policy_satisfies_the_protocol_and_declares_needs():
    for name in policies.POLICIES.names():
        p = policies.make(name)
        assert isinstance(p, Policy) and p.name == name
    oracle = {n for n in policies.POLICIES.names() if NEED_DURATION_ORACLE in policies.make(n).needs}
    assert oracle == {"afs", "allox", "ares", "ares-artifact", "aryl", "fft", "fifo-backfill", "optimus", "sjf", "srjf", "srtf", "themis", "themis-ftf-lp", "tiresias-typed"}
    assert policies.make("fifo-backfill", reservation="none").needs == frozenset()


# -- FIFO -----------------------------------------------------------------------------------

def test_fifo_blocks_behind_the_head():
    jobs = [Job(gpus=12, alloc=R12), Job(gpus=8, submit=1), Job(gpus=2, submit=2)]
    d = policies.make("fifo").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0} and gpus_of(d, 0) == R12


def test_fifo_starts_in_arrival_order_until_blocked():
    jobs = [Job(gpus=4, submit=3), Job(gpus=8, submit=1), Job(gpus=8, submit=2), Job(gpus=1, submit=4)]
    d = policies.make("fifo").decide(build_view(jobs), 100.0)
    # job1 (t=1) then job2 (t=2) take all 16 GPUs; job0 (t=3) blocks job3
    assert set(d.allocations) == {1, 2}
    assert gpus_of(d, 1) == tuple(range(8)) and gpus_of(d, 2) == tuple(range(8, 16))


def test_fifo_skip_variant_fills_holes():
    jobs = [Job(gpus=12, alloc=R12), Job(gpus=8, submit=1), Job(gpus=2, submit=2)]
    d = policies.make("fifo-backfill", reservation="none").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2} and gpus_of(d, 2) == (12, 13)


# -- EASY backfilling ------------------------------------------------------------------------

def test_easy_backfills_only_jobs_that_end_before_the_reservation():
    # job0 holds 12 GPUs for 100 s more; head job1 needs all 16 → shadow = now + 100, extra 0
    jobs = [
        Job(gpus=12, alloc=R12, remaining=100),
        Job(gpus=16, submit=1, remaining=1000),
        Job(gpus=2, submit=2, remaining=50),  # ends at now+50 ≤ shadow: backfilled
        Job(gpus=2, submit=3, remaining=500),  # would delay the head: waits
        Job(gpus=2, submit=4, remaining=100),  # ends exactly at the shadow time: backfilled
    ]
    d = policies.make("fifo-backfill").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2, 4}
    assert gpus_of(d, 2) == (12, 13) and gpus_of(d, 4) == (14, 15)


def test_easy_long_jobs_may_use_the_extra_gpus_only():
    # head needs 14 of the 16 GPUs at the shadow time → 2 extra GPUs for long backfill jobs
    jobs = [
        Job(gpus=12, alloc=R12, remaining=100),
        Job(gpus=14, submit=1, remaining=1000),
        Job(gpus=2, submit=2, remaining=900),  # uses the 2 extra GPUs
        Job(gpus=1, submit=3, remaining=900),  # no extra left: waits
        Job(gpus=1, submit=4, remaining=10),  # short: fits the remaining hole
    ]
    d = policies.make("fifo-backfill").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2, 4}


def test_easy_typed_head_ignores_other_types():
    types = [0] * 8 + [1] * 8
    jobs = [
        Job(gpus=6, alloc=tuple(range(6)), remaining=100, type_req=0),
        Job(gpus=8, submit=1, type_req=0, remaining=10),  # head: needs all 8 type-0 GPUs, 2 free
        Job(gpus=4, submit=2, type_req=1, remaining=10_000),  # type 1 only: no effect on the head
        Job(gpus=2, submit=3, type_req=0, remaining=10_000),  # would take the head's GPUs: waits
    ]
    d = policies.make("fifo-backfill").decide(build_view(jobs, gpu_types=types), 100.0)
    assert set(d.allocations) == {0, 2}
    assert set(gpus_of(d, 2)) <= set(range(8, 16))


# -- SJF / SRTF ------------------------------------------------------------------------------

def test_sjf_starts_shortest_first_and_never_preempts():
    jobs = [
        Job(gpus=8, alloc=tuple(range(8)), duration=10_000),
        Job(gpus=4, submit=0, duration=300),
        Job(gpus=4, submit=1, duration=100),
        Job(gpus=4, submit=2, duration=200),
    ]
    d = policies.make("sjf").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2, 3}
    assert gpus_of(d, 2) == (8, 9, 10, 11) and gpus_of(d, 3) == (12, 13, 14, 15)


def test_sjf_by_gpu_time():
    jobs = [Job(gpus=8, alloc=tuple(range(8))), Job(gpus=8, duration=100), Job(gpus=2, submit=1, duration=300)]
    assert set(policies.make("sjf").decide(build_view(jobs), 100.0).allocations) == {0, 1}
    d = policies.make("sjf", by="gpu_time").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2}  # 600 GPU-s < 800 GPU-s; then 8 GPUs do not fit


def test_sjf_skips_or_blocks():
    jobs = [Job(gpus=12, alloc=R12), Job(gpus=8, duration=10), Job(gpus=2, submit=1, duration=20)]
    assert set(policies.make("sjf").decide(build_view(jobs), 100.0).allocations) == {0, 2}
    assert set(policies.make("sjf", blocking=True).decide(build_view(jobs), 100.0).allocations) == {0}


def test_srtf_preempts_the_longest_remaining_only():
    jobs = [
        Job(gpus=8, alloc=tuple(range(8)), remaining=1000),
        Job(gpus=8, alloc=tuple(range(8, 16)), remaining=500),
        Job(gpus=4, submit=5, remaining=10),
    ]
    d = policies.make("srtf").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {1, 2}
    assert gpus_of(d, 1) == tuple(range(8, 16)) and set(gpus_of(d, 2)) <= set(range(8))


def test_srtf_does_not_preempt_shorter_or_equal_jobs():
    jobs = [Job(gpus=16, alloc=tuple(range(16)), remaining=100), Job(gpus=4, submit=5, remaining=100)]
    d = policies.make("srtf").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0}


# -- Tiresias --------------------------------------------------------------------------------

def tiresias(**kw):
    kw.setdefault("thresholds_gpu_s", (100.0,))
    kw.setdefault("promote_knob", 0)
    return policies.make("tiresias", **kw)


def test_tiresias_queues_by_attained_service():
    p = tiresias(thresholds_gpu_s=(100.0, 1000.0))
    jobs = [Job(attained=0), Job(attained=99.9), Job(attained=100), Job(attained=999), Job(attained=5000)]
    assert p.queues(build_view(jobs)).tolist() == [0, 0, 1, 1, 2]


@pytest.mark.parametrize("attained,preempted", [(99.0, False), (100.0, True)])
def test_tiresias_demotion_at_threshold_enables_preemption(attained, preempted):
    jobs = [Job(gpus=16, alloc=tuple(range(16)), attained=attained, executed=10), Job(gpus=4, submit=50)]
    d = tiresias().decide(build_view(jobs), 100.0)
    if preempted:  # job0 crossed 100 GPU-s → queue 1; the new job (queue 0) preempts it
        assert set(d.allocations) == {1} and len(gpus_of(d, 1)) == 4
    else:  # same queue: FIFO within a queue, no preemption
        assert set(d.allocations) == {0}


def test_tiresias_preempts_fewest_lowest_priority_jobs():
    jobs = [
        Job(gpus=8, alloc=tuple(range(8)), submit=0, attained=500),  # queue 1, earlier
        Job(gpus=8, alloc=tuple(range(8, 16)), submit=1, attained=500),  # queue 1, later → lowest
        Job(gpus=4, submit=2),
    ]
    d = tiresias().decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2} and gpus_of(d, 2) == (8, 9, 10, 11)


@pytest.mark.parametrize("knob,promoted", [(0, False), (2, True), (10, False)])
def test_tiresias_starvation_promotion(knob, promoted):
    # job0: queue 1, runs on every GPU. job1: queue 1, started at t=0, ran 10 s, waiting since:
    # at now=100 it waited 100 - 0 - 10 = 90 s after its first start; 90 ≥ 2×10 but < 10×10
    jobs = [
        Job(gpus=16, alloc=tuple(range(16)), submit=0, attained=500, executed=50),
        Job(gpus=4, submit=0, attained=400, executed=10, first_start=0.0),
    ]
    p = tiresias(promote_knob=knob)
    d = p.decide(build_view(jobs), 100.0)
    assert (1 in d.allocations) == promoted
    assert (0 in d.allocations) != promoted
    if promoted:
        assert p.queues(build_view(jobs)).tolist() == [1, 0]


def test_tiresias_skewed_models_wait_for_consolidation():
    # 2 free GPUs on node0 and 2 on node1: a 4-GPU VGG job needs one node; ResNet takes the split
    busy = (2, 3, 6, 7) + tuple(range(8, 16))
    jobs = [Job(gpus=12, alloc=busy), Job(gpus=4, submit=1, model="vgg16"), Job(gpus=4, submit=2, model="resnet50")]
    d = tiresias().decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2} and gpus_of(d, 2) == (0, 1, 4, 5)
    d = tiresias(skew_models=()).decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 1}


def test_tiresias_skewed_large_job_needs_one_leaf():
    # 8 GPUs free: node1 (leaf 0) and node2 (leaf 1); an 8-GPU AlexNet job must stay in one leaf
    busy = tuple(range(4)) + tuple(range(12, 16))
    jobs = [Job(gpus=8, alloc=busy), Job(gpus=8, submit=1, model="AlexNet")]
    assert set(tiresias().decide(build_view(jobs), 100.0).allocations) == {0}
    assert set(tiresias(consolidation="min-nodes").decide(build_view(jobs), 100.0).allocations) == {0, 1}


def test_tiresias_wakes_at_next_demotion():
    # a 16-GPU job waits in queue 0 (12 GPUs free, no lower-queue victims): once job 0 is
    # demoted it becomes a victim, so the policy asks to be called then
    jobs = [Job(gpus=4, alloc=(0, 1, 2, 3), attained=50), Job(gpus=16, submit=1)]
    d = tiresias().decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0}
    assert d.wake_at == pytest.approx(100.0 + 50 / 4)


def test_tiresias_no_wake_for_a_demotion_nobody_waits_for():
    # nothing waits: the demotion changes no decision, the next event's call sees it
    d = tiresias().decide(build_view([Job(gpus=4, alloc=(0, 1, 2, 3), attained=50)]), 100.0)
    assert d.wake_at is None


def test_tiresias_requeued_after_capacity_loss_keeps_priority():
    online = np.ones(16, bool)
    online[:4] = False  # node0 left the cluster; job0 was preempted by the engine
    jobs = [Job(gpus=4, submit=0, state=JobState.QUEUED, attained=10, executed=5, first_start=0.0),
            Job(gpus=8, alloc=tuple(range(8, 16)), submit=1, attained=900)]
    d = tiresias().decide(build_view(jobs, online=online), 100.0)
    assert gpus_of(d, 0) == (4, 5, 6, 7) and 1 in d.allocations


# -- Gandiva ---------------------------------------------------------------------------------

def test_gandiva_packs_by_demand_affinity():
    jobs = [
        Job(gpus=2, alloc=(0, 1)),  # node0: affine to 2-GPU jobs
        Job(gpus=1, alloc=(8,)),  # node2: affine to 1-GPU jobs
        Job(gpus=4, alloc=(12, 13, 14, 15)),
        Job(gpus=2, submit=1),
        Job(gpus=1, submit=2),
        Job(gpus=3, submit=3),
    ]
    d = policies.make("gandiva").decide(build_view(jobs), 100.0)
    assert gpus_of(d, 3) == (2, 3)  # beside the other 2-GPU job, not on the empty node1
    assert gpus_of(d, 4) == (9,)
    assert gpus_of(d, 5) == (4, 5, 6)  # no 3-GPU node yet: the empty node


def test_gandiva_migrates_to_a_single_node_when_gpus_free_up():
    jobs = [
        Job(gpus=3, alloc=(0, 1, 2)),
        Job(gpus=2, alloc=(3, 4)),  # split across nodes 0 and 1
        Job(gpus=3, alloc=(5, 6, 7)),
    ]
    d = policies.make("gandiva").decide(build_view(jobs), 100.0)
    assert gpus_of(d, 1) == (8, 9) and gpus_of(d, 0) == (0, 1, 2) and gpus_of(d, 2) == (5, 6, 7)
    d = policies.make("gandiva", migrate=False).decide(build_view(jobs), 100.0)
    assert gpus_of(d, 1) == (3, 4)


def test_gandiva_migrates_large_cross_leaf_job_into_one_leaf():
    jobs = [Job(gpus=8, alloc=(0, 1, 2, 3, 8, 9, 10, 11))]  # nodes 0 and 2: two leaves
    d = policies.make("gandiva").decide(build_view(jobs), 100.0)
    assert gpus_of(d, 0) == tuple(range(8))  # best-fit leaf 0 (its own node0 + node1)


def test_gandiva_serves_previously_started_jobs_first():
    jobs = [Job(gpus=12, alloc=R12), Job(gpus=4, submit=1), Job(gpus=4, submit=5, first_start=10.0)]
    d = policies.make("gandiva").decide(build_view(jobs), 100.0)
    assert set(d.allocations) == {0, 2}


def test_gandiva_large_jobs_random_and_seeded():
    jobs = [Job(gpus=6, submit=1)]
    a = policies.make("gandiva", seed=3).decide(build_view(jobs), 100.0)
    b = policies.make("gandiva", seed=3).decide(build_view(jobs), 100.0)
    assert gpus_of(a, 0) == gpus_of(b, 0) and len(gpus_of(a, 0)) == 6
    c = policies.make("gandiva", large_placement="consolidate").decide(build_view(jobs), 100.0)
    assert gpus_of(c, 0) == (0, 1, 2, 3, 4, 5)


# -- heterogeneity and memory ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["fifo", "fifo-backfill", "sjf", "srtf", "tiresias", "gandiva"])
def test_type_requirement_and_memory_veto(name):
    types = [0] * 8 + [1] * 8

    def it(j, gpus, batch):  # job 1 does not fit in type-1 memory
        return np.inf if j == 1 and types[int(gpus[0])] == 1 else 1.0

    jobs = [Job(gpus=2, type_req=1, duration=5, remaining=5), Job(gpus=2, submit=1, duration=5, remaining=5),
            Job(gpus=8, submit=2, type_req=0, duration=5, remaining=5)]
    d = policies.make(name).decide(build_view(jobs, gpu_types=types, iteration_time=it), 100.0)
    assert all(types[g] == 1 for g in gpus_of(d, 0)) and len(gpus_of(d, 0)) == 2
    assert 1 not in d.allocations or all(types[g] == 0 for g in gpus_of(d, 1))
