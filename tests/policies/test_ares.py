"""Ares / Elastic Fair Queuing: the GPS virtual clock, α-doubling, the Fig.-4 decision
sequence, the decide-on-change rule, the artifact options, and the delay bound of Theorem 1
in idealised mode (linear scaling, zero restart cost) on the real engine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from policies import make
from policies.ares_gps import FluidGps, VirtualClock, interp_time
from simcore.api import JobState
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.gps import gps_completion
from simcore.perf_backends import make_perf
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from tests.policies.conftest import Job, build_view
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import frame

# ---- the virtual clock (Eq. 2-3) -----------------------------------------------------------

def test_single_job_virtual_finish_is_its_gpu_time_and_gps_finish_is_l_over_m():
    clock = VirtualClock(capacity=8)
    f = clock.arrive(0, 0.0, gpu_s=800.0)
    assert f == 800.0  # F = V(0) + L = L
    clock.advance(1e9)
    assert clock.gps_done[0] == pytest.approx(100.0)  # alone in GPS: all 8 GPUs, L / M


@pytest.mark.parametrize("n, m, L", [(3, 6, 600.0), (5, 64, 1234.5), (1, 16, 10.0)])
def test_n_equal_jobs_arriving_together_finish_in_gps_at_n_l_over_m(n, m, L):
    clock = VirtualClock(capacity=m)
    fs = [clock.arrive(j, 7.0, L) for j in range(n)]
    assert fs == [L] * n  # V(a) = 0 for all: the clock has not moved
    assert clock.finish_time(L) == pytest.approx(7.0 + n * L / m)
    clock.advance(1e12)
    assert [clock.gps_done[j] for j in range(n)] == pytest.approx([7.0 + n * L / m] * n)


def test_clock_is_frozen_while_gps_is_idle_and_reset_is_an_option():
    frozen = VirtualClock(capacity=4)
    frozen.arrive(0, 0.0, 40.0)  # finishes in GPS at t = 10, V = 40
    assert frozen.arrive(1, 100.0, 8.0) == pytest.approx(48.0)  # V stayed at 40 over [10, 100]
    reset = VirtualClock(capacity=4, idle="reset")
    reset.arrive(0, 0.0, 40.0)
    assert reset.arrive(1, 100.0, 8.0) == pytest.approx(8.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 500), st.floats(1, 5000)), min_size=1, max_size=25),
       st.sampled_from([1, 4, 16, 64]))
def test_virtual_clock_gps_finish_times_equal_the_fluid_gps_reference(jobs, m):
    """The O(log N) clock and simcore.gps's event-exact fluid GPS (each job uncapped, so every
    active job gets M/N, and L_j GPU-s of work) give the same GPS finish times."""
    jobs = sorted(jobs)
    clock = VirtualClock(capacity=m)
    for j, (a, L) in enumerate(jobs):
        clock.arrive(j, a, L)
    clock.advance(1e12)
    sub = np.array([a for a, _ in jobs])
    L = np.array([x for _, x in jobs])
    ref = gps_completion(sub, np.full(len(jobs), m, np.int64), L / m, np.array([0.0]), np.array([float(m)]))
    got = np.array([clock.gps_done[j] for j in range(len(jobs))])
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-6)


def test_fluid_gps_orders_by_nonlinear_completion_and_caps_the_share():
    # job 0: 100 s of work at 1 GPU, no speed-up past 1 GPU; job 1: 150 s at 1 GPU, linear
    times = {0: lambda s: 100.0 / min(s, 1.0), 1: lambda s: 150.0 / s}
    g = FluidGps(4, lambda j, s: times[j](s))
    g.arrive(0, 0.0, cap=math.inf)
    g.arrive(1, 0.0, cap=math.inf)
    # both share 2 GPUs: job 0 (capped speed) needs 100 s, job 1 needs 75 s -> job 1 first
    assert g.rank[1] == pytest.approx(75.0) and g.rank[0] == pytest.approx(100.0)
    capped = FluidGps(4, lambda j, s: times[j](s))
    capped.arrive(0, 0.0, cap=1.0)
    capped.arrive(1, 0.0, cap=1.0)  # each at most 1 GPU: job 1 now needs 150 s
    assert capped.rank[0] < capped.rank[1]


def test_interp_time_between_integer_counts_and_below_one_gpu():
    step = {1: 1.0, 2: 0.6, 3: 0.5}.__getitem__
    assert interp_time(step, 10, 2.0) == pytest.approx(6.0)
    assert interp_time(step, 10, 2.5) == pytest.approx(10 * 0.55)
    assert interp_time(step, 10, 0.5) == pytest.approx(20.0)


# ---- α-doubling ----------------------------------------------------------------------------

def _view(jobs, now, step, nodes, gpn=2):
    return build_view(jobs, now, nodes=nodes, gpus_per_node=gpn, leaves=1,
                      iteration_time=lambda j, g, b: step[j](g if isinstance(g, (int, np.integer)) else len(g)))


def _knee(k):
    """Linear up to k GPUs, no gain past it (per-GPU efficiency k/g beyond)."""
    return lambda g: 1.0 / min(g, k)


@pytest.mark.parametrize("alpha, want", [(0.75, 4), (0.5, 8), (0.25, 16)])
def test_doubling_stops_when_the_per_gpu_efficiency_falls_below_alpha(alpha, want):
    # demand 2, linear to 4 GPUs: eff(8) = 0.5, eff(16) = 0.25 (relative to the demand)
    pol = make("ares", alpha=alpha)
    v = _view([Job(gpus=2, submit=0.0, max_gpus=16, remaining=100.0)], 0.0, {0: _knee(4)}, nodes=8)
    assert pol.efficiency(v, 0, 8) == pytest.approx(0.5)
    assert pol.doubling_target(v, 0) == want


def test_artifact_mode_doubles_from_one_gpu_relative_to_one_gpu_and_tops_up():
    step = {0: lambda g: 1.0 / min(g, 4) if g < 8 else 1.0 / 3.0, 1: lambda g: {1: 1.0, 2: 0.5, 4: 0.45}.get(g, 0.5)}
    jobs = [Job(gpus=2, submit=0.0, min_gpus=1, max_gpus=16, remaining=10.0),
            Job(gpus=8, submit=1.0, min_gpus=1, max_gpus=8, remaining=10.0)]
    v = _view(jobs, 1.0, step, nodes=8)
    art = make("ares", mode="artifact")
    assert art.doubling_target(v, 1) == 2  # from 1 GPU, the request of 8 ignored: eff(4) = 1/(4·0.45) < 0.75
    paper = make("ares")
    assert paper.doubling_target(v, 1) == 8  # the demand is always granted
    # top-up: job 0 (target 4) may grow to 8 only if that speeds it up: 1/3 < 1/4 is slower -> stays
    order = np.array([0, 1])
    art._arrive(v, [0, 1])
    assert art.allocate(v, order, 16).tolist() == [4, 4]  # job 1: 2 -> 4 (faster), not 8 (slower)
    no_topup = make("ares", mode="artifact", topup_leftover="off")
    no_topup._arrive(v, [0, 1])
    assert no_topup.allocate(v, order, 16).tolist() == [4, 2]


def test_bad_alpha_is_an_input_error():
    with pytest.raises(InputError, match="alpha"):
        make("ares", alpha=1.5)
    with pytest.raises(InputError):
        make("ares", mode="legacy")


# ---- Fig. 4: a decision sequence -----------------------------------------------------------

def _counts(decision, view, n):
    cur = {j: len(view.allocation_of(j)) for j in range(n)}
    if decision.changes_only:
        for j, a in decision.allocations.items():
            cur[j] = len(a.gpus)
        return cur
    return {j: len(decision.allocations[j].gpus) if j in decision.allocations else 0 for j in range(n)}


def test_fig4_decision_sequence():
    """ares.md §2.7, Fig. 4 on 6 GPUs. GPS order job-1, job-3, job-2; job-1 and job-3 scale
    linearly to 4 GPUs only, job-2 linearly. t=0: job-1 gets 4 (doubled from 2), job-2 the 2
    left; t=2: job-3 (smaller F than job-2) arrives and preempts job-2; t=3: job-1 completes,
    job-3 gets 4 (α cap), job-2 the 2 left; t=5.5: job-3 completes, job-2 gets all 6.

    Work (GPU-s at the demand): job-1 2 GPUs × 6 s (F = 12), job-2 3 × 10 (F = 30), job-3 2 × 6
    arriving at t=2 when V = 2 · 6/2 = 6 (F = 18)."""
    step = {0: _knee(4), 1: lambda g: 1.0 / g, 2: _knee(4)}
    pol = make("ares", alpha=0.75)
    a1, a2, a3 = ({"gpus": 2, "min_gpus": 1, "max_gpus": 8, "remaining": 6.0}, {"gpus": 3, "min_gpus": 1, "max_gpus": 6,
                  "remaining": 10.0}, {"gpus": 2, "min_gpus": 1, "max_gpus": 8, "remaining": 6.0})

    v0 = _view([Job(submit=0.0, **a1), Job(submit=0.0, **a2)], 0.0, step, nodes=3)
    d0 = pol.decide(v0, 0.0)
    assert _counts(d0, v0, 2) == {0: 4, 1: 2}
    assert pol.F == {0: 12.0, 1: 30.0}
    g1 = d0.allocations[0].gpus
    g2 = d0.allocations[1].gpus

    # t = 2: job-3 arrives
    jobs = [Job(submit=0.0, alloc=g1, **a1), Job(submit=0.0, alloc=g2, **a2), Job(submit=2.0, **a3)]
    v2 = _view(jobs, 2.0, step, nodes=3)
    d2 = pol.decide(v2, 2.0)
    assert pol.F[2] == pytest.approx(18.0)
    assert _counts(d2, v2, 3) == {0: 4, 1: 0, 2: 2}
    if d2.changes_only:
        assert 0 not in d2.allocations  # job-1 unchanged: left in place
    else:
        assert d2.allocations[0].gpus == g1
    g3 = tuple(sorted(set(range(6)) - set(g1)))

    # nothing changed at t = 2.5: no decision
    jobs = [Job(submit=0.0, alloc=g1, **a1), Job(submit=0.0, **a2), Job(submit=2.0, alloc=g3, **a3)]
    before = pol.decisions
    v25 = _view(jobs, 2.5, step, nodes=3)
    d25 = pol.decide(v25, 2.5)
    assert pol.decisions == before and _counts(d25, v25, 3) == {0: 4, 1: 0, 2: 2}

    # t = 3: job-1 completes
    jobs = [Job(submit=0.0, state=JobState.FINISHED, **a1), Job(submit=0.0, **a2),
            Job(submit=2.0, alloc=g3, **a3)]
    v3 = _view(jobs, 3.0, step, nodes=3)
    d3 = pol.decide(v3, 3.0)
    assert _counts(d3, v3, 3) == {0: 0, 1: 2, 2: 4}
    g3b = d3.allocations[2].gpus
    g2b = d3.allocations[1].gpus

    # t = 5.5: job-3 completes, job-2 takes every GPU
    jobs = [Job(submit=0.0, state=JobState.FINISHED, **a1), Job(submit=0.0, alloc=g2b, **a2),
            Job(submit=2.0, alloc=g3b, state=JobState.FINISHED, **a3)]
    jobs[2].alloc = ()
    v55 = _view(jobs, 5.5, step, nodes=3)
    assert _counts(pol.decide(v55, 5.5), v55, 3) == {0: 0, 1: 6, 2: 0}


# ---- Theorem 1 in idealised mode, on the engine --------------------------------------------

class _IdealZoo(FakeZoo):
    """Compute time proportional to the local batch: with `--perf linear` (no communication)
    the GPU-time of a job is the same at every power-of-two GPU count (idealised mode)."""

    def compute_time_s(self, model, gpu_type, local_batch):
        return 1e-3 * local_batch


def _run_engine(rows, policy, nodes=4, gpn=4):
    topo = fake_topology(nodes, gpn)
    zoo = _IdealZoo()
    perf = make_perf("linear", topo, zoo, FakeComm(topo), fake_solve, contention=False)
    jobs, bad = build_jobs(frame(rows), perf, zoo)
    assert not bad
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, ChangeCosts(restart_s=0.0),
                 options=EngineOptions(check_invariants=True))
    return eng.run(), jobs


def _longest_full_busy(res, m):
    t = np.asarray(res.timeline["time_s"], float)
    busy = np.asarray(res.timeline["busy_gpus"])
    best, start = 0.0, None
    for i in range(t.size):
        if busy[i] >= m and start is None:
            start = t[i]
        elif busy[i] < m and start is not None:
            best, start = max(best, t[i] - start), None
    if start is not None:
        best = max(best, res.end_time - start)
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0, 300), st.sampled_from([1, 2, 4, 8, 16]), st.integers(50, 3000)),
                min_size=2, max_size=12),
       st.floats(0.5, 1.0))
def test_delay_bound_holds_in_idealised_mode(jobs, alpha):
    """f_j − f̄_j ≤ (1/α − 1)·𝓛 (Theorem 1) with linear scaling and free restarts; f̄_j from
    simcore.gps's fluid GPS (every job uncapped, L_j = d_j·T_j(d_j) GPU-s), 𝓛 the longest
    interval during which all M GPUs are busy."""
    m = 16
    # zero-padded ids: the engine orders jobs by (submit time, id), so row i stays job i
    rows = [{"job_id": f"j{i:03d}", "submit_time": a, "num_gpus": d, "min_gpus": 1, "max_gpus": m,
             "total_iterations": it, "global_batch": 256}
            for i, (a, d, it) in enumerate(sorted(jobs))]
    pol = make("ares", alpha=alpha)
    res, table = _run_engine(rows, pol)
    assert not res.stuck
    f = np.asarray(res.jobs.end_time)
    assert np.isfinite(f).all()
    sub = np.asarray(table.submit_time)
    L = np.array([r["num_gpus"] * r["total_iterations"] * 1e-3 * 256 / r["num_gpus"] for r in rows])
    assert [pol.L[j] for j in range(len(rows))] == pytest.approx(L.tolist())
    fbar = gps_completion(sub, np.full(len(rows), m, np.int64), L / m, np.array([0.0]), np.array([float(m)]))
    bound = (1.0 / alpha - 1.0) * _longest_full_busy(res, m)
    assert (f - fbar).max() <= bound + 1e-6 * max(1.0, f.max())


def test_nonlinear_engine_run_finishes_every_job_in_both_modes():
    """FakeZoo has a fixed per-iteration overhead, so efficiency falls with the GPU count and
    α stops the doubling; both modes run a small trace to the end on the real engine."""
    rows = [{"submit_time": 10.0 * i, "num_gpus": [1, 2, 4, 3][i % 4], "min_gpus": 1, "max_gpus": 8,
                 "total_iterations": 200 + 50 * i, "global_batch": 128} for i in range(10)]
    for mode in ("paper", "artifact"):
        topo = fake_topology(4, 4)
        perf = make_perf("network", topo, FakeZoo(), FakeComm(topo), fake_solve)
        jobs, _ = build_jobs(frame(rows), perf, FakeZoo())
        pol = make("ares", mode=mode)
        res = Engine(jobs, ClusterState.from_topology(topo), perf, pol, ChangeCosts(restart_s=5.0),
                     options=EngineOptions(check_invariants=True)).run()
        assert not res.stuck and np.isfinite(np.asarray(res.jobs.end_time)).all()
        assert pol.decisions <= 2 * len(rows)  # one per arrival or completion at most


def test_equal_virtual_finish_times_break_by_arrival_or_by_work():
    # 8 GPUs. Job 0 arrives at 0 with L = 2 GPUs x 8 s = 16 (F = 16); alone in GPS, V = 8 at t = 1,
    # when job 1 arrives with L = 1 x 8 = 8: F = 16 too
    jobs = [Job(gpus=2, submit=0.0, remaining=8.0), Job(gpus=1, submit=1.0, remaining=8.0)]
    v = _view(jobs, 1.0, {0: _knee(2), 1: _knee(1)}, nodes=4)
    for tie, want in (("arrival", [0, 1]), ("work", [1, 0])):
        pol = make("ares", tie_break=tie)
        pol._arrive(v, [0, 1])
        assert pol.F == {0: 16.0, 1: 16.0}
        assert pol.priority_order(v, np.array([0, 1])).tolist() == want


def test_a_job_of_unknown_work_goes_last_and_stays_out_of_gps():
    jobs = [Job(gpus=2, submit=0.0, remaining=np.nan), Job(gpus=2, submit=1.0, remaining=50.0)]
    v = _view(jobs, 1.0, {0: _knee(2), 1: _knee(2)}, nodes=2)
    pol = make("ares")
    pol.decide(v, 1.0)
    assert math.isinf(pol.F[0]) and pol.F[1] == pytest.approx(100.0)
    assert pol.clock.active == 1  # only job 1 is in GPS
    assert pol.priority_order(v, np.array([0, 1])).tolist() == [1, 0]
