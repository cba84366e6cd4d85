"""ONES' convergence model: epochs to reach the target as a function of the batch-size history,
and the per-epoch loss/accuracy a job's own logs show (ONES notes §2.8, §5.2, §9.1).

ONES' premise (paper §3.3.2, Figs. 3, 13, 14): with the learning rate scaled linearly with the
batch, a job whose batch grows gradually (its limit R at most doubles per epoch, starting on one
GPU) reaches its target accuracy in the same epochs as at its base batch, while a sudden jump
(256 → 4k at once, Fig. 13) "will need many epochs to return". The paper gives no numbers, so the
model's one parameter is fitted to the ONES artifact's run history (`simcore.convergence_fit`):

- a job's base batch b₀ is its per-GPU base batch on one GPU at the user's learning rate (ONES'
  start); every placement at global batch B after one at B' (b₀ before the first) is a growth
  r = B / B'; growth beyond `max_growth` (2×, R' = 2R) counts log2(r / 2) *excess doublings*, J in
  all (shrinking and growth ≤ 2× count nothing);
- epochs to target E_T = E_int × (1 + φ·J), E_int the job's epochs at gradual growth; the
  `patience − 1` epochs after the target are not affected: total = E_T + patience − 1;
- a trace's epochs are those its job took at its reference history: started directly at its
  global batch (b₀ × requested GPUs, the configuration of the artifact's runs and of the
  baselines), J_ref = max(0, log2(B_ref / b₀ / 2)); so E_int = E_T,ref / (1 + φ·J_ref), and a job
  that keeps its reference batch trains exactly the trace's epochs.
- φ = `PHI` = 0.164 extra epochs-to-target per excess doubling, per epoch to target (fit and
  error: `simcore.convergence_fit`, docs/reproductions/ones/). Outside the fitted range: batches
  above B_max (the learning rate no longer scales) are not modelled (no data: ONES caps its batch
  at B_max and the baselines keep theirs).

`BatchHistory` applies the model in the engine (`--progress batch-history`, work mode
`EPOCHS_TO_TARGET`, `simcore.work`): at each placement it adds the placement's excess doublings
and sets the job's efficiency so that it finishes exactly when its trained epochs reach the
total the model gives for its history so far.

- `total_epochs(E, patience) = E + patience − 1`: the paper stops a job after `patience` (10)
  consecutive epochs at or above the target, the first of them epoch `E`.
- `Curve`: a synthetic accuracy curve rising monotonically to exactly `target_acc` at epoch `E`
  (below it before, above it after) and a loss curve falling from `initial_loss` with the same
  time constant plus a small deterministic jitter. These are *observations* — what a job's
  training log would report at each finished epoch (ONES' predictor features L_initial, r_loss,
  accuracy) — handed to policies only up to the epochs the job has finished (`ConvergenceLog`,
  `simcore.api.JobsView.epoch_log`), never `E` itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cosim.errors import InputError
from traces.ones import epochs_to_target_of, total_epochs  # noqa: F401  one definition, with the trace

#: extra epochs to target per excess doubling, relative to the epochs at gradual growth (the fit of
#: the ONES artifact's run history, `simcore.convergence_fit.fit_history`; tested against it)
PHI = 0.164


@dataclass(frozen=True)
class ConvergenceModel:
    """Epochs to target under a batch-size history (see module doc)."""

    phi: float = PHI
    max_growth: float = 2.0  # growth factor per placement that keeps the epochs (R' = 2R)

    def __post_init__(self) -> None:
        if not self.phi >= 0.0:
            raise InputError.at(field="phi", expected="a number >= 0", got=self.phi)
        if not self.max_growth >= 1.0:
            raise InputError.at(field="max_growth", expected="a factor >= 1", got=self.max_growth)

    def excess(self, ratio: float) -> float:
        """Excess doublings of one growth by `ratio` (0 up to `max_growth`)."""
        return math.log2(ratio / self.max_growth) if ratio > self.max_growth else 0.0

    def doublings(self, base: float, batches: Sequence[float]) -> float:
        """J of a history: the batches of successive placements, the first grown from `base`."""
        b = np.concatenate([[float(base)], np.asarray(batches, np.float64)])
        return float(sum(self.excess(r) for r in (b[1:] / b[:-1]).tolist()))

    def factor(self, doublings: float) -> float:
        """E_T / E_int after `doublings` excess doublings."""
        return 1.0 + self.phi * float(doublings)

    def epochs_to_target(self, intrinsic: float, base: float, batches: Sequence[float]) -> float:
        """E_T of a job with epochs `intrinsic` at gradual growth and this history."""
        return float(intrinsic) * self.factor(self.doublings(base, batches))

    def intrinsic(self, epochs_to_target: float, base: float, ref_batch: float) -> float:
        """E_int of a job that took `epochs_to_target` started directly at `ref_batch`."""
        return float(epochs_to_target) / self.factor(self.doublings(base, [ref_batch]))


class BatchHistory:
    """The engine's efficiency of `EPOCHS_TO_TARGET` jobs (`simcore.work.StatEfficiency`): one per
    run of one policy, as it keeps each job's history (module doc).

    Per job: the reference total epochs E_ref (the trace's) and epochs to target E_T,ref, J_ref,
    b₀, the batch of its last placement, its excess doublings J, the epochs it has trained (D)
    and the efficiency e set at its last placement. Progress is a fraction of E_ref epochs, so at
    efficiency e one trained epoch is e/E_ref of progress. `efficiency` (called by the engine
    once per placement, `simcore.work.work_gain`) adds the placement's excess doublings and
    returns e = (1 − p)·E_ref / (E_need − D), so the job completes when D reaches
    E_need = E_ref + E_T,ref·((1 + φJ)/(1 + φJ_ref) − 1). While J = J_ref (a job at its reference
    batch throughout) e is exactly 1."""

    def __init__(self, jobs: Any, model: ConvergenceModel | None = None) -> None:
        from simcore.work import WorkMode

        self.model = m = model or ConvergenceModel()
        n = jobs.num_jobs
        attrs = jobs.attrs
        pat = np.asarray(attrs["patience"], np.float64) if "patience" in attrs else np.full(n, np.nan)
        self.track = np.asarray(jobs.work_mode) == WorkMode.EPOCHS_TO_TARGET
        self.e_ref = np.asarray(jobs.num_epochs, np.float64).copy()
        gb = np.asarray(jobs.global_batch, np.float64)
        self.base = np.maximum(np.floor(gb / np.maximum(np.asarray(jobs.num_gpus, np.float64), 1.0)), 1.0)
        self.to_target = np.array([epochs_to_target_of(e, p) if t else 0.0
                                   for t, e, p in zip(self.track.tolist(), self.e_ref.tolist(), pat.tolist())])
        self.ref_doublings = np.array([m.doublings(b, [r]) for b, r in zip(self.base.tolist(), gb.tolist())])
        self.doublings = np.zeros(n)
        self.last_batch = self.base.copy()
        self.trained = np.zeros(n)  # D: epochs trained up to the last placement
        self.p_last = np.zeros(n)
        self.e_last = np.ones(n)

    def epochs_needed(self, j: int) -> float:
        """E_need of job j's history so far (total epochs incl. patience)."""
        m = self.model
        if self.doublings[j] == self.ref_doublings[j]:
            return float(self.e_ref[j])
        return float(self.e_ref[j] + self.to_target[j] * (m.factor(self.doublings[j]) /
                                                           m.factor(self.ref_doublings[j]) - 1.0))

    def efficiency(self, job: int, batch: int, progress: float) -> float:
        j = int(job)
        if not self.track[j]:
            return 1.0
        e_ref = self.e_ref[j]
        self.trained[j] += (progress - self.p_last[j]) * e_ref / self.e_last[j]
        self.doublings[j] += self.model.excess(float(batch) / self.last_batch[j])
        self.last_batch[j] = float(batch)
        if self.doublings[j] == self.ref_doublings[j] and self.e_last[j] == 1.0:
            e = 1.0  # the reference history so far: exactly the trace's epochs
        else:
            left = max(self.epochs_needed(j) - self.trained[j], 1e-9 * e_ref)
            e = max(1.0 - progress, 0.0) * e_ref / left
            e = e if e > 0 else 1.0
        self.p_last[j], self.e_last[j] = progress, e
        return e


def assign_batch_history(jobs: Any) -> int:
    """Switch the jobs with a target accuracy and known epochs (CONVERGENCE work) to
    `EPOCHS_TO_TARGET` (`--progress batch-history`); their work (the reference epochs) is kept.
    Returns how many jobs were switched."""
    from simcore.work import WorkMode

    sel = (np.asarray(jobs.work_mode) == WorkMode.CONVERGENCE) & np.isfinite(np.asarray(jobs.num_epochs, np.float64))
    jobs.work_mode[sel] = WorkMode.EPOCHS_TO_TARGET
    return int(sel.sum())


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

    def log(self, j: int, epochs_done: int, scale: float = 1.0) -> EpochLog | None:
        """Job j's log after `epochs_done` epochs; `scale`: reference epochs per trained epoch
        (a job whose history changed its epochs to target, `BatchHistory`, follows its curve
        that much faster or slower: the curve is the reference run's)."""
        c = self.curve(j)
        if c is None:
            return None
        k = np.arange(1, max(int(epochs_done), 0) + 1, dtype=np.float64) * scale
        return EpochLog(c.initial_loss, c.loss(k), c.accuracy(k))
