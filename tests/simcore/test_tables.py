"""`simcore.tables` builds, without pandas, exactly the Arrow tables `pa.Table.from_pandas` made
from the run's DataFrames: same types, same values (NaN stored as null), same `pandas` schema
metadata. A pandas or pyarrow release that records the metadata differently fails here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from simcore.tables import arrow_table, rows_table


def _reference(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def _same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    assert got.equals(want)


def test_columns_table_equals_from_pandas():
    cols = {
        "job_id": np.array(["a", "b", "c"]).astype(str),
        "model": np.array(["resnet", "bert", ""], dtype=object),
        "num_gpus": np.array([1, 2, 4], np.int32),
        "events": np.array([10, 20, 30], np.int64),
        "jct_s": np.array([1.5, np.nan, 3.0]),
        "finished": np.array([True, False, True]),
    }
    _same(arrow_table(cols), _reference(pd.DataFrame(cols)))


def test_empty_columns_table_equals_from_pandas():
    cols = {"time_s": np.zeros(0), "busy_gpus": np.zeros(0, np.int32), "utilization": np.zeros(0)}
    _same(arrow_table(cols), _reference(pd.DataFrame(cols)))


def test_rows_table_equals_from_pandas():
    rows = [{"policy": "a", "jobs": 3, "stuck": False, "avg_jct_s": 1.0, "p99": float("nan"), "mixed": 1,
             "n64": np.int64(5), "f64": np.float64(0.5)},
            {"policy": "b", "jobs": 4, "stuck": np.bool_(True), "avg_jct_s": 2.5, "p99": 7.0, "mixed": 2.5,
             "n64": 6, "f64": 1.0}]
    got = rows_table(rows)
    _same(got, _reference(pd.DataFrame(rows)))
    assert got.schema.field("jobs").type == pa.int64() and got.schema.field("mixed").type == pa.float64()
    assert got.column("p99").null_count == 1  # NaN is pandas' missing value: stored as null


@pytest.mark.parametrize("rows", [
    [{"policy": "a", "x": 1.0}, {"policy": "b"}],  # a key one row lacks
    [{"policy": "a", "x": None}, {"policy": "b", "x": 2.0}],  # None
    [{"policy": "a", "x": np.int32(1)}, {"policy": "b", "x": np.int32(2)}],  # numpy int32: an int32 column
    [{"policy": "a", "x": np.float32(1)}, {"policy": "b", "x": 2.0}],  # a float32 among floats
])
def test_rows_table_other_shapes_follow_pandas(rows):
    _same(rows_table(rows), _reference(pd.DataFrame(rows)))


def test_unknown_arrow_type_is_refused():
    with pytest.raises(TypeError, match="float32"):
        arrow_table({"x": np.zeros(2, np.float32)})
