"""numpy columns ↔ Arrow arrays through their buffers, without pandas.

pyarrow imports pandas as soon as it converts a numpy array or reads one back (`pa.array`,
`Array.to_numpy`, `to_pylist` all ask its pandas shim whether the object is a pandas one, which
imports pandas, ≈ 0.2 s CPU). The run's output tables (`simcore.tables`) and the trace cache
(`traces.cache`) only ever hold float64, int32, int64, bool and string columns, which this module
builds from, and reads into, numpy buffers directly: the bytes are the same Arrow layout
`pa.array(..., from_pandas=True)` produces, so the tables compare equal (`Table.equals`) and write
the same Parquet files (`tests/simcore/test_tables.py`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

_NUMERIC = {np.dtype(np.float64): pa.float64(), np.dtype(np.int32): pa.int32(), np.dtype(np.int64): pa.int64()}
_FROM_ARROW = {pa.float64(): np.float64, pa.int32(): np.int32, pa.int64(): np.int64}


def _bitmap(valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(valid.astype(bool), bitorder="little"))


def to_arrow(values: Any) -> pa.Array:
    """A 1-D numpy column as an Arrow array, as `pa.array(values, from_pandas=True)` makes it:
    float64/int32/int64 as is with NaN as null, bool bit-packed, strings (object or unicode
    arrays; None and NaN as null) as large_string. Other dtypes: TypeError."""
    a = np.asarray(values)
    n = int(a.shape[0])
    if a.dtype in _NUMERIC:
        a = np.ascontiguousarray(a)
        valid = None
        if a.dtype.kind == "f":
            nan = np.isnan(a)
            if nan.any():
                valid = _bitmap(~nan)
        return pa.Array.from_buffers(_NUMERIC[a.dtype], n, [valid, pa.py_buffer(a)])
    if a.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), n, [None, _bitmap(a)])
    if a.dtype.kind == "U":  # strings only, no missing values
        return _unicode_to_arrow(a)
    if a.dtype.kind == "O":
        missing = np.array([v is None or (isinstance(v, float) and math.isnan(v)) for v in a.tolist()], bool)
        encoded = [b"" if m else str(v).encode("utf-8") for v, m in zip(a.tolist(), missing)]
        for v, m in zip(a.tolist(), missing):
            if not m and not isinstance(v, str):
                raise TypeError(f"a string column holds {type(v).__name__} {v!r}")
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        valid = _bitmap(~missing) if missing.any() else None
        return pa.Array.from_buffers(pa.large_string(), n,
                                     [valid, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])
    raise TypeError(f"no Arrow column for numpy dtype {a.dtype}")


def _unicode_to_arrow(a: np.ndarray) -> pa.Array:
    """A numpy unicode array as large_string, built in array operations (no Python object per
    row, and no `pa.array`, which imports pandas): each row's UTF-8 bytes up to its length."""
    n = int(a.shape[0])
    width = a.dtype.itemsize // 4
    codes = np.ascontiguousarray(a).view(np.uint32).reshape(n, width)
    if n == 0 or width == 0 or int(codes.max()) < 0x80:  # ASCII: a code point is a byte
        raw, lengths = codes.astype(np.uint8), np.char.str_len(a)
    else:
        encoded = np.char.encode(a, "utf-8")
        raw, lengths = encoded.view(np.uint8).reshape(n, encoded.dtype.itemsize), np.char.str_len(encoded)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = raw[np.arange(raw.shape[1]) < lengths[:, None]]
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _valid(arr: pa.Array) -> np.ndarray:
    """Validity of each slot (all True when the array has no nulls)."""
    n = len(arr)
    buf = arr.buffers()[0]
    if arr.null_count == 0 or buf is None:
        return np.ones(n, bool)
    bits = np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")
    return bits[arr.offset:arr.offset + n].astype(bool)


def to_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An Arrow column as a writable numpy array, as pandas' `to_numpy` sees the column:
    numbers as is (an integer column with nulls: float64 with NaN), bools as bool, strings as an
    object array with NaN where null. Other types fall back to pyarrow's own conversion."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n, typ = len(arr), arr.type
    if typ in _FROM_ARROW:
        out = np.frombuffer(arr.buffers()[1], _FROM_ARROW[typ], count=n, offset=arr.offset *
                            np.dtype(_FROM_ARROW[typ]).itemsize).copy()
        if arr.null_count:
            out = out.astype(np.float64)
            out[~_valid(arr)] = np.nan
        return out
    if typ == pa.bool_() and arr.null_count == 0:
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little")
        return bits[arr.offset:arr.offset + n].astype(bool)
    if typ in (pa.large_string(), pa.string()):
        off = np.frombuffer(arr.buffers()[1], np.int64 if typ == pa.large_string() else np.int32,
                            count=n + 1, offset=arr.offset * (8 if typ == pa.large_string() else 4))
        data = arr.buffers()[2]
        raw = b"" if data is None else data.to_pybytes()
        valid = _valid(arr)
        out = np.empty(n, object)
        for i in range(n):
            out[i] = raw[off[i]:off[i + 1]].decode("utf-8") if valid[i] else np.nan
        return out
    if typ == pa.null():
        return np.full(n, np.nan, dtype=object)
    a = arr.to_numpy(zero_copy_only=False)  # any other type: pyarrow's conversion (imports pandas)
    return a.copy() if not a.flags.writeable else a


@lru_cache(maxsize=1)
def pandas_version() -> str:
    """The installed pandas' version without importing pandas: from the name of its
    `pandas-<version>.dist-info` folder beside the package, else `importlib.metadata` (whose first
    call costs ≈ 0.03 s CPU: it parses every distribution's metadata). "absent" without pandas."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("pandas")
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    site = os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))
    try:
        names = [n for n in os.listdir(site) if n.startswith("pandas-") and n.endswith(".dist-info")]
    except OSError:
        names = []
    if len(names) == 1:
        return names[0][len("pandas-"):-len(".dist-info")]
    from importlib.metadata import version

    return version("pandas")
