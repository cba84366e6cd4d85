"""The incremental Round / Tiresias (issue 4) decide exactly as the straightforward versions did.

`tests/policies/legacy/` holds frozen copies of the policies before the rewrite. Each test
runs both on the same views, with and without the engine's additive `active_jobs` /
`current` fields (fast path vs fallback), with nodes offline (forced re-placement), and in
lock-step through whole minisim workloads (stateful Tiresias), and compares the GPU sets.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import policies
from benchmarks.bench_policies import build_view
from simcore.api import Allocation, JobState
from tests.policies.legacy import fifo as L_fifo, gandiva as L_gandiva, sjf as L_sjf, tiresias as L_tiresias
from tests.policies.minisim import simulate

LEGACY = {
    "fifo": L_fifo.Fifo, "fifo-backfill": L_fifo.FifoBackfill, "sjf": L_sjf.Sjf, "srtf": L_sjf.Srtf,
    "tiresias": L_tiresias.Tiresias, "gandiva": L_gandiva.Gandiva,
}
PARAMS = [
    ("fifo", {}), ("fifo-backfill", {}), ("fifo-backfill", {"reservation": "none"}), ("sjf", {}),
    ("sjf", {"by": "gpu_time", "blocking": True}), ("srtf", {}), ("srtf", {"by": "gpu_time"}),
    ("tiresias", {}), ("tiresias", {"consolidation": "min-nodes"}), ("tiresias", {"placement": "topo"}),
    ("tiresias", {"placement": "random"}), ("gandiva", {}),
]


def pair(name, params):
    new = policies.make(name, **params)
    old = LEGACY[name](new.config)
    old.needs = new.needs
    return new, old


def gpus_of(d):
    return {int(k): tuple(a.gpus) for k, a in d.allocations.items()}


def with_engine_fields(view, offline_nodes=()):
    """The view as the engine builds it: active set, `current` Allocation objects, offline nodes."""
    c = view.cluster
    online = c.gpu_online.copy()
    state = view.jobs.state.copy()
    owner = c.gpu_owner.copy()
    for n in offline_nodes:
        online[c.gpu_node == n] = False
    cur = {int(j): Allocation(tuple(view.allocation_of(int(j)).tolist()), 256)
           for j in np.flatnonzero(state == JobState.RUNNING)}
    c2 = dataclasses.replace(c, gpu_online=online, gpu_owner=owner)
    s = state
    active = np.flatnonzero((s == JobState.QUEUED) | (s == JobState.RUNNING) | (s == JobState.RESTARTING))
    return dataclasses.replace(view, cluster=c2, active_jobs=active, current=cur)


@pytest.mark.parametrize("name,params", PARAMS)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), fill=st.floats(0.3, 1.0), n_off=st.integers(0, 3), engine=st.booleans())
def test_same_decisions_on_random_views(name, params, seed, fill, n_off, engine):
    view = build_view(seed=seed, n_jobs=300, fill=fill)
    rng = np.random.default_rng(seed)
    if engine or n_off:
        view = with_engine_fields(view, rng.choice(view.cluster.node_num_gpus.size, n_off, replace=False))
        if not engine:
            view = dataclasses.replace(view, active_jobs=None, current=None)
    new, old = pair(name, params)
    d_new, d_old = new.decide(view, view.now), old.decide(view, view.now)
    assert gpus_of(d_new) == gpus_of(d_old)
    assert d_new.wake_at == d_old.wake_at
    if engine:  # kept jobs reuse the engine's Allocation objects
        cur = view.current
        kept = [k for k, a in d_new.allocations.items() if k in cur and a.gpus == cur[k].gpus]
        assert all(d_new.allocations[k] is view.current[k] for k in kept)


class Lockstep:
    """Runs the new and the legacy policy on every view of a minisim run; they must agree."""

    def __init__(self, new, old):
        self.new, self.old = new, old
        self.name, self.interval_s, self.event_driven, self.needs = new.name, new.interval_s, True, new.needs
        self.calls = 0

    def decide(self, view, now):
        d = self.new.decide(view, now)
        e = self.old.decide(view, now)
        assert gpus_of(d) == gpus_of(e), f"call {self.calls} at t={now}"
        assert d.wake_at == e.wake_at
        self.calls += 1
        return d


@pytest.mark.parametrize("engine_fields", [False, True])
@pytest.mark.parametrize("name,params", PARAMS)
def test_same_decisions_through_a_workload(name, params, engine_fields):
    rng = np.random.default_rng(3)
    n = 50
    submit = np.sort(rng.uniform(0, 2000, n))
    gpus = rng.choice([1, 1, 1, 2, 4, 8], n)
    duration = np.round(rng.lognormal(5.5, 1.5, n), 1) + 1
    models = np.where(np.arange(n) % 4 == 0, "vgg16", "resnet50")
    capacity = [(400.0, 3, False), (900.0, 2, False), (1500.0, 3, True), (2500.0, 2, True)]
    if name == "tiresias":  # low thresholds: demotions, preemptions and promotions happen
        params = dict(params, thresholds_gpu_s=(200.0, 2000.0))
    step = Lockstep(*pair(name, params))
    end, _ = simulate(step, submit, gpus, duration, capacity=capacity, models=models,
                      engine_fields=engine_fields)
    assert np.isfinite(end).all() and step.calls > 20
