"""The canonical table: normalize validates and casts; write/read round-trip byte-identically."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cosim.atomic import read_metadata, write_parquet
from cosim.errors import InputError
from traces.io import normalize, read_jobs, to_table, write_jobs
from traces.schema import JOB_SCHEMA, JOB_SCHEMA_VERSION


def _jobs(**over):
    base = {"job_id": ["a", "b", "c"], "submit_time": [10.0, 0.0, 5.0], "num_gpus": [1, 8, 2],
            "duration": [100.0, np.nan, 3.0]}
    base.update(over)
    return pd.DataFrame(base)


def test_normalize_casts_sorts_and_adds_all_columns():
    df = normalize(_jobs(num_gpus=["1", 8.0, 2], model=["resnet18", None, "bert"]))
    assert list(df.columns[: len(JOB_SCHEMA.names)]) == JOB_SCHEMA.names
    assert df["job_id"].tolist() == ["b", "c", "a"]  # sorted by submit_time
    assert df["num_gpus"].dtype == np.int32 and df["num_gpus"].tolist() == [8, 2, 1]
    assert str(df["global_batch"].dtype) == "Int32" and df["global_batch"].isna().all()
    assert df["model"].tolist()[1:] == ["bert", "resnet18"] and pd.isna(df["model"].iloc[0])


@pytest.mark.parametrize(
    "over,field,row",
    [
        ({"num_gpus": [1, 0, 2]}, "num_gpus", 2),
        ({"num_gpus": [1, 1.5, 2]}, "num_gpus", 2),
        ({"num_gpus": [1, "x", 2]}, "num_gpus", 2),
        ({"duration": [1.0, -1.0, 2.0]}, "duration", 2),
        ({"submit_time": [1.0, np.inf, 2.0]}, "submit_time", 2),
        ({"job_id": ["a", "a", "c"]}, "job_id", 2),
        ({"job_id": ["a", None, "c"]}, "job_id", 2),
        ({"start_time": [0.0, 5.0, 1.0], "end_time": [1.0, 4.0, 2.0]}, "end_time", 2),
        ({"min_gpus": [1, 4, 1], "max_gpus": [1, 2, 1]}, "max_gpus", 2),
    ],
)
def test_normalize_rejects_invalid_rows_naming_row_and_field(over, field, row):
    with pytest.raises(InputError) as e:
        normalize(_jobs(**over), source="t.parquet")
    msg = e.value.format_message()
    assert msg.startswith(f"t.parquet: row {row}: field '{field}'"), msg


def test_missing_required_column():
    with pytest.raises(InputError, match="field 'num_gpus'"):
        normalize(pd.DataFrame({"job_id": ["a"], "submit_time": [0.0]}))


def test_roundtrip_and_byte_identical(tmp_path):
    df = normalize(_jobs(model=["m", None, "n"], global_batch=[32, None, 64], dataset=["d", None, None]))
    p1, p2 = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_jobs(df, p1)
    write_jobs(df.sample(frac=1.0, random_state=3), p2)  # row order does not matter
    assert p1.read_bytes() == p2.read_bytes()
    back = read_jobs(p1)
    pd.testing.assert_frame_equal(back, df)
    assert read_metadata(p1)["job_schema_version"] == JOB_SCHEMA_VERSION
    assert pq.read_schema(p1).field("num_gpus").type == pa.int32()
    assert pq.read_schema(p1).field("dataset").type == pa.string()


def test_refuses_unknown_major_version(tmp_path):
    df = normalize(_jobs())
    p = tmp_path / "v2.parquet"
    write_parquet(to_table(df), p, {"job_schema_version": "2.0"})
    with pytest.raises(InputError, match="job_schema_version.*major version 1"):
        read_jobs(p)
    write_parquet(to_table(df), p, {"job_schema_version": "1.7"})  # same major: fine
    assert len(read_jobs(p)) == 3


def test_read_jobs_rejects_non_parquet(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_text("not parquet")
    with pytest.raises(InputError, match="x.parquet: expected a Parquet job table"):
        read_jobs(p)
    with pytest.raises(InputError, match="expected an existing file"):
        read_jobs(tmp_path / "missing.parquet")


def test_write_invalid_leaves_no_file(tmp_path):
    with pytest.raises(InputError):
        write_jobs(_jobs(duration=[1.0, -5.0, 1.0]), tmp_path / "bad.parquet")
    assert list(tmp_path.iterdir()) == []
