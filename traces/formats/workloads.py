"""Sampled workload CSVs: Pollux/Sia/Ares (`name,time,application,num_replicas,batch_size`) and ONES.

Pollux/Sia/Ares: ``name`` → ``job_id``, ``time`` (s from the window start) → ``submit_time``
as is, ``application`` (cifar10, imagenet, bert, deepspeech2, yolov3, ncf) → ``model`` as
written (the zoo maps cifar10 → resnet18_cifar …), ``num_replicas`` → ``num_gpus``, ``batch_size``
→ ``global_batch``.

ONES (`trace_1.csv`): ``time, model, task, epoch_size, patience, batch_size, lr, max_lr,
target_acc, num_gpus``; the file has no job ids, so they are ``ones-<row>`` (0-based data
row). ``task``, ``epoch_size``, ``patience``, ``lr``, ``max_lr``, ``target_acc`` kept.

* ``batch_size`` is the **per-GPU** base batch (ONES notes §5.3: the lr scales with the GPU
  count, ``B_max = batch × max_lr / lr``), so ``global_batch = batch_size × num_gpus``.
* ``model`` on task ``cifar`` is the CIFAR-10 variant of the network (32×32 input, 10 classes):
  ``resnet18`` → ``resnet18_cifar``, ``vgg16`` → ``vgg16_cifar``, ``googlenet`` →
  ``googlenet_cifar``; other tasks keep the name (ImageNet subsets at 224×224 (299 for
  inception_v3); ``bert`` on GLUE is the zoo's BERT-base).
* ``epochs``: ONES trains until convergence (the target accuracy held for ``patience``
  epochs), which the file does not record. `ONES_EPOCHS` gives the epochs the ONES artifact's
  own runs of each class took (``traces/job_history.csv`` of the ONES artifact, median over the
  runs of the class and dataset size); with ``epoch_size`` this is the job's work in samples
  (`simcore.prepare`: CONVERGENCE, as the rows carry ``target_acc``).

Both: rows with 0 GPUs are excluded (``zero_gpus``) and counted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from traces.formats import TraceFormat, register
from traces.formats._common import numeric, read_csv, row_error, strings
from traces.io import LoadReport

POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
ONES_COLUMNS = ("time", "model", "task", "epoch_size", "patience", "batch_size", "lr", "max_lr",
                "target_acc", "num_gpus")


#: Epochs to convergence (including patience) by (task class, epoch_size), read off the ONES
#: artifact's run history (``traces/job_history.csv``: 20 runs; a run's class is decoded from
#: its global batch and lr = per-GPU base × GPUs of trace_1.csv's class table, ONES notes
#: §3/§5.3). Median of the runs of that class and size; runs per entry in the comment.
#: A size with no run takes the class's other size (noted).
ONES_EPOCHS: dict[tuple[str, int], float] = {
    ("cifar-resnet", 40000): 23.0,  # resnet18/googlenet, batch 1024, lr 0.02: runs of 24, 22 epochs
    ("cifar-resnet", 20000): 36.0,  # runs of 37, 35
    ("cifar-vgg", 40000): 35.0,  # vgg16 cifar, batch 512, lr 0.004: one run
    ("cifar-vgg", 20000): 66.0,  # one run
    ("imagenet-alexnet", 20000): 68.0,  # batch 1024, lr 0.004: one run
    ("imagenet-alexnet", 10000): 20.0,  # one run
    ("imagenet-cnn", 20000): 51.0,  # resnet50/vgg16/inception_v3, batch 512, lr 0.008: 57, 43, 51
    ("imagenet-cnn", 10000): 26.0,  # runs of 26, 10, 49
    ("bert-cola", 5000): 4.0,  # batch 32: one run
    ("bert-cola", 8000): 4.0,  # no run at 8000: the 5000 value
    ("bert-mrpc", 3600): 4.5,  # runs of 5, 4
    ("bert-sst2", 20000): 4.0,  # batch 256: one run
    ("bert-sst2", 10000): 4.0,  # one run
}

#: ONES (model, task) → its `ONES_EPOCHS` class and zoo model name.
ONES_CLASSES: dict[tuple[str, str], tuple[str, str]] = {
    ("resnet18", "cifar"): ("cifar-resnet", "resnet18_cifar"),
    ("googlenet", "cifar"): ("cifar-resnet", "googlenet_cifar"),
    ("vgg16", "cifar"): ("cifar-vgg", "vgg16_cifar"),
    ("alexnet", "imagenet"): ("imagenet-alexnet", "alexnet"),
    ("resnet50", "imagenet"): ("imagenet-cnn", "resnet50"),
    ("vgg16", "imagenet"): ("imagenet-cnn", "vgg16"),
    ("inception_v3", "imagenet"): ("imagenet-cnn", "inception_v3"),
    ("bert", "cola"): ("bert-cola", "bert"),
    ("bert", "mrpc"): ("bert-mrpc", "bert"),
    ("bert", "sst2"): ("bert-sst2", "bert"),
}


def _ones_classes(models: np.ndarray, tasks: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(zoo model names, epochs or NaN) of ONES rows; unknown (model, task) pairs keep their name."""
    out_m = models.copy()
    out_e = np.full(len(models), np.nan)
    for k, (m, t, n) in enumerate(zip(models, tasks, sizes)):
        key = (str(m).strip().lower(), str(t).strip().lower())
        if key in ONES_CLASSES:
            cls, out_m[k] = ONES_CLASSES[key]
            if np.isfinite(n):
                out_e[k] = ONES_EPOCHS.get((cls, int(n)), np.nan)
    return out_m, out_e


def _positive(x: np.ndarray, raw: pd.DataFrame, col: str, path: Path) -> None:
    bad = x == 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise row_error(path, i, col, "a positive integer", raw[col].iloc[i])


def read_pollux(path: Path, report: LoadReport) -> pd.DataFrame:
    raw = read_csv(path, ("name", "time", "num_replicas"), "Pollux workload")
    report.rows_read = len(raw)
    name = strings(raw, "name", path, required=True)
    t = numeric(raw, "time", path)
    gpus = numeric(raw, "num_replicas", path, integer=True)
    batch = numeric(raw, "batch_size", path, required=False, integer=True) if "batch_size" in raw else \
        np.full(len(raw), np.nan)
    _positive(batch, raw, "batch_size", path)
    keep = gpus > 0
    report.exclude("zero_gpus", int((~keep).sum()))
    idx = np.flatnonzero(keep)
    return pd.DataFrame({
        "_row": idx,
        "job_id": name.to_numpy()[idx],
        "submit_time": t[idx],
        "num_gpus": gpus[idx].astype(np.int32),
        "model": strings(raw, "application", path).to_numpy()[idx],
        "global_batch": batch[idx],
        "source": "pollux",
    })


def read_ones(path: Path, report: LoadReport) -> pd.DataFrame:
    raw = read_csv(path, ("time", "model", "num_gpus", "batch_size"), "ONES workload")
    report.rows_read = len(raw)
    t = numeric(raw, "time", path)
    gpus = numeric(raw, "num_gpus", path, integer=True)
    batch = numeric(raw, "batch_size", path, integer=True)
    _positive(batch, raw, "batch_size", path)
    opt = {c: (numeric(raw, c, path, required=False, integer=c == "patience") if c in raw.columns
               else np.full(len(raw), np.nan))
           for c in ("epoch_size", "patience", "lr", "max_lr", "target_acc")}
    keep = gpus > 0
    report.exclude("zero_gpus", int((~keep).sum()))
    idx = np.flatnonzero(keep)
    task = strings(raw, "task", path).to_numpy()[idx]
    model, epochs = _ones_classes(strings(raw, "model", path, required=True).to_numpy()[idx], task,
                                  opt["epoch_size"][idx])
    out = pd.DataFrame({
        "_row": idx,
        "job_id": pd.Series([f"ones-{i}" for i in idx], dtype="str"),
        "submit_time": t[idx],
        "num_gpus": gpus[idx].astype(np.int32),
        "model": model,
        "global_batch": batch[idx] * gpus[idx],  # per-GPU base batch × GPUs
        "epochs": epochs,
        "task": task,
        "source": "ones",
    })
    for c, v in opt.items():
        out[c] = v[idx]
    return out


def _sniff_pollux(text: str, header: frozenset[str] | None) -> bool:
    return header is not None and {"name", "time", "application", "num_replicas"} <= header


def _sniff_ones(text: str, header: frozenset[str] | None) -> bool:
    return header is not None and {"time", "model", "task", "num_gpus", "target_acc"} <= header


register(TraceFormat("pollux", _sniff_pollux, read_pollux,
                     "Pollux/Sia/Ares workload CSV (name, time, application, num_replicas, batch_size)"))
register(TraceFormat("ones", _sniff_ones, read_ones,
                     "ONES workload CSV (time, model, task, epoch_size, …, num_gpus)"))
