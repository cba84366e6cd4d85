"""The DRL scheduler's policy network: a one-hidden-layer MLP with a masked softmax, numpy only.

Input: `slots` job slots of `FEATURES` features each plus `GLOBAL` cluster features (flat, as DL2
lays its state out); output: one logit per slot ("add one GPU to this job") and one for "stop".
Gradients are written out by hand (cross-entropy, REINFORCE and PPO's clipped surrogate all need
d log π(a|s) / d logits = onehot(a) − π), with Adam as the optimiser. `Critic` is the state-value
network V(s) of DL2's actor-critic variant (same state, one tanh hidden layer, one output), fitted
by least squares with its own Adam.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cosim.errors import InputError

#: per-job features (policies.drl.policy.features): GPUs held (tentative), GPUs requested, epochs done,
#: queueing s, executed s, epoch rate, speed-up of one more GPU, running flag
FEATURES = 8
#: cluster features: free GPUs / GPUs, jobs beyond the slots / slots
GLOBAL = 2


class Adam:
    """Adam over the parameter dict `self.p` (set by the subclass before `reset_optimiser`)."""

    p: dict[str, np.ndarray]

    def reset_optimiser(self) -> None:
        """Forget Adam's moment estimates (a new training stage starts its own)."""
        self._m = {k: np.zeros_like(v) for k, v in self.p.items()}
        self._v = {k: np.zeros_like(v) for k, v in self.p.items()}
        self._t = 0

    def adam(self, g: dict, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> None:
        self._t += 1
        for k, gk in g.items():
            self._m[k] = b1 * self._m[k] + (1 - b1) * gk
            self._v[k] = b2 * self._v[k] + (1 - b2) * gk * gk
            mh = self._m[k] / (1 - b1 ** self._t)
            vh = self._v[k] / (1 - b2 ** self._t)
            self.p[k] = self.p[k] - lr * mh / (np.sqrt(vh) + eps)


class Net(Adam):
    """π(a | s) = softmax over the valid actions of `W2 · tanh(W1 · s + b1) + b2`."""

    def __init__(self, slots: int, hidden: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        d = slots * FEATURES + GLOBAL
        self.slots, self.hidden = slots, hidden
        self.p = {"W1": rng.normal(0, 1 / np.sqrt(d), (d, hidden)), "b1": np.zeros(hidden),
                  "W2": rng.normal(0, 1 / np.sqrt(hidden), (hidden, slots + 1)), "b2": np.zeros(slots + 1)}
        self.reset_optimiser()

    @property
    def input_dim(self) -> int:
        return self.slots * FEATURES + GLOBAL

    def probs(self, x: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(π over actions, hidden activations) for states `x` [B, d] and valid-action `mask` [B, A]."""
        h = np.tanh(x @ self.p["W1"] + self.p["b1"])
        z = h @ self.p["W2"] + self.p["b2"]
        z = np.where(mask, z, -np.inf)
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True), h

    def grads(self, x: np.ndarray, mask: np.ndarray, a: np.ndarray, w: np.ndarray,
              entropy: float = 0.0) -> tuple[dict, float]:
        """Gradients of the mean over samples of `−w_i log π(a_i | x_i) − entropy · H(π(· | x_i))`
        and that loss: weighted cross-entropy (w = 1: the supervised fit; w = advantages: the
        REINFORCE estimator) with an optional entropy bonus (H over the valid actions), which keeps
        the sampled policy exploring."""
        pr, h = self.probs(x, mask)
        loss = float(-(w * np.log(np.maximum(pr[np.arange(a.size), a], 1e-300))).sum() / max(a.size, 1))
        return self._backward(x, h, pr, a, w, entropy, loss)

    def ppo_grads(self, x: np.ndarray, mask: np.ndarray, a: np.ndarray, adv: np.ndarray, logp_old: np.ndarray,
                  clip: float, entropy: float = 0.0) -> tuple[dict, float]:
        """Gradients of PPO's clipped surrogate (Schulman et al. 2017, eq. 7) as a loss to minimise,
        `−mean_i min(r_i A_i, clip(r_i, 1 − clip, 1 + clip) A_i) − entropy · mean_i H(π(· | x_i))`
        with r_i = π(a_i | x_i) / π_old(a_i | x_i) = exp(log π − `logp_old`), and that loss. A sample
        whose clipped term is the smaller one contributes no gradient; at r = 1 the gradient is the
        REINFORCE estimator's (`grads` with w = A)."""
        pr, h = self.probs(x, mask)
        r = np.exp(np.log(np.maximum(pr[np.arange(a.size), a], 1e-300)) - logp_old)
        rc = np.clip(r, 1.0 - clip, 1.0 + clip)
        surr = np.minimum(r * adv, rc * adv)
        loss = float(-surr.sum() / max(a.size, 1))
        return self._backward(x, h, pr, a, adv * r * (r * adv <= rc * adv), entropy, loss)

    def log_prob(self, x: np.ndarray, mask: np.ndarray, a: np.ndarray) -> np.ndarray:
        """log π(a_i | x_i) per sample."""
        return np.log(np.maximum(self.probs(x, mask)[0][np.arange(a.size), a], 1e-300))

    def _backward(self, x: np.ndarray, h: np.ndarray, pr: np.ndarray, a: np.ndarray, coef: np.ndarray,
                  entropy: float, loss: float) -> tuple[dict, float]:
        """Backpropagation of a loss whose derivative in the logits is coef_i · (π − onehot(a_i)) / n
        per sample, plus the entropy bonus (its term added to `loss`)."""
        n = max(a.size, 1)
        dz = pr.copy()
        dz[np.arange(a.size), a] -= 1.0
        dz *= (coef / n)[:, None]
        if entropy:
            logp = np.log(np.where(pr > 0, pr, 1.0))  # invalid actions (π = 0) add nothing
            ent = -(pr * logp).sum(1)
            dz += (entropy / n) * pr * (logp + ent[:, None])  # d(−H)/dz_k = π_k (log π_k + H)
            loss -= entropy * float(ent.mean())
        g = {"W2": h.T @ dz, "b2": dz.sum(0)}
        dh = (dz @ self.p["W2"].T) * (1 - h * h)
        g["W1"], g["b1"] = x.T @ dh, dh.sum(0)
        return g, loss

    def entropy(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """H(π(· | x_i)) over the valid actions, per state (nats)."""
        pr, _ = self.probs(x, mask)
        return -(pr * np.log(np.where(pr > 0, pr, 1.0))).sum(1)

    def save(self, path: Path, **meta: object) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **{k: v.astype(np.float32) for k, v in self.p.items()},
                            slots=np.int64(self.slots), hidden=np.int64(self.hidden),
                            features=np.int64(FEATURES), meta=np.array(repr(meta)))

    @classmethod
    def load(cls, path: Path) -> Net:
        p = Path(path)
        try:
            z = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError.at(p, expected="a DRL weights .npz written by `python -m cli.drl_train`",
                                detail=str(exc)[:200]) from None
        if int(z["features"]) != FEATURES:
            raise InputError.at(p, field="features", expected=FEATURES, got=int(z["features"]))
        net = cls(int(z["slots"]), int(z["hidden"]))
        net.p = {k: z[k].astype(np.float64) for k in ("W1", "b1", "W2", "b2")}
        if net.p["W1"].shape != (net.input_dim, net.hidden):
            raise InputError.at(p, field="W1", expected=(net.input_dim, net.hidden), got=net.p["W1"].shape)
        return net


class Critic(Adam):
    """V(s) = w2 · tanh(W1 · s + b1) + b2: the expected reward-to-go from state `s` (DL2's critic),
    fitted by regression on observed reward-to-go; REINFORCE's advantage is then return − V(s)."""

    def __init__(self, input_dim: int, hidden: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.p = {"W1": rng.normal(0, 1 / np.sqrt(input_dim), (input_dim, hidden)), "b1": np.zeros(hidden),
                  "w2": rng.normal(0, 1 / np.sqrt(hidden), hidden), "b2": np.zeros(())}
        self.reset_optimiser()

    def value(self, x: np.ndarray) -> np.ndarray:
        """V(x_i) for states `x` [B, d]."""
        return np.tanh(x @ self.p["W1"] + self.p["b1"]) @ self.p["w2"] + self.p["b2"]

    def grads(self, x: np.ndarray, y: np.ndarray) -> tuple[dict, float]:
        """Gradients of the mean squared error ½ · mean (V(x_i) − y_i)² and that loss."""
        h = np.tanh(x @ self.p["W1"] + self.p["b1"])
        r = h @ self.p["w2"] + self.p["b2"] - y
        n = max(y.size, 1)
        dv = r / n
        dh = np.outer(dv, self.p["w2"]) * (1 - h * h)
        g = {"W1": x.T @ dh, "b1": dh.sum(0), "w2": h.T @ dv, "b2": np.asarray(dv.sum())}
        return g, float(0.5 * (r * r).sum() / n)

    def fit(self, x: np.ndarray, y: np.ndarray, steps: int, lr: float) -> list[float]:
        """`steps` full-batch Adam steps on the squared error to the targets `y`; the loss before each."""
        losses = []
        for _ in range(steps):
            g, loss = self.grads(x, y)
            losses.append(loss)
            self.adam(g, lr)
        return losses
