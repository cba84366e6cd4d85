"""numba kernels of Pollux's agent: the throughput fit's loss and its BFGS search (the GA's are in
`policies.pollux._ga_kernels`).

The fit (`fit_z`) minimises the loss of `policies.pollux.agent._objective` — the same formula,
written once more here as loops because it runs thousands of times per simulation (a test
checks both agree) — over z (p = lo + e^z for α, β; γ = 1 + 9·sigmoid(z)) by BFGS with a
backtracking (Armijo) line search, 50 iterations at most.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_EPS = 1e-8


@njit(cache=True)
def _loss(z, x0, lo, free, nodes, reps, micro, gobs, iobs, grad_out):
    p = x0.copy()
    dp = np.zeros(7)
    k = 0
    for i in range(7):
        if free[i]:
            if i == 6:
                s = 1.0 / (1.0 + math.exp(-z[k]))
                p[i] = 1.0 + 9.0 * s
                dp[i] = 9.0 * s * (1.0 - s)
            else:
                e = math.exp(min(max(z[k], -60.0), 30.0))
                p[i] = lo[i] + e
                dp[i] = e
            k += 1
    m = nodes.shape[0]
    g = p[6]
    s1 = 0.0
    s2 = 0.0
    e1 = np.empty(m)
    e2 = np.empty(m)
    for i in range(m):
        gr = p[0] + p[1] * micro[i]
        r2 = max(reps[i] - 2.0, _EPS)
        if nodes[i] > 1:
            sy = p[2] + p[3] * r2
        elif reps[i] > 1:
            sy = p[4] + p[5] * r2
        else:
            sy = _EPS + _EPS * r2
        u = gr ** g + sy ** g
        e1[i] = math.log(gr) - math.log(gobs[i])
        e2[i] = math.log(u) / g - math.log(iobs[i])
        s1 += e1[i] * e1[i]
        s2 += e2[i] * e2[i]
    err1 = math.sqrt(s1 / m)
    err2 = math.sqrt(s2 / m)
    an, bn, ar, br = p[2], p[3], p[4], p[5]
    f = err1 + err2 + 1e-3 * (g - 1.0) ** 2 + 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
    d = np.zeros(7)
    for i in range(m):
        gr = p[0] + p[1] * micro[i]
        r2 = max(reps[i] - 2.0, _EPS)
        inter = nodes[i] > 1
        intra = (not inter) and reps[i] > 1
        if inter:
            sy = p[2] + p[3] * r2
        elif intra:
            sy = p[4] + p[5] * r2
        else:
            sy = _EPS + _EPS * r2
        gg = gr ** g
        sg = sy ** g
        u = gg + sg
        w1 = e1[i] / (m * max(err1, 1e-12))
        w2 = e2[i] / (m * max(err2, 1e-12))
        dlg = w1 / gr + w2 * gg / (gr * u)
        ds = w2 * sg / (sy * u)
        d[0] += dlg
        d[1] += dlg * micro[i]
        if inter:
            d[2] += ds
            d[3] += ds * r2
        elif intra:
            d[4] += ds
            d[5] += ds * r2
        d[6] += w2 * ((gg * math.log(gr) + sg * math.log(sy)) / u / g - math.log(u) / (g * g))
    d[6] += 2e-3 * (g - 1.0)
    d[2] -= 2e-2 * bn * bn / an ** 3
    d[3] += 2e-2 * bn / an ** 2
    d[4] -= 2e-2 * br * br / ar ** 3
    d[5] += 2e-2 * br / ar ** 2
    k = 0
    for i in range(7):
        if free[i]:
            grad_out[k] = d[i] * dp[i]
            k += 1
    return f


@njit(cache=True)
def fit_z(z0, x0, lo, free, nodes, reps, micro, gobs, iobs, max_iter):
    """BFGS from z0; returns the best z found."""
    n = z0.shape[0]
    z = z0.copy()
    g = np.empty(n)
    f = _loss(z, x0, lo, free, nodes, reps, micro, gobs, iobs, g)
    H = np.eye(n)
    g_new = np.empty(n)
    for _ in range(max_iter):
        d = -H @ g
        slope = 0.0
        for i in range(n):
            slope += d[i] * g[i]
        if slope >= 0:  # not a descent direction: restart from the gradient
            H = np.eye(n)
            d = -g.copy()
            slope = 0.0
            for i in range(n):
                slope -= g[i] * g[i]
        if slope > -1e-14:
            break
        t = 1.0
        ok = False
        for _ls in range(40):
            z_new = z + t * d
            f_new = _loss(z_new, x0, lo, free, nodes, reps, micro, gobs, iobs, g_new)
            if math.isfinite(f_new) and f_new <= f + 1e-4 * t * slope:
                ok = True
                break
            t *= 0.5
        if not ok:
            break
        s = z_new - z
        y = g_new - g
        sy = 0.0
        for i in range(n):
            sy += s[i] * y[i]
        z = z_new
        f_old = f
        f = f_new
        g[:] = g_new
        if sy > 1e-12:
            rho = 1.0 / sy
            Hy = H @ y
            yHy = 0.0
            for i in range(n):
                yHy += y[i] * Hy[i]
            for i in range(n):
                for j in range(n):
                    H[i, j] += (rho * rho * yHy + rho) * s[i] * s[j] - rho * (Hy[i] * s[j] + s[i] * Hy[j])
        if f_old - f < 1e-12 * max(1.0, abs(f)):
            break
    return z
