"""ONES' progress predictor (SC'21 Eq. 6): training progress ρ ∈ (0, 1) of a job as a Beta variable.

    ρ ~ Be(α, β),  α = max(Y_processed / ‖D‖, 1),  β = max(f(x), 1)

α is the epochs processed; β — roughly the epochs still to go — is regressed on the features
x = [log ‖D‖, L_initial, Y_processed/‖D‖, r_loss = 1 − loss/L_initial, accuracy] (footnote 1).
f is linear (the paper's "A x + b") or the artifact's MLP 5→64→tanh→1→ReLU, +1 (notes §2.4);
both are fitted by minimising the Beta negative log-likelihood of observed (x, ρ) pairs from
completed jobs' logs (ρ = samples processed / the job's total samples), with Adam. numpy only:
the gradients are written out (d NLL/dβ = ψ(β) − ψ(α+β) − log(1−ρ)).

Why the Beta: "flexible shapes between 0 and 1", unimodal for α, β > 1, and its mean α/(α+β) is
the processed fraction when β is the epochs left — so remaining work Y = Y_processed (1/ρ − 1)
(Eq. 7) has the right scale. ONES samples ρ once per generation (Alg. 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NUM_FEATURES = 5


def features(epoch_size: float, initial_loss: float, samples: float, loss: float, acc: float) -> np.ndarray:
    """The predictor's feature vector of one observation (see module doc)."""
    d = max(float(epoch_size), 1.0)
    l0 = float(initial_loss) if initial_loss and np.isfinite(initial_loss) and initial_loss > 0 else 1.0
    return np.array([math.log(d), l0, samples / d, 1.0 - float(loss) / l0, float(acc)], np.float64)


def beta_nll(alpha: np.ndarray, beta: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """−log Beta(ρ; α, β), elementwise."""
    from scipy.special import betaln  # on use: scipy.special costs ≈ 0.12 s of every command's start-up

    return -((alpha - 1.0) * np.log(rho) + (beta - 1.0) * np.log1p(-rho) - betaln(alpha, beta))


@dataclass
class FitOptions:
    kind: str = "linear"  # linear | mlp
    hidden: int = 64
    lr: float = 1e-2
    weight_decay: float = 1e-4
    epochs: int = 60
    batch: int = 8
    max_points: int = 2000
    seed: int = 0


class BetaPredictor:
    """β(x) = max(f(x), 1) with f linear or an MLP; fitted by Beta NLL (see module doc)."""

    def __init__(self, opts: FitOptions | None = None, prior_beta: float = 5.0) -> None:
        self.opts = opts or FitOptions()
        self.prior_beta = float(prior_beta)
        self.rng = np.random.default_rng(self.opts.seed)
        self.fitted = False
        self.mu = np.zeros(NUM_FEATURES)
        self.sd = np.ones(NUM_FEATURES)
        self.params: list[np.ndarray] = []

    # ---- model ----------------------------------------------------------------------
    def _init(self) -> None:
        k, h = NUM_FEATURES, self.opts.hidden
        if self.opts.kind == "linear":
            self.params = [np.zeros(k), np.array([self.prior_beta])]
        else:
            r = self.rng
            self.params = [r.normal(0, 1 / math.sqrt(k), (k, h)), np.zeros(h), r.normal(0, 1 / math.sqrt(h), h),
                           np.array([self.prior_beta])]

    def _forward(self, z: np.ndarray) -> tuple[np.ndarray, tuple]:
        if self.opts.kind == "linear":
            w, b = self.params
            return z @ w + b[0], ()
        w1, b1, w2, b2 = self.params
        hid = np.tanh(z @ w1 + b1)
        return hid @ w2 + b2[0], (hid,)

    def _grads(self, z: np.ndarray, g_out: np.ndarray, cache: tuple) -> list[np.ndarray]:
        if self.opts.kind == "linear":
            return [z.T @ g_out, np.array([g_out.sum()])]
        (hid,) = cache
        w2 = self.params[2]
        g_hid = np.outer(g_out, w2) * (1.0 - hid ** 2)
        return [z.T @ g_hid, g_hid.sum(0), hid.T @ g_out, np.array([g_out.sum()])]

    @staticmethod
    def alpha_of(x: np.ndarray) -> np.ndarray:
        return np.maximum(np.atleast_2d(x)[:, 2], 1.0)

    def beta_of(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        if not self.fitted:
            return np.full(x.shape[0], max(self.prior_beta, 1.0))
        f, _ = self._forward((x - self.mu) / self.sd)
        return np.maximum(f, 1.0)

    def sample(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One ρ draw per row of x, clipped into (1e-6, 1 − 1e-6)."""
        return np.clip(rng.beta(self.alpha_of(x), self.beta_of(x)), 1e-6, 1 - 1e-6)

    def mean(self, x: np.ndarray) -> np.ndarray:
        a, b = self.alpha_of(x), self.beta_of(x)
        return a / (a + b)

    # ---- fitting ----------------------------------------------------------------------
    def fit(self, x: np.ndarray, rho: np.ndarray, warm: bool = False) -> float:
        """Minimise the mean Beta NLL of (x, ρ) with Adam; returns the final mean NLL.

        At most `max_points` points, sampled uniformly without replacement. `warm`: start from
        the current weights (else re-initialised, as the artifact does before every fit)."""
        x = np.atleast_2d(np.asarray(x, np.float64))
        rho = np.clip(np.asarray(rho, np.float64), 1e-4, 1 - 1e-4)
        if x.shape[0] == 0:
            return math.nan
        if x.shape[0] > self.opts.max_points:
            keep = self.rng.choice(x.shape[0], self.opts.max_points, replace=False)
            x, rho = x[keep], rho[keep]
        if not (warm and self.fitted):
            self.mu, self.sd = x.mean(0), x.std(0)
            self.sd[self.sd < 1e-9] = 1.0
            self._init()
        z = (x - self.mu) / self.sd
        alpha = self.alpha_of(x)
        m = [np.zeros_like(p) for p in self.params]
        v = [np.zeros_like(p) for p in self.params]
        o, t = self.opts, 0
        n = z.shape[0]
        bs = n if o.kind == "linear" else max(1, o.batch)  # linear: full batch (tiny model)
        steps = o.epochs * max(1, (n + bs - 1) // bs)
        if o.kind == "linear":
            steps = max(steps, 400)
        from scipy.special import digamma  # on use (see beta_nll)

        order = self.rng.permutation(n)
        pos = 0
        for _ in range(steps):
            if pos + bs > n:
                order, pos = self.rng.permutation(n), 0
            idx = order[pos:pos + bs]
            pos += bs
            f, cache = self._forward(z[idx])
            beta = np.maximum(f, 1.0)
            a = alpha[idx]
            g_beta = digamma(beta) - digamma(a + beta) - np.log1p(-rho[idx])
            g_out = np.where(f > 1.0, g_beta, np.minimum(g_beta, 0.0)) / idx.size  # through max(·, 1)
            grads = self._grads(z[idx], g_out, cache)
            t += 1
            for i, (p, g) in enumerate(zip(self.params, grads)):
                g = g + o.weight_decay * p
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                p -= o.lr * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
        self.fitted = True
        return float(beta_nll(alpha, self.beta_of(x), rho).mean())
