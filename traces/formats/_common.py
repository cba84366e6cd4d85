"""Helpers shared by the loaders: reading raw CSV/JSON with errors that name file, row, field.

Row numbers in CSV errors count data rows from 1 (the header is not a row); JSON errors say
"record N", counting the records of the top-level list from 1.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from cosim.errors import InputError

MISSING_STRINGS = ("", "None", "none", "NA", "N/A", "nan", "NaN", "null")


def record_error(path: Path, i: int, field: str, expected: str, got: object = None) -> InputError:
    """InputError for the i-th (0-based) record of a JSON list."""
    msg = f"{path}: record {i + 1}: field '{field}': expected {expected}"
    if got is not None:
        msg += f", got {got!r}"[:200]
    return InputError(msg)


def row_error(path: Path, i: int, field: str, expected: str, got: object = None) -> InputError:
    """InputError for the i-th (0-based) data row of a CSV."""
    return InputError.at(path, row=i + 1, field=field, expected=expected,
                         got=None if got is None else (got if not isinstance(got, str) else got[:100]))


def read_csv(path: Path, required: Iterable[str], fmt: str) -> pd.DataFrame:
    """All columns as strings (missing → NaN); the required columns must be in the header."""
    try:
        df = pd.read_csv(path, dtype=str, skipinitialspace=True, na_values=list(MISSING_STRINGS),
                         keep_default_na=False, on_bad_lines="error", encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError.at(path, expected="an existing file") from None
    except pd.errors.EmptyDataError:
        raise InputError.at(path, expected=f"a {fmt} CSV with a header row", got="an empty file") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError.at(path, expected=f"a well-formed {fmt} CSV", detail=first[:200]) from None
    df.columns = [str(c).strip() for c in df.columns]
    for col in required:
        if col not in df.columns:
            raise InputError.at(path, field=col, expected=f"a '{col}' column in the {fmt} header",
                                got=",".join(df.columns)[:200])
    return df


def numeric(df: pd.DataFrame, col: str, path: Path, *, required: bool = True, integer: bool = False,
            nonneg: bool = True) -> np.ndarray:
    """A column as float64 (NaN = missing), checked: number, finite, ≥ 0, whole if `integer`."""
    s = df[col]
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    present = s.notna().to_numpy()
    what = ("a non-negative integer" if integer else "a non-negative number") if nonneg else "a number"
    bad = present & ~np.isfinite(x)
    if required:
        bad |= ~present
    safe = np.where(np.isfinite(x), x, 0.0)
    if nonneg:
        bad |= safe < 0
    if integer:
        bad |= (safe != np.floor(safe)) | (safe > np.iinfo(np.int32).max)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise row_error(path, i, col, what + (" (required)" if not present[i] else ""),
                        None if not present[i] else s.iloc[i])
    return x


def timestamps(df: pd.DataFrame, col: str, path: Path, *, required: bool = True) -> np.ndarray:
    """A date-time column ('2017-10-07 01:12:09', ISO 8601) as float epoch seconds (NaN = missing)."""
    s = df[col]
    present = s.notna().to_numpy()
    try:
        t = pd.to_datetime(s, format="ISO8601", errors="coerce")
    except ValueError:  # pandas refuses a column mixing time zones
        t = _mixed_zones(s, path, col)
    if getattr(t.dt, "tz", None) is not None:
        t = t.dt.tz_convert("UTC").dt.tz_localize(None)
    ns = t.to_numpy(dtype="datetime64[us]")
    bad = present & np.isnat(ns)
    if required:
        bad |= ~present
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise row_error(path, i, col, "a date-time like 2017-10-07 01:12:09",
                        None if not present[i] else s.iloc[i])
    sec = ns.astype("int64").astype(np.float64) / 1e6
    sec[np.isnat(ns)] = np.nan
    return sec


_ZONE = r"(?:Z|[+-]\d\d(?::?\d\d)?)\s*$"


def _mixed_zones(s: pd.Series, path: Path, col: str) -> pd.Series:
    """Times with different UTC offsets → UTC; zoned mixed with zone-less times is ambiguous → error."""
    text = s.astype("string").str.strip()
    zoned = text.str.contains(_ZONE, regex=True).fillna(False).to_numpy(dtype=bool)
    present = s.notna().to_numpy()
    if zoned[present].any() and not zoned[present].all():
        first = bool(zoned[np.flatnonzero(present)[0]])
        i = int(np.flatnonzero(present & (zoned != first))[0])
        raise row_error(path, i, col, "times that all carry a time zone or all carry none "
                        f"(row {int(np.flatnonzero(present)[0]) + 1} {'has' if first else 'has none'})", s.iloc[i])
    try:
        return pd.to_datetime(s, format="ISO8601", errors="coerce", utc=True)
    except ValueError as exc:
        raise InputError.at(path, field=col, expected="date-times like 2017-10-07 01:12:09",
                            detail=str(exc).splitlines()[0][:200]) from None


def strings(df: pd.DataFrame, col: str, path: Path, *, required: bool = False) -> pd.Series:
    s = df[col].str.strip() if col in df.columns else pd.Series([None] * len(df), dtype="str")
    if required:
        bad = (s.isna() | (s == "")).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise row_error(path, i, col, "a non-empty value (required)")
    return s


def load_json_list(path: Path, fmt: str) -> list[Any]:
    """The top-level JSON list of a file, or an InputError saying where parsing failed."""
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise InputError.at(path, expected="an existing file") from None
    except json.JSONDecodeError as exc:
        raise InputError.at(path, expected=f"valid JSON ({fmt})",
                            detail=f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError.at(path, expected=f"valid UTF-8 JSON ({fmt})", detail=type(exc).__name__) from None
    if not isinstance(data, list):
        raise InputError.at(path, expected=f"a JSON list of job records ({fmt})", got=type(data).__name__)
    return data


def json_time(value: object, path: Path, i: int, field: str, required: bool = False) -> float | None:
    """'2017-10-07 01:12:09' → seconds since the epoch; None/'None'/'' → None (or error if required)."""
    if value is None or (isinstance(value, str) and value.strip() in MISSING_STRINGS):
        if required:
            raise record_error(path, i, field, "a date-time like 2017-10-07 01:12:09 (required)")
        return None
    if not isinstance(value, str):
        raise record_error(path, i, field, "a date-time string like 2017-10-07 01:12:09", value)
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise record_error(path, i, field, "a date-time like 2017-10-07 01:12:09", value) from None
    if dt.tzinfo is not None:
        return dt.timestamp()
    return (dt - datetime(1970, 1, 1)).total_seconds()


def json_number(value: object, path: Path, i: int, field: str, *, required: bool = False,
                integer: bool = False) -> float | None:
    """A JSON number or numeric string (SenseTime stores numbers as strings); must be finite, ≥ 0."""
    if value is None or (isinstance(value, str) and value.strip() in MISSING_STRINGS):
        if required:
            raise record_error(path, i, field, "a number (required)")
        return None
    what = "a non-negative integer" if integer else "a non-negative number"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise record_error(path, i, field, what, value)
    if isinstance(value, str) and not value.isascii():  # float() reads "٣" (Arabic-Indic 3) as 3.0
        raise record_error(path, i, field, what + " in ASCII digits", value)
    try:
        x = float(value)
    except (ValueError, OverflowError):
        raise record_error(path, i, field, what, value) from None
    if not np.isfinite(x) or x < 0 or (integer and (x != int(x) or x > np.iinfo(np.int32).max)):
        raise record_error(path, i, field, what, value)
    return x


def json_string(value: object, path: Path, i: int, field: str, *, required: bool = False) -> str | None:
    """A JSON scalar as a stripped string; missing → None (error if required); list/object → error."""
    if isinstance(value, (dict, list)):
        raise record_error(path, i, field, "a string", value)
    text = None if value is None else str(value).strip()
    if text is None or text in MISSING_STRINGS:
        if required:
            raise record_error(path, i, field, "a non-empty value (required)")
        return None
    return None if text in MISSING_STRINGS else text
