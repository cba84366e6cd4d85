"""ONES' convergence model: epochs to reach the target as a function of the batch-size history,
and the per-epoch loss/accuracy a job's own logs show (ONES notes §2.8, §5.2, §9.1).

Why a model at all: ONES' paper makes only a qualitative claim — with the learning rate scaled
linearly with the batch ("linear scaling") and the batch grown gradually (its limit R at most
doubles per epoch, Fig. 14), a job reaches its target accuracy after the *same number of epochs*;
a sudden jump (256 → 4k, Fig. 13) spikes the loss and "will need many epochs to return" (not
quantified). So:

- `epochs_to_target(E, batches)`: `E` (the job's epochs to target at its base batch) whatever the
  history when every epoch-to-epoch growth is ≤ `max_growth` (2×); with the named option
  `jump_penalty="log2"` each larger jump costs `penalty_epochs × log2(ratio / max_growth)` extra
  epochs. The default is `"none"` (the paper's claim, and what its R policy enforces anyway).
- `total_epochs(E, patience) = E + patience − 1`: the paper stops a job after `patience` (10)
  consecutive epochs at or above the target, the first of them epoch `E`.
- `Curve`: a synthetic accuracy curve rising monotonically to exactly `target_acc` at epoch `E`
  (below it before, above it after) and a loss curve falling from `initial_loss` with the same
  time constant plus a small deterministic jitter. These are *observations* — what a job's
  training log would report at each finished epoch (ONES' predictor features L_initial, r_loss,
  accuracy) — handed to policies only up to the epochs the job has finished (`ConvergenceLog`,
  `simcore.api.JobsView.epoch_log`), never `E` itself.

The engine's work for a job is `total_epochs × epoch_size` samples (`simcore.prepare`:
CONVERGENCE mode with constant statistical efficiency, so a batch change conserves samples):
that is the "gradual growth keeps epochs" model. The jump penalty is a function of this module
only; the engine does not add work for jumps (ONES never jumps past 2×; the baselines keep their
global batch fixed by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cosim.errors import InputError
from traces.ones import epochs_to_target_of, total_epochs  # noqa: F401  one definition, with the trace

JUMP_PENALTIES = ("none", "log2")


@dataclass(frozen=True)
class ConvergenceModel:
    """Epochs to target under a batch-size history (see module doc)."""

    jump_penalty: str = "none"
    max_growth: float = 2.0  # epoch-to-epoch growth factor that still keeps the epochs (R' = 2R)
    penalty_epochs: float = 3.0  # extra epochs per doubling beyond max_growth when jump_penalty="log2"

    def __post_init__(self) -> None:
        if self.jump_penalty not in JUMP_PENALTIES:
            raise InputError.at(field="jump_penalty", expected=" | ".join(JUMP_PENALTIES), got=self.jump_penalty)
        if not self.max_growth >= 1.0:
            raise InputError.at(field="max_growth", expected="a factor >= 1", got=self.max_growth)
        if not self.penalty_epochs >= 0.0:
            raise InputError.at(field="penalty_epochs", expected="a number >= 0", got=self.penalty_epochs)

    def epochs_to_target(self, base_epochs: float, batches: Sequence[float]) -> float:
        """Epochs to reach the target when epoch k (0-based) ran at global batch `batches[k]`.

        Linear LR scaling keeps the epochs for any growth ≤ `max_growth` per epoch; shrinking
        the batch never costs epochs. With `jump_penalty="log2"`, a growth by `r > max_growth`
        adds `penalty_epochs × log2(r / max_growth)` epochs."""
        e = float(base_epochs)
        if self.jump_penalty == "none" or len(batches) < 2:
            return e
        b = np.asarray(batches, np.float64)
        r = b[1:] / b[:-1]
        jumps = r[r > self.max_growth]
        return e + float(self.penalty_epochs * np.log2(jumps / self.max_growth).sum())


def initial_loss_of(num_classes: float) -> float:
    """Cross-entropy of an untrained classifier over `num_classes` classes: ln C."""
    return math.log(max(float(num_classes), 2.0))


@dataclass(frozen=True)
class Curve:
    """Per-epoch accuracy and loss of one job (epochs 1-based; see module doc).

    accuracy(k) = a∞ − (a∞ − a₀)·exp(−k/τ), τ chosen so accuracy(E) = target exactly;
    a₀ = chance level 1/C, a∞ = target + `headroom`·(1 − target). loss(k) = L∞ + (L₀ − L∞)·exp(−k/τ)
    × (1 + jitter), L₀ = `initial_loss`, L∞ = `floor`·L₀, jitter ~ N(0, `noise`) per (job, epoch)."""

    target_acc: float
    epochs_to_target: float
    initial_loss: float
    num_classes: float = 10.0
    headroom: float = 0.3
    floor: float = 0.1
    noise: float = 0.02
    seed: int = 0

    @property
    def tau(self) -> float:
        a0 = min(1.0 / max(self.num_classes, 2.0), 0.5 * self.target_acc)
        ainf = self.target_acc + self.headroom * (1.0 - self.target_acc)
        return self.epochs_to_target / math.log((ainf - a0) / (ainf - self.target_acc))

    def accuracy(self, k: np.ndarray) -> np.ndarray:
        a0 = min(1.0 / max(self.num_classes, 2.0), 0.5 * self.target_acc)
        ainf = self.target_acc + self.headroom * (1.0 - self.target_acc)
        k = np.asarray(k, np.float64)
        acc = ainf - (ainf - a0) * np.exp(-k / self.tau)
        return np.where(np.isclose(k, self.epochs_to_target), self.target_acc, acc)  # exact at E

    def loss(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, np.float64)
        linf = self.floor * self.initial_loss
        base = linf + (self.initial_loss - linf) * np.exp(-k / self.tau)
        rng = np.random.default_rng([self.seed & 0xFFFFFFFF, 7])
        jit = rng.normal(0.0, self.noise, int(k.max()) + 1 if k.size else 1)
        return base * (1.0 + jit[k.astype(np.int64)])


@dataclass(frozen=True)
class EpochLog:
    """What a job's training log shows after its finished epochs (observations, not oracle)."""

    initial_loss: float
    loss: np.ndarray  # float64[n], after epochs 1..n
    accuracy: np.ndarray  # float64[n], validation accuracy after epochs 1..n


def num_classes_of(task: Any, epoch_size: np.ndarray, n: int) -> np.ndarray:
    """Classes per job from the ONES task (Table 2): ImageNet subsets have 1000 images per class
    (10k ↔ 10 classes), CIFAR-10 has 10, the GLUE tasks (cola, mrpc, sst2) 2; NaN otherwise."""
    out = np.full(n, np.nan)
    if task is None:
        return out
    for j, t in enumerate(np.asarray(task, object)):
        t = str(t).lower()
        if t == "imagenet" and np.isfinite(epoch_size[j]):
            out[j] = max(2.0, math.ceil(epoch_size[j] / 1000.0))
        elif t.startswith("cifar"):
            out[j] = 10.0
        elif t in ("cola", "mrpc", "sst2", "glue"):
            out[j] = 2.0
    return out


class ConvergenceLog:
    """The engine's source of `JobsView.epoch_log`: each ONES-style job's curve (jobs with a
    `target_acc` and known epochs), evaluated only at the epochs it has finished."""

    def __init__(self, num_epochs: np.ndarray, attrs: dict[str, Any], job_ids: np.ndarray) -> None:
        n = int(np.asarray(num_epochs).shape[0])
        get = lambda c: np.asarray(attrs[c], np.float64) if c in attrs else np.full(n, np.nan)
        self._target, self._patience = get("target_acc"), get("patience")
        self._classes = num_classes_of(attrs.get("task"), get("epoch_size"), n)
        self._epochs = np.asarray(num_epochs, np.float64)
        self._ids = job_ids
        self._curves: dict[int, Curve | None] = {}

    def curve(self, j: int) -> Curve | None:
        if j not in self._curves:
            t, e = self._target[j], self._epochs[j]
            c = None
            if np.isfinite(t) and 0 < t < 1 and np.isfinite(e) and e >= 1:
                cls = self._classes[j] if np.isfinite(self._classes[j]) else 10.0
                seed = int.from_bytes(str(self._ids[j]).encode()[-8:].rjust(8, b"\0"), "little")
                c = Curve(float(t), epochs_to_target_of(e, self._patience[j]), initial_loss_of(cls), cls, seed=seed)
            self._curves[j] = c
        return self._curves[j]

    def log(self, j: int, epochs_done: int) -> EpochLog | None:
        c = self.curve(j)
        if c is None:
            return None
        k = np.arange(1, max(int(epochs_done), 0) + 1, dtype=np.float64)
        return EpochLog(c.initial_loss, c.loss(k), c.accuracy(k))
