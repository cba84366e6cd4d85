"""The engine's prepared contention path gives the same numbers, bit for bit, as the generic one.

- `PreparedContention` (each job checked and quantised once, groups solved from the
  prepared values) returns exactly what `contention.solve` returns on the raw inputs, for
  random groups, both solvers (phase simulation, duty cycle) and both infeasible-demand rules;
- an engine whose perf model has the prepared solver (the real `solve`) produces the same
  job table, timeline and decisions as one given the same solver without its prepared form
  (run behind the prepared interface, `simcore.perf._AsPrepared`: raw inputs, `solve` per
  re-solve — the same `RateBook` path, which the test fakes take too), and the same as
  re-solving every group on every change (`incremental_contention=False`);
- the numba quantisation of a job equals `contention.quantise`.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectives.contention import ContentionCache, PreparedContention, quantise, solve
from collectives.contention_options import ContentionOptions
from collectives.contention_dutycycle import LinkMemo
from cosim.errors import InputError
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from tests.simcore.fakes import FakeComm, FakeZoo, FifoTest, fake_topology
from tests.simcore.helpers import RandomElastic, frame, rows_of, simulate

seconds = st.floats(1e-4, 2.0, allow_nan=False)


@st.composite
def groups(draw):
    n_links = draw(st.integers(1, 6))
    cap = np.array(draw(st.lists(st.floats(1e9, 1e11), min_size=n_links, max_size=n_links)))
    n = draw(st.integers(1, 12))
    C, s, M, ptr, ids, dem = [], [], [], [0], [], []
    for _ in range(n):
        c = draw(seconds)
        C.append(c)
        s.append(c * draw(st.floats(0, 1)))
        M.append(draw(st.floats(0, 1.0)))
        links = draw(st.lists(st.integers(0, n_links - 1), unique=True, max_size=n_links))
        ids += links
        dem += [draw(st.floats(0, 1.5)) * cap[k] for k in links]  # some above capacity
        ptr.append(len(ids))
    return (np.array(C), np.array(s), np.array(M), np.array(ptr, np.int64), np.array(ids, np.int64),
            np.array(dem), cap)


def _prepared_solve(g, options):
    C, s, M, ptr, ids, dem, cap = g
    pc = PreparedContention(cap, options=options, cache=ContentionCache())
    jobs = [pc.job(C[i], s[i], M[i], ids[ptr[i]:ptr[i + 1]], dem[ptr[i]:ptr[i + 1]]) for i in range(C.shape[0])]
    ptr2 = np.zeros(len(jobs) + 1, np.int64)
    np.cumsum([x.link_ids.shape[0] for x in jobs], out=ptr2[1:])
    return pc.solve(np.array([x.compute_s for x in jobs]), np.array([x.comm_start_s for x in jobs]),
                    np.array([x.comm_s for x in jobs]), ptr2, np.concatenate([x.link_ids for x in jobs]),
                    np.concatenate([x.link_demand_Bps for x in jobs]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), st.sampled_from(["clip", "bound"]), st.sampled_from([8, 0]))
def test_prepared_solve_is_bit_identical_to_solve(g, infeasible, exact_max_jobs):
    opt = ContentionOptions(infeasible_demand=infeasible, exact_max_jobs=exact_max_jobs)
    want = solve(*g, options=opt, cache=ContentionCache())
    got = _prepared_solve(g, opt)
    assert got[0].tobytes() == want[0].tobytes()
    assert got[1].tobytes() == want[1].tobytes()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=3, max_size=3),
       st.lists(st.floats(0, 1e12), max_size=4))
def test_numba_quantisation_matches_quantise(csm, dem):
    C, s, M = (abs(x) if np.isfinite(x) else 1.0 for x in csm)
    s = min(s, C)
    ids = np.arange(len(dem), dtype=np.int64)
    pc = PreparedContention(np.full(max(len(dem), 1), 1e13))
    x = pc.job(C, s, M, ids, np.array(dem))
    assert [x.compute_s, x.comm_start_s, x.comm_s] == quantise(np.array([C, s, M])).tolist()
    assert x.link_demand_Bps.tobytes() == quantise(np.array(dem, np.float64)).tobytes()


@pytest.mark.parametrize("bad, field", [
    (dict(compute_s=float("nan")), "compute_s"),
    (dict(comm_s=-1.0), "comm_s"),
    (dict(comm_start_s=0.5), "comm_start_s"),
    (dict(link_ids=[0, 0]), "link_ids"),
    (dict(link_ids=[0, 7]), "link_ids"),
    (dict(link_demand_Bps=[1.0, float("inf")]), "link_demand_Bps"),
    (dict(link_demand_Bps=[1.0, -2.0]), "link_demand_Bps"),
])
def test_prepared_job_rejects_what_solve_rejects(bad, field):
    pc = PreparedContention(np.full(3, 1e10))
    args = dict(compute_s=0.1, comm_start_s=0.05, comm_s=0.01, link_ids=[0, 1], link_demand_Bps=[1e9, 2e9]) | bad
    with pytest.raises(InputError, match=field):
        pc.job(**args)


def test_the_bare_solver_offers_a_prepared_form_and_a_wrapped_one_does_not():
    assert solve.prepared is PreparedContention
    assert getattr(functools.partial(solve, exact_max_jobs=0), "prepared", None) is None


# ---- the engine ----------------------------------------------------------------------------

job = st.fixed_dictionaries(dict(
    submit_time=st.floats(0, 300).map(lambda x: round(x, 1)),
    num_gpus=st.sampled_from([1, 2, 4, 6, 8]),
    duration=st.floats(5, 400),
    model=st.sampled_from(["small", "big"]),
    elastic=st.booleans(),
))


def _run(rows, policy, solver, incremental=True):
    topo = fake_topology(nodes=4, gpus_per_node=4)
    topo.link_capacity_Bps = np.full(4, 2e9)  # slow node uplinks: multi-node jobs contend
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), solver)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, ChangeCosts(restart_s=5.0),
                 options=EngineOptions(record_decisions=True, check_invariants=True,
                                       incremental_contention=incremental))
    return eng.run(), perf


def _same(a, b):
    for name in ("state", "progress", "end_time", "first_start", "waiting_s", "attained_gpu_s", "executed_s",
                 "exposed_comm_s", "restart_s", "num_restarts", "batch_size", "rate", "exposed_frac"):
        x, y = getattr(a.jobs, name), getattr(b.jobs, name)
        assert x.tobytes() == y.tobytes(), name
    assert a.timeline.keys() == b.timeline.keys()
    for k in a.timeline:
        assert a.timeline[k].tobytes() == b.timeline[k].tobytes(), k
    assert a.decisions == b.decisions
    assert (a.end_time, a.num_events, a.num_policy_calls) == (b.end_time, b.num_events, b.num_policy_calls)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job, min_size=1, max_size=14), st.integers(0, 3), st.booleans())
def test_engine_prepared_path_equals_generic_path(jobs, seed, elastic_policy):
    rows = rows_of(jobs)
    pol = (lambda: RandomElastic(seed=seed)) if elastic_policy else FifoTest
    generic = lambda *a, **k: solve(*a, **k)  # noqa: E731 - the same solver, no prepared form
    fast, perf = _run(rows, pol(), solve)
    assert perf.prepared is not None
    slow, perf2 = _run(rows, pol(), generic)
    assert perf2.prepared is not None and not isinstance(perf2.prepared, PreparedContention)
    _same(fast, slow)
    full, _ = _run(rows, pol(), solve, incremental=False)
    _same(fast, full)


def test_engine_prepared_path_sees_contention():
    """Jobs of 6, 6 and 4 GPUs on 4 × 4 GPUs: the third spans nodes 1 and 3, sharing their
    uplinks with the first two, so job 0 ends later than when it runs alone."""
    rows = [dict(submit_time=0.0, num_gpus=n, duration=100.0, model="big", elastic=False) for n in (6, 6, 4)]
    alone, _ = _run(rows_of(rows[:1]), FifoTest(), solve)
    shared, _ = _run(rows_of(rows), FifoTest(), solve)
    assert shared.jobs.end_time[0] > alone.jobs.end_time[0] * 1.01
    assert shared.jobs.exposed_comm_s[0] > alone.jobs.exposed_comm_s[0]


# ---- changes-only decisions ----------------------------------------------------------------

class _ChangesOnly:
    """Wraps a policy: its complete decision rewritten as the changes-only form."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.interval_s, self.event_driven, self.needs = "changes", inner.interval_s, True, inner.needs

    def decide(self, view, now):
        from simcore.api import Allocation, Decision

        full = self.inner.decide(view, now)
        assert view.accepts_changes
        cur = view.current
        allocs = {j: a for j, a in full.allocations.items() if a is not cur.get(j)}
        allocs.update({j: Allocation(()) for j in cur if j not in full.allocations})
        return Decision(allocs, wake_at=full.wake_at, changes_only=True)


def _run_policy(rows, policy):
    topo = fake_topology(nodes=4, gpus_per_node=4)
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), solve)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, ChangeCosts(restart_s=5.0),
                 options=EngineOptions(record_decisions=True, check_invariants=True))
    return eng.run()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job, min_size=1, max_size=14), st.integers(0, 3))
def test_changes_only_decisions_equal_complete_ones(jobs, seed):
    rows = rows_of(jobs)
    _same(_run_policy(rows, _ChangesOnly(RandomElastic(seed=seed))), _run_policy(rows, RandomElastic(seed=seed)))


def test_changes_only_decision_cannot_take_a_kept_jobs_gpus():
    from cosim.errors import PolicyError
    from simcore.api import Allocation, Decision

    class Grab:
        name, interval_s, event_driven, needs = "grab", None, True, frozenset()

        def decide(self, view, now):
            if 0 not in view.current:
                return Decision({0: Allocation((0, 1))}, changes_only=True)
            return Decision({1: Allocation((1,))}, changes_only=True)  # job 0 keeps GPU 1

    rows = [dict(submit_time=0.0, num_gpus=2, duration=100.0, model="small", elastic=False),
            dict(submit_time=1.0, num_gpus=1, duration=100.0, model="small", elastic=False)]
    with pytest.raises(PolicyError, match="GPU 1 given to both job j0 and job j1"):
        _run_policy(rows_of(rows), Grab())


def test_policy_ignoring_restart_ends_is_not_called_for_them():
    """A start that pays a restart cost ends with a RESTART_END event: a policy that declares
    `ignores_restart_ends` is not called for it alone, others are; decisions are the same."""

    class Counting(FifoTest):
        def __init__(self, ignores: bool) -> None:
            self.ignores_restart_ends = ignores
            self.calls = 0

        def decide(self, view, now):
            self.calls += 1
            return super().decide(view, now)

    rows = [dict(submit_time=0.0, num_gpus=4, duration=100.0), dict(submit_time=500.0, num_gpus=4, duration=100.0)]
    costs = ChangeCosts(start_s=10.0, restart_s=10.0)
    runs = {}
    for ignores in (False, True):
        pol = Counting(ignores)
        res = simulate(rows, pol, costs=costs)
        runs[ignores] = (pol.calls, res.jobs.end_time.copy())
    # per job: arrival, restart end, completion → 6 calls; without restart ends → 4
    assert runs[False][0] == 6 and runs[True][0] == 4
    np.testing.assert_array_equal(runs[False][1], runs[True][1])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=2, max_size=5))
def test_link_memo_keeps_repeated_solves_bit_identical(g, subsets):
    """A PreparedContention re-solving changing subsets of the same jobs (the engine after
    starts and stops) copies unchanged links' evaluations from its LinkMemo; every answer
    equals a fresh `solve` of that subset, bit for bit."""
    C, s, M, ptr, ids, dem, cap = g
    opt = ContentionOptions(exact_max_jobs=0)  # every group by the duty-cycle solver
    pc = PreparedContention(cap, options=opt, cache=None)
    jobs = [pc.job(C[i], s[i], M[i], ids[ptr[i]:ptr[i + 1]], dem[ptr[i]:ptr[i + 1]]) for i in range(C.shape[0])]
    for keep in subsets:
        idx = [i for i in range(C.shape[0]) if keep[i]]
        if not idx:
            continue
        sub = [jobs[i] for i in idx]
        p2 = np.zeros(len(sub) + 1, np.int64)
        np.cumsum([x.link_ids.shape[0] for x in sub], out=p2[1:])
        got = pc.solve(np.array([x.compute_s for x in sub]), np.array([x.comm_start_s for x in sub]),
                       np.array([x.comm_s for x in sub]), p2, np.concatenate([x.link_ids for x in sub]),
                       np.concatenate([x.link_demand_Bps for x in sub]))
        raw_ptr = np.zeros(len(idx) + 1, np.int64)
        np.cumsum([ptr[i + 1] - ptr[i] for i in idx], out=raw_ptr[1:])
        want = solve(C[idx], s[idx], M[idx], raw_ptr, np.concatenate([ids[ptr[i]:ptr[i + 1]] for i in idx]),
                     np.concatenate([dem[ptr[i]:ptr[i + 1]] for i in idx]), cap, options=opt, cache=None)
        assert got[0].tobytes() == want[0].tobytes()
        assert got[1].tobytes() == want[1].tobytes()


def test_link_memo_copies_unchanged_links():
    """Solving the same busy group twice copies every link evaluation of the rounds the
    memo has slots for (every link is evaluated in round 1; later rounds re-evaluate only
    links whose users moved, and rounds past the slots share the last one)."""
    rng = np.random.default_rng(3)
    n, n_links = 30, 6
    cap = np.full(n_links, 1e10)
    C = rng.uniform(0.1, 1.0, n)
    s = C * 0.5
    M = rng.uniform(0.05, 0.5, n)
    ids = np.concatenate([rng.choice(n_links, 2, replace=False) for _ in range(n)]).astype(np.int64)
    ptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    dem = np.full(2 * n, 6e9)
    opt = ContentionOptions(exact_max_jobs=0)
    pc = PreparedContention(cap, options=opt, cache=None)
    jobs = [pc.job(C[i], s[i], M[i], ids[ptr[i]:ptr[i + 1]], dem[ptr[i]:ptr[i + 1]]) for i in range(n)]
    args = (np.array([x.compute_s for x in jobs]), np.array([x.comm_start_s for x in jobs]),
            np.array([x.comm_s for x in jobs]), ptr, np.concatenate([x.link_ids for x in jobs]),
            np.concatenate([x.link_demand_Bps for x in jobs]))
    first, again = {}, {}
    a = pc.solve(*args, stats=first)
    b = pc.solve(*args, stats=again)
    assert first["link_evaluations"] > LinkMemo.SLOTS * n_links  # the group needs more rounds than slots
    assert first["link_evaluations"] - again["link_evaluations"] >= n_links  # round 1 copied whole
    assert a[0].tobytes() == b[0].tobytes()


def test_quiet_until_nan_is_a_policy_error():
    """`Decision.quiet_until` is a time (a past one promises nothing); NaN is a policy bug."""
    from cosim.errors import PolicyError
    from simcore.api import Allocation, Decision

    class NanQuiet:
        name, interval_s, event_driven, needs = "nan-quiet", None, True, frozenset()

        def decide(self, view, now):
            return Decision({0: Allocation((0,))}, quiet_until=float("nan"))

    rows = [dict(submit_time=0.0, num_gpus=1, duration=100.0, model="small", elastic=False)]
    with pytest.raises(PolicyError, match="quiet_until=nan"):
        _run_policy(rows_of(rows), NanQuiet())


def test_large_group_kernel_is_called_only_once_a_large_group_comes_up(monkeypatch):
    """The duty-cycle kernel (`solve_large_groups`, ≈ 4.6 s to compile) is not
    called — so not compiled — while every group has at most `exact_max_jobs` jobs; the first
    larger group switches the solver to it for good, with answers bit-identical to `solve`."""
    import collectives.contention as cc

    rng = np.random.default_rng(5)
    n, cap = 12, np.full(4, 1e10)
    C = rng.uniform(0.1, 1.0, n)
    s, M = C * 0.5, rng.uniform(0.05, 0.5, n)
    ids = np.repeat(np.arange(4, dtype=np.int64), 3)  # jobs 3i..3i+2 share link i: four 3-job groups
    dem = np.full(n, 6e9)
    calls = []
    kernel = cc.solve_large_groups
    monkeypatch.setattr(cc, "solve_large_groups", lambda *a: calls.append(1) or kernel(*a))
    opt = ContentionOptions(exact_max_jobs=4)
    pc = PreparedContention(cap, options=opt, cache=None)
    jobs = [pc.job(C[i], s[i], M[i], ids[i:i + 1], dem[i:i + 1]) for i in range(n)]

    def both(idx, link_of):  # (prepared, fresh `solve`) answers for jobs idx on links link_of[idx]
        sub = [jobs[i]._replace(link_ids=np.array([link_of[i]], np.int64)) for i in idx]
        p = np.arange(len(idx) + 1, dtype=np.int64)
        args = (np.array([x.compute_s for x in sub]), np.array([x.comm_start_s for x in sub]),
                np.array([x.comm_s for x in sub]), p, np.array([link_of[i] for i in idx], np.int64),
                np.concatenate([x.link_demand_Bps for x in sub]))
        want = solve(C[idx], s[idx], M[idx], p, args[4], dem[idx], cap, options=opt, cache=None)
        return pc.solve(*args), want

    for got, want in (both(range(n), ids),  # four 3-job groups: split only
                      both(range(6), ids)):
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
    assert not calls and not pc.memo.large_groups
    merged = np.where(ids < 2, 0, ids)  # jobs 0-5 share link 0: one 6-job group (> 4)
    for idx, link_of in ((range(n), merged), (range(6, n), ids)):  # then small groups again, by the kernel
        got, want = both(idx, link_of)
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
    assert pc.memo.large_groups and len(calls) == 2


def test_large_group_kernel_hands_python_only_the_groups_it_has_work_for():
    """`solve_large_groups` lists the groups its caller still has to visit: those it left to
    the phase simulation (at most `min_jobs` jobs), those that stopped unconverged (to log)
    and those with a link busier than the memo is wide (to widen it); a group it solved
    cleanly is not visited again, and the answers equal a fresh `solve` bit for bit."""
    from collectives.contention_options import _GH
    from collectives.contention_dutycycle import solve_large_groups

    rng = np.random.default_rng(11)
    # link 0: jobs 0-1 (a 2-job group); link 1: jobs 2-6 (5 jobs); link 2: jobs 7-16 (10 jobs)
    sizes = (2, 5, 10)
    n = sum(sizes)
    ids = np.repeat(np.arange(3, dtype=np.int64), sizes)
    cap = np.full(3, 1e10)
    C = quantise(rng.uniform(0.1, 1.0, n))
    s, M = quantise(C * 0.5), quantise(rng.uniform(0.2, 0.5, n))
    dem = np.full(n, 6e9)
    ptr = np.arange(n + 1, dtype=np.int64)
    w = np.ones(n)

    def kernel(memo, max_rounds):
        return solve_large_groups(C, s, M, w, ptr, ids, dem, cap, 2, _GH[0], _GH[1], 3, 256, False, True, 1e-4,
                                  max_rounds, *memo.arrays())

    memo = LinkMemo(3, width=8)  # the 10-user link does not fit
    it, split, info, todo = kernel(memo, 10_000)
    assert info[0, 0] == -1 and info[1, 1] == 1 and info[1, 3] == 0 and info[2, 3] == 10
    assert todo.tolist() == [0, 2]  # left to the phase simulation; asks the memo to widen
    _, _, info, todo = kernel(LinkMemo(3, width=16), 1)  # one round: neither large group settles
    assert info[1:, 1].tolist() == [0, 0] and todo.tolist() == [0, 1, 2]

    opt = ContentionOptions(exact_max_jobs=2)
    pc = PreparedContention(cap, options=opt, cache=None)
    pc.memo = LinkMemo(3, width=8)
    for _ in range(2):  # the first solve widens the memo, the second finds every link in it
        got = pc.solve(C, s, M, ptr, ids, dem)
        want = solve(C, s, M, ptr, ids, dem, cap, options=opt, cache=None)
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
    assert pc.memo.r.shape[2] == 16


class _DutyCycleSolve:
    """`solve` sending groups above `exact_max_jobs` jobs to the duty-cycle solver, with
    its prepared form (the engine's one-call re-solve, `kernels.linked_resolve`, then runs
    from the first such group on)."""

    def __init__(self, exact_max_jobs: int) -> None:
        self.options = ContentionOptions(exact_max_jobs=exact_max_jobs)

    def __call__(self, *args, **kwargs):
        return solve(*args, options=self.options, **kwargs)

    def prepared(self, link_capacity_Bps):
        return PreparedContention(link_capacity_Bps, options=self.options)


@pytest.mark.parametrize("exact_max_jobs", [0, 2])
def test_engine_one_call_resolve_equals_generic_path(monkeypatch, exact_max_jobs):
    """With groups for the duty-cycle kernel, the engine's re-solves run in one kernel call
    (`linked_resolve`), falling back to `PreparedContention.solve` where a group is left to
    the phase simulation (2-job groups when `exact_max_jobs=2`); job table, timeline and
    decisions equal those of the same solver without a prepared form, and of re-solving
    every group on every change, bit for bit."""
    from simcore import kernels

    outcomes = []
    kernel = kernels.linked_resolve
    monkeypatch.setattr(kernels, "linked_resolve", lambda *a: outcomes.append(kernel(*a)) or outcomes[-1])
    rng = np.random.default_rng(7)
    rows = rows_of([dict(submit_time=float(t), num_gpus=int(g), duration=float(d), model=str(m), elastic=False)
                    for t, g, d, m in zip(np.sort(rng.uniform(0, 200, 14)).round(1), rng.choice([2, 4, 6], 14),
                                          rng.uniform(50, 400, 14), rng.choice(["small", "big"], 14))])
    fast, perf = _run(rows, FifoTest(), _DutyCycleSolve(exact_max_jobs))
    assert isinstance(perf.prepared, PreparedContention) and perf.prepared.memo.large_groups
    assert True in outcomes and (False in outcomes) == (exact_max_jobs == 2)
    plain = _DutyCycleSolve(exact_max_jobs)
    generic, perf2 = _run(rows, FifoTest(), lambda *a, **k: plain(*a, **k))
    assert not isinstance(perf2.prepared, PreparedContention)
    _same(fast, generic)
    full, _ = _run(rows, FifoTest(), _DutyCycleSolve(exact_max_jobs), incremental=False)
    _same(fast, full)
