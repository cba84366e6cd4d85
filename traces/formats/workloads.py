"""Sampled workload CSVs: Pollux/Sia/Ares (`name,time,application,num_replicas,batch_size`) and ONES.

Pollux/Sia/Ares: ``name`` → ``job_id``, ``time`` (s from the window start) → ``submit_time``
as is, ``application`` (cifar10, imagenet, bert, deepspeech2, yolov3, ncf) → ``model`` as
written (the zoo maps cifar10 → resnet18 …), ``num_replicas`` → ``num_gpus``, ``batch_size``
→ ``global_batch``.

ONES (`trace_1.csv`): ``time, model, task, epoch_size, patience, batch_size, lr, max_lr,
target_acc, num_gpus``; the file has no job ids, so they are ``ones-<row>`` (0-based data
row). ``batch_size`` → ``global_batch``; ``task``, ``epoch_size``, ``patience``, ``lr``,
``max_lr``, ``target_acc`` kept.

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
    out = pd.DataFrame({
        "_row": idx,
        "job_id": pd.Series([f"ones-{i}" for i in idx], dtype="str"),
        "submit_time": t[idx],
        "num_gpus": gpus[idx].astype(np.int32),
        "model": strings(raw, "model", path, required=True).to_numpy()[idx],
        "global_batch": batch[idx],
        "task": strings(raw, "task", path).to_numpy()[idx],
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
