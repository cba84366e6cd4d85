"""Gavel's "SJF-like" program on several GPU types by a structured barrier method (exact to 1e-9).

    min Σ_j w_j / u_j,   u_j = Σ_t U[j,t] X[j,t],   X ≥ 0,   Σ_t X[j,t] ≤ 1,   Σ_j s_j X[j,t] ≤ N_t

(`gavel.sjf_like`; U = each job's throughput relative to its best type, w_j its remaining
seconds there, s_j its GPU count). The program is convex, not linear: Kelley's cutting planes
(`gavel._inverse_rate_lp`, `weight_method="kelley"`) re-solve a growing LP of J·T + J rows
per round and at 1,000 jobs × 8 types take seconds without reaching their tolerance. Here the
log-barrier method solves it directly (Boyd & Vandenberghe §11.3): for μ ↓ 0, Newton steps on
f(X) − μ Σ log(slacks). The Newton system has Gavel's block-angular structure: one T×T block
per job (the job's objective curvature, its X ≥ 0 and Σ_t X ≤ 1 barriers) coupled only by
the T capacity rows; each block is diagonal plus rank 2, solved in O(T) from an orthonormal
form of its rank-2 part (`_block`), and the capacity rows by a T×T Schur complement
(`newton_step`, O(J·T²)); the whole path — centring, step lengths, backtracking, μ updates —
is one numba call (`_barrier_path`): about 20-30 ms for 1,000 × 8 (~65 steps). It stops when the barrier's
duality-gap bound m·μ (m = number of inequalities) is below `gap` × the objective, i.e. the
returned objective is within that relative gap of the optimum (the cutting planes' `tol`
is 1e-3). Entries below 1e-6 of their row's largest are set to 0 (a barrier point keeps every
variable positive; Gavel's rounds would otherwise see ~μ-sized shares).

The optimal rates u are unique (the objective is strictly convex in u); the time fractions X
need not be (e.g. identical jobs may swap types); this returns the central (analytic-centre)
optimum, as Gavel's own interior-point solver (cvxpy/ECOS) does, where an LP solver returns a
vertex. Float resolution: near μ → 0 a block's condition reaches ~1e15, so the last steps are
at rounding level; the former per-block Cholesky version of this method (to 2026-11) and this
one agree on the objective to < 1e-7 relative on 1,000 × 8 (1.7e-8 on 40 × 4) and on X to
~1e-3 in the directions where the objective is flat (as does the Cholesky version with its sums
merely reordered): X's last digits there are not a property of the program.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: relative duality gap at which the barrier method stops
GAP = 1e-9
#: a centring stops at this Newton decrement² (the objective is scaled to 1)
CENTRED = 1e-7
#: the barrier weight μ is divided by this after each centring (100: 65 Newton steps at 1,000 × 8
#: where 10 took 90, the objective as close to the optimum; Boyd & Vandenberghe §11.3.3: 10-100)
MU_FACTOR = 100.0
#: shares below this fraction of their row's largest are returned as 0
ZERO_FRAC = 1e-6


@njit(cache=True)
def _block(q1, q2, W, tau):
    """The rank-2 part of one job's block in orthonormal form: q1 q1ᵀ + q2 q2ᵀ = Σ_k λ_k ŵ_k ŵ_kᵀ
    with ŵ_k the rows of `W` (2×T), and tau[k] = 1 / (1 + λ_k), so that
    (I + q1 q1ᵀ + q2 q2ᵀ)⁻¹ = I − Σ_k (1 − tau_k) ŵ_k ŵ_kᵀ.

    QR of [q1 q2] by Gram-Schmidt (reorthogonalised), then the 2×2 eigenproblem of R Rᵀ with
    the small eigenvalue from the determinant (r11·r22)², never from a difference: λ₁/λ₂ reaches
    1e15 near the optimum (the objective's curvature against μ), where Woodbury's 2×2
    capacitance loses every digit."""
    T = q1.shape[0]
    r11 = 0.0
    for t in range(T):
        r11 += q1[t] * q1[t]
    r11 = np.sqrt(r11)
    for t in range(T):
        W[0, t] = q1[t] / r11 if r11 > 0 else 0.0
    r12 = 0.0
    for t in range(T):
        r12 += W[0, t] * q2[t]
    for t in range(T):
        W[1, t] = q2[t] - r12 * W[0, t]
    c = 0.0
    for t in range(T):
        c += W[0, t] * W[1, t]
    r22 = 0.0
    for t in range(T):
        W[1, t] -= c * W[0, t]
        r22 += W[1, t] * W[1, t]
    r12 += c
    r22 = np.sqrt(r22)
    for t in range(T):
        W[1, t] = W[1, t] / r22 if r22 > 0 else 0.0
    g11 = r11 * r11 + r12 * r12
    g12 = r12 * r22
    g22 = r22 * r22
    disc = np.sqrt(0.25 * (g11 - g22) ** 2 + g12 * g12)
    lam1 = 0.5 * (g11 + g22) + disc
    lam2 = (r11 * r22) ** 2 / lam1 if lam1 > 0 else 0.0
    a0, a1 = lam1 - g22, g12  # eigenvector of λ₁: the better-scaled of the two forms
    b0, b1 = g12, lam1 - g11
    if a0 * a0 + a1 * a1 < b0 * b0 + b1 * b1:
        a0, a1 = b0, b1
    nv = np.sqrt(a0 * a0 + a1 * a1)
    if nv > 0:
        a0 /= nv
        a1 /= nv
    else:
        a0, a1 = 1.0, 0.0
    for t in range(T):
        e1 = W[0, t]
        e2 = W[1, t]
        W[0, t] = a0 * e1 + a1 * e2
        W[1, t] = -a1 * e1 + a0 * e2
    tau[0] = 1.0 / (1.0 + lam1)
    tau[1] = 1.0 / (1.0 + lam2)


@njit(cache=True)
def _apply_inverse(dh, W, tau, v, out):
    """out = B⁻¹ v for B = Dh⁻¹ (I + q1 q1ᵀ + q2 q2ᵀ) Dh⁻¹ (`_block`'s W, tau; Dh = diag(dh)):
    Dh (P ṽ + Σ_k tau_k ŵ_k ŵ_kᵀ ṽ) Dh, ṽ = Dh v, P the projector off ŵ₁, ŵ₂ applied twice:
    along ŵ₁ the true result is ~1e-15 of ṽ, and one pass leaves an eps·|ṽ| residue there that
    the Hessian's stiff direction multiplies back into a 1e-7 relative residual."""
    T = dh.shape[0]
    p0 = 0.0
    p1 = 0.0
    for t in range(T):
        x = dh[t] * v[t]
        out[t] = x
        p0 += W[0, t] * x
        p1 += W[1, t] * x
    for t in range(T):
        out[t] -= W[0, t] * p0 + W[1, t] * p1
    e0 = 0.0
    e1 = 0.0
    for t in range(T):
        e0 += W[0, t] * out[t]
        e1 += W[1, t] * out[t]
    p0 *= tau[0]
    p1 *= tau[1]
    for t in range(T):
        out[t] = dh[t] * (out[t] - W[0, t] * e0 - W[1, t] * e1 + W[0, t] * p0 + W[1, t] * p1)


@njit(cache=True)
def newton_step(U, M, s, w, N, live, X, mu, g, dX, DH, WW, TAU):
    """One Newton direction of the barrier problem at X (see the module docstring), written
    into `dX`: returns (Newton decrement², barrier value at X). `g` (n×T), `DH` (n×T), `WW`
    (n×2×T), `TAU` (n×2) are scratch.

    Job j's Hessian block (over its usable types) is diagonal plus rank 2,
    B_j = D + v₁v₁ᵀ + v₂v₂ᵀ (D = μ/X², the X ≥ 0 barrier; v₁ = √(2w/u³)·U_j, the objective's
    curvature; v₂ = (√μ/r)·1, the Σ_t X ≤ 1 barrier) = Dh⁻¹(I + q₁q₁ᵀ + q₂q₂ᵀ)Dh⁻¹ with
    Dh = D^(-1/2), q = Dh·v; `_block` writes the inner matrix's inverse in orthonormal form, so a
    solve costs O(T) and the T capacity rows' Schur complement A B⁻¹ Aᵀ O(T²) per job."""
    n, T = U.shape
    c = np.ones(T)
    for t in range(T):
        if live[t]:
            acc = N[t]
            for j in range(n):
                acc -= s[j] * X[j, t]
            c[t] = acc
    S = np.zeros((T, T))
    rhs = np.zeros(T)
    q1 = np.zeros(T)
    q2 = np.zeros(T)
    tmp = np.zeros(T)
    val = 0.0
    for t in range(T):
        if live[t]:
            val -= mu * np.log(c[t])
    smu = np.sqrt(mu)
    for j in range(n):
        u = 0.0
        r = 1.0
        for t in range(T):
            u += U[j, t] * X[j, t]
            r -= X[j, t]
        val += w[j] / u - mu * np.log(r)
        ca = np.sqrt(2.0 * w[j] / u ** 3)
        cb = smu / r
        dh = DH[j]
        for t in range(T):
            if M[j, t] > 0:
                val -= mu * np.log(X[j, t])
                g[j, t] = -w[j] / u ** 2 * U[j, t] - mu / X[j, t] + mu / r + mu * s[j] / c[t]
                dh[t] = X[j, t] / smu
            else:
                g[j, t] = 0.0
                dh[t] = 0.0
            q1[t] = dh[t] * ca * U[j, t]
            q2[t] = dh[t] * cb
        W = WW[j]
        tau = TAU[j]
        _block(q1, q2, W, tau)
        _apply_inverse(dh, W, tau, g[j], tmp)
        sj2 = s[j] * s[j]
        f0 = 1.0 - tau[0]
        f1 = 1.0 - tau[1]
        for a in range(T):
            rhs[a] -= s[j] * tmp[a]  # A y_j, y_j = −B_j⁻¹ g_j
            if dh[a] == 0.0:
                continue
            e0 = f0 * W[0, a]
            e1 = f1 * W[1, a]
            for bb in range(a + 1):  # the capacity rows' Schur complement: A B⁻¹ Aᵀ
                v = -(e0 * W[0, bb] + e1 * W[1, bb])
                if bb == a:
                    v += 1.0
                S[a, bb] += sj2 * dh[a] * dh[bb] * v
    for a in range(T):
        for bb in range(a):
            S[bb, a] = S[a, bb]
    for t in range(T):
        S[t, t] += c[t] ** 2 / mu if live[t] else 1.0
    z = np.linalg.solve(S, rhs)
    dec = 0.0
    for j in range(n):
        for t in range(T):  # dX_j = −B_j⁻¹ (g_j + s_j z)
            tmp[t] = g[j, t] + s[j] * z[t]
        _apply_inverse(DH[j], WW[j], TAU[j], tmp, q1)
        for t in range(T):
            v = -q1[t] if M[j, t] > 0 else 0.0
            dX[j, t] = v
            dec -= g[j, t] * v
    return dec, val


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


@njit(cache=True)
def _barrier_path(U, M, s, w, N, live, X, mu, m, gap, max_newton):
    """The barrier method from the strictly feasible X (updated in place) at weight μ: centring
    by damped Newton steps (the largest step keeping every slack positive, 0.99 of it, then
    backtracking on the barrier value), μ ÷ `MU_FACTOR` until the duality-gap bound m·μ is
    below `gap` × the objective. Returns the number of Newton steps."""
    n, T = U.shape
    g = np.zeros((n, T))
    dX = np.zeros((n, T))
    Xt = np.zeros((n, T))
    DH = np.zeros((n, T))
    WW = np.zeros((n, 2, T))
    TAU = np.zeros((n, 2))
    steps = 0
    done = False
    while not done:
        for _ in range(50):  # centring: Newton on the barrier problem at this μ
            dec, f_now = newton_step(U, M, s, w, N, live, X, mu, g, dX, DH, WW, TAU)
            steps += 1
            if not (np.isfinite(f_now) and np.isfinite(dec)):  # slacks at float resolution: X is final
                done = True
                break
            if dec <= 1e-14:
                break
            alpha = 1.0
            for j in range(n):
                r = 1.0
                dr = 0.0
                for t in range(T):
                    if dX[j, t] < 0:
                        alpha = min(alpha, -X[j, t] / dX[j, t] * 0.99)
                    r -= X[j, t]
                    dr -= dX[j, t]
                if dr < 0:
                    alpha = min(alpha, -r / dr * 0.99)
            for t in range(T):
                if live[t]:
                    cc = N[t]
                    dc = 0.0
                    for j in range(n):
                        cc -= s[j] * X[j, t]
                        dc -= s[j] * dX[j, t]
                    if dc < 0:
                        alpha = min(alpha, -cc / dc * 0.99)
            while alpha > 1e-12:
                for j in range(n):
                    for t in range(T):
                        Xt[j, t] = X[j, t] + alpha * dX[j, t]
                if barrier_value(U, M, s, w, N, live, Xt, mu) <= f_now - 0.25 * alpha * dec:
                    break
                alpha *= 0.5
            if alpha <= 1e-12:  # no progress at float resolution: X is final
                done = True
                break
            for j in range(n):
                for t in range(T):
                    X[j, t] += alpha * dX[j, t]
            if dec <= CENTRED or steps >= max_newton:
                break
        obj = 0.0
        for j in range(n):
            u = 0.0
            for t in range(T):
                u += U[j, t] * X[j, t]
            obj += w[j] / u
        if done or m * mu <= gap * obj or steps >= max_newton:
            break
        mu /= MU_FACTOR
    return steps


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
    X = np.ascontiguousarray(X, dtype=np.float64)
    steps = _barrier_path(U, M, s, w, N, live, X, mu, m, float(gap), int(max_newton))
    X = np.where(X >= ZERO_FRAC * X.max(axis=1, keepdims=True), X, 0.0) * M
    X_out[rows] = np.clip(X, 0.0, 1.0)
    u = (U * X_out[rows]).sum(axis=1)
    return X_out, float(np.sum(w * f0 / u)), steps
