"""The duty-cycle fixed point: hand-derived fixed points and its error against the phase simulation.

Measured error (iteration time, duty-cycle vs phase simulation averaged over random initial
offsets; `python -m pytest tests/collectives/test_contention_dutycycle.py -m slow -s` prints it):
- small random groups (2-8 jobs, 1-3 links, 60 seeds, 16 offset draws): mean |err| 1.0%,
  95th percentile 3.7%, max 10%, mean bias -0.4% (slightly optimistic);
- mini fat-tree groups (10-30 jobs over node NICs and leaf uplinks, heavy contention, mean
  slowdown 1.4-1.9x; 10 groups, 4 draws): mean |err| 3.6%, 95th percentile 9.6%, max 16%,
  bias -2.6%. Without the "held back elsewhere" correction: mean |err| 5.6%, max 47%.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectives.contention import solo_iteration_s, solve
from collectives.contention_dutycycle import _expected_rates_count_dp
from tests.collectives.test_contention_reference import random_case, to_csr

A = np.array


def pair(C, M):
    return (A([C, C]), A([C, C]), A([M, M]), A([0, 1, 2]), A([0, 0]), A([1.0, 1.0]), A([1.0]))


@pytest.mark.parametrize("C,expected", [(1.0, 1.0 + math.sqrt(2.0)), (3.0, 1.0 + math.sqrt(10.0))])
def test_identical_pair_fixed_point_by_hand(C, expected):
    """Two identical jobs, s = C, M = 1, d = cap. While j communicates the other is on with
    probability q, giving rate 1/2, so E[x] = 1 - q/2, tau = 1/(1 - q/2), q = tau/(C + tau).
    C = 1: tau^2 = 2, T = 1 + sqrt2. C = 3: tau^2 + 4 tau - 6 = 0, tau = sqrt10 - 2, T = 1 + sqrt10."""
    it, _ = solve(*pair(C, 1.0), exact_max_jobs=0, fixed_point_tol=1e-10, cache=None)
    assert it == pytest.approx([expected] * 2, rel=1e-6)


@pytest.mark.parametrize("n", [2, 5, 40])
def test_always_communicating_jobs_share_exactly(n):
    """C = 0: every job always communicates (q = 1), each gets 1/n: T = n M exactly."""
    args = (np.zeros(n), np.zeros(n), np.full(n, 0.5), np.arange(n + 1), np.zeros(n, np.int64),
            np.ones(n), A([1.0]))
    it, ex = solve(*args, exact_max_jobs=0, cache=None)
    assert it == pytest.approx([0.5 * n] * n, rel=1e-6)
    assert ex == pytest.approx(it)


def test_counting_law_is_exact_for_equal_demands():
    """With equal demands on a link, the Poisson-binomial count law equals full enumeration."""
    n = 6
    rng = np.random.default_rng(3)
    C = rng.uniform(0.5, 2.0, n)
    args = (C, C * 0.5, rng.uniform(0.2, 1.0, n), np.arange(n + 1), np.zeros(n, np.int64),
            np.full(n, 0.6), A([1.0]))
    enum, _ = solve(*args, exact_max_jobs=0, enum_max_others=n, cache=None)
    dp, _ = solve(*args, exact_max_jobs=0, enum_max_others=0, cache=None)
    assert dp == pytest.approx(enum, rel=1e-9)


def test_normal_approximation_close_to_counting_law_on_a_busy_link():
    n = 300
    rng = np.random.default_rng(4)
    C = rng.uniform(0.5, 2.0, n)
    args = (C, C, rng.uniform(0.01, 0.06, n), np.arange(n + 1), np.zeros(n, np.int64),
            rng.uniform(0.05, 0.2, n), A([1.0]))
    dp, _ = solve(*args, exact_max_jobs=0, dp_max_others=n, cache=None)
    normal, _ = solve(*args, exact_max_jobs=0, enum_max_others=0, dp_max_others=0, cache=None)
    solo = solo_iteration_s(*args[:3])
    assert (dp > solo * 1.001).any()  # the link really is contended
    assert normal == pytest.approx(dp, rel=0.02)
    assert not np.array_equal(normal, dp)


def _errors(n_cases: int, draws: int) -> np.ndarray:
    errs = []
    for seed in range(n_cases):
        rng = random.Random(seed)
        n = rng.randint(2, 8)
        C, s, M, _, demand, cap = random_case(rng, n, rng.randint(1, 3))
        for dj in demand:
            dj.setdefault(0, cap[0] * rng.uniform(0.3, 1.0))
        ptr, lids, dem = to_csr(demand)
        args = (A(C), A(s), A(M), ptr, lids, dem, A(cap))
        ex, _ = solve(*args, offsets="random", offset_draws=draws, exact_max_jobs=100, cache=None)
        dc, _ = solve(*args, exact_max_jobs=0, cache=None)
        errs.extend((dc - ex) / ex)
    return np.array(errs)


def test_error_against_phase_simulation_small_groups():
    err = _errors(24, 8)
    assert np.abs(err).mean() < 0.02, np.abs(err).mean()
    assert np.abs(err).max() < 0.15, np.abs(err).max()


@pytest.mark.slow
def test_error_against_phase_simulation_small_groups_full():
    err = _errors(60, 16)
    print(f"small groups: mean|err| {np.abs(err).mean():.4f} p95 {np.quantile(np.abs(err), 0.95):.4f} "
          f"max {np.abs(err).max():.4f} bias {err.mean():.4f}")
    assert np.abs(err).mean() < 0.02 and np.abs(err).max() < 0.15


def mini_fat_tree(rng, n_jobs, n_nodes=16, per_leaf=4, uplinks=2):
    """Multi-node jobs over node NIC links (cap 1) and hashed leaf uplinks (cap 2), d = 0.7."""
    n_leaves = n_nodes // per_leaf
    cap = np.r_[np.full(2 * n_nodes, 1.0), np.full(2 * n_leaves * uplinks, 2.0)]
    ptr, lids = [0], []
    C = rng.uniform(0.2, 2.0, n_jobs)
    s = C * rng.choice([0.3, 1.0], n_jobs)
    M = rng.uniform(0.1, 1.0, n_jobs)
    for _ in range(n_jobs):
        nodes = rng.choice(n_nodes, int(rng.integers(2, 4)), replace=False)
        links = [int(x) for nd in nodes for x in (nd, n_nodes + nd)]
        leaves = sorted({int(nd) // per_leaf for nd in nodes})
        if len(leaves) > 1:
            for lf in leaves:
                u = 2 * n_nodes + lf * uplinks + int(rng.integers(uplinks))
                links += [u, u + n_leaves * uplinks]
        lids += links
        ptr.append(len(lids))
    return C, s, M, A(ptr), A(lids, np.int64), np.full(len(lids), 0.7), cap


@pytest.mark.parametrize("n_groups,draws", [pytest.param(10, 4, marks=pytest.mark.slow), (2, 2)])
def test_error_against_phase_simulation_fat_tree_groups(n_groups, draws):
    rng = np.random.default_rng(1)
    errs, errs_plain = [], []
    for _ in range(n_groups):
        g = mini_fat_tree(rng, int(rng.integers(10, 30)) if n_groups > 2 else 12)
        ex, _ = solve(*g, exact_max_jobs=1000, offsets="random", offset_draws=draws, cache=None)
        dc, _ = solve(*g, exact_max_jobs=0, cache=None)
        plain, _ = solve(*g, exact_max_jobs=0, elsewhere_correction=False, cache=None)
        errs.extend((dc - ex) / ex)
        errs_plain.extend((plain - ex) / ex)
    err, plain = np.array(errs), np.array(errs_plain)
    print(f"fat-tree groups: mean|err| {np.abs(err).mean():.4f} p95 {np.quantile(np.abs(err), 0.95):.4f} "
          f"max {np.abs(err).max():.4f} bias {err.mean():.4f}; uncorrected mean|err| "
          f"{np.abs(plain).mean():.4f} max {np.abs(plain).max():.4f}")
    assert np.abs(err).mean() < 0.06
    assert np.abs(err).max() < 0.25


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.05, 0.3, 0.7, 0.95]), st.sampled_from([1e9, 3e9]),
                          st.sampled_from([1.0, 0.5])), min_size=5, max_size=40),
       st.booleans())
def test_counting_law_reuses_equal_users_bit_for_bit(users, per_work):
    """Users equal in (q, demand, demand seen, weight) copy the first one's answer; the
    answers equal computing every user (reuse=False) bit for bit."""
    m = len(users)
    q = np.array([u[0] for u in users])
    a = np.array([u[1] for u in users])
    ao = a * np.array([u[2] for u in users])
    w = np.ones(m)
    lent = np.arange(m, dtype=np.int64)
    ejob = np.arange(m, dtype=np.int64)
    got, want = np.zeros(m), np.zeros(m)
    scratch = lambda: (np.empty(m + 1), np.empty(m + 1), np.empty(m + 1, np.int64))  # noqa: E731
    _expected_rates_count_dp(0, m, lent, ejob, q, a, ao, w, 4e9, per_work, got, *scratch(), True)
    _expected_rates_count_dp(0, m, lent, ejob, q, a, ao, w, 4e9, per_work, want, *scratch(), False)
    assert got.tobytes() == want.tobytes()
    assert np.all(np.isfinite(got)) and np.all(got > 0)
