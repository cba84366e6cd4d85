"""SenseTime Helios (SC'21) `cluster_log.csv` (S-Lab-System-Group/HeliosData).

Columns: ``job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time, start_time,
end_time, duration, queue``; times are date-times, ``duration`` = end − start and ``queue`` =
start − submit in seconds; ``state`` ∈ COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL.

Mapping: ``submit_time`` = submit − the earliest submit in the file; ``start_time`` /
``end_time`` on the same origin; ``duration`` from the column, or end − start when the column
is empty; ``state`` → ``status`` unchanged; ``gpu_num`` → ``num_gpus``.

Excluded, counted: ``cpu_only`` (``gpu_num`` = 0: Helios logs CPU jobs too, about half the
records; schedulers of GPU jobs never see them) and ``never_started`` (no ``start_time``, e.g.
cancelled while queued). Malformed → InputError: a missing column, non-numeric ``gpu_num``,
negative ``duration``, ``end_time`` before ``start_time``, an unparsable date-time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from traces.formats import TraceFormat, register
from traces.formats._common import numeric, read_csv, row_error, strings, timestamps
from traces.io import LoadReport

COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
           "start_time", "end_time", "duration", "queue")
REQUIRED = ("job_id", "gpu_num", "submit_time", "start_time", "end_time", "duration")


def read_helios(path: Path, report: LoadReport) -> pd.DataFrame:
    raw = read_csv(path, REQUIRED, "Helios cluster_log")
    report.rows_read = len(raw)
    job_id = strings(raw, "job_id", path, required=True)
    gpus = numeric(raw, "gpu_num", path, integer=True)
    sub = timestamps(raw, "submit_time", path)
    start = timestamps(raw, "start_time", path, required=False)
    end = timestamps(raw, "end_time", path, required=False)
    dur = numeric(raw, "duration", path, required=False)
    early = start < sub  # NaN → False
    if early.any():
        i = int(np.flatnonzero(early)[0])
        raise row_error(path, i, "start_time", f"a start not before submit_time ({raw['submit_time'].iloc[i]})",
                        raw["start_time"].iloc[i])
    bad = end < start  # NaN → False
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise row_error(path, i, "end_time", f"an end not before start_time ({raw['start_time'].iloc[i]})",
                        raw["end_time"].iloc[i])
    dur = np.where(np.isnan(dur), end - start, dur)
    cpu_only = gpus == 0
    never = ~cpu_only & np.isnan(start)
    report.exclude("cpu_only", int(cpu_only.sum()))
    report.exclude("never_started", int(never.sum()))
    idx = np.flatnonzero(~cpu_only & ~never)
    origin = np.nanmin(sub) if len(sub) else 0.0
    df = pd.DataFrame({
        "_row": idx,
        "job_id": job_id.to_numpy()[idx],
        "submit_time": sub[idx] - origin,
        "num_gpus": gpus[idx].astype(np.int32),
        "duration": dur[idx],
        "user": strings(raw, "user", path).to_numpy()[idx],
        "vc": strings(raw, "vc", path).to_numpy()[idx],
        "status": strings(raw, "state", path).to_numpy()[idx],
        "start_time": start[idx] - origin,
        "end_time": end[idx] - origin,
        "source": "helios",
    })
    df.attrs["time_origin_s"] = float(origin)
    return df


def _sniff(text: str, header: frozenset[str] | None) -> bool:
    return header is not None and {"job_id", "gpu_num", "submit_time", "state"} <= header


register(TraceFormat("helios", _sniff, read_helios,
                     "Helios cluster_log.csv (job_id, user, vc, gpu_num, …, state, submit/start/end)"))
