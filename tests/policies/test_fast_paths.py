"""The round kernels give exactly what the plain formulations they replace give.

The walk kernel's placers (`_walk_kernels._kfit` on per-node counts, `_kfit_mask` on a mask) against `placement.place(strategy="consolidate")`;
`preempt_plan` / `hit_victims` against the NumPy arithmetic of a preemption attempt (per-GPU
victim ranks, cumsum, searchsorted, pool, unique hit ranks); `prefix_next`'s search against the
plain binary search it encodes; Tiresias' `walk_inputs` against NumPy expressions; `prepare`
with and without submit order.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import _preempt_kernels as PK
from policies import _tiresias_kernels as TK
from policies import _walk_kernels as WK
from policies import placement as P
from policies.base import Workspace, shape_key
from tests.policies.conftest import build_arrays

CLUSTER = build_arrays(nodes=6, gpus_per_node=4, leaves=3, pods=2)
G = 24


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=G, max_size=G),
       st.lists(st.booleans(), min_size=G, max_size=G), st.integers(-1, 30), st.integers(-1, 1))
def test_kernel_placer_equals_place(flags, scratch, demand, req):
    """Both kernel placers give `placement.place`'s consolidate: on the round's per-node
    counts and masks (`_kfit`, whatever its scratch pool held before) and on a mask
    (`_kfit_mask`)."""
    online, claimed, held = (np.array(x, bool) for x in zip(*flags))
    avail = online & ~claimed & ~held
    nfree = np.bincount(CLUSTER.gpu_node[avail], minlength=CLUSTER.node_num_gpus.shape[0]).astype(np.int64)
    topo = Workspace().kernel_topo(CLUSTER)
    ref = P.place(CLUSTER, avail, demand, gpu_type=req, strategy="consolidate")
    for got in (WK._kfit(nfree, online, claimed, held, np.array(scratch, bool), req, demand, topo),
                WK._kfit_mask(avail, req, demand, topo)):
        assert (got.size == 0) == (ref is None)
        if ref is not None:
            assert got.tolist() == ref.tolist()


def _reference_search(feasible, lo, n_all):
    """The shortest-prefix search `Round._place_preempting` wrote out before `prefix_next`:
    (tries in order, prefix used or None)."""
    tries = [lo]
    if feasible(lo):
        return tries, lo
    if lo >= n_all:
        return tries, None
    tries.append(n_all)
    if not feasible(n_all):
        return tries, None
    lo, hi = lo + 1, n_all
    while lo < hi:
        mid = (lo + hi) // 2
        tries.append(mid)
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    tries.append(lo)
    if feasible(lo):
        return tries, lo
    tries.append(n_all)
    return tries, n_all if feasible(n_all) else None


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12), st.data())
def test_prefix_search_equals_binary_search(n_all, data):
    lo = data.draw(st.integers(1, n_all))
    ok = data.draw(st.lists(st.booleans(), min_size=n_all + 1, max_size=n_all + 1))  # not monotone in general
    tries, want = _reference_search(lambda n: ok[n], lo, n_all)
    st_ = PK.prefix_start(lo, n_all)
    got = []
    m = PK.prefix_next(st_, False)
    while m >= 0:
        got.append(int(m))
        m = PK.prefix_next(st_, ok[m])
    assert got == tries
    assert (m == PK.PREFIX_DONE) == (want is not None)
    if want is not None:
        assert st_[4] == want


def test_shape_key_scalar_and_array_agree():
    dem = np.array([1, 8, 64], np.int64)
    req = np.array([-1, 0, 3], np.int16)
    assert shape_key(dem, req).tolist() == [shape_key(int(d), int(r)) for d, r in zip(dem, req)]
    assert len(set(shape_key(dem, req).tolist())) == 3


def _reference_plan(owner, online, claimed, held, gpu_type, want, undecided, alloc_count, victims, job, dem):
    """The NumPy formulation `Round._place_preempting` used before `preempt_plan`."""
    victims = victims[undecided[victims] & (victims != job)]
    base = online & ~claimed & ~held
    if victims.size == 0 or np.count_nonzero(base) + int(alloc_count[victims].sum()) < dem:
        return victims, None, 0, None
    # per GPU, the rank of its (held, usable) owner among the victims, else len(victims)
    nv = victims.size
    srt = np.argsort(victims, kind="stable")
    sv = victims[srt]
    pos = np.minimum(np.searchsorted(sv, owner), nv - 1)
    usable = online & ~claimed
    vr = np.where(usable & held & (owner >= 0) & (sv[pos] == owner), srt[pos], nv)
    typed = np.ones(owner.size, bool) if want < 0 else gpu_type == want
    per_rank = np.bincount(vr[typed & (vr < nv)], minlength=nv)[:nv]
    have = int((base & typed).sum())
    cum = have + np.cumsum(per_rank)
    if cum[-1] < dem:
        return victims, vr, 0, None
    lo = int(np.searchsorted(cum, dem)) + 1
    return victims, vr, lo, base | (vr < lo)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_preempt_plan_equals_numpy(data):
    n_jobs = 8
    owner = np.array(data.draw(st.lists(st.integers(-1, n_jobs - 1), min_size=G, max_size=G)), np.int32)
    online = np.array(data.draw(st.lists(st.booleans(), min_size=G, max_size=G)), bool)
    claimed = np.array(data.draw(st.lists(st.booleans(), min_size=G, max_size=G)), bool)
    held = owner >= 0
    held &= ~np.array(data.draw(st.lists(st.booleans(), min_size=G, max_size=G)), bool)
    gpu_type = np.array(data.draw(st.lists(st.integers(0, 1), min_size=G, max_size=G)), np.int16)
    want = data.draw(st.integers(-1, 1))
    undecided = np.array(data.draw(st.lists(st.booleans(), min_size=n_jobs, max_size=n_jobs)), bool)
    alloc_count = np.bincount(owner[owner >= 0], minlength=n_jobs).astype(np.int64)
    victims = np.array(data.draw(st.lists(st.integers(0, n_jobs - 1), max_size=10)), np.int64)
    job = data.draw(st.integers(0, n_jobs - 1))
    dem = data.draw(st.integers(1, G))
    rank = np.full(n_jobs, -1, np.int64)
    cand, vr, lo, pool = PK.preempt_plan(owner, online, claimed, held, gpu_type, want, undecided, alloc_count,
                                        victims, job, dem, rank)
    r_cand, r_vr, r_lo, r_pool = _reference_plan(owner, online, claimed, held, gpu_type, want, undecided,
                                                 alloc_count, victims, job, dem)
    assert (rank == -1).all()  # the scratch comes back clean
    assert cand.tolist() == r_cand.tolist()
    assert lo == r_lo
    if lo:
        assert vr.tolist() == r_vr.tolist()
        assert pool.tolist() == r_pool.tolist()
        gpus = np.flatnonzero(pool)[:dem]
        hit = np.unique(r_vr[gpus])
        assert PK.hit_victims(vr, gpus, lo, cand).tolist() == r_cand[hit[hit < lo]].tolist()


def test_hit_victims_hand_example():
    # GPUs 0..5 held by candidates of ranks 2, 2, 0, 1, 3(not a victim), 0; prefix lo = 2
    vr = np.array([2, 2, 0, 1, 3, 0], np.int64)
    cand = np.array([40, 41, 42], np.int64)
    assert PK.hit_victims(vr, np.array([5, 3, 2], np.int64), 2, cand).tolist() == [40, 41]
    assert PK.hit_victims(vr, np.array([0, 4], np.int64), 2, cand).tolist() == []


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_walk_inputs_equals_numpy(data):
    n = 12
    order = np.array(data.draw(st.permutations(range(n))), np.int64)
    q = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int64)
    dem = np.array(data.draw(st.lists(st.integers(1, 64), min_size=n, max_size=n)), np.int64)
    req = np.array(data.draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n)), np.int16)
    skew = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    with_keys, cons = data.draw(st.booleans()), data.draw(st.booleans())
    klass, keys, kernel = TK.walk_inputs(order, q, dem, req, skew, 3, with_keys, cons)
    assert klass.tolist() == q[order].tolist()
    ref = ((dem[order] * 65_537 + req[order] + 1) * 2 + skew[order]) * 3 + q[order]
    assert keys.tolist() == (ref.tolist() if with_keys else [-1] * n)
    assert kernel.tolist() == (cons & ~skew[order]).tolist()


def _prepare(submit, holding):
    n = submit.size
    active = np.arange(n, dtype=np.int64)
    z = np.zeros(n)
    return TK.prepare(active, holding, 1e6, submit, z.copy(), z.copy(), np.full(n, np.nan), z.copy(), z.copy(),
                      np.full(n, np.nan), np.zeros(n, np.int64), np.array([1e9]), 1e-6, 0.0,
                      np.zeros(n, np.int64), np.zeros(n))


def test_prepare_orders_running_first_then_by_submit():
    holding = np.array([False, True, False, True])
    # in submit order (the shortcut) and out of it (the sort): running first, each by submit
    assert _prepare(np.array([0.0, 1.0, 2.0, 3.0]), holding).tolist() == [1, 3, 0, 2]
    assert _prepare(np.array([3.0, 2.0, 1.0, 0.0]), holding).tolist() == [3, 1, 2, 0]
    assert _prepare(np.array([1.0, 1.0, 0.0, 0.0]), holding).tolist() == [3, 1, 2, 0]
