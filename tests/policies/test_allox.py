"""AlloX: the matching against brute force over every queue arrangement, and a hand example."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make
from policies.allox import allox_match
from simcore.api import NEED_DURATION_ORACLE
from tests.policies.conftest import FixedThroughput, Job, build_view


def _brute_force(proc, free):
    """Least Σ completion times over every assignment of jobs to machines and every order."""
    machines = [t for t, n in enumerate(free) for _ in range(n)]
    m = proc.shape[0]
    best = np.inf
    for where in itertools.product(range(len(machines)), repeat=m):
        if any(not np.isfinite(proc[j, machines[w]]) for j, w in enumerate(where)):
            continue
        tot = 0.0
        for w in range(len(machines)):
            # every order of a machine's jobs (not assuming shortest first)
            on = [j for j in range(m) if where[j] == w]
            tot += min((sum((len(on) - i) * proc[j, machines[w]] for i, j in enumerate(order))
                        for order in itertools.permutations(on)), default=0.0)
        best = min(best, tot)
    return best


def _schedule_cost(proc, typ, mach, front):
    """Σ completion times of the returned queues, from their front positions."""
    tot = 0.0
    for key in {(t, w) for t, w in zip(typ.tolist(), mach.tolist()) if t >= 0}:
        on = [j for j in range(len(typ)) if (typ[j], mach[j]) == key]
        on.sort(key=lambda j: front[j])
        assert [front[j] for j in on] == list(range(len(on)))  # positions 0..n-1, one job each
        clock = 0.0
        for j in on:
            clock += proc[j, key[0]]
            tot += clock
    return tot


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_matching_equals_brute_force(data):
    m = data.draw(st.integers(1, 4))
    ntypes = data.draw(st.integers(1, 2))
    free = np.array(data.draw(st.lists(st.integers(0, 2), min_size=ntypes, max_size=ntypes)))
    if free.sum() == 0:
        free[0] = 1
    vals = data.draw(st.lists(st.one_of(st.integers(1, 20).map(float), st.just(np.inf)),
                              min_size=m * ntypes, max_size=m * ntypes))
    proc = np.array(vals).reshape(m, ntypes)
    proc[:, int(np.argmax(free))] = np.where(np.isfinite(proc[:, int(np.argmax(free))]),
                                             proc[:, int(np.argmax(free))], 7.0)  # every job runs somewhere
    typ, mach, front = allox_match(proc, free)
    assert (typ >= 0).all()
    assert _schedule_cost(proc, typ, mach, front) == pytest.approx(_brute_force(proc, free))


def test_hand_example_a_job_waits_rather_than_take_a_slow_gpu():
    """One GPU of each type; processing times (s) [[1, 10], [2, 5], [4, 4]]. By hand: job 2 on
    type 1 (4) and jobs 0 then 1 on type 0 (1, 1 + 2 = 3): Σ = 8. Every other arrangement costs
    ≥ 11 (job 1 on type 1: 5 + 1 + 5; all on type 0: 1 + 3 + 7). Job 1 waits behind job 0 on
    the type it is fast on rather than take the slow GPU, which job 2 (equal on both) takes."""
    proc = np.array([[1.0, 10.0], [2.0, 5.0], [4.0, 4.0]])
    typ, mach, front = allox_match(proc, np.array([1, 1]))
    assert typ.tolist() == [0, 0, 1]
    assert front.tolist() == [0, 1, 0]
    assert _schedule_cost(proc, typ, mach, front) == 8.0


def test_job_that_fits_no_free_type_is_unmatched():
    typ, _, front = allox_match(np.array([[np.inf, 3.0], [2.0, np.inf]]), np.array([1, 0]))
    assert typ.tolist() == [-1, 0] and front.tolist() == [-1, 0]


def test_policy_starts_front_jobs_and_never_preempts():
    # GPUs 0-3 type 0 (job 0 runs on GPUs 0-3), 4-7 type 1 free; three one-GPU jobs queued
    jobs = [Job(gpus=4, submit=0.0, alloc=(0, 1, 2, 3), remaining=1e6)] + [
        Job(gpus=1, submit=float(i), remaining=rem) for i, rem in ((1, 10.0), (2, 20.0), (3, 30.0))]
    tput = np.array([[1.0, 1.0], [256.0, 256.0], [256.0, 256.0], [256.0, 256.0]])
    v = build_view(jobs, now=360.0, nodes=2, gpus_per_node=4, leaves=1, gpu_types=[0] * 4 + [1] * 4,
                   iteration_time=lambda j, g, b: 1.0)
    v = dataclasses.replace(v, whatif=FixedThroughput(tput))
    pol = make("allox")
    assert NEED_DURATION_ORACLE in pol.needs and not pol.event_driven
    d = pol.decide(v, 360.0)
    assert d.allocations[0].gpus == (0, 1, 2, 3)  # kept
    for j in (1, 2, 3):  # four idle type-1 GPUs, three jobs: each at the front of its own queue
        assert len(d.allocations[j].gpus) == 1 and d.allocations[j].gpus[0] >= 4


def test_alpha_is_validated():
    from cosim.errors import InputError

    with pytest.raises(InputError):
        make("allox", alpha=0.0)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_aggregated_lp_path_equals_brute_force(data):
    """The transportation-LP path (used on big matrices; forced here) is optimal too."""
    import policies.allox as A

    m = data.draw(st.integers(1, 4))
    ntypes = data.draw(st.integers(1, 2))
    free = np.array(data.draw(st.lists(st.integers(0, 2), min_size=ntypes, max_size=ntypes)))
    if free.sum() == 0:
        free[0] = 1
    vals = data.draw(st.lists(st.one_of(st.integers(1, 20).map(float), st.just(np.inf)),
                              min_size=m * ntypes, max_size=m * ntypes))
    proc = np.array(vals).reshape(m, ntypes)
    big = int(np.argmax(free))
    proc[:, big] = np.where(np.isfinite(proc[:, big]), proc[:, big], 7.0)
    old = A.LP_ABOVE_CELLS
    A.LP_ABOVE_CELLS = -1
    try:
        typ, mach, front = A.allox_match(proc, free)
    finally:
        A.LP_ABOVE_CELLS = old
    assert (typ >= 0).all()
    assert _schedule_cost(proc, typ, mach, front) == pytest.approx(_brute_force(proc, free))


def test_shortest_jobs_of_a_type_start_now():
    """Three jobs on one GPU (one type): SPT, so the 1-s job starts, then 2 s, then 5 s."""
    typ, mach, front = allox_match(np.array([[5.0], [1.0], [2.0]]), np.array([1]))
    assert typ.tolist() == [0, 0, 0] and front.tolist() == [2, 0, 1]
