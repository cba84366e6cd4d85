"""Microsoft Philly (ATC'19): the raw `cluster_job_log` JSON and the Sia-derived `philly_jobs.csv`.

Raw JSON (msr-fiddle/philly-traces README): a list of jobs ``{status, vc, jobid, attempts:
[{start_time, end_time, detail: [{ip, gpus: [...]}]}], submitted_time, user}``. The README notes
that a job may have no attempts, an attempt may lack ``start_time`` and/or ``end_time`` (a logging
error), and a ``None`` end on the last attempt means the job was still running at the snapshot.
Choices made here (module constants, named so callers can change them):

* ``submit_time`` = ``submitted_time`` − the earliest ``submitted_time`` in the file.
* ``duration`` (`DURATION_MODE = "span"`): last recorded end − first recorded start, i.e. the
  wall time the job occupied including gaps between retries (what a replay must reproduce);
  ``"sum"`` adds up the attempts that have both times instead.
* ``num_gpus`` (`GPUS_FROM = "max"`): GPUs of the largest attempt (Σ len(gpus) over its
  ``detail`` machines); retries that came back smaller are the scheduler's doing, not the job's
  request. ``"first"`` takes the first attempt.
* Excluded, counted in the `LoadReport`: ``never_started`` (no attempts), ``no_start_time``
  (attempts, none with a start), ``still_running`` (last attempt has a start and no end, or
  status ``Running``), ``zero_gpus`` (no GPU listed in any attempt).
* Malformed (InputError, naming the record and field): not a list, a record that is not an
  object, missing ``jobid``/``submitted_time``, an unparsable time, an attempt ending before it
  starts, ``detail``/``gpus`` that are not lists.

CSV (`philly_jobs.csv`, from the Sia artifact): ``timestamp`` (submit date-time), ``duration``
(s), ``num_gpus``, ``gpu_time`` (GPU-s), ``cluster`` (VC hash). ``submit_time`` = timestamp −
earliest timestamp; job ids are ``philly-<row>`` (0-based data row), since the file has none.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from traces.formats import TraceFormat, register
from traces.formats._common import (MISSING_STRINGS, json_string, json_time, load_json_list, numeric,
                                    read_csv, record_error, strings, timestamps)
from cosim.errors import InputError
from traces.io import LoadReport

DURATION_MODE = "span"  # or "sum"
GPUS_FROM = "max"  # or "first"
CSV_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")


def _attempt_gpus(detail: object, path: Path, i: int, k: int) -> int:
    if detail is None:
        return 0
    if not isinstance(detail, list):
        raise record_error(path, i, f"attempts[{k}].detail", "a list of {ip, gpus} objects", detail)
    n = 0
    for m, d in enumerate(detail):
        if not isinstance(d, dict):
            raise record_error(path, i, f"attempts[{k}].detail[{m}]", "an object {ip, gpus}", d)
        gpus = d.get("gpus")
        if gpus is None:
            continue
        if not isinstance(gpus, list):
            raise record_error(path, i, f"attempts[{k}].detail[{m}].gpus", "a list of GPU names", gpus)
        n += len(gpus)
    return n


def _parse_times(values: list, where: list[tuple[int, str]], path: Path) -> np.ndarray:
    """JSON date-time values → epoch seconds (NaN = missing), vectorised; errors name record and field."""
    text = np.empty(len(values), dtype=object)
    for j, v in enumerate(values):
        if v is None or (isinstance(v, str) and v.strip() in MISSING_STRINGS):
            text[j] = None
        elif isinstance(v, str):
            text[j] = v.strip()
        else:
            i, field = where[j]
            raise record_error(path, i, field, "a date-time string like 2017-10-07 01:12:09", v)
    parsed = pd.to_datetime(pd.Series(text, dtype=object), format="ISO8601", errors="coerce", utc=True)
    us = parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[us]")
    bad = np.isnat(us) & pd.notna(text)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        json_time(values[j], path, *where[j])  # raises with the parser's own message
        raise record_error(path, where[j][0], where[j][1], "a date-time like 2017-10-07 01:12:09", values[j])
    out = us.astype("int64").astype(np.float64) / 1e6
    out[np.isnat(us)] = np.nan
    return out


def read_philly_json(path: Path, report: LoadReport, *, duration_mode: str = DURATION_MODE,
                     gpus_from: str = GPUS_FROM) -> pd.DataFrame:
    """Raw `cluster_job_log` → canonical columns (see the module docstring for the choices).

    One pass over the records checks structure and collects the raw strings; the times are then
    parsed and aggregated per job with numpy (≈ 117k jobs in a few seconds).
    """
    if duration_mode not in ("span", "sum") or gpus_from not in ("max", "first"):
        raise InputError.at(field="duration_mode/gpus_from", expected="span|sum and max|first",
                            got=f"{duration_mode}/{gpus_from}")
    data = load_json_list(path, "Philly cluster_job_log")
    n = len(data)
    report.rows_read = n
    job_id, status, vc, user, sub_raw, sub_where = [], [], [], [], [], []
    att_rec, att_start, att_end, att_gpus, att_where_s, att_where_e = [], [], [], [], [], []
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise record_error(path, i, "(record)", "a JSON object", type(rec).__name__)
        job_id.append(json_string(rec.get("jobid"), path, i, "jobid", required=True))
        sub = rec.get("submitted_time")
        if sub is None or (isinstance(sub, str) and sub.strip() in MISSING_STRINGS):
            raise record_error(path, i, "submitted_time", "a date-time like 2017-10-07 01:12:09 (required)")
        sub_raw.append(sub)
        sub_where.append((i, "submitted_time"))
        status.append(json_string(rec.get("status"), path, i, "status"))
        vc.append(json_string(rec.get("vc"), path, i, "vc"))
        user.append(json_string(rec.get("user"), path, i, "user"))
        attempts = rec.get("attempts")
        if attempts is None:
            continue
        if not isinstance(attempts, list):
            raise record_error(path, i, "attempts", "a list of attempts", attempts)
        for k, a in enumerate(attempts):
            if not isinstance(a, dict):
                raise record_error(path, i, f"attempts[{k}]", "an object {start_time, end_time, detail}", a)
            att_rec.append(i)
            att_start.append(a.get("start_time"))
            att_end.append(a.get("end_time"))
            att_where_s.append((i, f"attempts[{k}].start_time"))
            att_where_e.append((i, f"attempts[{k}].end_time"))
            att_gpus.append(_attempt_gpus(a.get("detail"), path, i, k))
    submitted = _parse_times(sub_raw, sub_where, path)
    s = _parse_times(att_start, att_where_s, path)
    e = _parse_times(att_end, att_where_e, path)
    rec_of = np.asarray(att_rec, dtype=np.int64)
    gpus = np.asarray(att_gpus, dtype=np.int64)
    bad = e < s  # NaN → False
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise record_error(path, att_where_e[j][0], att_where_e[j][1],
                           f"an end not before the start ({att_start[j]})", att_end[j])
    pos = np.arange(len(rec_of))
    n_att = np.bincount(rec_of, minlength=n)
    first_start = np.full(n, np.inf)
    np.fmin.at(first_start, rec_of, s)
    last_end = np.full(n, -np.inf)
    np.fmax.at(last_end, rec_of, e)
    span_sum = np.zeros(n)
    np.add.at(span_sum, rec_of, np.nan_to_num(e - s, nan=0.0))
    first_pos = np.full(n, len(pos), dtype=np.int64)
    np.minimum.at(first_pos, rec_of, pos)
    first_pos[first_pos == len(pos)] = -1
    last_pos = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_pos, rec_of, pos)
    max_gpus = np.zeros(n, dtype=np.int64)
    np.maximum.at(max_gpus, rec_of, gpus)
    num_gpus = max_gpus if gpus_from == "max" else np.where(first_pos >= 0, gpus[np.maximum(first_pos, 0)], 0)
    has_att = n_att > 0
    lp = np.maximum(last_pos, 0)
    last_open = has_att & ~np.isnan(s[lp] if len(s) else np.zeros(n)) & np.isnan(e[lp] if len(e) else np.zeros(n))
    running = np.array([(x or "").lower() == "running" for x in status], dtype=bool)
    never = ~has_att
    no_start = has_att & ~np.isfinite(first_start)
    still = has_att & ~no_start & (last_open | running | ~np.isfinite(last_end))
    zero = has_att & ~no_start & ~still & (num_gpus <= 0)
    for reason, mask in (("never_started", never), ("no_start_time", no_start), ("still_running", still),
                         ("zero_gpus", zero)):
        report.exclude(reason, int(mask.sum()))
    keep = np.flatnonzero(~(never | no_start | still | zero))
    back = last_end[keep] < first_start[keep]
    if back.any():
        i = int(keep[np.flatnonzero(back)[0]])
        raise record_error(path, i, "attempts", "the last end not before the first start")
    origin = float(np.min(submitted)) if n else 0.0
    df = pd.DataFrame({
        "_row": keep,
        "job_id": np.asarray(job_id, dtype=object)[keep],
        "submit_time": submitted[keep] - origin,
        "num_gpus": num_gpus[keep].astype(np.int32),
        "duration": (last_end - first_start)[keep] if duration_mode == "span" else span_sum[keep],
        "start_time": first_start[keep] - origin,
        "end_time": last_end[keep] - origin,
        "status": np.asarray(status, dtype=object)[keep],
        "vc": np.asarray(vc, dtype=object)[keep],
        "user": np.asarray(user, dtype=object)[keep],
        "source": "philly-json",
    })
    df.attrs["time_origin_s"] = origin
    return df


def read_philly_csv(path: Path, report: LoadReport) -> pd.DataFrame:
    """`philly_jobs.csv` → canonical columns; rows with 0 GPUs are excluded (``zero_gpus``)."""
    raw = read_csv(path, CSV_COLUMNS, "philly-csv")
    report.rows_read = len(raw)
    t = timestamps(raw, "timestamp", path)
    dur = numeric(raw, "duration", path)
    gpus = numeric(raw, "num_gpus", path, integer=True)
    gpu_time = numeric(raw, "gpu_time", path, required=False)
    keep = gpus > 0
    report.exclude("zero_gpus", int((~keep).sum()))
    origin = t.min() if len(t) else 0.0
    idx = np.flatnonzero(keep)
    df = pd.DataFrame({
        "_row": idx,
        "job_id": pd.Series([f"philly-{i}" for i in idx], dtype="str"),
        "submit_time": t[idx] - origin,
        "num_gpus": gpus[idx].astype(np.int32),
        "duration": dur[idx],
        "vc": strings(raw, "cluster", path).to_numpy()[idx],
        "gpu_time": gpu_time[idx],
        "source": "philly-csv",
    })
    df.attrs["time_origin_s"] = float(origin)
    return df


def _sniff_json(text: str, header: frozenset[str] | None) -> bool:
    return header is None and '"attempts"' in text and ('"jobid"' in text or '"submitted_time"' in text)


def _sniff_csv(text: str, header: frozenset[str] | None) -> bool:
    return header is not None and {"timestamp", "duration", "num_gpus"} <= header


register(TraceFormat("philly-json", _sniff_json, read_philly_json,
                     "Philly raw cluster_job_log JSON (jobid, attempts, submitted_time …)"))
register(TraceFormat("philly-csv", _sniff_csv, read_philly_csv,
                     "Philly-derived CSV (timestamp, duration, num_gpus, gpu_time, cluster)"))
