"""The SJF-like barrier's linear algebra (`policies.gavel_sjf`): each job's diagonal-plus-rank-2
block solved in orthonormal form, the Newton direction against a dense solve, and the optimum on
a larger table than `test_gavel.py`'s property test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.gavel_sjf import _apply_inverse, _block, newton_step, sjf_barrier


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 10), st.floats(-14, 2))
def test_block_inverse_solves_diagonal_plus_rank_2(seed, T, log_mu):
    """B = Dh⁻¹(I + q1q1ᵀ + q2q2ᵀ)Dh⁻¹ with the barrier's scales (μ from 1e2 down to 1e-14, so
    the objective's curvature outweighs the barriers by up to ~1e16): `_apply_inverse` returns x
    with B x = v to a small residual relative to |B|·|x| (backward stable), and zero on entries
    with dh = 0 (types the job cannot use)."""
    rng = np.random.default_rng(seed)
    mu = 10.0 ** log_mu
    x = rng.uniform(1e-6, 0.5, T)
    dh = x / np.sqrt(mu)
    dh[rng.random(T) < 0.2] = 0.0
    U = rng.uniform(0.1, 1.0, T)
    q1 = dh * np.sqrt(rng.uniform(0.1, 10.0)) * U
    q2 = dh * np.sqrt(mu) / rng.uniform(1e-6, 1.0)
    W, tau = np.zeros((2, T)), np.zeros(2)
    _block(q1, q2, W, tau)
    v = rng.standard_normal(T) * (dh > 0)
    out = np.zeros(T)
    _apply_inverse(dh, W, tau, v, out)
    live = dh > 0
    if not live.any():
        assert (out == 0).all()
        return
    d = np.where(live, 1.0 / np.where(live, dh, 1.0), 0.0)
    B = np.outer(d, d) * (np.eye(T) + np.outer(q1, q1) + np.outer(q2, q2))
    B = B[np.ix_(live, live)]
    res = B @ out[live] - v[live]
    scale = np.abs(B) @ np.abs(out[live]) + np.abs(v[live])
    assert (np.abs(res) <= 1e-9 * scale).all()
    assert (out[~live] == 0).all()


def test_newton_step_equals_a_dense_solve():
    """The Newton direction (blocks + capacity Schur complement) on 7 jobs × 3 types equals
    −H⁻¹g from the dense Hessian of the barrier objective."""
    rng = np.random.default_rng(4)
    J, T = 7, 3
    U = rng.uniform(0.3, 1.0, (J, T))
    U[:, 0] = 1.0
    M = np.ones((J, T))
    M[2, 1] = 0.0
    U = U * M
    s = rng.choice([1.0, 2.0], J)
    w = rng.uniform(0.1, 1.0, J)
    N = np.array([4.0, 5.0, 6.0])
    live = np.ones(T, bool)
    X = (0.05 + 0.05 * rng.random((J, T))) * M
    mu = 1e-3
    g, dX = np.zeros((J, T)), np.zeros((J, T))
    DH, WW, TAU = np.zeros((J, T)), np.zeros((J, 2, T)), np.zeros((J, 2))
    dec, _ = newton_step(U, M, s, w, N, live, X, mu, g, dX, DH, WW, TAU)
    u, r, c = (U * X).sum(axis=1), 1.0 - X.sum(axis=1), N - (s[:, None] * X).sum(axis=0)
    idx = [(j, t) for j in range(J) for t in range(T) if M[j, t] > 0]
    n = len(idx)
    H, gv = np.zeros((n, n)), np.zeros(n)
    for p, (j, t) in enumerate(idx):
        gv[p] = -w[j] / u[j] ** 2 * U[j, t] - mu / X[j, t] + mu / r[j] + mu * s[j] / c[t]
        for q, (k, v) in enumerate(idx):
            h = mu * s[j] * s[k] / c[t] ** 2 if t == v else 0.0
            if j == k:
                h += 2 * w[j] / u[j] ** 3 * U[j, t] * U[j, v] + mu / r[j] ** 2 + (mu / X[j, t] ** 2 if t == v else 0.0)
            H[p, q] = h
    d = -np.linalg.solve(H, gv)
    got = np.array([dX[j, t] for j, t in idx])
    np.testing.assert_allclose(got, d, rtol=1e-9, atol=1e-12)
    assert dec == pytest.approx(-gv @ d, rel=1e-9)


def test_sjf_barrier_on_80_jobs_6_types_reaches_the_cutting_plane_optimum():
    """80 jobs × 6 types (a quarter of the pairs unusable, GPU counts 1-8): the barrier's
    objective equals long-run cutting planes' (tolerance 1e-8) within 1e-6, never above it by more."""
    from policies.gavel import _inverse_rate_lp

    rng = np.random.default_rng(21)
    J, T = 80, 6
    tput = rng.uniform(0.5, 5.0, (J, T))
    tput[rng.random((J, T)) < 0.25] = 0.0
    tput[:, 0] = np.maximum(tput[:, 0], 0.5)
    sf = rng.choice([1, 2, 4, 8], J)
    num = np.array([16.0, 8.0, 32.0, 16.0, 8.0, 24.0])
    rmax = tput.max(axis=1)
    w = rng.uniform(0.1, 10.0, J)
    x, obj, steps = sjf_barrier(tput / rmax[:, None], sf, num, w)
    assert (x >= 0).all() and (x.sum(axis=1) <= 1.0).all() and ((sf[:, None] * x).sum(axis=0) <= num).all()
    _, ref, _ = _inverse_rate_lp(tput, sf, num, weight=w, tol=1e-8, max_iter=400)
    assert obj == pytest.approx(ref, rel=1e-6)
    assert steps < 200
