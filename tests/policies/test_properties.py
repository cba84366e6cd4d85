"""Hypothesis: on random views every policy returns a valid decision.

Random clusters (1–6 nodes of 1–8 GPUs, leaves, pods, one or two GPU types, nodes offline),
random jobs in every state (running ones on random GPUs, sometimes still holding a GPU that
just went offline), random oracle values and memory vetoes. Checked: only active jobs, no GPU
twice, only online GPUs, exactly the demanded count within [min, max], the required type (one
type per job), no memory-vetoed type, non-preemptive policies keep every intact running job,
wake_at in the future, and the same decision from a fresh instance.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from simcore.api import JobState
from tests.policies.conftest import Job, build_view, draw_fabric

VARIANTS = [
    ("fifo", {}), ("fifo", {"placement": "spread"}), ("fifo", {"placement": "random"}),
    ("fifo-backfill", {}), ("fifo-backfill", {"reservation": "none", "placement": "topo"}),
    ("sjf", {}), ("sjf", {"by": "gpu_time", "blocking": True}),
    ("srtf", {}), ("srtf", {"by": "gpu_time", "placement": "topo"}),
    ("tiresias", {}), ("tiresias", {"thresholds_gpu_s": (10.0, 100.0), "promote_knob": 1.0}),
    ("tiresias", {"consolidation": "min-nodes", "skew_models": ("*",)}),
    ("gandiva", {}), ("gandiva", {"large_placement": "consolidate", "split_small": False}),
]
NON_PREEMPTIVE = {"fifo", "fifo-backfill", "sjf", "gandiva"}
KEEPS_SAME_GPUS = {"fifo", "fifo-backfill", "sjf"}
MODELS = ["vgg16", "resnet50", "alexnet", "bert_base"]


@st.composite
def scenarios(draw):
    nodes, gpn, leaves, pods = draw_fabric(draw)
    n_types = draw(st.integers(1, 2))
    node_type = [draw(st.integers(0, n_types - 1)) for _ in range(nodes)]
    node_type[0] = 0
    if n_types == 2:
        node_type[-1] = 1
    types = np.repeat(node_type, gpn)
    node_on = [draw(st.booleans()) or draw(st.booleans()) for _ in range(nodes)]
    online = np.repeat(node_on, gpn).astype(bool)
    g = nodes * gpn
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    owned = np.zeros(g, bool)
    jobs = []
    veto = set()
    for i in range(draw(st.integers(0, 12))):
        dem = int(rng.integers(1, min(g, 8) + 1))
        req = int(rng.integers(-1, n_types))
        state = rng.choice([JobState.QUEUED, JobState.RUNNING, JobState.RUNNING, JobState.RESTARTING,
                            JobState.PENDING, JobState.FINISHED])
        alloc = ()
        if state in (JobState.RUNNING, JobState.RESTARTING):
            t = req if req >= 0 else int(rng.integers(0, n_types))
            lost = rng.random() < 0.1  # a GPU that went offline under it
            ok = np.flatnonzero(~owned & (types == t) & (online | lost))
            if ok.size >= dem:
                alloc = tuple(int(x) for x in rng.choice(ok, dem, replace=False))
                owned[list(alloc)] = True
            else:
                state = JobState.QUEUED
        if req < 0 and n_types == 2 and rng.random() < 0.3:
            t_veto = int(rng.integers(0, 2))
            if not alloc or int(types[alloc[0]]) != t_veto:  # the engine let it run on its type
                veto.add((i, t_veto))
        nan = rng.random() < 0.1
        jobs.append(Job(
            gpus=dem, submit=float(rng.integers(0, 50)), alloc=alloc, state=state,
            model=MODELS[int(rng.integers(0, len(MODELS)))], type_req=req,
            duration=np.nan if nan else float(rng.integers(1, 1000)),
            remaining=np.nan if nan else float(rng.integers(1, 1000)),
            attained=float(rng.integers(0, 200)), executed=float(rng.integers(0, 40)),
            first_start=float(rng.integers(0, 50)) if alloc or rng.random() < 0.3 else np.nan,
        ))

    def it(j, gpus, batch):
        return np.inf if (j, int(types[int(gpus[0])])) in veto else 1.0

    view = build_view(jobs, now=100.0, nodes=nodes, gpus_per_node=gpn, leaves=leaves, pods=pods,
                      gpu_types=types, online=online, iteration_time=it)
    return view, veto


def check(view, veto, decision, name):
    jobs, c = view.jobs, view.cluster
    active = set(int(x) for x in view.active())
    assert set(decision.allocations) <= active
    seen = set()
    for j, a in decision.allocations.items():
        g = np.asarray(a.gpus, np.int64)
        assert g.size == len(set(a.gpus)), "GPU twice within a job"
        assert not (seen & set(a.gpus)), "GPU given to two jobs"
        seen |= set(a.gpus)
        assert c.gpu_online[g].all(), "offline GPU assigned"
        assert jobs.min_gpus[j] <= g.size <= jobs.max_gpus[j] and g.size == jobs.num_gpus[j]
        t = np.unique(c.gpu_type[g])
        assert t.size == 1, "mixed GPU types"
        if jobs.gpu_type_req[j] >= 0:
            assert t[0] == jobs.gpu_type_req[j]
        assert (j, int(t[0])) not in veto, "memory-vetoed type"
    if name in NON_PREEMPTIVE:
        for k in view.running():
            cur = view.allocation_of(int(k))
            if c.gpu_online[cur].all():
                assert int(k) in decision.allocations, f"{name} preempted job {k}"
                if name in KEEPS_SAME_GPUS:
                    assert decision.allocations[int(k)].gpus == tuple(int(x) for x in cur)
    assert decision.wake_at is None or decision.wake_at > view.now


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_policy_returns_a_valid_decision(sc):
    view, veto = sc
    for name, params in VARIANTS:
        d = policies.make(name, **params).decide(view, view.now)
        check(view, veto, d, name)
        again = policies.make(name, **params).decide(view, view.now)
        assert again == d, f"{name} is not deterministic"
