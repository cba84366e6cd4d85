"""Every column `cosim simulate` writes is in the glossary (`cosim.columns`) and carries its unit
in the Parquet schema, so an output file explains itself and the README's column tables stay whole."""

from __future__ import annotations

import pyarrow.parquet as pq

from cosim.columns import COLUMNS
from experiments.runner import RunConfig, run


def test_every_output_column_has_a_unit(tmp_path):
    run(RunConfig(trace="synth:philly:12", cluster="dgx-a100", policies=("fifo",), seed=0), tmp_path)
    files = [tmp_path / "summary.parquet", tmp_path / "fifo" / "jobs.parquet", tmp_path / "fifo" / "timeline.parquet"]
    for f in files:
        schema = pq.read_schema(f)
        missing = [n for n in schema.names if n not in COLUMNS]
        assert not missing, f"{f.name}: columns without a glossary entry in cosim/columns.py: {missing}"
        for name in schema.names:
            meta = schema.field(name).metadata or {}
            assert meta.get(b"unit", b"").decode() == COLUMNS[name][0], (f.name, name)


def test_reclaim_log_columns_have_units(tmp_path):
    run(RunConfig(trace="synth:philly-sia:40:1h", cluster="aryl", policies=("fifo",), seed=0,
                  load_series="diurnal:0.1"), tmp_path)
    schema = pq.read_schema(tmp_path / "fifo" / "reclaims.parquet")
    missing = [n for n in schema.names if n not in COLUMNS]
    assert not missing, f"reclaims.parquet: columns without a glossary entry in cosim/columns.py: {missing}"
    assert all((schema.field(n).metadata or {}).get(b"unit") for n in schema.names)
