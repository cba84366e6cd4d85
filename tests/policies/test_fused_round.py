"""The fused Tiresias call (`_tiresias_kernels.fused_round`, issue 4) decides exactly what the
`Round` walk it replaces decides.

Every test runs two instances of the policy on the same views, one with the fused kernel and one
through `policies.base.Round` (`Tiresias.use_fused = False`), and compares the decisions item by
item (order included, and which entries are the engine's own `current` objects), the wake-up
time and the policy's per-job state (service and executed-time bases, pending-time bases,
promotion counts). `_prepare`'s one-pass bookkeeping is checked against the five-pass NumPy-like
loop it replaced.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from policies import _tiresias_kernels as TK
from simcore.api import Allocation, JobState
from tests.policies.conftest import Job, build_view, draw_fabric
from tests.policies.minisim import simulate


def _pair(**params):
    fused = policies.make("tiresias", **params)
    plain = policies.make("tiresias", **params)
    plain.use_fused = False
    return fused, plain


def _engine_fields(view, rng, accepts_changes):
    """The view as the engine passes it: `current` (the engine's own objects), active and
    running index arrays, and whether a changes-only decision is accepted."""
    cur = {}
    for j in view.running().tolist():
        g = view.allocation_of(j).tolist()
        if rng.random() < 0.1:  # an allocation listed out of order: never `is`-equal to a new one
            g = g[::-1]
        cur[j] = Allocation(tuple(g))
    return dataclasses.replace(view, current=cur, active_jobs=view.active(), running_jobs=view.running(),
                               accepts_changes=accepts_changes)


def _same(d_fused, d_plain, view):
    assert d_fused.changes_only == d_plain.changes_only
    assert d_fused.wake_at == d_plain.wake_at
    a, b = list(d_fused.allocations.items()), list(d_plain.allocations.items())
    assert a == b
    cur = view.current or {}
    assert [x is cur.get(j) for j, x in a] == [x is cur.get(j) for j, x in b]


def _same_state(p, r):
    for name in ("svc_base", "exec_base", "pend_base", "promotions"):
        np.testing.assert_array_equal(getattr(p, name), getattr(r, name), err_msg=name)
    assert not p._istate[:, 6].any() and (p._istate[:, 7] == -1).all(), "fused scratch not left clean"


@st.composite
def scenarios(draw):
    nodes, gpn, leaves, pods = draw_fabric(draw)
    g = nodes * gpn
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offline = draw(st.integers(0, 9)) == 0  # the fused kernel declines: the plain walk decides
    online = np.ones(g, bool)
    if offline:
        online[rng.integers(0, g):] = False
    owned = np.zeros(g, bool)
    jobs = []
    skewed = draw(st.integers(0, 9)) == 0  # likewise
    backwards = draw(st.booleans())  # submit times against index order: the sort, not the shortcut
    for i in range(draw(st.integers(0, 16))):
        dem = int(rng.integers(1, min(g, 8) + 1))
        state = rng.choice([JobState.QUEUED, JobState.QUEUED, JobState.RUNNING, JobState.RUNNING,
                            JobState.RESTARTING, JobState.PENDING, JobState.FINISHED])
        alloc = ()
        if state in (JobState.RUNNING, JobState.RESTARTING):
            ok = np.flatnonzero(~owned & (online | (rng.random() < 0.1)))
            if ok.size >= dem:
                alloc = tuple(int(x) for x in rng.choice(ok, dem, replace=False))
                owned[list(alloc)] = True
            else:
                state = JobState.QUEUED
        submit = float(50 - rng.integers(0, 5) * 10 if backwards else rng.integers(0, 5) * 10)
        jobs.append(Job(
            gpus=dem, submit=submit, alloc=alloc, state=state,
            model="vgg16" if skewed and rng.random() < 0.3 else "resnet50",
            type_req=int(rng.choice([-1, -1, -1, 0, 1])),
            attained=float(rng.integers(0, 400)), executed=float(rng.integers(0, 60)),
            first_start=float(rng.integers(0, 50)) if alloc or rng.random() < 0.5 else np.nan,
        ))
    view = build_view(jobs, now=float(rng.integers(100, 400)), nodes=nodes, gpus_per_node=gpn, leaves=leaves,
                      pods=pods, online=online)
    return _engine_fields(view, rng, draw(st.booleans())), rng


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from([((100.0,), 8.0), ((50.0, 150.0), 1.0), ((100.0,), 0.0), ((20.0,), 0.5)]))
def test_fused_call_decides_like_the_round_walk(sc, params):
    view, rng = sc
    thr, knob = params
    p, r = _pair(thresholds_gpu_s=thr, promote_knob=knob)
    for now in (view.now, view.now + float(rng.integers(0, 200))):  # state carried to a later call
        _same(p.decide(view, now), r.decide(view, now), view)
        _same_state(p, r)


def test_fused_path_runs_and_preempts(monkeypatch):
    """A queue-0 arrival preempts the queue-1 job, and the fused kernel (not the walk) decided."""
    jobs = [Job(gpus=4, alloc=(0, 1, 2, 3), attained=1e6, executed=100.0, first_start=0.0),
            Job(gpus=4, alloc=(4, 5, 6, 7), attained=0.0, executed=10.0, first_start=0.0),
            Job(gpus=4, submit=50.0)]
    view = _engine_fields(build_view(jobs, nodes=2, gpus_per_node=4), np.random.default_rng(1), True)
    seen = []
    real = TK.fused_round

    def spy(*a):
        out = real(*a)
        seen.append(out[0])
        return out

    monkeypatch.setattr(TK, "fused_round", spy)
    p, r = _pair()
    d = p.decide(view, 100.0)
    assert seen == [0]
    _same(d, r.decide(view, 100.0), view)
    assert d.changes_only and list(d.allocations) == [2, 0]
    assert d.allocations[2].gpus == (0, 1, 2, 3) and d.allocations[0].gpus == ()


def test_fused_declines_with_a_skewed_job_without_changing_state():
    jobs = [Job(gpus=1, alloc=(0,), attained=1e6, executed=5.0), Job(gpus=2, model="vgg16", submit=10.0)]
    view = _engine_fields(build_view(jobs, nodes=1, gpus_per_node=2), np.random.default_rng(0), True)
    p, r = _pair()
    p._reset(view.jobs.num_jobs)
    before = p._fstate.copy(), p._istate.copy()
    assert p._decide_fused(view, 100.0) is None
    np.testing.assert_array_equal(p._fstate, before[0])
    state = [0, 1, 6, 7]  # promotions, queues and the two scratch columns (the rest is static input)
    np.testing.assert_array_equal(p._istate[:, state], before[1][:, state])
    assert not p._istate[:, 6].any() and (p._istate[:, 7] == -1).all()
    _same(p.decide(view, 100.0), r.decide(view, 100.0), view)


def test_fused_equals_walk_over_whole_workloads():
    """Sequences of calls (minisim with the engine's fields, complete decisions): same
    completion times and call counts, with preemptions, demotions and promotions."""
    rng = np.random.default_rng(3)
    n = 50
    submit = np.sort(rng.uniform(0, 2000, n))
    gpus = rng.choice([1, 1, 2, 4, 8], n)
    duration = np.round(rng.lognormal(5.0, 1.3, n), 1) + 1
    for params in ({"thresholds_gpu_s": (300.0,), "promote_knob": 2.0}, {"thresholds_gpu_s": (100.0, 1000.0)}):
        p, r = _pair(**params)
        a = simulate(p, submit, gpus, duration, engine_fields=True)
        b = simulate(r, submit, gpus, duration, engine_fields=True)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]


def _reference_prepare(active, holding, now, submit, executed, attained, first_start, svc_base, exec_base,
                       pend_base, promotions, thr, eps, knob, q, waited):
    """The multi-pass `prepare` the one-pass `_prepare` replaced (plain Python)."""
    for j in active:
        waited[j] = now - submit[j] - executed[j]
        if np.isnan(pend_base[j]) and promotions[j] == 0 and np.isfinite(first_start[j]):
            pend_base[j] = first_start[j] - submit[j]
        if holding[j] and np.isnan(pend_base[j]):
            pend_base[j] = waited[j]
        q[j] = np.searchsorted(thr, attained[j] - svc_base[j] + eps, side="right")
    if knob > 0:
        for j in active:
            if q[j] > 0 and not holding[j] and not np.isnan(pend_base[j]):
                execd = executed[j] - exec_base[j]
                if execd > 0 and waited[j] - pend_base[j] >= knob * execd - 1e-6:
                    svc_base[j], exec_base[j], pend_base[j] = attained[j], executed[j], np.nan
                    promotions[j] += 1
                    q[j] = np.searchsorted(thr, attained[j] - svc_base[j] + eps, side="right")
    by_submit = active[np.argsort(submit[active], kind="stable")]
    cls = 2 * q[by_submit] + np.where(holding[by_submit], 0, 1)
    return by_submit[np.argsort(cls, kind="stable")]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_one_pass_prepare_equals_the_multi_pass_loop(data):
    n = data.draw(st.integers(0, 12))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    active = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
    holding = rng.random(n) < 0.5
    submit = rng.integers(0, 4, n).astype(float)
    if data.draw(st.booleans()):
        submit = np.sort(submit)
    if n and data.draw(st.booleans()):
        submit[rng.integers(0, n)] = np.nan
    executed = rng.integers(0, 30, n).astype(float)
    attained = rng.integers(0, 300, n).astype(float)
    first_start = np.where(rng.random(n) < 0.5, rng.integers(0, 10, n), np.nan)
    svc_base = np.where(rng.random(n) < 0.3, rng.integers(0, 100, n), 0).astype(float)
    exec_base = np.where(rng.random(n) < 0.3, rng.integers(0, 10, n), 0).astype(float)
    pend_base = np.where(rng.random(n) < 0.5, rng.integers(0, 40, n), np.nan)
    promotions = rng.integers(0, 2, n)
    thr = np.array(data.draw(st.sampled_from([[100.0], [50.0, 150.0]])))
    knob = data.draw(st.sampled_from([0.0, 0.5, 2.0]))
    now = 100.0
    a = [x.copy() for x in (svc_base, exec_base, pend_base, promotions, np.zeros(n, np.int64), np.zeros(n))]
    b = [x.copy() for x in a]
    got, bounds = TK._prepare(active, holding, now, submit, executed, attained, first_start, a[0], a[1], a[2], a[3],
                              thr, 1e-6, knob, a[4], a[5])
    ref = _reference_prepare(active, holding, now, submit, executed, attained, first_start, b[0], b[1], b[2], b[3],
                             thr, 1e-6, knob, b[4], b[5])
    assert got.tolist() == ref.tolist()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[active], y[active])
    cls = 2 * b[4][ref] + np.where(holding[ref], 0, 1)
    assert bounds.tolist() == np.searchsorted(cls, np.arange(2 * thr.size + 3), side="left").tolist()


def test_running_job_outside_the_active_set_is_kept_like_the_walk_keeps_it():
    """`Round.keep_all_undecided` keeps running jobs the priority order never visits."""
    jobs = [Job(gpus=2, alloc=(0, 1), attained=1e6, executed=50.0), Job(gpus=2, alloc=(2, 3)),
            Job(gpus=4, submit=20.0)]
    base = build_view(jobs, nodes=2, gpus_per_node=4)
    for accepts in (False, True):
        view = _engine_fields(base, np.random.default_rng(0), accepts)
        view = dataclasses.replace(view, active_jobs=np.array([0, 2], np.int64))
        p, r = _pair()
        d = p.decide(view, 100.0)
        _same(d, r.decide(view, 100.0), view)
        if not accepts:
            assert 1 in d.allocations and d.allocations[1] is view.current[1]


def _reference_next_jump(placed, placed_gpus, active, q, attained, svc_base, thr, now, knob, executed, exec_base,
                         pend_base, waited):
    """The three-pass `next_jump` the one-pass version replaced (plain Python)."""
    t = np.inf
    nthr = thr.size
    waiting = [j for j in active if j not in set(placed.tolist())]
    min_wait_q = min([q[j] for j in waiting], default=nthr + 1)
    for j, n in zip(placed, placed_gpus):
        if q[j] < nthr and q[j] >= min_wait_q and n > 0:
            t = min(t, now + (thr[q[j]] - (attained[j] - svc_base[j])) / n)
    if knob > 0 and active.size > placed.size:
        for j in waiting:
            if q[j] > 0 and not np.isnan(pend_base[j]) and executed[j] - exec_base[j] > 0:
                t = min(t, now + (knob * (executed[j] - exec_base[j]) - (waited[j] - pend_base[j])))
    return t


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_one_pass_next_jump_equals_the_three_pass_loop(data):
    n = data.draw(st.integers(1, 12))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    jobs = np.arange(n)
    active = np.sort(rng.choice(jobs, rng.integers(0, n + 1), replace=False)).astype(np.int64)
    placed = rng.choice(jobs, rng.integers(0, n + 1), replace=False).astype(np.int64)  # some maybe not active
    placed_gpus = rng.integers(0, 4, placed.size).astype(np.int64)
    thr = np.array(data.draw(st.sampled_from([[100.0], [50.0, 150.0]])))
    q = rng.integers(0, thr.size + 1, n).astype(np.int64)
    attained = rng.integers(0, 200, n).astype(float)
    svc_base = np.where(rng.random(n) < 0.3, rng.integers(0, 50, n), 0).astype(float)
    executed = rng.integers(0, 30, n).astype(float)
    exec_base = np.where(rng.random(n) < 0.3, rng.integers(0, 10, n), 0).astype(float)
    pend_base = np.where(rng.random(n) < 0.7, rng.integers(0, 40, n), np.nan)
    waited = rng.integers(0, 60, n).astype(float)
    knob = data.draw(st.sampled_from([0.0, 0.5, 2.0]))
    scratch = np.zeros(n, bool)
    got = TK.next_jump(placed, placed_gpus, active, q, attained, svc_base, thr, 100.0, knob, executed, exec_base,
                       pend_base, waited, scratch)
    ref = _reference_next_jump(placed, placed_gpus, active, q, attained, svc_base, thr, 100.0, knob, executed,
                               exec_base, pend_base, waited)
    assert got == ref
    assert not scratch.any()


def test_empty_current_with_running_jobs_takes_the_walk():
    """Without the engine's objects for the running jobs `Round` checks each kept job's GPUs
    (and lists it with a new object); the fused kernel leaves that case to it."""
    jobs = [Job(gpus=2, alloc=(0, 1), attained=1e6, executed=50.0), Job(gpus=4, submit=20.0)]
    view = _engine_fields(build_view(jobs, nodes=2, gpus_per_node=4), np.random.default_rng(0), True)
    view = dataclasses.replace(view, current={})
    p, r = _pair()
    d = p.decide(view, 100.0)
    _same(d, r.decide(view, 100.0), view)
    assert 0 in d.allocations  # listed (a new object): the walk decided, not the kernel
