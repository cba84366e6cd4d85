"""The fit of ONES' convergence model (`simcore.convergence`) to the artifact's run history.

The ONES artifact's `traces/job_history.csv` (shared data: `traces/ones/job_history.csv`) logs
21 training runs epoch by epoch: global batch, learning rate, loss and validation accuracy. A
run's class is decoded from its learning rate per sample (each class of `traces.ones.CLASS_CONFIG`
has its own base lr / per-GPU batch); its base batch b₀ is that class's per-GPU batch, its
batch history the batch of each epoch (the first grown from b₀), its epochs to target
E_T = epochs run − patience + 1 (the trace's definition, `traces.ones.epochs_to_target_of`).

Model: log E_T = a_g + log(1 + φ·J) per run, a_g one free level per (class, dataset size) group
and J the run's excess doublings. φ is the least-squares value over all runs (a dense grid on
[0, `PHI_MAX`]); only groups whose runs differ in J identify it. In the history that is one
group: CIFAR ResNet/GoogLeNet at 40k samples, where the run that grew 512 → 768 → 1024 (J = 0)
reached the target in 12 epochs and the two started at 1024 = 4 × b₀ (J = 1) in 15 and 13:
φ = √(15·13)/12 − 1 = 0.164. So φ rests on three runs; the error a held-out run shows is the
spread of repeated runs of one configuration (`held_out`), which the model cannot predict and
the trace generators draw (`traces.ones`, `epochs_sigma`).

Held-out error (`HistoryFit.held_out`): each run of a group with other runs is predicted from
them alone (its group's level from the others, φ refitted without it; a run without which φ is
not identified is left out and counted in `unidentified`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosim.errors import InputError
from simcore.convergence import ConvergenceModel

#: the history's place in the shared data folder (`cosim.paths.shared_file`)
HISTORY = "traces/ones/job_history.csv"
PHI_MAX = 5.0
_COLUMNS = ("id", "epoch", "epoch_size", "batch_size", "lr", "acc")


@dataclass(frozen=True)
class Run:
    """One run of the history."""

    row: int  # its first row in the file (1-based, after the header)
    job: int  # the file's `id`
    group: str  # class and dataset size, e.g. "cifar-resnet/40000"
    base: int  # b₀, the class's per-GPU batch
    batches: tuple[int, ...]  # global batch of each epoch
    patience: int
    epochs: int  # epochs run
    doublings: float  # J

    @property
    def epochs_to_target(self) -> float:
        return max(1.0, float(self.epochs - self.patience + 1))


@dataclass(frozen=True)
class HistoryFit:
    phi: float
    runs: tuple[Run, ...]
    held_out: tuple[tuple[Run, float], ...]  # (run, predicted E_T) for runs predicted from others
    unidentified: int  # runs with siblings left out because φ is not identified without them

    @property
    def held_out_mae(self) -> float:
        """Mean |predicted − actual| epochs to target over the held-out runs."""
        return float(np.mean([abs(p - r.epochs_to_target) for r, p in self.held_out]))

    @property
    def held_out_mare(self) -> float:
        """Mean |predicted − actual| / actual over the held-out runs."""
        return float(np.mean([abs(p - r.epochs_to_target) / r.epochs_to_target for r, p in self.held_out]))


def history_path() -> Path:
    """The run history in the shared data folder (an `InputError` naming it when it is missing)."""
    from cosim.paths import shared_file

    return shared_file(HISTORY, "the ONES artifact's job_history.csv")


def _classes() -> list[tuple[float, int, int, str]]:
    """(lr per sample, per-GPU batch, patience, class name) of each class configuration."""
    from traces.formats.workloads import ONES_CLASSES
    from traces.ones import CLASS_CONFIG

    out = {}
    for key, (b, lr, _mlr, _acc, pat, _req) in CLASS_CONFIG.items():
        name = ONES_CLASSES[key][0]
        out.setdefault((lr / b, b, pat), name if not name.startswith("bert-") or name == "bert-sst2" else "bert-glue")
    return [(k[0], k[1], k[2], v) for k, v in out.items()]


def read_runs(path: str | Path | None = None) -> list[Run]:
    """The runs of an ONES job_history.csv: a run starts at each epoch 1 (or a new `id`)."""
    import pandas as pd

    p = Path(path) if path is not None else history_path()
    try:
        df = pd.read_csv(p)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError.at(p, expected="an ONES job_history.csv", got=str(exc).splitlines()[0]) from None
    for c in _COLUMNS:
        if c not in df.columns:
            raise InputError.at(p, field=c, expected="columns " + ", ".join(_COLUMNS))
    x = df[list(_COLUMNS)].to_numpy(np.float64)
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1) | (x[:, 2:5] <= 0).any(axis=1))
    if bad.size:
        raise InputError.at(p, row=int(bad[0]) + 1, field="epoch_size/batch_size/lr",
                            expected="positive numbers", got=tuple(x[bad[0]]))
    start = np.flatnonzero((x[:, 1] == 1) | np.concatenate([[True], x[1:, 0] != x[:-1, 0]]))
    classes = _classes()
    model = ConvergenceModel()
    runs = []
    for s, e in zip(start.tolist(), start[1:].tolist() + [x.shape[0]]):
        r = x[s:e]
        per_sample = r[0, 4] / r[0, 3]
        lr_s, base, pat, name = min(classes, key=lambda c: abs(math.log(c[0] / per_sample)))
        if abs(math.log(lr_s / per_sample)) > 0.1:
            raise InputError.at(p, row=s + 1, field="lr", expected="the learning rate of an ONES class at its batch",
                                got=r[0, 4])
        batches = tuple(int(b) for b in r[:, 3])
        runs.append(Run(row=s + 1, job=int(r[0, 0]), group=f"{name}/{int(r[0, 2])}", base=base, batches=batches,
                        patience=pat, epochs=e - s, doublings=model.doublings(base, batches)))
    return runs


def fit_phi(runs: list[Run]) -> float | None:
    """Least-squares φ (module doc), or None when no group's runs differ in J."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(r.group, []).append(r)
    use = [g for g in groups.values() if len({r.doublings for r in g}) > 1]
    if not use:
        return None
    phi = np.linspace(0.0, PHI_MAX, 500_001)
    sse = np.zeros_like(phi)
    for g in use:
        y = np.log([r.epochs_to_target for r in g])[:, None] - np.log1p(phi[None, :] * np.array(
            [r.doublings for r in g])[:, None])
        sse += ((y - y.mean(axis=0)) ** 2).sum(axis=0)
    return float(phi[int(np.argmin(sse))])


def fit_history(path: str | Path | None = None) -> HistoryFit:
    """φ and the held-out error on a run history (module doc)."""
    runs = read_runs(path)
    phi = fit_phi(runs)
    if phi is None:
        raise InputError.at(path or history_path(), expected="runs of one class and size with different batch histories")
    held, unidentified = [], 0
    for i, r in enumerate(runs):
        sib = [s for s in runs if s.group == r.group and s is not r]
        if not sib:
            continue
        phi_i = fit_phi(runs[:i] + runs[i + 1:])
        if phi_i is None:
            unidentified += 1
            continue
        a = np.mean([math.log(s.epochs_to_target) - math.log1p(phi_i * s.doublings) for s in sib])
        held.append((r, math.exp(a) * (1.0 + phi_i * r.doublings)))
    return HistoryFit(phi, tuple(runs), tuple(held), unidentified)
