"""ONES' evaluation workloads (SC'21, Table 2): seeded generators of its 50-job traces.

Two variants (ONES notes §5.4), both with uniform(0, 60) s inter-arrival gaps (mean 30 s, what
the artifact's `trace_1.csv` shows: notes §5.3 [A, I]) and the per-class training
configuration of the artifact's trace (per-GPU base batch, base/max learning rate → B_max,
target accuracy, patience, the user's requested GPUs):

- ``ones`` (paper-faithful): the 50 workloads of Table 2 — 4 ImageNet CNNs × 6 subset sizes
  (10k…20k images, 1000 per class), 3 CIFAR-10 CNNs × 5 sizes (20k…40k), BERT on CoLA (5k…8k),
  MRPC (3.6k) and SST-2 (10k…20k) — each once, in a seeded random order; a job count other
  than 50 cycles through a fresh shuffle of the table;
- ``ones-artifact``: classes drawn with the frequencies of the first 50 rows of the artifact's
  trace (inception_v3 7, vgg16-imagenet 6, googlenet 6, bert-cola 5, bert-mrpc 5, vgg16-cifar 5,
  alexnet 5, bert-sst2 4, resnet18 4, resnet50 3) at the two endpoint sizes only.

Epochs: the trace records none (ONES trains to convergence). Each job's epochs to target E_j is
its class's value read off the artifact's run history (`traces.formats.workloads.ONES_EPOCHS`,
total epochs incl. patience, log-interpolated between the two measured sizes), minus patience
− 1, times a seeded log-normal factor (σ = `epochs_sigma`, the spread of repeated runs of a class
in that history, e.g. 10/26/49 epochs); the job trains `total_epochs(E_j, patience)` epochs
(`simcore.convergence`). Jobs are elastic: ``min_gpus`` 1, ``max_gpus`` `max_gpus`;
``num_gpus`` is the user's request (Tiresias' size, the baselines' reference) and
``global_batch`` = per-GPU base × requested GPUs (the fixed global batch of the baselines).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from cosim.errors import InputError

if TYPE_CHECKING:  # pandas is imported where it is used: a cached `cosim simulate` never needs it
    import pandas as pd

#: per (model, task): per-GPU base batch, base lr, max lr, target accuracy, patience, requested GPUs
#: (ONES notes §5.3, the artifact trace's class table; identical for every row of a class)
CLASS_CONFIG: dict[tuple[str, str], tuple[int, float, float, float, int, int]] = {
    ("alexnet", "imagenet"): (64, 2.5e-4, 0.004, 0.25, 20, 16),
    ("resnet50", "imagenet"): (32, 5e-4, 0.008, 0.55, 10, 16),
    ("vgg16", "imagenet"): (32, 5e-4, 0.008, 0.55, 10, 16),
    ("inception_v3", "imagenet"): (32, 5e-4, 0.008, 0.55, 10, 16),
    ("resnet18", "cifar"): (256, 0.005, 0.08, 0.7, 10, 4),
    ("googlenet", "cifar"): (256, 0.005, 0.08, 0.7, 10, 4),
    ("vgg16", "cifar"): (128, 0.001, 0.016, 0.7, 10, 4),
    ("bert", "cola"): (16, 5e-6, 2e-5, 0.8, 5, 2),
    ("bert", "mrpc"): (16, 5e-6, 2e-5, 0.8, 5, 2),
    ("bert", "sst2"): (32, 2.5e-6, 2e-5, 0.9, 5, 8),
}

#: Table 2: (model, task) → dataset sizes
TABLE2: dict[tuple[str, str], tuple[int, ...]] = {
    **{(m, "imagenet"): tuple(range(10000, 20001, 2000)) for m in ("alexnet", "resnet50", "vgg16", "inception_v3")},
    **{(m, "cifar"): tuple(range(20000, 40001, 5000)) for m in ("resnet18", "vgg16", "googlenet")},
    ("bert", "cola"): (5000, 6000, 7000, 8000),
    ("bert", "mrpc"): (3600,),
    ("bert", "sst2"): tuple(range(10000, 20001, 2000)),
}

#: the artifact trace's first 50 rows by class (notes §5.3), and its two sizes per class
ARTIFACT_MIX: dict[tuple[str, str], int] = {
    ("inception_v3", "imagenet"): 7, ("vgg16", "imagenet"): 6, ("googlenet", "cifar"): 6, ("bert", "cola"): 5,
    ("bert", "mrpc"): 5, ("vgg16", "cifar"): 5, ("alexnet", "imagenet"): 5, ("bert", "sst2"): 4,
    ("resnet18", "cifar"): 4, ("resnet50", "imagenet"): 3,
}
ARTIFACT_SIZES: dict[str, tuple[int, ...]] = {"imagenet": (10000, 20000), "cifar": (20000, 40000),
                                              "cola": (5000, 8000), "mrpc": (3600,), "sst2": (10000, 20000)}

LIKES = ("ones", "ones-artifact")


def total_epochs(epochs_to_target: float, patience: int) -> float:
    """Epochs a job trains: the first epoch at the target, then `patience − 1` more (notes §5.2)."""
    return float(epochs_to_target) + max(int(patience), 1) - 1


def epochs_to_target_of(total: float, patience: float) -> float:
    """The inverse of `total_epochs` (≥ 1): the epoch at which the target is first reached."""
    p = 1 if not np.isfinite(patience) else max(int(patience), 1)
    return max(1.0, float(total) - p + 1)


def class_total_epochs(model: str, task: str, size: float) -> float:
    """Total epochs (incl. patience) of a class at dataset size `size`: the artifact history's
    value, log-interpolated (and flat outside) between the class's two measured sizes."""
    from traces.formats.workloads import ONES_CLASSES, ONES_EPOCHS  # the loaders: imported on use

    cls = ONES_CLASSES[(model, task)][0]
    pts = sorted((n, e) for (c, n), e in ONES_EPOCHS.items() if c == cls)
    xs = np.log([p[0] for p in pts])
    ys = np.array([p[1] for p in pts], np.float64)
    return float(np.interp(math.log(size), xs, ys))


def generate(like: str, num_jobs: int, seed: int, *, gap_max_s: float = 60.0, epochs_sigma: float = 0.3,
             max_gpus: int = 64) -> pd.DataFrame:
    """A canonical job table of `num_jobs` ONES jobs (see module doc); deterministic in the args."""
    import pandas as pd

    from traces.formats.workloads import ONES_CLASSES
    from traces.io import normalize

    if like not in LIKES:
        raise InputError.at(field="trace", expected=" | ".join(f"synth:{x}:<jobs>" for x in LIKES), got=like)
    if num_jobs < 0:
        raise InputError.at(field="jobs", expected="a non-negative number of jobs", got=num_jobs)
    rng = np.random.default_rng([int(seed), 20])
    if like == "ones":
        table = [(m, t, n) for (m, t), sizes in TABLE2.items() for n in sizes]
        rows = []
        while len(rows) < num_jobs:
            rows += [table[i] for i in rng.permutation(len(table))]
        rows = rows[:num_jobs]
    else:
        keys = list(ARTIFACT_MIX)
        p = np.array([ARTIFACT_MIX[k] for k in keys], np.float64)
        rows = []
        for i in rng.choice(len(keys), size=num_jobs, p=p / p.sum()):
            m, t = keys[i]
            sizes = ARTIFACT_SIZES[t]
            rows.append((m, t, sizes[int(rng.integers(len(sizes)))]))
    gaps = rng.uniform(0.0, gap_max_s, num_jobs)
    submit = np.round(np.concatenate([[0.0], np.cumsum(gaps[1:])]) if num_jobs else gaps)
    jitter = rng.lognormal(0.0, epochs_sigma, num_jobs)
    cols: dict[str, list] = {k: [] for k in ("job_id", "model", "task", "epoch_size", "global_batch", "num_gpus",
                                             "lr", "max_lr", "target_acc", "patience", "epochs")}
    for i, (m, t, n) in enumerate(rows):
        b, lr, mlr, acc, pat, req = CLASS_CONFIG[(m, t)]
        e_target = max(1.0, round(epochs_to_target_of(class_total_epochs(m, t, n), pat) * jitter[i]))
        cols["job_id"].append(f"{like}-{i}")
        cols["model"].append(ONES_CLASSES[(m, t)][1])
        cols["task"].append(t)
        cols["epoch_size"].append(float(n))
        cols["global_batch"].append(b * req)
        cols["num_gpus"].append(req)
        cols["lr"].append(lr)
        cols["max_lr"].append(mlr)
        cols["target_acc"].append(acc)
        cols["patience"].append(pat)
        cols["epochs"].append(total_epochs(e_target, pat))
    df = pd.DataFrame(cols)
    df["submit_time"] = submit
    df["min_gpus"] = 1
    df["max_gpus"] = np.maximum(int(max_gpus), df["num_gpus"].to_numpy())
    df["dataset"] = df["task"]
    df["source"] = f"synth:{like}"
    return normalize(df, source=f"synth:{like}")
