"""Hand-derived cases and properties of ``collectives.contention.solve``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectives.contention import (
    ContentionCache,
    iteration_upper_bound_s,
    quantise,
    solo_iteration_s,
    solve,
)
from collectives.contention_exact import build_link_index, maxmin_rates
from cosim.errors import InputError, UnknownNameError
from tests.collectives.test_contention_reference import reference_rates

A = np.array


def one_link_pair(C, s, M, d=1.0, cap=1.0):
    """Two identical jobs whose communication crosses the same single link."""
    return (A([C, C], float), A([s, s], float), A([M, M], float), A([0, 1, 2]), A([0, 0]),
            A([d, d], float), A([cap], float))


# ---------------------------------------------------------------- hand-derived steady states

def test_two_identical_jobs_fully_overlapping_each_get_half():
    """Synchronised start, C = s = 1, M = 1, d = cap: both comm phases coincide every time,
    each runs at 1/2, so the communication takes 2 M and t = C + 2M = 3, exposed = 2."""
    it, ex = solve(*one_link_pair(1.0, 1.0, 1.0), offsets="zero", cache=None)
    assert it == pytest.approx([3.0, 3.0], rel=1e-9)
    assert ex == pytest.approx([2.0, 2.0], rel=1e-9)


def test_two_identical_jobs_backward_overlap_synchronised():
    """C = 2, s = 1, M = 1 (solo: max(2, 1+1) = 2). Synchronised: both communicate from
    t = 1 at half speed, finish at 1 + 2 = 3 > C, so t = 3 and exposed = 1."""
    it, ex = solve(*one_link_pair(2.0, 1.0, 1.0), offsets="zero", cache=None)
    assert it == pytest.approx([3.0, 3.0], rel=1e-9)
    assert ex == pytest.approx([1.0, 1.0], rel=1e-9)


def test_two_identical_jobs_staggered_golden_offset():
    """C = s = M = 1, default offsets 0 and 0.618*2 = 1.236 (= sqrt5 - 1). Iteration 1: no
    overlap (A comm [1,2], B comm [2.236, 3.236]). A restarts at 2, communicates from 3 and
    meets B's last 0.236: both at 1/2 until B ends at 3.472, A then finishes alone at
    4.236. From then on each comm start trails the other's by 0.764 and overlaps it by
    M - 0.764 = 0.236, so both iterations last 2 + 0.236 = sqrt(5)."""
    it, _ = solve(*one_link_pair(1.0, 1.0, 1.0), cache=None)
    assert it == pytest.approx([math.sqrt(5.0)] * 2, rel=1e-9)


def test_neutral_offset_is_kept():
    """Offset delta < M between identical jobs: both lose exactly M - delta per iteration."""
    cache = None
    it, _ = solve(*one_link_pair(1.0, 1.0, 1.0), offsets="zero", cache=cache)
    # pure communication (C = 0): the link is always shared, each job takes 2M
    it0, ex0 = solve(*one_link_pair(0.0, 0.0, 1.0), cache=cache)
    assert it0 == pytest.approx([2.0, 2.0]) and ex0 == pytest.approx([2.0, 2.0])
    assert it[0] > it0[0]


def test_disjoint_links_do_not_slow_down():
    C, s, M = A([1.0, 2.0]), A([0.5, 2.0]), A([3.0, 1.0])
    it, ex = solve(C, s, M, A([0, 2, 4]), A([0, 1, 2, 3]), A([1.0, 1.0, 1.0, 1.0]),
                   A([1.0, 1.0, 1.0, 1.0]), offsets="zero", cache=None)
    assert it.tolist() == [3.5, 3.0]
    assert ex.tolist() == [2.5, 1.0]


def test_shared_link_with_room_for_both_is_not_contention():
    """d = cap/2 each: together they fit, nobody slows down even when synchronised."""
    it, _ = solve(*one_link_pair(1.0, 1.0, 1.0, d=0.5), offsets="zero", cache=None)
    assert it == pytest.approx([2.0, 2.0], rel=1e-12)


def test_contention_off_is_the_solo_formula_exactly():
    C, s, M = A([1.0, 1.0, 2.5]), A([0.2, 1.0, 0.0]), A([1.3, 1.0, 0.7])
    args = (C, s, M, A([0, 1, 2, 3]), A([0, 0, 0]), A([1.0, 1.0, 1.0]), A([1.0]))
    it, ex = solve(*args, contention=False)
    assert it.tolist() == [1.5, 2.0, 2.5]
    assert ex.tolist() == [0.5, 1.0, 0.0]
    assert it.dtype == np.float64 and ex.dtype == np.float64
    it_on, _ = solve(*args, offsets="zero", cache=None)
    assert (it_on > it + 1e-6).any()


# ---------------------------------------------------------------- the "done when"

@pytest.mark.parametrize("offsets,kw", [("zero", {}), ("random", {"offset_draws": 16})])
def test_two_jobs_on_one_uplink_slow_down_less_than_2x_more_with_more_overlap(offsets, kw):
    """Growing M/C makes the communication phases a larger part of the iteration (more overlap):
    the slowdown grows, and stays below 2x; with contention off there is none."""
    ratios = []
    for M in (0.25, 0.5, 1.0, 2.0, 4.0):
        args = one_link_pair(1.0, 1.0, M)
        it, _ = solve(*args, offsets=offsets, cache=None, **kw)
        solo = solo_iteration_s(*args[:3])
        assert it[0] == pytest.approx(it[1], rel=0.05)
        ratios.append(it[0] / solo[0])
        off, _ = solve(*args, contention=False)
        assert off.tolist() == solo.tolist()
    assert all(1.0 < r < 2.0 for r in ratios), ratios
    assert all(b > a for a, b in zip(ratios, ratios[1:])), ratios


def test_synchronised_slowdown_closed_form():
    """Synchronised identical pair with s = C: t = C + 2M, slowdown (C+2M)/(C+M)."""
    for C, M in ((1.0, 0.25), (3.0, 1.0), (0.5, 2.0)):
        it, _ = solve(*one_link_pair(C, C, M), offsets="zero", cache=None)
        assert it[0] == pytest.approx(C + 2 * M, rel=1e-9)


# ---------------------------------------------------------------- max-min rates

@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_progressive_filling_matches_textbook_bottleneck_algorithm(seed):
    rng = np.random.default_rng(seed)
    n, L = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    cap = rng.uniform(1, 4, L)
    w = np.where(rng.random(n) < 0.5, 1.0, rng.uniform(0.3, 3, n))
    demand, ptr, lids, dem = [], [0], [], []
    for _ in range(n):
        links = sorted(rng.choice(L, int(rng.integers(1, L + 1)), replace=False).tolist())
        dj = {lk: float(cap[lk] * rng.uniform(0.1, 1.0)) for lk in links}
        demand.append(dj)
        lids += links
        dem += [dj[lk] for lk in links]
        ptr.append(len(lids))
    active = rng.random(n) < 0.8
    ptr, lids, dem = A(ptr), A(lids, np.int64), A(dem)
    lptr, lent, ejob = build_link_index(L, ptr, lids)
    x = np.zeros(n)
    maxmin_rates(active, w, ptr, lids, dem, cap, lptr, lent, ejob, x)
    ref = reference_rates([j for j in range(n) if active[j]], list(w), demand, list(cap))
    for j in range(n):
        assert x[j] == pytest.approx(ref.get(j, 0.0), rel=1e-9, abs=1e-12)
    use = np.bincount(lids, weights=x[np.repeat(np.arange(n), np.diff(ptr))] * dem, minlength=L)
    assert (use <= cap * (1 + 1e-9)).all()


# ---------------------------------------------------------------- properties

@st.composite
def groups(draw):
    n = draw(st.integers(1, 6))
    L = draw(st.integers(1, 3))
    C = [draw(st.floats(0.0, 3.0)) for _ in range(n)]
    s = [c * draw(st.sampled_from([0.0, 0.5, 1.0])) for c in C]
    M = [draw(st.floats(0.05, 3.0)) for _ in range(n)]
    cap = [draw(st.floats(0.5, 4.0)) for _ in range(L)]
    ptr, lids, dem = [0], [], []
    for _ in range(n):
        links = sorted(draw(st.sets(st.integers(0, L - 1), min_size=1, max_size=L)))
        lids += links
        dem += [cap[lk] * draw(st.floats(0.1, 1.2)) for lk in links]  # > cap gets clipped
        ptr.append(len(lids))
    return A(C), A(s), A(M), A(ptr), A(lids, np.int64), A(dem), A(cap)


@settings(max_examples=40, deadline=None)
@given(groups(), st.sampled_from(["staggered", "zero"]), st.sampled_from([12, 0]))
def test_iteration_time_between_solo_and_all_overlap_bound(g, offsets, exact_max_jobs):
    it, ex = solve(*g, offsets=offsets, exact_max_jobs=exact_max_jobs, cache=None, max_iters=400)
    solo = solo_iteration_s(*(quantise(a) for a in g[:3]))
    upper = iteration_upper_bound_s(*g)
    assert (it >= solo).all()
    assert (it <= upper * (1 + 1e-6)).all(), (it, upper)
    assert ex == pytest.approx(it - quantise(g[0]))
    assert (ex >= -1e-12).all()


def test_upper_bound_is_serialised_time_for_identical_jobs():
    n = 4
    args = (np.ones(n), np.ones(n), np.ones(n), np.arange(n + 1), np.zeros(n, np.int64), np.ones(n), A([1.0]))
    assert iteration_upper_bound_s(*args).tolist() == [1.0 + n] * n
    it, _ = solve(*args, offsets="zero", cache=None)
    assert it == pytest.approx([1.0 + n] * n)  # synchronised: the bound is reached


# ---------------------------------------------------------------- groups and cache

def two_groups(m_first=1.0):
    """Jobs 0,1 share link 0; jobs 2,3 share link 3; job 4 alone on links 1,2."""
    C = A([1.0, 1.0, 1.0, 1.0, 1.0])
    M = A([m_first, 1.0, 1.0, 1.0, 1.0])
    ptr = A([0, 1, 2, 3, 4, 6])
    lids = A([0, 0, 3, 3, 1, 2])
    return C, C.copy(), M, ptr, lids, np.ones(6), np.ones(4)


def test_cache_returns_identical_results_and_recomputes_only_the_changed_group():
    cache = ContentionCache()
    st1: dict = {}
    first = solve(*two_groups(), cache=cache, stats=st1)
    assert st1["groups"] == 2 and st1["cache_hits"] == 1  # both groups have the same signature
    again = solve(*two_groups(), cache=cache)
    fresh = solve(*two_groups(), cache=None)
    for a, b, c in zip(first, again, fresh):
        assert a.tobytes() == b.tobytes() == c.tobytes()
    st2: dict = {}
    changed = solve(*two_groups(m_first=1.5), cache=cache, stats=st2)
    assert st2["cache_hits"] == 1 and len(cache) == 2  # only group {0,1} recomputed
    assert changed[0][2:].tolist() == first[0][2:].tolist()
    assert changed[0][4] == 2.0  # the singleton keeps its solo time


def test_rounding_noise_hits_the_cache():
    cache = ContentionCache()
    solve(*two_groups(), cache=cache)
    noisy = list(two_groups())
    noisy[2] = noisy[2] * (1 + 1e-13)
    stats: dict = {}
    solve(*noisy, cache=cache, stats=stats)
    assert stats["cache_hits"] == 2


def test_no_communication_and_empty_input():
    it, ex = solve(A([1.0, 2.0]), A([0.0, 0.0]), A([0.0, 0.0]), A([0, 1, 2]), A([0, 0]), A([1.0, 1.0]),
                   A([1.0]), cache=None)
    assert it.tolist() == [1.0, 2.0] and ex.tolist() == [0.0, 0.0]
    it, ex = solve(A([]), A([]), A([]), A([0]), A([], np.int64), A([]), A([1.0]))
    assert it.shape == (0,) and ex.shape == (0,)


def test_infeasible_solo_demand_clip_and_bound():
    """A lone job driving 2x the link capacity: "clip" trusts M, "bound" halves its rate."""
    args = (A([1.0]), A([1.0]), A([1.0]), A([0, 1]), A([0]), A([2.0]), A([1.0]))
    assert solve(*args, cache=None)[0].tolist() == [2.0]
    assert solve(*args, infeasible_demand="bound", cache=None)[0].tolist() == [3.0]


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize(
    "change,field",
    [
        ({1: A([1.5, 1.0])}, "comm_start_s"),
        ({0: A([-1.0, 1.0])}, "compute_s"),
        ({2: A([np.nan, 1.0])}, "comm_s"),
        ({3: A([0, 2, 1])}, "ptr"),
        ({4: A([0, 5])}, "link_ids"),
        ({5: A([1.0, -1.0])}, "link_demand_Bps"),
        ({6: A([0.0])}, "link_capacity_Bps"),
        ({3: A([0, 2, 2]), 4: A([0, 0]), 5: A([1.0, 1.0])}, "link_ids"),
    ],
)
def test_bad_input_names_the_field(change, field):
    args = list(one_link_pair(1.0, 1.0, 1.0))
    for i, v in change.items():
        args[i] = v
    with pytest.raises(InputError, match=field):
        solve(*args, cache=None)


def test_unknown_option_names_valid_ones():
    with pytest.raises(UnknownNameError, match="staggered"):
        solve(*one_link_pair(1.0, 1.0, 1.0), offsets="sync")


def test_options_object_and_keyword_overrides_agree():
    from collectives.contention_options import ContentionOptions

    args = one_link_pair(1.0, 1.0, 1.0)
    a = solve(*args, options=ContentionOptions(offsets="zero"), cache=None)
    b = solve(*args, offsets="zero", cache=None)
    assert a[0].tolist() == b[0].tolist() == [3.0, 3.0]
    with pytest.raises(TypeError):
        solve(*args, no_such_option=1)
    with pytest.raises(InputError, match="offset_draws"):
        solve(*args, offset_draws=4)
