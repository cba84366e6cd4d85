"""Pollux's `keep_started_min`: a started elastic job keeps at least its minimum GPUs on the nodes it runs
on (Aryl §7.4: Pollux "considers job's minimum demand" and shrinks long jobs to yield). The GA's repair
serves those pinned minimum shares before its priority-order pass; every individual it evaluates (the
carried-over population, crossover and mutation children) goes through that repair."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make
from policies.pollux.ga import Problem, evolve, pinned_minimum
from tests.policies.test_pollux import started_and_waiting


def _random_problem(rng, J, N, per_node, interference):
    R = N * per_node
    n = np.arange(N + 1)[:, None]
    r = np.arange(R + 1)[None, :]
    k = rng.uniform(0.3, 1.0, size=(J, 1, 1))
    S = np.where((r >= n) & (r > 0), (r ** k) / (1 + 0.1 * (n - 1)), 0.0)
    node_cap = rng.integers(1, per_node + 1, size=N)
    job_node_cap = np.minimum(rng.integers(0, per_node + 1, size=(J, N)), node_cap[None])
    max_gpus = rng.integers(1, R + 1, size=J)
    min_gpus = np.minimum(rng.integers(1, 4, size=J), max_gpus)
    prob = Problem(S, np.zeros((J, N), np.int64), node_cap, job_node_cap, max_gpus, min_gpus,
                   rng.uniform(0.2, 1.0, size=J), scale=N / R, max_nodes=int(rng.integers(1, N + 1)),
                   interference=interference)
    # the current allocation: a repaired individual (what an earlier round of the policy decided)
    prob.base = prob.repair(rng.integers(0, per_node + 2, size=(1, J, N)), rng)[0]
    return prob


def _check_limits(prob, X):
    assert (X >= 0).all()
    assert (X.sum(axis=1) <= prob.node_cap[None]).all()
    assert (X <= prob.job_node_cap[None]).all()
    reps = X.sum(axis=2)
    assert (reps <= prob.max_gpus[None]).all()
    assert ((reps == 0) | (reps >= prob.min_gpus[None])).all()
    assert (np.count_nonzero(X, axis=2) <= prob.max_nodes).all()
    if prob.interference:
        dist = np.count_nonzero(X, axis=2) > 1
        assert (((X > 0) & dist[:, :, None]).sum(axis=1) <= 1).all()


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.integers(2, 6), st.integers(0, 2**31 - 1), st.booleans())
def test_a_started_elastic_job_never_gets_less_than_its_minimum(J, N, per_node, seed, interference):
    rng = np.random.default_rng(seed)
    prob = _random_problem(rng, J, N, per_node, interference)
    started = prob.base.sum(axis=1) > 0
    elastic = prob.min_gpus < prob.max_gpus
    prob.floor = pinned_minimum(prob.base, prob.min_gpus, started & elastic, prob.node_cap, prob.job_node_cap,
                                prob.max_nodes)
    held = prob.floor.sum(axis=1) > 0
    # every started elastic job is held (its allocation came from a repair, so its minimum fits where it is)
    assert (held == (started & elastic)).all()
    assert (prob.floor <= prob.base).all() and (prob.floor.sum(axis=1)[held] == prob.min_gpus[held]).all()
    # the repair, from any matrix (a full cluster included): held jobs keep their pinned share
    X = prob.repair(rng.integers(0, per_node + 2, size=(30, J, N)), rng)
    _check_limits(prob, X)
    assert (X >= prob.floor[None]).all()
    # a whole search, from a population that suspends everyone: mutation and crossover children too
    best, pop = evolve(prob, np.zeros((3, J, N), np.int64), rng, pop_size=12, generations=6)
    _check_limits(prob, pop.astype(np.int64))
    assert (pop >= prob.floor[None]).all() and (best >= prob.floor).all()


def test_pinned_minimum_by_hand():
    # job 0 holds 3 + 1 GPUs (min 2): its minimum stays on node 0, where it has most;
    # job 1 holds 1 + 2 + 1 (min 3): node 1 (2) first, then node 0 (the lower of the ties);
    # job 2 is not marked (rigid or waiting): no floor; job 3 holds 1 GPU but needs 2: not held
    base = np.array([[3, 1, 0], [1, 2, 1], [0, 0, 4], [0, 1, 0]])
    mark = np.array([True, True, False, True])
    floor = pinned_minimum(base, np.array([2, 3, 4, 2]), mark, np.full(3, 8), np.full((4, 3), 8), 16)
    assert floor.tolist() == [[2, 0, 0], [1, 2, 0], [0, 0, 0], [0, 0, 0]]
    # most nodes per job: job 1's minimum needs two nodes, one is allowed
    floor = pinned_minimum(base, np.array([2, 3, 4, 2]), mark, np.full(3, 8), np.full((4, 3), 8), 1)
    assert floor.tolist() == [[2, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]


def test_the_repair_serves_pinned_minimums_before_the_priority_pass():
    # one node of 4 GPUs; job 1 (later in priority) holds 4 with a minimum of 2. The matrix
    # gives job 0 all 4: without the floor job 1 would be suspended; with it, job 0 gets 2.
    S = np.zeros((2, 2, 5))
    S[:, 1, 1:] = np.arange(1, 5)
    prob = Problem(S, np.array([[0], [4]]), np.array([4]), np.full((2, 1), 4), np.array([4, 4]),
                   np.array([1, 2]), np.ones(2), scale=0.25)
    X = np.array([[[4], [0]]])
    assert prob.repair(X, np.random.default_rng(0))[0].tolist() == [[4], [0]]
    prob.floor = np.array([[0], [2]])
    assert prob.repair(X, np.random.default_rng(0))[0].tolist() == [[2], [2]]


def test_keep_started_min_never_suspends_a_started_elastic_job():
    # p = -1 wants as many jobs served as it can, so Pollux suspends the started elastic job
    # (min 3, max 4) for the three waiting ones in some seed; with keep_started_min it keeps at least
    # 3 GPUs every time
    def least_gpus(keep: bool) -> int:
        out = []
        for seed in range(8):
            pol = make("pollux", population=20, generations=10, seed=seed, keep_started_min=keep)
            d = pol.decide(started_and_waiting(min_gpus=3), 600.0)
            held = [g for x in d.allocations.values() for g in x.gpus]
            assert len(held) == len(set(held)) <= 4
            out.append(len(d.allocations[0].gpus) if 0 in d.allocations else 0)
        return min(out)

    assert least_gpus(True) >= 3
    assert least_gpus(False) == 0


def test_keep_started_min_is_shown_with_its_paper_line():
    from typer.testing import CliRunner

    from cli.app import app

    out = " ".join(CliRunner().invoke(app, ["policies", "show", "pollux"]).output.split())
    assert "keep_started_min: bool = false" in out
    assert "considers job's minimum demand" in out


def test_without_floors_the_repair_is_unchanged():
    # an all-zero floor is the same problem as none: the same children, byte for byte
    rng = np.random.default_rng(3)
    prob = _random_problem(rng, 5, 4, 4, True)
    X = rng.integers(0, 6, size=(20, 5, 4))
    a = prob.repair(X, np.random.default_rng(9))
    prob.floor = np.zeros_like(prob.base)
    b = prob.repair(X, np.random.default_rng(9))
    assert np.array_equal(a, b)
