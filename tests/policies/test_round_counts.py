"""The round's per-node usable-GPU counts: they start as the cluster's counts (the engine's
`node_free`, or counted from the GPU arrays for a view built without them) and stay equal to
a recount from the round's masks (online, unclaimed, not held) after any sequence of keeps,
placements (Python and walk-kernel, with and without preemption), resizes and preemptions."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.base import Round
from simcore.api import Allocation
from tests.policies.conftest import Job, build_view


def _recount(r: Round) -> np.ndarray:
    """Usable GPUs per node counted node by node from the round's masks."""
    c = r.c
    usable = np.asarray(c.gpu_online) & ~r.claimed & ~r.held
    return np.array([int(usable[f:f + k].sum()) for f, k in zip(c.node_first_gpu.tolist(), c.node_num_gpus.tolist())])


def _view(nodes, gpn, seed, with_counts):
    rng = np.random.default_rng(seed)
    g = nodes * gpn
    online = rng.random(g) > 0.15
    free = list(rng.permutation(g))
    jobs = []
    for _ in range(int(rng.integers(1, 10))):
        k = int(rng.integers(1, gpn * 2 + 1))
        if rng.random() < 0.6 and len(free) >= k:  # running (some on GPUs that went offline)
            jobs.append(Job(gpus=k, alloc=tuple(sorted(int(x) for x in free[:k])), max_gpus=2 * gpn))
            free = free[k:]
        else:
            jobs.append(Job(gpus=k, submit=float(rng.integers(0, 50)), max_gpus=2 * gpn))
    v = build_view(jobs, nodes=nodes, gpus_per_node=gpn, online=online)
    cur = {j: Allocation(tuple(v.allocation_of(j).tolist())) for j in v.running().tolist()}
    v = dataclasses.replace(v, current=cur, active_jobs=v.active(), running_jobs=v.running())
    if with_counts:  # as the engine hands them over
        c = v.cluster
        counts = np.bincount(c.gpu_node[c.gpu_online & (c.gpu_owner < 0)], minlength=nodes).astype(np.int32)
        v = dataclasses.replace(v, cluster=dataclasses.replace(c, node_free=counts))
    return v


ops = st.lists(st.tuples(st.sampled_from(("keep", "place", "place_preempting", "preempt", "resize", "keep_all")),
                         st.integers(0, 10**6)), max_size=25)


@settings(max_examples=120, deadline=None)
@given(nodes=st.integers(1, 6), gpn=st.sampled_from((1, 2, 4, 8)), seed=st.integers(0, 10**6),
       with_counts=st.booleans(), ops=ops)
def test_round_counts_follow_the_masks(nodes, gpn, seed, with_counts, ops):
    v = _view(nodes, gpn, seed, with_counts)
    r = Round(v)
    assert r._nfree.tolist() == _recount(r).tolist()
    n = v.jobs.num_jobs
    for op, s in ops:
        j = s % n
        if op == "keep":
            r.keep(j)
        elif op == "place":
            r.place(j, 1 + s % (2 * gpn))
        elif op == "place_preempting":
            r.place(j, 1 + s % (2 * gpn), victims=lambda: r.running_idx[::-1])
        elif op == "preempt":
            r.preempt(j)
        elif op == "resize":
            r.resize(j, 1 + s % (2 * gpn))
        else:
            r.keep_all_undecided()
        assert r._nfree.tolist() == _recount(r).tolist(), op


@settings(max_examples=120, deadline=None)
@given(nodes=st.integers(1, 6), gpn=st.sampled_from((1, 2, 4, 8)), seed=st.integers(0, 10**6),
       with_counts=st.booleans(), preempt=st.booleans())
def test_walk_kernel_keeps_the_counts(nodes, gpn, seed, with_counts, preempt):
    """The walk kernel's placements, kept jobs and preemptions leave the counts equal to a
    recount, and the walk decides the same with or without the engine's counts."""
    outcomes = []
    for counts in (with_counts, not with_counts):
        v = _view(nodes, gpn, seed, counts)
        rng = np.random.default_rng(seed + 1)
        n = v.jobs.num_jobs
        order = rng.permutation(n)
        klass = rng.integers(0, 3, n)
        r = Round(v)
        for j in r.walk(order, klass=klass, kernel=True, preempt=preempt):
            if r.undecided[j]:  # a running job handed back: one of its GPUs is offline
                r.keep(j)
        assert r._nfree.tolist() == _recount(r).tolist()
        d = r.decision()
        outcomes.append({j: a.gpus for j, a in d.allocations.items()})
    assert outcomes[0] == outcomes[1]
