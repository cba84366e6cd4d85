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


def test_decisions_param_and_converted_trace_columns_have_units(tmp_path):
    """decisions.parquet, a sweep's policy-parameter columns and a converted trace explain their
    columns too; a trace's `max_gpus` (a GPU count) keeps its own meaning, not the summary's."""
    import pandas as pd
    import pyarrow as pa

    from cosim.atomic import write_parquet
    from traces.io import write_jobs
    from traces.schema import ALL_COLUMNS, COLUMN_DOCS

    run(RunConfig(trace="synth:philly:12", cluster="dgx-a100", policies=("fifo",), seed=0, write_decisions=True),
        tmp_path / "run")
    schema = pq.read_schema(tmp_path / "run" / "fifo" / "decisions.parquet")
    for name in schema.names:
        assert (schema.field(name).metadata or {}).get(b"unit"), ("decisions.parquet", name)
    write_parquet(pa.table({"param_interval_s": [60.0], "param_promote_knob": [2]}), tmp_path / "p.parquet")
    schema = pq.read_schema(tmp_path / "p.parquet")
    assert schema.field("param_interval_s").metadata[b"unit"] == b"s"
    assert schema.field("param_promote_knob").metadata[b"unit"] == b"1"
    assert b"cosim policies show" in schema.field("param_promote_knob").metadata[b"description"]
    assert set(ALL_COLUMNS) <= set(COLUMN_DOCS)
    jobs = pd.DataFrame({"job_id": ["a"], "submit_time": [0.0], "num_gpus": [2], "max_gpus": [4], "duration": [9.0]})
    schema = pq.read_schema(write_jobs(jobs, tmp_path / "t.parquet"))
    for name in schema.names:
        assert (schema.field(name).metadata or {}).get(b"unit", b"").decode() == COLUMN_DOCS[name][0], name
    assert schema.field("max_gpus").metadata[b"unit"] == b"count"
