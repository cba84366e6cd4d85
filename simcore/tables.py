"""Output tables as Arrow without pandas: the columns of `simcore.metrics` → `pyarrow.Table`.

Importing pandas costs ≈ 0.2 s of a cached `cosim simulate`'s ≈ 1 s CPU, and the run itself needs only to hold its result tables until they are
written. The metrics therefore build plain columns (numpy arrays, or one dict per summary row),
this module turns them into Arrow tables, and `cosim.atomic.write_parquet` writes those; pandas
is imported only when a caller asks a `RunResult` for DataFrames (`to_pandas`).

The files must stay what they were when the tables came from `pa.Table.from_pandas(df,
preserve_index=False)`: the same Arrow types (pandas' `str` columns are `large_string`) and the
same `pandas` schema metadata, which lets `pandas.read_parquet` restore the dtypes. `arrow_table`
writes that metadata the way pyarrow's `pandas_compat.construct_metadata` does for the dtypes these
tables hold (float64, int32, int64, bool, str); `tests/simcore/test_tables.py` checks it against
`from_pandas` itself, so a pandas or pyarrow release that changes it fails there, not silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from cosim.arrow_columns import pandas_version, to_arrow, to_numpy

#: Arrow type → (pandas_type, numpy_type) as `from_pandas` records them for these dtypes
_PANDAS_TYPES = {
    pa.float64(): ("float64", "float64"),
    pa.int32(): ("int32", "int32"),
    pa.int64(): ("int64", "int64"),
    pa.bool_(): ("bool", "bool"),
    pa.large_string(): ("object", "str"),
}


def arrow_table(columns: Mapping[str, Any]) -> pa.Table:
    """An Arrow table of `columns` (name → 1-D array, in order) carrying the `pandas` metadata
    `pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)` writes."""
    arrays = [to_arrow(v) for v in columns.values()]
    names = list(columns)
    meta = []
    for name, arr in zip(names, arrays):
        kinds = _PANDAS_TYPES.get(arr.type)
        if kinds is None:
            raise TypeError(f"column {name!r}: Arrow type {arr.type} has no recorded pandas metadata")
        meta.append({"name": name, "field_name": name, "pandas_type": kinds[0], "numpy_type": kinds[1],
                     "metadata": None})
    pandas_meta = {"index_columns": [], "column_indexes": [], "columns": meta, "attributes": {},
                   "creator": {"library": "pyarrow", "version": pa.__version__}, "pandas_version": pandas_version()}
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(
        {b"pandas": json.dumps(pandas_meta).encode("utf8")})


def rows_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """An Arrow table of one dict per row (the summary), as `from_pandas(pd.DataFrame(rows))` makes it.

    Columns whose values are all bools, all ints, all floats (ints mixed in: float64, as pandas
    infers) or all strings, present in every row, are built here (`_typed`); any other shape (a
    key some rows lack, None, a numpy int32, another type) goes through pandas so that its
    inference stays the reference."""
    names: list[str] = []
    for r in rows:
        names.extend(k for k in r if k not in names)
    cols: dict[str, Any] = {}
    for name in names:
        vals = [r.get(name, _MISSING) for r in rows]
        col = _typed(vals)
        if col is None:
            import pandas as pd

            return pa.Table.from_pandas(pd.DataFrame(list(rows)), preserve_index=False)
        cols[name] = col
    return arrow_table(cols)


_MISSING = object()


def _typed(vals: list) -> np.ndarray | None:
    """`vals` as one numpy column of the type pandas infers for them, or None for anything but
    Python bools, ints and floats (np.bool_, np.int64, np.float64 alike) and strs: pandas keeps
    other numpy scalars' own dtypes (np.int32 values make an int32 column)."""
    if not vals or any(v is _MISSING or v is None for v in vals):
        return None
    if all(isinstance(v, (bool, np.bool_)) for v in vals):
        return np.array(vals, dtype=bool)
    if not all(isinstance(v, (str, int, float, np.int64)) and not isinstance(v, (bool, np.bool_)) for v in vals):
        return None
    if all(isinstance(v, (int, np.int64)) for v in vals):
        return np.array(vals, dtype=np.int64)
    if all(isinstance(v, (int, float, np.int64)) for v in vals):
        return np.array(vals, dtype=np.float64)
    if all(isinstance(v, str) for v in vals):
        return np.array(vals, dtype=object)
    return None


def to_pandas(table: pa.Table) -> Any:
    """The DataFrame `table` was (or would have been) made from."""
    return table.to_pandas()


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of `table` as dicts of numpy values (NaN where null), read without pandas
    (`Table.to_pylist` imports it)."""
    cols = {name: to_numpy(table.column(name)) for name in table.column_names}
    return [{k: v[i] for k, v in cols.items()} for i in range(table.num_rows)]
