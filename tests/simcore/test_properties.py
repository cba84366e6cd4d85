"""Hypothesis properties of the engine over random small traces and policies.

- no GPU is held by two jobs at any time (rebuilt from the recorded decisions),
- work is conserved: finished jobs have exactly their work done, unfinished ones less, and
  the GPU-seconds charged to jobs equal the busy GPU-seconds of the cluster,
- every job either finishes or is reported unfinished,
- time never goes backwards (timeline, decisions, per-job times).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.api import JobState
from simcore.costs import ChangeCosts
from tests.simcore.fakes import FifoTest
from tests.simcore.helpers import RandomElastic, rows_of, simulate

job = st.fixed_dictionaries(
    dict(
        submit_time=st.floats(0, 200).map(lambda x: round(x, 1)),
        num_gpus=st.sampled_from([1, 2, 4, 8]),
        duration=st.floats(1, 300),
        model=st.sampled_from(["small", "big"]),
        elastic=st.booleans(),
    )
)


def policies():
    pols = [lambda s: FifoTest(), lambda s: RandomElastic(seed=s), lambda s: FifoTest(interval_s=30.0)]
    try:
        from policies.registry import POLICIES, make

        for name in POLICIES.names():
            pols.append(lambda s, n=name: make(n))
    except Exception:  # the policies package may be absent or half-written
        pass
    return pols


POLS = policies()


def check_invariants(res, njobs):
    j = res.jobs
    st_ = j.state
    fin = st_ == JobState.FINISHED
    # every job finishes or is reported unfinished
    assert fin.sum() + (~fin).sum() == njobs
    if not res.stuck:
        assert fin.all()
    # work conservation
    assert np.all(j.progress[fin] == 1.0)
    assert np.all(j.progress[~fin] < 1.0 + 1e-12)
    assert j.attained_gpu_s.sum() == pytest.approx(res.busy_gpu_s, rel=1e-9, abs=1e-6)
    # time monotone
    tl = np.asarray(res.timeline["time_s"])
    assert np.all(np.diff(tl) >= 0)
    d = res.decisions
    assert np.all(np.diff(np.asarray(d["time_s"])) >= 0)
    assert np.all(j.first_start[fin] >= j.submit_time[fin])
    assert np.all(j.end_time[fin] >= j.first_start[fin])
    # no GPU double-booked: replay the recorded allocation changes, one instant at a time
    # (the engine releases every changed job's GPUs before placing any of them)
    owner: dict[int, str] = {}
    held: dict[str, list[int]] = {}
    recs = list(zip(d["time_s"], d["action"], d["job_id"], d["gpus"]))
    for t in sorted(set(d["time_s"])):
        batch = [r for r in recs if r[0] == t]
        for _, _, jid, _ in batch:
            for g in held.pop(jid, []):
                del owner[g]
        last = {jid: (action, gpus) for _, action, jid, gpus in batch}
        for jid, (action, gpus) in last.items():
            if action in ("finish", "preempt", "evicted"):
                continue
            gs = [int(x) for x in gpus.split(",")] if gpus else []
            for g in gs:
                assert g not in owner, f"GPU {g} given to {jid} while held by {owner[g]} at t={t}"
                owner[g] = jid
            held[jid] = gs
    assert not owner or res.stuck


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.lists(job, min_size=1, max_size=8), pol=st.integers(0, len(POLS) - 1), seed=st.integers(0, 99),
       restart=st.sampled_from([0.0, 7.0]), contention=st.booleans(), leave=st.booleans())
def test_engine_invariants(jobs, pol, seed, restart, contention, leave):
    cap = [(50.0, 1, False), (120.0, 1, True)] if leave else []
    res = simulate(rows_of(jobs), POLS[pol](seed), costs=ChangeCosts(restart_s=restart), capacity=cap,
                   contention=contention)
    check_invariants(res, len(jobs))


@settings(max_examples=15, deadline=None)
@given(jobs=st.lists(job, min_size=1, max_size=6))
def test_same_input_same_result(jobs):
    a = simulate(rows_of(jobs), RandomElastic(seed=3))
    b = simulate(rows_of(jobs), RandomElastic(seed=3))
    assert np.array_equal(a.jobs.end_time, b.jobs.end_time, equal_nan=True)
    assert a.decisions == b.decisions


@settings(max_examples=25, deadline=None)
@given(jobs=st.lists(job, min_size=2, max_size=10), seed=st.integers(0, 99))
def test_incremental_contention_matches_full_recompute(jobs, seed):
    from simcore.engine import EngineOptions

    rows = rows_of(jobs)
    a = simulate(rows, RandomElastic(seed=seed), contention=True)
    b = simulate(rows, RandomElastic(seed=seed), contention=True,
                 options=EngineOptions(record_decisions=True, incremental_contention=False, check_invariants=True))
    np.testing.assert_allclose(a.jobs.end_time, b.jobs.end_time, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(a.jobs.exposed_comm_s, b.jobs.exposed_comm_s, rtol=1e-9, atol=1e-9)
