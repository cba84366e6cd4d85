"""The engine's O(changed) fast paths agree with their naive definitions.

- `kernels.merge_sorted` (the active set, merged once per policy call) equals the sorted
  set `(a ∪ add) − drop`;
- `kernels.held_update` (the held set, updated once per policy call from the starts since)
  equals the sorted set of the jobs holding GPUs, whatever starts and stops came between;
- `validate._suspects` (unchanged allocations skipped at C speed) returns exactly the jobs
  whose allocation is not the engine's own object nor an equal fresh one with batch None,
  whatever the dict order of the decision.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.api import Allocation
from simcore.kernels import held_update, merge_sorted
from simcore.validate import _suspects

ints = st.lists(st.integers(0, 200), unique=True)


@settings(max_examples=200, deadline=None)
@given(ints, ints, st.data())
def test_merge_sorted_is_sorted_union_minus_drop(base, extra, data):
    a = np.array(sorted(base), np.int64)
    add = np.array(sorted(set(extra) - set(base)), np.int64)
    pool = sorted(set(base) | set(add.tolist()))
    drop = sorted(data.draw(st.lists(st.sampled_from(pool), unique=True)) if pool else [])
    got = merge_sorted(a, add, np.array(drop, np.int64))
    want = sorted((set(base) | set(add.tolist())) - set(drop))
    assert got.tolist() == want


def test_merge_sorted_hand_example():
    out = merge_sorted(np.array([1, 3, 5, 7], np.int64), np.array([2, 8], np.int64), np.array([3, 8], np.int64))
    assert out.tolist() == [1, 2, 5, 7]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), unique=True), st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=60))
def test_held_update_is_the_sorted_held_set(before, steps):
    """Starts and stops in any order (a job stopped and started again, started and stopped)
    between two updates: the update is exactly the jobs that hold GPUs after them."""
    count = np.zeros(41, np.int32)
    count[before] = 1
    held = set(before)
    started = []
    for start, j in steps:
        if start and j not in held:
            held.add(j)
            count[j] = 2
            started.append(j)
        elif not start and j in held:
            held.discard(j)
            count[j] = 0
    got = held_update(np.array(sorted(before), np.int64), np.array(started, np.int64), count)
    assert got.tolist() == sorted(held)


def _naive(allocs, objs, current):
    out = []
    for j, a in allocs.items():
        cur = objs.get(j)
        if a is cur:
            continue
        if type(a) is Allocation and a.batch_size is None and current.get(j) == a.gpus:
            continue
        out.append(j)
    return out


kinds = st.sampled_from(["same", "equal", "moved", "rebatch", "new", "dropped"])


@settings(max_examples=300, deadline=None)
@given(st.lists(kinds, min_size=0, max_size=12), st.randoms(use_true_random=False))
def test_suspects_match_naive_definition(plan, rnd):
    objs: dict[int, Allocation] = {}
    current: dict[int, tuple[int, ...]] = {}
    allocs: dict[int, object] = {}
    for j, kind in enumerate(plan):
        if kind != "new":
            objs[j] = Allocation((2 * j, 2 * j + 1))
            current[j] = objs[j].gpus
        if kind == "same":
            allocs[j] = objs[j]
        elif kind == "equal":
            allocs[j] = Allocation((2 * j, 2 * j + 1))
        elif kind == "moved":
            allocs[j] = Allocation((2 * j + 100,))
        elif kind == "rebatch":
            allocs[j] = Allocation((2 * j, 2 * j + 1), batch_size=64)
        elif kind == "new":
            allocs[j] = Allocation((2 * j,))
    if rnd.random() < 0.5:  # any dict order
        items = list(allocs.items())
        rnd.shuffle(items)
        allocs = dict(items)
    assert sorted(_suspects(allocs, objs, current)) == sorted(_naive(allocs, objs, current))


def test_suspects_keep_all_add_one_is_the_tail():
    objs = {j: Allocation((j,)) for j in range(5)}
    allocs = dict(objs)
    allocs[9] = Allocation((9,))
    assert _suspects(allocs, objs, {j: (j,) for j in range(5)}) == [9]
    allocs[2] = Allocation((7,))  # a move: no longer the tail case
    assert sorted(_suspects(allocs, objs, {j: (j,) for j in range(5)})) == [2, 9]


def test_suspects_foreign_values_are_all_checked():
    objs = {0: Allocation((0,))}
    allocs = {0: objs[0], 1: (1,)}  # not an Allocation: left to the per-job check to reject
    assert _suspects(allocs, objs, {0: (0,)}) == [1]
