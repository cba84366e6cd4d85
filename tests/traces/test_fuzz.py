"""Malformed input of every kind, fed to every loader: the only failure allowed is InputError.

Each example mutates a valid fixture (one cell / one JSON value replaced by something hostile,
or the file truncated at a random byte) or is random bytes outright. A loader may accept the
result (then it must be a valid canonical table) or raise `InputError`; any other exception —
a KeyError, a pandas error, an overflow — is a bug.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from traces.formats import load_with_report
from traces.io import normalize

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
CSV_FIXTURES = {"philly-csv": "philly_derived_small.csv", "helios": "helios_cluster_log.csv",
                "pollux": "pollux_workload.csv", "ones": "ones_trace.csv"}
JSON_FIXTURES = {"philly-json": "philly_cluster_job_log.json", "sensetime": "sensetime_poisson.json"}
ALL = {**CSV_FIXTURES, **JSON_FIXTURES}

HOSTILE = st.one_of(
    st.sampled_from(["", " ", "-1", "-0.5", "0", "1.5", "nan", "NaN", "inf", "-inf", "1e400", "99999999999",
                     "None", "null", "NA", '"', ",", "\n", "x,y", "2017-13-45 99:99:99", "2017-10-07",
                     "0x10", "1_000", "٣", "\x00", "\ufeff"]),
    st.text(max_size=12),
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | HOSTILE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(data: bytes, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "trace"
        p.write_bytes(data)
        for f in (fmt, "auto"):
            try:
                df, rep = load_with_report(p, f)
            except InputError as exc:
                msg = exc.format_message()
                assert msg.strip()
                continue
            # accepted: it must be a valid canonical table
            assert rep.rows_kept == len(df)
            assert (df["num_gpus"].to_numpy() >= 1).all()
            assert (df["submit_time"].to_numpy() >= 0).all()
            d_ = df["duration"].to_numpy()
            assert not (d_[~np.isnan(d_)] < 0).any()
            normalize(df)  # idempotent: still valid


@SETTINGS
@given(fmt=st.sampled_from(sorted(CSV_FIXTURES)), row=st.integers(0, 6), col=st.integers(0, 11), value=HOSTILE)
def test_csv_cell_mutation(fmt, row, col, value):
    lines = (FIX / CSV_FIXTURES[fmt]).read_text().splitlines()
    r = row % len(lines)
    cells = lines[r].split(",")
    cells[col % len(cells)] = value
    lines[r] = ",".join(cells)
    _check(("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass"), fmt)


@SETTINGS
@given(fmt=st.sampled_from(sorted(JSON_FIXTURES)), rec=st.integers(0, 10), key=st.integers(0, 40),
       value=JSON_VALUE, drop=st.booleans())
def test_json_value_mutation(fmt, rec, key, value, drop):
    data = json.loads((FIX / JSON_FIXTURES[fmt]).read_text())
    r = data[rec % len(data)]
    keys = sorted(r)
    k = keys[key % len(keys)]
    if drop:
        del r[k]
    else:
        r[k] = value
    _check(json.dumps(data).encode("utf-8", errors="surrogatepass"), fmt)


@SETTINGS
@given(fmt=st.sampled_from(sorted(JSON_FIXTURES)), rec=st.integers(0, 10), attempt_value=JSON_VALUE)
def test_philly_attempt_mutation(fmt, rec, attempt_value):
    data = json.loads((FIX / "philly_cluster_job_log.json").read_text())
    r = data[rec % len(data)]
    if r["attempts"]:
        r["attempts"][0]["detail" if rec % 2 else "start_time"] = attempt_value
    else:
        r["attempts"] = attempt_value
    _check(json.dumps(data).encode("utf-8", errors="surrogatepass"), "philly-json")


@SETTINGS
@given(fmt=st.sampled_from(sorted(ALL)), cut=st.floats(0.0, 1.0))
def test_truncated_files(fmt, cut):
    raw = (FIX / ALL[fmt]).read_bytes()
    _check(raw[: int(len(raw) * cut)], fmt)


@SETTINGS
@given(fmt=st.sampled_from(sorted(ALL) + ["parquet"]), data=st.binary(max_size=200))
def test_random_bytes(fmt, data):
    _check(data, fmt)
