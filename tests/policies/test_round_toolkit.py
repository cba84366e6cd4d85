"""The round toolkit's operations on hand-built views: place by count, by GPU ids and with a
batch; resize (same count, shrink, grow, no room); preempt; reads of the masks with no
preparation; victims of a walk; the workspace scratch coming back clean."""

from __future__ import annotations

import dataclasses

import numpy as np

from policies.base import Round, Workspace
from simcore.api import Allocation
from tests.policies.conftest import Job, build_view


def _with_current(view, accepts_changes=True):
    cur = {j: Allocation(tuple(view.allocation_of(j).tolist())) for j in view.running().tolist()}
    return dataclasses.replace(view, current=cur, active_jobs=view.active(), running_jobs=view.running(),
                               accepts_changes=accepts_changes)


def test_place_by_count_ids_and_batch():
    v = _with_current(build_view([Job(gpus=2, alloc=(0, 1)), Job(gpus=4), Job(gpus=1)]))
    r = Round(v)
    assert r.place(1, 4, batch=512).tolist() == [4, 5, 6, 7]  # consolidate: one whole node
    assert r.place(2, [8]).tolist() == [8]
    d = r.decision()
    assert d.changes_only and set(d.allocations) == {1, 2}
    assert d.allocations[1] == Allocation((4, 5, 6, 7), 512) and d.allocations[2].batch_size is None


def test_reads_need_no_flush_and_kept_gpus_are_claimed():
    v = _with_current(build_view([Job(gpus=2, alloc=(0, 1)), Job(gpus=2)]))
    r = Round(v)
    r.keep_all_undecided()  # bulk keep: marked claimed lazily
    assert r.claimed[[0, 1]].all() and not r.held[[0, 1]].any()
    assert not r.avail()[[0, 1]].any()


def test_resize_same_shrink_grow_and_no_room():
    jobs = [Job(gpus=2, alloc=(0, 1), max_gpus=16, min_gpus=1), Job(gpus=4, alloc=(4, 5, 6, 7), max_gpus=16),
            Job(gpus=8, alloc=tuple(range(8, 16)), max_gpus=16)]
    v = _with_current(build_view(jobs))
    r = Round(v)
    assert r.resize(0, 2, batch=128).tolist() == [0, 1]  # only the batch changes
    assert r.resize(1, 2).tolist() == [4, 5]  # shrinks onto its own GPUs
    assert r.resize(2, 32) is None and r.undecided[2]  # no room: left as it was
    d = r.decision()
    assert d.allocations[0] == Allocation((0, 1), 128)
    assert d.allocations[1].gpus == (4, 5) and 2 not in d.allocations
    assert r.started == []  # resized running jobs are not starts

    r = Round(v)
    r.keep(2)
    assert r.resize(0, 4).tolist() == [0, 1, 2, 3]  # grows on its node: own GPUs plus free ones
    assert r.resize(1, 8) is None  # the 4 free GPUs left and its own are not enough
    assert r.decision().allocations[0].gpus == (0, 1, 2, 3)


def test_preempt_stops_a_job_and_frees_its_gpus():
    v = _with_current(build_view([Job(gpus=4, alloc=(0, 1, 2, 3)), Job(gpus=4)], nodes=1))
    r = Round(v)
    assert r.place(1, 4) is None
    r.preempt(0)
    assert r.place(1, 4).tolist() == [0, 1, 2, 3]
    d = r.decision()
    assert d.allocations[1].gpus == (0, 1, 2, 3) and d.allocations[0].gpus == ()  # 0 stops


def test_walk_preempts_lower_class_in_kernel_and_victims_for_python():
    # job 0 runs (class 1) on the only node; job 1 (class 0) waits for the whole node
    v = _with_current(build_view([Job(gpus=4, alloc=(0, 1, 2, 3)), Job(gpus=4, submit=5.0)], nodes=1))
    order, klass = np.array([1, 0]), np.array([0, 1])
    r = Round(v)
    assert list(r.walk(order, klass=klass, kernel=True, preempt=True)) == []  # all done in the kernel
    d = r.decision()
    assert d.allocations[1].gpus == (0, 1, 2, 3) and d.allocations[0].gpus == ()
    r = Round(v)
    seen = []
    for j in r.walk(order, klass=klass, kernel=False, preempt=True):  # a Python placer
        seen.append((j, r.victims().tolist()))
        r.place(j, r.placer(), victims=r.victims)
    assert seen == [(1, [0])]
    assert r.decision().allocations[1].gpus == (0, 1, 2, 3)


def test_blocking_walk_stops_at_the_first_job_that_cannot_start():
    # job 0 holds node 0; job 1 wants 8 GPUs (4 are free), job 2 wants 2, job 3 wants 1
    jobs = [Job(gpus=4, alloc=(0, 1, 2, 3)), Job(gpus=8, submit=1.0), Job(gpus=2, submit=2.0),
            Job(gpus=1, submit=3.0)]
    v = _with_current(build_view(jobs, nodes=2))
    order = np.array([1, 2, 3])
    r = Round(v)
    assert list(r.walk(order, kernel=True, blocking=True)) == []  # the head cannot start: nothing does
    assert set(r.decision().allocations) == set()
    r = Round(v)
    assert list(r.walk(order, kernel=True)) == []  # without blocking the others start
    assert {j: len(a.gpus) for j, a in r.decision().allocations.items()} == {2: 2, 3: 1}
    # a Python placer: the jobs before the head are handed back, none after it
    order = np.array([2, 1, 3])
    for blocking, want in ((True, [2]), (False, [2, 3])):
        r = Round(v)
        seen = []
        for j in r.walk(order, kernel=False, blocking=blocking):
            seen.append(j)
            assert r.place(j, r.placer()) is not None
        assert seen == want


def test_workspace_scratch_comes_back_clean():
    ws = Workspace()

    class P:
        workspace, rng, config, policy = ws, np.random.default_rng(0), None, None

        def accept_for(self, view, j, batch=None):
            return None

    v = _with_current(build_view([Job(gpus=4, alloc=(0, 1, 2, 3)), Job(gpus=4, submit=5.0)], nodes=1))
    for _ in range(3):
        r = Round(v, P())
        list(r.walk(np.array([1, 0]), klass=np.array([0, 1]), kernel=True, preempt=True))
        r.decision()
    assert (ws.rank(2) == -1).all() and not ws.mark(2).any()
    assert len(ws._free) == 1 and not ws._free[0].any()
