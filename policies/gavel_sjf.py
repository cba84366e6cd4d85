"""Gavel's "SJF-like" program on several GPU types by a structured barrier method (exact to 1e-9).

    min Σ_j w_j / u_j,   u_j = Σ_t U[j,t] X[j,t],   X ≥ 0,   Σ_t X[j,t] ≤ 1,   Σ_j s_j X[j,t] ≤ N_t

(`gavel.sjf_like`; U = each job's throughput relative to its best type, w_j its remaining
seconds there, s_j its GPU count). The program is convex, not linear: Kelley's cutting planes
(`gavel._inverse_rate_lp`, `weight_method="kelley"`) re-solve a growing LP of J·T + J rows
per round and at 1,000 jobs × 8 types take seconds without reaching their tolerance. Here the
log-barrier method solves it directly (Boyd & Vandenberghe §11.3): for μ ↓ 0, Newton steps on
f(X) − μ Σ log(slacks). The Newton system has Gavel's block-angular structure: one T×T block
per job (the job's objective curvature, its X ≥ 0 and Σ_t X ≤ 1 barriers) coupled only by
the T capacity rows, so each step is one numba pass (`newton_step`): a T×T Cholesky per job,
then a T×T Schur complement for the capacity rows — O(J·T³), a few milliseconds for
1,000 × 8 (about 50-70 steps). It stops when the barrier's
duality-gap bound m·μ (m = number of inequalities) is below `gap` × the objective, i.e. the
returned objective is within that relative gap of the optimum (the cutting planes' `tol`
is 1e-3). Entries below 1e-6 of their row's largest are set to 0 (a barrier point keeps every
variable positive; Gavel's rounds would otherwise see ~μ-sized shares).

The optimal rates u are unique (the objective is strictly convex in u); the time fractions X
need not be (e.g. identical jobs may swap types); this returns the central (analytic-centre)
optimum, as Gavel's own interior-point solver (cvxpy/ECOS) does, where an LP solver returns a
vertex.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: relative duality gap at which the barrier method stops
GAP = 1e-9
#: a centring stops at this Newton decrement² (the objective is scaled to 1)
CENTRED = 1e-7
#: the barrier weight μ is divided by this after each centring
MU_FACTOR = 10.0
#: shares below this fraction of their row's largest are returned as 0
ZERO_FRAC = 1e-6


@njit(cache=True)
def _chol(B: np.ndarray, L: np.ndarray) -> None:
    """L Lᵀ = B (T×T, symmetric positive definite), lower triangle of L written."""
    T = B.shape[0]
    for a in range(T):
        for b in range(a + 1):
            acc = B[a, b]
            for k in range(b):
                acc -= L[a, k] * L[b, k]
            if a == b:
                L[a, a] = np.sqrt(acc) if acc > 0.0 else 1e-300
            else:
                L[a, b] = acc / L[b, b]


@njit(cache=True)
def _chol_solve(L: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out = (L Lᵀ)⁻¹ v."""
    T = L.shape[0]
    for a in range(T):
        acc = v[a]
        for k in range(a):
            acc -= L[a, k] * out[k]
        out[a] = acc / L[a, a]
    for a in range(T - 1, -1, -1):
        acc = out[a]
        for k in range(a + 1, T):
            acc -= L[k, a] * out[k]
        out[a] = acc / L[a, a]


@njit(cache=True)
def _spd_inverse_from_chol(L: np.ndarray, Li: np.ndarray, out: np.ndarray) -> None:
    """out = (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹ (Li: scratch for L⁻¹)."""
    T = L.shape[0]
    for bb in range(T):
        for a in range(T):
            if a < bb:
                Li[a, bb] = 0.0
                continue
            acc = 1.0 if a == bb else 0.0
            for k in range(bb, a):
                acc -= L[a, k] * Li[k, bb]
            Li[a, bb] = acc / L[a, a]
    for a in range(T):
        for bb in range(a + 1):
            acc = 0.0
            for k in range(a, T):
                acc += Li[k, a] * Li[k, bb]
            out[a, bb] = acc
            out[bb, a] = acc


@njit(cache=True)
def newton_step(U, M, s, w, N, live, X, mu):
    """One Newton direction of the barrier problem at X (see the module docstring):
    (dX, Newton decrement², barrier value at X). Blocks by Cholesky (stable however the
    diagonal is scaled), the T capacity rows by a T×T Schur complement."""
    n, T = U.shape
    g = np.zeros((n, T))
    Bi = np.zeros((n, T, T))
    L = np.zeros((T, T))
    Li = np.zeros((T, T))
    y = np.zeros((n, T))
    c = np.ones(T)
    for t in range(T):
        if live[t]:
            acc = N[t]
            for j in range(n):
                acc -= s[j] * X[j, t]
            c[t] = acc
    S = np.zeros((T, T))
    rhs = np.zeros(T)
    B = np.zeros((T, T))
    val = 0.0
    for t in range(T):
        if live[t]:
            val -= mu * np.log(c[t])
    for j in range(n):
        u = 0.0
        r = 1.0
        for t in range(T):
            u += U[j, t] * X[j, t]
            r -= X[j, t]
        val += w[j] / u - mu * np.log(r)
        ca = np.sqrt(2.0 * w[j] / u ** 3)
        cb = np.sqrt(mu) / r
        for t in range(T):
            if M[j, t] > 0:
                val -= mu * np.log(X[j, t])
                g[j, t] = -w[j] / u ** 2 * U[j, t] - mu / X[j, t] + mu / r + mu * s[j] / c[t]
        for a in range(T):
            for b in range(T):
                B[a, b] = ca * U[j, a] * ca * U[j, b] + cb * M[j, a] * cb * M[j, b]
            B[a, a] += mu / X[j, a] ** 2 if M[j, a] > 0 else 1.0
        _chol(B, L)
        _spd_inverse_from_chol(L, Li, Bi[j])  # B_j⁻¹, kept for the last solve
        for a in range(T):
            acc = 0.0
            for bb in range(T):
                acc -= Bi[j, a, bb] * g[j, bb]
            y[j, a] = acc
            rhs[a] += s[j] * M[j, a] * acc
            for bb in range(T):  # the capacity rows' Schur complement: A B⁻¹ Aᵀ
                S[a, bb] += s[j] * M[j, a] * s[j] * M[j, bb] * Bi[j, a, bb]
    for t in range(T):
        S[t, t] += c[t] ** 2 / mu if live[t] else 1.0
    Ls_ = np.zeros((T, T))
    _chol(S, Ls_)
    z = np.zeros(T)
    _chol_solve(Ls_, rhs, z)
    dX = np.zeros((n, T))
    dec = 0.0
    for j in range(n):
        for a in range(T):
            if M[j, a] > 0:
                acc = y[j, a]
                for bb in range(T):
                    acc -= Bi[j, a, bb] * s[j] * M[j, bb] * z[bb]
                dX[j, a] = acc
                dec -= g[j, a] * acc
    return dX, dec, val


@njit(cache=True)
def barrier_value(U, M, s, w, N, live, X, mu):
    """The barrier objective at X (inf outside the strict interior)."""
    n, T = U.shape
    val = 0.0
    for t in range(T):
        if live[t]:
            acc = N[t]
            for j in range(n):
                acc -= s[j] * X[j, t]
            if acc <= 0.0:
                return np.inf
            val -= mu * np.log(acc)
    for j in range(n):
        u = 0.0
        r = 1.0
        for t in range(T):
            if M[j, t] > 0:
                if X[j, t] <= 0.0:
                    return np.inf
                val -= mu * np.log(X[j, t])
            u += U[j, t] * X[j, t]
            r -= X[j, t]
        if u <= 0.0 or r <= 0.0:
            return np.inf
        val += w[j] / u - mu * np.log(r)
    return val


def sjf_barrier(U: np.ndarray, sf: np.ndarray, num_gpus: np.ndarray, w: np.ndarray, gap: float = GAP,
                max_newton: int = 400) -> tuple[np.ndarray, float, int]:
    """(X[J, T], Σ w/u at X, Newton steps) for the program above. Jobs with w_j ≤ 0 or no
    usable type (U row all 0), and types with no GPUs, get X = 0."""
    U = np.asarray(U, float)
    J, T = U.shape
    X_out = np.zeros((J, T))
    w = np.asarray(w, float)
    N = np.asarray(num_gpus, float)
    M = (U > 0) & (N[None, :] > 0)
    rows = np.flatnonzero(M.any(axis=1) & (w > 0))
    if rows.size == 0:
        return X_out, 0.0, 0
    U, M, s = U[rows], M[rows].astype(float), np.asarray(sf, float)[rows]
    w = w[rows]
    n = rows.size
    U = np.ascontiguousarray(U * M)
    s = np.ascontiguousarray(s)
    N = np.ascontiguousarray(N)
    # a strictly feasible start: equal small shares, half of every type's GPUs at most
    load = (s[:, None] * M).sum(axis=0)
    theta = min(1.0 / (T + 1), float(np.min(np.where(load > 0, 0.5 * N / np.where(load > 0, load, 1.0), np.inf))))
    X = theta * M
    u = (U * X).sum(axis=1)
    f0 = float(np.sum(w / u))
    w = w / f0  # objective scaled to 1 at the start: absolute tolerances below
    live = load > 0
    m = float(M.sum() + n + np.count_nonzero(live))
    mu = 1.0 / m
    steps = 0

    done = False
    while not done:
        for _ in range(50):  # centring: Newton on the barrier problem at this μ
            dX, dec, f_now = newton_step(U, M, s, w, N, live, X, mu)
            steps += 1
            if not (np.isfinite(f_now) and np.isfinite(dec)):  # slacks at float resolution: X is final
                done = True
                break
            if dec <= 1e-14:
                break
            # the largest step keeping every slack positive, 0.99 of it, then backtracking
            alpha = 1.0
            neg = dX < 0
            if neg.any():
                alpha = min(alpha, float(np.min(-X[neg] / dX[neg])) * 0.99)
            r = 1.0 - X.sum(axis=1)
            dr = -dX.sum(axis=1)
            if (dr < 0).any():
                alpha = min(alpha, float(np.min(-r[dr < 0] / dr[dr < 0])) * 0.99)
            c = N - (s[:, None] * X).sum(axis=0)
            dc = -(s[:, None] * dX).sum(axis=0)
            kk = (dc < 0) & live
            if kk.any():
                alpha = min(alpha, float(np.min(-c[kk] / dc[kk])) * 0.99)
            while alpha > 1e-12 and barrier_value(U, M, s, w, N, live, X + alpha * dX, mu) > f_now - 0.25 * alpha * dec:
                alpha *= 0.5
            if alpha <= 1e-12:  # no progress at float resolution: X is final
                done = True
                break
            X = X + alpha * dX
            if dec <= CENTRED or steps >= max_newton:
                break
        if m * mu <= gap * float(np.sum(w / (U * X).sum(axis=1))) or steps >= max_newton:
            break
        mu /= MU_FACTOR
    X = np.where(X >= ZERO_FRAC * X.max(axis=1, keepdims=True), X, 0.0) * M
    X_out[rows] = np.clip(X, 0.0, 1.0)
    u = (U * X_out[rows]).sum(axis=1)
    return X_out, float(np.sum(w * f0 / u)), steps
