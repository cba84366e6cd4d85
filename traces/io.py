"""Reading, writing and validating the canonical job table (`traces.schema`).

Every loader ends in `normalize`, and every writer goes through it, so one function decides
what a valid job table is: canonical column names and Arrow types, required columns never
null, non-negative times, positive integer GPU counts, unique job ids, `submit_time ≤ start_time ≤ end_time`.

In memory the table is a pandas DataFrame with these dtypes, the same whichever source it came
from (so two tables built from the same jobs compare equal and write identical bytes):

* float64 columns: numpy ``float64`` with NaN for missing,
* ``num_gpus``: numpy ``int32`` (never missing); other int32 columns: pandas ``Int32`` (nullable),
* string columns: pandas ``str`` (NaN for missing).

Rows are ordered by ``submit_time`` (stable, so ties keep the source order) and the index is
0..n-1. On disk the Parquet file carries the schema version under ``cosim.job_schema_version``;
`read_jobs` refuses a file whose major version it does not know. No timestamps go into the
metadata, so the same table always gives the same bytes.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cosim.atomic import read_metadata, write_parquet
from cosim.errors import InputError
from traces.schema import ALL_COLUMNS, COLUMN_DOCS, EXTRA_COLUMNS, JOB_SCHEMA, JOB_SCHEMA_VERSION, REQUIRED

log = logging.getLogger(__name__)

_FIELDS: dict[str, pa.Field] = {f.name: f for f in list(JOB_SCHEMA) + list(EXTRA_COLUMNS)}
_INT32_MAX = np.iinfo(np.int32).max


@dataclass
class LoadReport:
    """What a loader read and what it left out, and why (rows valid but unusable).

    `excluded` maps a reason (e.g. ``"zero_gpus"``, ``"never_started"``) to a row count; the
    CLI prints it so nothing is dropped silently.
    """

    source: str
    format: str
    rows_read: int = 0
    rows_kept: int = 0
    excluded: dict[str, int] = field(default_factory=dict)

    def exclude(self, reason: str, count: int = 1) -> None:
        if count:
            self.excluded[reason] = self.excluded.get(reason, 0) + int(count)

    @property
    def rows_excluded(self) -> int:
        return sum(self.excluded.values())

    def summary(self) -> str:
        """One line: 'read N rows, kept K; excluded E (reason: n, ...)'."""
        text = f"{self.format}: read {self.rows_read} rows, kept {self.rows_kept}"
        if self.excluded:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(self.excluded.items()))
            text += f"; excluded {self.rows_excluded} ({reasons})"
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "format": self.format,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "excluded": dict(sorted(self.excluded.items())),
        }


def _fail(source: object, row: int | None, name: str, expected: str, got: object) -> InputError:
    # row is the 0-based position in the table; users count from 1
    return InputError.at(source, row=None if row is None else row + 1, field=name, expected=expected, got=got)


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _row(rows: np.ndarray | None, i: int) -> int:
    return int(rows[i]) if rows is not None else i


def _as_float(s: pd.Series, name: str, source: object, rows: np.ndarray | None = None) -> np.ndarray:
    """Column → float64 array; non-numeric non-missing values are an InputError."""
    if pd.api.types.is_bool_dtype(s.dtype) and len(s):
        raise _fail(source, _row(rows, 0), name, "a number", s.iloc[0])
    if pd.api.types.is_numeric_dtype(s.dtype):
        out = s.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        out = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.isnan(out) & s.notna().to_numpy()
        if bad.any():
            i = _first_bad(bad)
            raise _fail(source, _row(rows, i), name, "a number", s.iloc[i])
    bad = np.isinf(out)
    if bad.any():
        i = _first_bad(bad)
        raise _fail(source, _row(rows, i), name, "a finite number", s.iloc[i])
    return out


def _as_int32(s: pd.Series, name: str, source: object, positive: bool,
              rows: np.ndarray | None = None) -> pd.Series:
    """Column → pandas Int32; values must be whole numbers (≥ 1 if `positive`, else ≥ 0)."""
    x = _as_float(s, name, source, rows)
    present = ~np.isnan(x)
    lo = 1 if positive else 0
    what = "a positive integer" if positive else "a non-negative integer"
    safe = np.where(present, x, 0.0)
    bad = present & ((safe != np.floor(safe)) | (safe < lo) | (safe > _INT32_MAX))
    if bad.any():
        i = _first_bad(bad)
        raise _fail(source, _row(rows, i), name, what, s.iloc[i])
    return pd.Series(pd.arrays.IntegerArray(safe.astype(np.int32), ~present))


_STR_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)  # pandas' default "str" dtype


def arrow_str(arr: pa.Array | pa.ChunkedArray) -> pd.Series:
    """A pandas "str" Series wrapping an Arrow string array without a per-row Python loop."""
    from pandas.arrays import ArrowStringArray

    if not pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    return pd.Series(ArrowStringArray(arr, dtype=_STR_DTYPE))


def _as_str(s: pd.Series) -> pd.Series:
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.na_value is np.nan:
        return s.reset_index(drop=True)
    vals = s.astype(object).to_numpy()
    try:  # all strings (or missing): straight to Arrow
        return arrow_str(pa.array(vals, type=pa.large_string(), from_pandas=True))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        mask = s.isna().to_numpy()
        vals = np.array([None if m else str(v) for v, m in zip(vals, mask)], dtype=object)
        return arrow_str(pa.array(vals, type=pa.large_string(), from_pandas=True))


def normalize(df: pd.DataFrame, source: str | os.PathLike | None = None, *,
              row_numbers: np.ndarray | None = None) -> pd.DataFrame:
    """Cast `df` to the canonical schema (+ known extra columns) and validate it.

    Unknown columns are dropped (logged); missing optional columns are added as all-missing.
    `source` names the file in error messages. Raises `InputError` naming the row (1-based,
    in the order of `df`, or `row_numbers[i]` + 1 when a loader passes the source positions of
    the rows it kept) and the field for: a missing required column or value, a
    non-numeric or infinite number, a negative submit/duration/start/end time, a GPU count
    that is not a positive integer, a duplicate job id, or an end before the start.
    """
    src = source if source is not None else "job table"
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError.at(src, field=missing[0], expected="a column of the canonical job table")
    unknown = [c for c in df.columns if c not in _FIELDS]
    if unknown:
        log.info("%s: dropping non-canonical columns %s", src, unknown)
    df = df.reset_index(drop=True)
    rows = None if row_numbers is None else np.asarray(row_numbers)
    out: dict[str, object] = {}
    for name in ALL_COLUMNS:
        if name not in df.columns:
            if name in JOB_SCHEMA.names:
                out[name] = None  # filled below with the right all-missing dtype
            continue
        s = df[name]
        typ = _FIELDS[name].type
        if name in REQUIRED and s.isna().any():
            i = _first_bad(s.isna().to_numpy())
            raise _fail(src, _row(rows, i), name, "a value (required)", None)
        if pa.types.is_floating(typ):
            out[name] = _as_float(s, name, src, rows)
        elif pa.types.is_integer(typ):
            positive = name in ("num_gpus", "min_gpus", "max_gpus", "global_batch", "max_parallelism")
            out[name] = _as_int32(s, name, src, positive=positive, rows=rows)
        else:
            out[name] = _as_str(s)
    n = len(df)
    for name in JOB_SCHEMA.names:
        if out[name] is None:
            typ = _FIELDS[name].type
            if pa.types.is_floating(typ):
                out[name] = np.full(n, np.nan)
            elif pa.types.is_integer(typ):
                out[name] = pd.Series(pd.arrays.IntegerArray(np.zeros(n, np.int32), np.ones(n, bool)))
            else:
                out[name] = arrow_str(pa.nulls(n, pa.large_string()))
    for name in ("submit_time", "duration", "start_time", "end_time", "gpu_time", "total_iterations",
                 "epochs", "time_per_iteration", "epoch_size"):
        if name in out:
            x = out[name]
            bad = x < 0  # NaN compares False
            if bad.any():
                i = _first_bad(bad)
                raise _fail(src, _row(rows, i), name, "a non-negative number", float(x[i]))
    if "start_time" in out and "end_time" in out:
        bad = out["end_time"] < out["start_time"]
        if bad.any():
            i = _first_bad(bad)
            raise _fail(src, _row(rows, i), "end_time", f"end_time ≥ start_time ({out['start_time'][i]})",
                        float(out["end_time"][i]))
    if "start_time" in out and "submit_time" in out:  # every format: a job cannot start before it is submitted
        bad = out["start_time"] < out["submit_time"]
        if bad.any():
            i = _first_bad(bad)
            raise _fail(src, _row(rows, i), "start_time", f"start_time ≥ submit_time ({out['submit_time'][i]})",
                        float(out["start_time"][i]))
    mn, mx = out["min_gpus"], out["max_gpus"]
    bad = (mn.notna() & mx.notna() & (mn.fillna(0) > mx.fillna(0))).to_numpy(dtype=bool)
    if bad.any():
        i = _first_bad(bad)
        raise _fail(src, _row(rows, i), "max_gpus", f"max_gpus ≥ min_gpus ({mn.iloc[i]})", int(mx.iloc[i]))
    ids = out["job_id"]
    empty = (ids.str.strip() == "").to_numpy(dtype=bool, na_value=False)
    if empty.any():
        i = _first_bad(empty)
        raise _fail(src, _row(rows, i), "job_id", "a non-empty job id", ids.iloc[i])
    dup = np.zeros(n, dtype=bool) if ids.is_unique else ids.duplicated().to_numpy()
    if dup.any():
        i = _first_bad(dup)
        raise _fail(src, _row(rows, i), "job_id", "a unique job id", ids.iloc[i])
    out["num_gpus"] = out["num_gpus"].to_numpy(dtype=np.int32)
    res = pd.DataFrame({k: (v.reset_index(drop=True) if isinstance(v, pd.Series) else v)
                        for k, v in out.items()})
    order = np.argsort(res["submit_time"].to_numpy(), kind="stable")
    if not np.array_equal(order, np.arange(n)):
        res = res.iloc[order].reset_index(drop=True)
    return res


def to_table(df: pd.DataFrame) -> pa.Table:
    """The Arrow table of a normalized job table: canonical columns, then present extras."""
    arrays, fields = [], []
    for name in ALL_COLUMNS:
        if name not in df.columns:
            continue
        f = _FIELDS[name]
        s = df[name]
        if pa.types.is_integer(f.type):
            arr = pa.array(s.to_numpy(dtype=np.float64, na_value=np.nan), from_pandas=True).cast(f.type) \
                if s.isna().any() else pa.array(s.to_numpy(dtype=np.int32), type=f.type)
        elif pa.types.is_floating(f.type):
            arr = pa.array(s.to_numpy(dtype=np.float64), type=f.type, from_pandas=True)
        else:
            arr = pa.array(s.to_numpy(dtype=object), type=f.type, from_pandas=True)
        arrays.append(arr)
        fields.append(f)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_jobs(df: pd.DataFrame, path: str | os.PathLike,
               metadata: Mapping[str, object] | None = None) -> Path:
    """Validate `df` and write it atomically as Parquet with the schema version in metadata.

    Deterministic: the same jobs (in any row order with distinct submit times, any dtypes
    that normalize to the same values) give byte-identical files; the metadata holds only
    what the caller passes plus ``job_schema_version``.
    """
    table = to_table(normalize(df, source=str(path)))
    meta: dict[str, object] = {"job_schema_version": JOB_SCHEMA_VERSION}
    if metadata:
        meta.update(metadata)
    return write_parquet(table, path, meta, columns=COLUMN_DOCS)


def _major(version: str) -> str:
    return str(version).split(".")[0]


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    """Read a canonical job table written by `write_jobs` and validate it.

    Refuses (InputError) a file that is not Parquet, or whose ``cosim.job_schema_version`` has a
    major version other than this code's; a file without the key is accepted if its columns
    validate (logged), so tables written by other tools can be read.
    """
    p = Path(path)
    try:
        meta = read_metadata(p)
        table = pq.read_table(p)
    except FileNotFoundError:
        raise InputError.at(p, expected="an existing file") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InputError.at(p, expected="a Parquet job table", detail=first) from None
    version = meta.get("job_schema_version")
    if version is None:
        log.warning("%s: no cosim.job_schema_version in metadata; validating columns only", p)
    elif _major(str(version)) != _major(JOB_SCHEMA_VERSION):
        raise InputError.at(p, field="cosim.job_schema_version",
                            expected=f"major version {_major(JOB_SCHEMA_VERSION)} (this cosim reads "
                                     f"job schema {JOB_SCHEMA_VERSION})", got=version)
    mapper = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype()}.get
    df = table.to_pandas(types_mapper=mapper)
    return normalize(df, source=str(p))
