"""AFS: base share first, then spare GPUs by marginal gain per GPU; checked against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from policies import make
from tests.policies.conftest import Job, build_view


def _tables(rng, n_jobs, g_max):
    """Concave throughput curves x(g) = c·g^p (p < 1): step(g) = 1 / x(g)."""
    c = rng.uniform(0.5, 2.0, n_jobs)
    p = rng.uniform(0.3, 0.95, n_jobs)
    return {j: {g: 1.0 / (c[j] * g ** p[j]) for g in range(1, g_max + 2)} for j in range(n_jobs)}


def _view(step, reqs, rem_iters, max_gpus=8, gpus_per_node=4, nodes=2):
    jobs = [Job(gpus=r, submit=float(i), model=f"m{i}", min_gpus=1, max_gpus=max_gpus,
                remaining=rem_iters[i] * step[i][r]) for i, r in enumerate(reqs)]
    return build_view(jobs, nodes=nodes, gpus_per_node=gpus_per_node, leaves=1,
                      iteration_time=lambda j, gpus, batch: step[j][len(gpus)])


def _objective(step, counts, base, rem, gain):
    """What AFS' greedy maximises: Σ normalised throughput (job_fraction: 1 / remaining time)."""
    tot = 0.0
    for j, n in enumerate(counts):
        if gain == "job_fraction":
            tot += 1.0 / (rem[j] * step[j][n])
        else:
            tot += step[j][base[j]] / step[j][n]
    return tot


@pytest.mark.parametrize("gain", ["job_fraction", "speedup"])
@pytest.mark.parametrize("seed", range(6))
def test_greedy_from_base_share_matches_brute_force(gain, seed):
    """The defining property: with diminishing returns, handing each spare GPU to the best
    marginal gain per GPU gives the best total over every allocation that keeps each job's base
    share (brute force over all of them)."""
    rng = np.random.default_rng(seed)
    g_total, reqs = 8, [1, 2, 1]
    step = _tables(rng, 3, g_total)
    rem = rng.uniform(10, 1000, 3)
    got = make("afs", gain=gain).allocate(_view(step, reqs, rem), np.arange(3))
    assert got.sum() == g_total and all(got >= reqs)
    best = max(
        (c for c in itertools.product(*(range(r, g_total + 1) for r in reqs)) if sum(c) == g_total),
        key=lambda c: _objective(step, c, reqs, rem, gain),
    )
    assert _objective(step, got, reqs, rem, gain) == pytest.approx(_objective(step, best, reqs, rem, gain))


def test_base_share_in_arrival_order_even_with_low_gain():
    # job 0 scales perfectly, job 1 not at all: job 1 still gets its requested 2 GPUs first
    step = {0: {g: 1.0 / g for g in range(1, 10)}, 1: {g: 1.0 for g in range(1, 10)}}
    got = make("afs", gain="speedup").allocate(_view(step, [1, 2], [100.0, 100.0]), np.arange(2))
    assert got.tolist() == [6, 2]


def test_job_that_does_not_fit_its_base_share_waits_later_ones_start():
    step = {j: {g: 1.0 for g in range(1, 10)} for j in range(3)}
    got = make("afs").allocate(_view(step, [4, 8, 4], [1.0, 1.0, 1.0], max_gpus=8), np.arange(3))
    assert got.tolist() == [4, 0, 4]  # flat scaling: no spare GPU is worth giving


def test_unbounded_grows_past_max_gpus_only_when_asked():
    step = {0: {g: 1.0 / g for g in range(1, 10)}}
    assert make("afs").allocate(_view(step, [1], [10.0], max_gpus=2), np.arange(1)).tolist() == [2]
    assert make("afs", max_gpus="unbounded").allocate(_view(step, [1], [10.0], max_gpus=2),
                                                      np.arange(1)).tolist() == [8]


def test_decision_uses_distinct_gpus_and_oracle_only_for_job_fraction():
    rng = np.random.default_rng(1)
    step = _tables(rng, 3, 8)
    d = make("afs").decide(_view(step, [1, 2, 1], [50.0, 500.0, 5.0]), 100.0)
    gpus = [g for a in d.allocations.values() for g in a.gpus]
    assert len(gpus) == len(set(gpus)) == 8
    assert "duration_oracle" in make("afs").needs and not make("afs", gain="speedup").needs


def test_job_not_admitted_gets_no_spare_gpus():
    # 12 GPUs: the 12-GPU rigid job does not fit after the 4-GPU one; the spare 4 go to the
    # admitted jobs, never a partial share to the rigid one (the engine would reject it)
    step = {j: {g: 1.0 / g for g in range(1, 14)} for j in range(3)}
    jobs = [Job(gpus=4, submit=0.0, model="m0", min_gpus=1, max_gpus=12, remaining=10.0),
            Job(gpus=12, submit=1.0, model="m1", min_gpus=12, max_gpus=12, remaining=10.0),
            Job(gpus=4, submit=2.0, model="m2", min_gpus=1, max_gpus=12, remaining=10.0)]
    view = build_view(jobs, nodes=3, gpus_per_node=4, leaves=1, iteration_time=lambda j, g, b: step[j][len(g)])
    got = make("afs").allocate(view, np.arange(3))
    assert got[1] == 0 and got.sum() == 12


def test_event_driven_false_decides_only_at_the_tick():
    """`event_driven=false` + `interval_s`: rounds at the tick only (the Aryl paper-size grids),
    far fewer calls than event-driven, and every job still finishes."""
    from tests.simcore.helpers import simulate

    rows = [dict(submit_time=7.0 * i, num_gpus=1 + i % 2, duration=50.0 + 13.0 * i) for i in range(12)]
    every = make("afs", gain="speedup", interval_s=60.0)
    tick = make("afs", gain="speedup", interval_s=60.0, event_driven=False)
    calls: list[float] = []
    decide = tick.decide
    tick.decide = lambda view, now: (calls.append(now), decide(view, now))[1]  # type: ignore[method-assign]
    a, b = simulate(rows, every), simulate(rows, tick)
    assert (a.jobs.state == b.jobs.state).all() and np.isfinite(b.jobs.end_time).all()
    assert calls and all(t % 60.0 == 0.0 for t in calls)  # only at multiples of the tick
    assert b.num_policy_calls < a.num_policy_calls


def test_event_driven_false_needs_an_interval():
    from cosim.errors import InputError

    with pytest.raises(InputError, match="event_driven"):
        make("afs", event_driven=False)
