"""Fuzz the trace loaders (traces/formats/*, traces/io.py) through `traces.formats.load_with_report`.

Cases: one CSV cell or JSON value of a valid fixture replaced by a hostile value; targeted
mutations the issue found accepted or crashing (a Helios job starting before its submit time,
a SenseTime count written in non-ASCII digits such as "٣", Philly times in mixed time zones,
`inf`/`nan` in numeric fields); truncated files; random bytes under every format.

Checks on an accepted trace (anything else accepted is nonsense): every row has a non-empty,
unique job id; `num_gpus` is an integer ≥ 1; `submit_time` is finite and ≥ 0 and sorted;
`duration`, `start_time`, `end_time` are NaN or finite and ≥ 0; `end_time ≥ start_time`;
`start_time ≥ submit_time` in every format. A rejection must be one `CosimError` line.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz._harness import HOSTILE_TEXT, SETTINGS, outcome
from traces.formats import load_with_report

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
CSV = {"philly-csv": "philly_derived_small.csv", "helios": "helios_cluster_log.csv",
       "pollux": "pollux_workload.csv", "ones": "ones_trace.csv"}
JSON = {"philly-json": "philly_cluster_job_log.json", "sensetime": "sensetime_poisson.json"}
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5)


def valid_jobs(fmt: str):
    def check(result) -> None:
        df, rep = result
        assert rep.rows_kept == len(df)
        ids = df["job_id"].astype(str)
        assert ids.is_unique and (ids.str.strip() != "").all()
        gpus = df["num_gpus"].to_numpy()
        assert np.issubdtype(gpus.dtype, np.integer) and (gpus >= 1).all()
        sub = df["submit_time"].to_numpy(dtype=float)
        assert np.isfinite(sub).all() and (sub >= 0).all() and (np.diff(sub) >= 0).all()
        for col in ("duration", "start_time", "end_time"):
            if col in df.columns:
                x = df[col].to_numpy(dtype=float)
                x = x[~np.isnan(x)]
                assert np.isfinite(x).all() and (x >= 0).all(), f"{col}: {x}"
        if "start_time" in df.columns and "end_time" in df.columns:
            s, e = df["start_time"].to_numpy(dtype=float), df["end_time"].to_numpy(dtype=float)
            assert not (e < s).any()
        if "start_time" in df.columns:  # every format: no job starts before it is submitted
            s = df["start_time"].to_numpy(dtype=float)
            assert not (s < sub).any(), "a job starting before its submit time was accepted"
    return check


def _load(data: bytes, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "trace"
        p.write_bytes(data)
        for f in (fmt, "auto"):
            outcome(lambda: load_with_report(p, f), valid_jobs(fmt if f == fmt else "any"))


@SETTINGS
@given(fmt=st.sampled_from(sorted(CSV)), row=st.integers(0, 8), col=st.integers(0, 11), value=HOSTILE_TEXT)
def test_csv_cell(fmt, row, col, value):
    lines = (FIX / CSV[fmt]).read_text().splitlines()
    r = row % len(lines)
    cells = lines[r].split(",")
    cells[col % len(cells)] = value
    lines[r] = ",".join(cells)
    _load(("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass"), fmt)


@SETTINGS
@given(fmt=st.sampled_from(sorted(JSON)), rec=st.integers(0, 10), key=st.integers(0, 40), value=JSON_VALUE,
       drop=st.booleans())
def test_json_value(fmt, rec, key, value, drop):
    data = json.loads((FIX / JSON[fmt]).read_text())
    r = data[rec % len(data)]
    k = sorted(r)[key % len(r)]
    if drop:
        del r[k]
    else:
        r[k] = value
    _load(json.dumps(data).encode("utf-8", errors="surrogatepass"), fmt)


@SETTINGS
@example(row=2, shift_s=-10, which="start_time")  # the case: a GPU job starting before its submit
@given(row=st.integers(1, 6), shift_s=st.integers(-30, 30) | st.integers(-10**6, 10**6), which=st.sampled_from(["start_time", "end_time"]))
def test_helios_time_order(row, shift_s, which):
    """Shift one job's start or end around its submit time (start before submit must be rejected)."""
    import pandas as pd

    df = pd.read_csv(FIX / CSV["helios"], dtype=str)
    i = (row - 1) % len(df)
    base = pd.Timestamp(df.loc[i, "submit_time"])
    df.loc[i, which] = str(base + pd.Timedelta(seconds=shift_s))
    _load(df.to_csv(index=False).encode(), "helios")


@SETTINGS
@example(rec=0, attempt=0, shift_s=-10, which="start_time")  # a Philly job starting before its submit time
@given(rec=st.integers(0, 10), attempt=st.integers(0, 3), shift_s=st.integers(-30, 30) | st.integers(-10**7, 10**7),
       which=st.sampled_from(["start_time", "end_time", "submitted_time"]))
def test_philly_json_time_order(rec, attempt, shift_s, which):
    """Move one Philly job's submit time, or one attempt's start or end, around the job's submit time."""
    from datetime import datetime, timedelta

    data = json.loads((FIX / JSON["philly-json"]).read_text())
    r = data[rec % len(data)]
    sub = datetime.fromisoformat(r["submitted_time"])
    at = (sub + timedelta(seconds=shift_s)).strftime("%Y-%m-%d %H:%M:%S")
    if which == "submitted_time" or not r.get("attempts"):
        r["submitted_time"] = at
    else:
        r["attempts"][attempt % len(r["attempts"])][which] = at
    _load(json.dumps(data).encode(), "philly-json")


@SETTINGS
@example(rec=0, key="max_parallelism", digits="٣")  # the case
@given(rec=st.integers(0, 10), key=st.sampled_from(["max_parallelism", "gpu_util", "duration", "arrival_time",
                                                     "total_iterations", "batchsize", "time_per_iteration"]),
       digits=st.sampled_from(["٣", "３", "٠", "۳", "१", "²", "3٣", "1e3", " 3 ", "3.0", "-3", "inf", "nan"]))
def test_sensetime_digits(rec, key, digits):
    """SenseTime stores numbers as strings: only ASCII decimal numbers may be read as numbers (fields the
    loader reads; node_num etc. are ignored)."""
    data = json.loads((FIX / JSON["sensetime"]).read_text())
    data[rec % len(data)][key] = digits

    def check(result) -> None:
        valid_jobs("sensetime")(result)
        assert digits.strip().isascii(), f"non-ASCII digits {digits!r} in {key} were read as a number"

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.json"
        p.write_text(json.dumps(data))
        outcome(lambda: load_with_report(p, "sensetime"), check)


@SETTINGS
@given(zones=st.lists(st.sampled_from(["", "+00:00", "+05:30", "-08:00", "Z"]), min_size=2, max_size=12),
       fmt=st.sampled_from(["philly-csv", "helios"]))
def test_mixed_time_zones(zones, fmt):
    """Times with mixed offsets convert to UTC; zone-less mixed with zoned times are rejected."""
    import pandas as pd

    df = pd.read_csv(FIX / CSV[fmt], dtype=str)
    cols = ["timestamp"] if fmt == "philly-csv" else ["submit_time", "start_time", "end_time"]
    for i in range(len(df)):
        for c in cols:
            if isinstance(df.loc[i, c], str) and df.loc[i, c][:1].isdigit():
                df.loc[i, c] = df.loc[i, c] + zones[i % len(zones)]
    _load(df.to_csv(index=False).encode(), fmt)


@SETTINGS
@given(fmt=st.sampled_from(sorted(CSV) + sorted(JSON)), cut=st.floats(0.0, 1.0), junk=st.binary(max_size=40))
def test_truncated_and_junk(fmt, cut, junk):
    raw = (FIX / {**CSV, **JSON}[fmt]).read_bytes()
    _load(raw[: int(len(raw) * cut)] + junk, fmt)


@SETTINGS
@given(fmt=st.sampled_from(sorted(CSV) + sorted(JSON) + ["parquet"]), data=st.binary(max_size=300))
def test_random_bytes(fmt, data):
    _load(data, fmt)
