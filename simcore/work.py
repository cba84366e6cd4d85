"""How much work a job has and how fast an allocation gets through it.

Every job's progress is a fraction in [0, 1] of its total work `W_j`, counted in
*reference iterations*: iterations at the job's reference global batch `b_ref` (the trace's
batch). A running job at global batch `b` with iteration time `t_iter` advances at

    rate_j = gain_j(b) / (W_j * t_iter)          (fraction of the job per second)

where the per-mode gain is

- `REPLAY` (a): `gain = b / b_ref` — replay defines `W_j` from the trace duration at the
  requested GPU count on a consolidated placement, alone on the network, so worse placements or
  a contended network take longer than the trace did; those are iterations at the trace's batch,
  so, as in (b), a policy that changes the batch (Pollux under `--perf linear` on the Aryl
  stand-in shrank it 13x and finished 6x sooner while iterations stayed unit work) processes the
  same samples. At the trace's batch `gain` is exactly 1 (every fixed-batch run is unchanged);
- `ITERATIONS` (b): `gain = b / b_ref` — the trace gives `W_j` iterations *at its batch*
  `b_ref` (the Ares/Pollux/Sia workloads' fixed-epoch runs, synthetic traces), so the work is
  the samples of those iterations, `W_j × b_ref`: a policy that raises the batch (Pollux, ONES,
  Aryl's tuning) finishes the same samples in fewer, slower iterations instead of running
  `W_j` iterations of the larger batch (several times the samples: 2,366 vs 611-683
  GPU-h for Pollux against the other policies on Ares Philly 1-2). At the trace's batch `gain` is exactly 1, so a fixed-batch policy
  runs exactly `W_j` iterations; the mode keeps its name so outputs say where `W_j` came from;
- `SAMPLES` (c): `gain = b / b_ref` — fixed samples; a policy may change the GPU count at a
  fixed global batch (local batch = b / GPUs, with gradient accumulation past the memory
  limit) or change the batch itself;
- `CONVERGENCE` (d): `gain = (b / b_ref) * E(b) / E(b_ref)` — progress in samples weighted by
  the statistical efficiency `E` of the batch size (`StatEfficiency`), relative to the
  trace's batch: the job converges after the work it would need at `b_ref`.
  `ConstantEfficiency` (E ≡ 1) makes (d) behave like (c); `simcore.goodput` supplies
  Pollux's gradient-noise-scale efficiency.
- `EPOCHS` (e): `gain = (b / b_ref) * E(b)` with `E` relative to the application's *initial*
  batch (E(b_0) = 1) — the Pollux simulator's progress: a step at batch `b` gains
  `(b / b_0) * E(b)` initial-batch steps, and the job is done after the epochs of its
  dataset measured in those units (`simcore.goodput.AppStats.target`), so `W_j` is that
  target × `b_0 / b_ref`. A fixed large batch therefore needs more samples than the dataset.
- `EPOCHS_TO_TARGET` (f): `gain = (b / b_ref) * e_j` — ONES' convergence model
  (`simcore.convergence.BatchHistory`, `--progress batch-history`): `W_j` is the job's reference
  epochs (the trace's, trained at `b_ref` from the start) and its epochs to target depend on its
  batch history; `e_j` is set at each placement so that the job finishes when its trained epochs
  reach what the model gives for its history. A job that keeps `b_ref` has `e_j` = 1 exactly.

Batch changes in every mode conserve samples: progress gained per iteration is `b / b_ref`
(times an efficiency in (d), (e)) reference iterations, so the samples still to process scale
with the new batch (tests/simcore/test_goodput.py, property). A job without a known batch
(`b_ref` ≤ 0) gains 1 per iteration.

Gains are kept per job in an array refreshed when the batch changes, so the hot loop never
calls Python.
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable


class WorkMode(enum.IntEnum):
    REPLAY = 0
    ITERATIONS = 1
    SAMPLES = 2
    CONVERGENCE = 3
    EPOCHS = 4
    EPOCHS_TO_TARGET = 5


#: `jobs.parquet`'s `work_mode` strings, by `WorkMode` value
WORK_MODE_NAMES = {WorkMode.REPLAY: "replay", WorkMode.ITERATIONS: "iterations", WorkMode.SAMPLES: "samples",
                   WorkMode.CONVERGENCE: "convergence", WorkMode.EPOCHS: "epochs",
                   WorkMode.EPOCHS_TO_TARGET: "epochs-to-target"}


#: Modes whose `work_gain` is 1 at every batch (the engine skips the call for them): none since
#: replayed iterations count their samples too (a batch-changing policy on a replayed trace)
UNIT_GAIN_MODES: frozenset[WorkMode] = frozenset()


@runtime_checkable
class StatEfficiency(Protocol):
    """Statistical efficiency of training job `job` at global batch `batch`, relative units.

    Contract: a positive finite number; only ratios `E(b) / E(b_ref)` are used, so any
    normalisation works. `progress` (fraction done) lets models whose gradient noise scale
    grows during training (Pollux) depend on it. Implementations must be deterministic.
    """

    def efficiency(self, job: int, batch: int, progress: float) -> float: ...


class ConstantEfficiency:
    """E ≡ 1: every sample counts the same at every batch size (the default)."""

    def efficiency(self, job: int, batch: int, progress: float) -> float:  # noqa: ARG002
        return 1.0


def work_gain(mode: int, batch: int, ref_batch: int, eff: StatEfficiency, job: int, progress: float) -> float:
    """Reference iterations gained per iteration at global batch `batch` (see module doc)."""
    if mode in UNIT_GAIN_MODES or ref_batch <= 0:
        return 1.0
    ratio = batch / ref_batch
    if mode in (WorkMode.REPLAY, WorkMode.ITERATIONS, WorkMode.SAMPLES):
        return ratio
    if mode in (WorkMode.EPOCHS, WorkMode.EPOCHS_TO_TARGET):
        return ratio * eff.efficiency(job, batch, progress)
    return ratio * eff.efficiency(job, batch, progress) / eff.efficiency(job, ref_batch, progress)
