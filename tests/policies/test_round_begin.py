"""A round's initial masks when one workspace runs round after round: `round_begin` resets
them over the GPUs earlier rounds touched (its list) instead of over all GPUs, and they must
equal a recount from the cluster arrays at every begin — `claimed` all False, `held` = GPUs
with an owner, the per-node usable counts and the offline-held count as the arrays say —
whatever happened between rounds: decisions applied, jobs finishing, GPUs going offline or
coming back, owners changed behind the rounds' back (which the list cannot know of: the
begin must notice and pass over all GPUs), and rounds abandoned half-way."""

from __future__ import annotations

import dataclasses
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import _round_state_kernels as RS
from policies._walk_kernels import touched_part
from policies.base import Round
from policies.fifo import Fifo, FifoConfig
from simcore.api import Allocation
from tests.policies.conftest import Job, build_view


class _World:
    """A cluster whose arrays change in place between rounds (one `ClusterArrays` object, so
    the workspace keeps its state), and jobs that run, finish and wait."""

    def __init__(self, nodes: int, gpn: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes, self.gpn = nodes, gpn
        g = nodes * gpn
        self.n_jobs = int(self.rng.integers(2, 12))
        self.sizes = [int(self.rng.integers(1, 2 * gpn + 1)) for _ in range(self.n_jobs)]
        self.alloc: dict[int, tuple[int, ...]] = {}
        self.done: set[int] = set()
        v = build_view([Job(gpus=k, max_gpus=2 * gpn) for k in self.sizes], nodes=nodes, gpus_per_node=gpn)
        c = v.cluster
        self.c = dataclasses.replace(c, gpu_owner=np.full(g, -1, np.int32), gpu_online=np.ones(g, bool),
                                     node_free=np.zeros(nodes, np.int32))
        self.sync()

    def sync(self) -> None:
        c = self.c
        c.gpu_owner[:] = -1
        for j, gs in self.alloc.items():
            c.gpu_owner[list(gs)] = j
        usable = c.gpu_online & (c.gpu_owner < 0)
        c.node_free[:] = np.bincount(c.gpu_node[usable], minlength=self.nodes)

    def view(self):
        jobs = [Job(gpus=k, max_gpus=2 * self.gpn, alloc=self.alloc.get(j, ())) for j, k in enumerate(self.sizes)]
        v = build_view(jobs, nodes=self.nodes, gpus_per_node=self.gpn)
        active = np.array([j for j in range(self.n_jobs) if j not in self.done], np.int64)
        running = np.array(sorted(self.alloc), np.int64)
        cur = {j: Allocation(self.alloc[j]) for j in sorted(self.alloc)}
        return dataclasses.replace(v, cluster=self.c, current=cur, active_jobs=active, running_jobs=running)

    def apply(self, decision) -> None:
        allocs = decision.allocations
        if decision.changes_only:
            for j, a in allocs.items():
                if a.gpus:
                    self.alloc[j] = tuple(sorted(a.gpus))
                else:
                    self.alloc.pop(j, None)
        else:
            self.alloc = {j: tuple(sorted(a.gpus)) for j, a in allocs.items() if a.gpus}
        self.sync()

    def between(self, what: str, s: int) -> None:
        """One change between rounds."""
        c, rng = self.c, self.rng
        if what == "finish" and self.alloc:
            j = sorted(self.alloc)[s % len(self.alloc)]
            del self.alloc[j]
            self.done.add(j)
        elif what == "offline":
            c.gpu_online[s % c.gpu_online.shape[0]] ^= True
        elif what == "outside":  # a queued job given free GPUs without a round claiming them
            free = np.flatnonzero(c.gpu_owner < 0)
            waiting = [j for j in range(self.n_jobs) if j not in self.alloc and j not in self.done]
            if waiting and free.shape[0]:
                j = waiting[s % len(waiting)]
                k = min(self.sizes[j], free.shape[0])
                self.alloc[j] = tuple(sorted(rng.choice(free, k, replace=False).tolist()))
        self.sync()


def _check_begin(r: Round, c) -> None:
    owner, online = c.gpu_owner, c.gpu_online
    assert not r._claimed.any()
    assert r._held.tolist() == (owner >= 0).tolist()
    usable = online & (owner < 0)
    assert r._nfree.tolist() == np.bincount(c.gpu_node[usable], minlength=c.node_free.shape[0]).tolist()
    assert (r._slow.shape[0] > 0) == bool(((owner >= 0) & ~online).any())  # jobs to check one by one


def _listed_cover_the_masks(r: Round) -> None:
    """Every GPU claimed or held is on the touched list (while one is kept)."""
    t = r._w[17]
    if t[0] >= 0:
        listed = np.zeros(r._claimed.shape[0], bool)
        listed[t[1:t[0] + 1]] = True
        assert not ((r._claimed | r._held) & ~listed).any()


between = st.lists(st.tuples(st.sampled_from(("finish", "offline", "outside", "none")), st.integers(0, 10**6)),
                   max_size=3)
in_round = st.lists(st.tuples(st.sampled_from(("place", "preempt", "resize", "walk", "abandon")),
                              st.integers(0, 10**6)), max_size=6)


@settings(max_examples=150, deadline=None)
@given(nodes=st.integers(1, 40), gpn=st.sampled_from((1, 2, 4, 8)), seed=st.integers(0, 10**6),
       rounds=st.lists(st.tuples(between, in_round), min_size=1, max_size=8))
def test_round_begin_equals_a_recount_after_any_sequence(nodes, gpn, seed, rounds):
    world = _World(nodes, gpn, seed)
    policy = Fifo(FifoConfig())  # its workspace serves every round
    for changes, ops in rounds:
        for what, s in changes:
            world.between(what, s)
        v = world.view()
        r = Round(v, policy)
        _check_begin(r, world.c)
        abandoned = False
        for op, s in ops:
            j = s % world.n_jobs
            if j in world.done:
                continue
            if op == "place" and not r.undecided[j] and j not in r.alloc:
                r.place(j, 1 + s % (2 * gpn))
            elif op == "preempt":
                r.preempt(j)
            elif op == "resize" and j in world.alloc and r.undecided[j]:
                r.resize(j, 1 + s % (2 * gpn))
            elif op == "walk":
                for k in r.walk(np.array(sorted(set(range(world.n_jobs)) - world.done), np.int64), kernel=True):
                    if r.undecided[k]:
                        r.keep(k)
            elif op == "abandon":  # a round given up before its decision: nothing applied
                abandoned = True
                break
            _listed_cover_the_masks(r)
        if not abandoned:
            world.apply(r.decision())


def test_a_busy_cluster_keeps_no_list_and_passes_over_all_gpus():
    """With most GPUs held, the list is not kept (the full pass is the cheaper one) and the
    masks still start as the arrays say."""
    g = 64
    owner = np.arange(g, dtype=np.int32) // 4  # 16 jobs of 4 GPUs hold every GPU
    online = np.ones(g, bool)
    running = np.arange(16, dtype=np.int64)
    alloc_count = np.full(16, 4, np.int32)
    claimed, held = np.ones(g, bool), np.zeros(g, bool)
    ibuf = np.zeros(g + 1, np.int64)
    touched = touched_part(ibuf, g)
    touched[0] = -1
    nfree = np.zeros(g // 8, np.int64)
    RS.round_begin(owner, online, running, alloc_count, np.zeros(16, bool), claimed, held,
                   np.zeros(g // 8, np.int32), np.arange(g, dtype=np.int32) // 8, nfree, touched)
    assert touched[0] == -1
    assert not claimed.any() and held.all()
