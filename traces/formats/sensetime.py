"""SenseTime job records (Helios/Lucid schema + simulator fields), as used by Dally's simulator.

A JSON list of objects whose values are mostly strings: ``job_id, user, state, submit_time
(date-time), duration, dataset, model, batchsize, gpu_util, total_iterations,
time_per_iteration, max_parallelism, arrival_time (s, optional)`` and more.

Mapping (see `seeds/notes/dally.md` §5.2):

* ``num_gpus`` = ``max_parallelism``. The records have no ``gpu_num``; Dally's GPU-demand
  histogram (1:270, 2:13, 4:52, 8:109, …) is exactly ``max_parallelism``, and the ideal gang
  time is ``time_per_iteration × total_iterations / max_parallelism``. (``node_num`` is kept out.)
* ``submit_time`` = ``arrival_time`` (seconds, the simulator's arrival) when the file has it —
  the batch file has 0 for all, the Poisson files the drawn arrivals; ``sensetime-1april.json``
  has none, so there it is ``submit_time`` − the earliest ``submit_time`` in the file. A file
  where only some records carry ``arrival_time`` is malformed (two time bases).
* ``batchsize`` is the **per-GPU** batch (option ``batch_is="per_gpu"``, the default), so
  ``global_batch = batchsize × num_gpus``. The records say 32/64/128 whatever the GPU count
  (up to 56 GPUs), and a global batch smaller than the GPU count cannot be data-parallel;
  Dally's simulator ignores batch sizes altogether (notes §5.2), so nothing contradicts this.
  ``batch_is="global"`` keeps the field as the global batch.
* ``model`` kept as written (``VGG``, ``ResNet50`` …: the zoo resolves aliases, ``ResNet18``
  being the ImageNet 224×224 model of Dally's workload files whatever the record's dataset),
  except ``BERT`` → ``bert_large`` (`MODEL_NAMES`): Dally's models are BERT-large (its Table I,
  workload file ``BERT-large_B256``), where the zoo's plain ``bert`` is the Pollux/Sia BERT-base.
* Work: ``time_per_iteration`` (s, the job's iteration time on its own placement) and
  ``total_iterations`` are kept; their product is the record's ``duration`` (to 0.7 % on every
  shared file), so ``simcore.prepare`` replays that time: alone on ``max_parallelism``
  consolidated GPUs the job takes its trace duration. (Dally's simulator instead counts the
  iterations per GPU, retiring N per step, which runs an N-GPU job in duration / N.)
* ``dataset``, ``gpu_util``, ``max_parallelism``, ``user``, ``state`` → ``status`` kept.
* Excluded, counted: ``zero_gpus`` (``max_parallelism`` = 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from traces.formats import TraceFormat, register
from traces.formats._common import (json_number, json_string, json_time, load_json_list, record_error)
from traces.io import LoadReport

_MISSING = object()


BATCH_IS = ("per_gpu", "global")

#: SenseTime model spellings whose zoo alias means another model (Dally notes §5.1).
MODEL_NAMES = {"bert": "bert_large"}


def read_sensetime(path: Path, report: LoadReport, *, batch_is: str = "per_gpu") -> pd.DataFrame:
    if batch_is not in BATCH_IS:
        raise record_error(path, 0, "batch_is", f"one of {', '.join(BATCH_IS)}", batch_is)
    data = load_json_list(path, "SenseTime job records")
    report.rows_read = len(data)
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise record_error(path, i, "(record)", "a JSON object", type(rec).__name__)
    has_arrival = [rec.get("arrival_time", _MISSING) is not _MISSING for rec in data]
    use_arrival = bool(data) and has_arrival[0]
    if any(h != use_arrival for h in has_arrival):
        i = has_arrival.index(not use_arrival)
        raise record_error(path, i, "arrival_time",
                           "arrival_time in every record or in none (one time base per file)")
    rows: list[dict] = []
    for i, rec in enumerate(data):
        r = {
            "_row": i,
            "job_id": json_string(rec.get("job_id"), path, i, "job_id", required=True),
            "num_gpus": json_number(rec.get("max_parallelism"), path, i, "max_parallelism",
                                    required=True, integer=True),
            "duration": json_number(rec.get("duration"), path, i, "duration"),
            "model": _model(json_string(rec.get("model"), path, i, "model")),
            "dataset": json_string(rec.get("dataset"), path, i, "dataset"),
            "global_batch": json_number(rec.get("batchsize"), path, i, "batchsize", integer=True),
            "total_iterations": json_number(rec.get("total_iterations"), path, i, "total_iterations"),
            "time_per_iteration": json_number(rec.get("time_per_iteration"), path, i, "time_per_iteration"),
            "gpu_util": json_number(rec.get("gpu_util"), path, i, "gpu_util"),
            "user": json_string(rec.get("user"), path, i, "user"),
            "status": json_string(rec.get("state"), path, i, "state"),
        }
        if use_arrival:
            r["submit_time"] = json_number(rec.get("arrival_time"), path, i, "arrival_time", required=True)
        else:
            r["submit_time"] = json_time(rec.get("submit_time"), path, i, "submit_time", required=True)
        if r["global_batch"] == 0:
            raise record_error(path, i, "batchsize", "a positive integer", rec.get("batchsize"))
        r["max_parallelism"] = r["num_gpus"]
        if batch_is == "per_gpu" and r["global_batch"] is not None:
            r["global_batch"] = int(r["global_batch"]) * int(r["num_gpus"])
        if r["num_gpus"] == 0:
            report.exclude("zero_gpus")
            continue
        rows.append(r)
    cols = ["_row", "job_id", "submit_time", "num_gpus", "duration", "model", "dataset", "global_batch",
            "total_iterations", "time_per_iteration", "gpu_util", "max_parallelism", "user", "status"]
    df = pd.DataFrame(rows, columns=cols)
    if not use_arrival and len(data):
        origin = min(json_time(rec.get("submit_time"), path, i, "submit_time", required=True)
                     for i, rec in enumerate(data))
        df["submit_time"] = df["submit_time"].astype(np.float64) - origin
        df.attrs["time_origin_s"] = float(origin)
    df["source"] = "sensetime"
    return df


def _model(name: str | None) -> str | None:
    return None if name is None else MODEL_NAMES.get(name.lower(), name)


def _sniff(text: str, header: frozenset[str] | None) -> bool:
    return header is None and ('"max_parallelism"' in text or '"time_per_iteration"' in text)


register(TraceFormat("sensetime", _sniff, read_sensetime,
                     "SenseTime JSON job records (model, dataset, batchsize, max_parallelism …)"))
