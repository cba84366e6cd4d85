"""Optimus (Pollux-simulator form): the marginal-gain order on a hand-built example, caps, decisions."""

from __future__ import annotations

import numpy as np
import pytest

from policies import make
from policies.optimus import marginal_greedy
from tests.policies.conftest import Job, build_view

# step time (s/iteration) of each job on g packed GPUs; remaining iterations 100, 50, 1000
STEP = {
    0: {1: 10.0, 2: 6.0, 3: 5.0, 4: 4.5, 5: 4.4, 6: 4.3, 7: 4.2, 8: 4.1},
    1: {1: 8.0, 2: 4.0, 3: 3.0, 4: 2.5, 5: 2.4, 6: 2.3, 7: 2.2, 8: 2.1},
    2: {1: 20.0, 2: 19.0, 3: 18.5, 4: 18.25, 5: 18.2, 6: 18.15, 7: 18.1, 8: 18.05},
}
REM_ITERS = (100.0, 50.0, 1000.0)


def _view(max_gpus=8, models=("m0", "m1", "m2"), alloc=((), (), ())):
    jobs = [Job(gpus=1, submit=float(i), model=models[i], min_gpus=1, max_gpus=max_gpus,
                remaining=REM_ITERS[i] * STEP[i][1], alloc=alloc[i]) for i in range(3)]
    return build_view(jobs, nodes=2, gpus_per_node=4, leaves=1,
                      iteration_time=lambda j, gpus, batch: STEP[j][len(gpus)])


# gains (step(g) − step(g+1)) × remaining: job 2 1→2: 1000, 2→3: 500, 3→4: 250; job 0 1→2: 400,
# 2→3: 100; job 1 1→2: 200. After one GPU each (3 of 8), the 5 spare go in this order:
HANDOUT = [2, 2, 0, 2, 1]


@pytest.mark.parametrize("spare", range(len(HANDOUT) + 1))
def test_marginal_gain_order_by_hand(spare):
    pol = make("optimus")
    view = _view()
    jobs = np.arange(3)
    expect = np.ones(3, np.int64)
    for j in HANDOUT[:spare]:
        expect[j] += 1
    step = pol.step
    rem = np.array(REM_ITERS)
    got = marginal_greedy(np.ones(3, np.int64), np.full(3, 8), spare,
                          lambda i, g: (step(view, i, g) - step(view, i, g + 1)) * rem[i])
    assert got.tolist() == expect.tolist()
    if spare == len(HANDOUT):  # the policy's own round: every GPU of the 2×4 cluster
        assert pol.allocate(view, jobs).tolist() == expect.tolist() == [2, 2, 4]


def test_decision_places_counts_on_distinct_gpus():
    d = make("optimus").decide(_view(), 100.0)
    sizes = {j: len(a.gpus) for j, a in d.allocations.items()}
    assert sizes == {0: 2, 1: 2, 2: 4}
    gpus = [g for a in d.allocations.values() for g in a.gpus]
    assert len(gpus) == len(set(gpus)) == 8


def test_unchanged_count_keeps_its_gpus():
    view = _view(max_gpus=4, alloc=((4, 5), (6, 7), (0, 1, 2, 3)))  # already at [2, 2, 4]
    d = make("optimus").decide(view, 100.0)
    for j, gpus in enumerate(((4, 5), (6, 7), (0, 1, 2, 3))):
        a = d.allocations.get(j)
        assert a is None or a.gpus == gpus  # kept (changes-only decisions may omit it)


def test_caps_max_gpus_and_pinned_models():
    assert make("optimus").allocate(_view(max_gpus=2), np.arange(3)).tolist() == [2, 2, 2]
    # neumf is pinned to one GPU
    pinned = make("optimus").allocate(_view(models=("m0", "neumf", "m2")), np.arange(3))
    assert pinned[1] == 1 and pinned.sum() == 8
    free = make("optimus", single_gpu_models=()).allocate(_view(models=("m0", "neumf", "m2")), np.arange(3))
    assert free[1] == 2


def test_batch_cap_uses_min_local_batch():
    # bert_base: min local batch 4, so a 256-batch job may use 64 GPUs; resnet50 (20): 12
    from policies.optimus import caps_of
    view = _view(max_gpus=100, models=("bert_base", "resnet50", "m2"))
    assert caps_of(view, np.arange(3), True, ()).tolist() == [64, 12, 100]
    assert caps_of(view, np.arange(3), False, ()).tolist() == [100, 100, 100]


def test_more_jobs_than_gpus_later_arrivals_get_none():
    jobs = [Job(gpus=1, submit=float(i), model=f"m{i}", remaining=10.0) for i in range(5)]
    view = build_view(jobs, nodes=1, gpus_per_node=4, leaves=1, iteration_time=lambda j, g, b: 1.0)
    assert make("optimus").allocate(view, np.arange(5)).tolist() == [1, 1, 1, 1, 0]


def test_requested_base_share_first_fit_then_one_gpu():
    """`base_share = 'requested'`: requests 4, 3, 4 on 8 GPUs in arrival order give 4 and 3, the third
    no longer fits and runs on the one GPU left; the greedy hands out nothing more."""
    jobs = [Job(gpus=g, submit=float(i), model=f"m{i}", min_gpus=1, max_gpus=8, remaining=REM_ITERS[i] * STEP[i][1])
            for i, g in enumerate((4, 3, 4))]
    view = build_view(jobs, nodes=2, gpus_per_node=4, leaves=1, iteration_time=lambda j, gpus, batch: STEP[j][len(gpus)])
    assert make("optimus", base_share="requested").allocate(view, np.arange(3)).tolist() == [4, 3, 1]
    assert make("optimus").allocate(view, np.arange(3)).tolist() == [2, 2, 4]  # 'one': the HANDOUT order


def test_rounds_only_and_declares_the_oracle():
    pol = make("optimus")
    assert pol.interval_s == 60 and pol.event_driven is False and "duration_oracle" in pol.needs
    assert make("optimus", interval_s="600").interval_s == 600


def test_rigid_job_is_never_capped_below_its_minimum():
    # a rigid 4-GPU neumf job (pinned to 1 GPU by the Pollux rule) still runs at 4
    jobs = [Job(gpus=4, model="neumf", min_gpus=4, max_gpus=4, remaining=10.0)]
    view = build_view(jobs, nodes=1, gpus_per_node=4, leaves=1, iteration_time=lambda j, g, b: 1.0)
    assert make("optimus").allocate(view, np.arange(1)).tolist() == [4]


def test_min_local_batch_table_is_keyed_by_canonical_zoo_names():
    # the view carries canonical model names: every Pollux application must resolve to a key
    from calibration import zoo
    from policies.optimus import MIN_LOCAL_BATCH
    apps = ("cifar10", "ncf", "bert", "imagenet", "deepspeech2", "yolov3")
    assert sorted(zoo.resolve(a) for a in apps) == sorted(MIN_LOCAL_BATCH)


def _twins(rem_a, rem_b, alloc=((), ()), now=120.0):
    """Two identical jobs on one 3-GPU node: one GPU each, the third to the larger remaining work."""
    step = {1: 2.0, 2: 1.2, 3: 1.0}
    jobs = [Job(gpus=1, submit=float(i), model="m0", min_gpus=1, max_gpus=3, remaining=r * step[1], alloc=a)
            for i, (r, a) in enumerate(((rem_a, alloc[0]), (rem_b, alloc[1])))]
    return build_view(jobs, now, nodes=1, gpus_per_node=3, leaves=1,
                      iteration_time=lambda j, gpus, batch: step[len(gpus)])


def test_remaining_held_per_epoch_stops_twins_trading_the_odd_gpu():
    """The Pollux simulator reads remaining work at whole epochs, so two equal jobs keep their
    counts between epoch ends; re-read every round, the one ahead loses the odd GPU each round."""
    from dataclasses import replace

    from simcore.api import ProgressEvent

    held, cont = make("optimus"), make("optimus", remaining="continuous")
    assert held.wants_epoch_events and not cont.wants_epoch_events
    first = _twins(100.0, 101.0, now=60.0)
    assert held.allocate(first, np.arange(2)).tolist() == cont.allocate(first, np.arange(2)).tolist() == [1, 2]
    # a round later job 1 (on 2 GPUs) has overtaken job 0: continuous trades the GPU, held keeps it
    later = _twins(95.0, 90.0, alloc=((0,), (1, 2)))
    assert cont.allocate(later, np.arange(2)).tolist() == [2, 1]
    assert held.allocate(later, np.arange(2)).tolist() == [1, 2]
    # an epoch-end call between rounds moves nothing but re-reads job 1's remaining work ...
    mid = replace(_twins(95.0, 90.0, alloc=((0,), (1, 2)), now=130.0),
                  progress_events=(ProgressEvent(1, "epoch", 1.0),))
    d = held.decide(mid, 130.0)
    assert all(len(a.gpus) == (1 if j == 0 else 2) for j, a in d.allocations.items())
    # ... so the next round gives the odd GPU to job 0, which now has more left
    assert held.allocate(_twins(95.0, 90.0, alloc=((0,), (1, 2)), now=180.0), np.arange(2)).tolist() == [2, 1]
