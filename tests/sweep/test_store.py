"""The sweep store: rows of any mix of metric types become one typed table; commits are whole."""

from __future__ import annotations

import math

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.sweep.store import commit_cell, load_rows, rows_table, write_summary

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.floats(allow_nan=False, allow_infinity=False, width=64), st.text(max_size=5))


def _row(i: int, metrics: dict) -> dict:
    return {"cell_id": f"c{i}", "trace": "t", "cluster": "x", "cluster_nodes": None, "policy": "p",
            "policy_label": "p", "contention": True, "calibration": None, "seed": i, **metrics,
            "status": "ok", "error": None, "wall_s": 0.5}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["m_a", "m_b", "param_alpha"]), VALUES, max_size=3),
                min_size=1, max_size=5))
def test_any_mix_of_metric_types_writes_and_reads_back(tmp_path_factory, metrics):
    rows = [_row(i, m) for i, m in enumerate(metrics)]
    tmp = tmp_path_factory.mktemp("s")
    write_summary(tmp, rows, {"kind": "sweep"})
    back = pq.read_table(tmp / "summary.parquet").to_pylist()
    assert [r["cell_id"] for r in back] == [r["cell_id"] for r in rows]
    cols = rows_table(rows).column_names
    assert cols[:6] == ["cell_id", "trace", "cluster", "cluster_nodes", "policy", "policy_label"]
    assert cols[-3:] == ["status", "error", "wall_s"]
    for orig, got in zip(rows, back):
        for k, v in orig.items():
            if k.startswith(("m_", "param_")) and v is not None:
                g = got[k]
                if isinstance(g, float) and not isinstance(v, str):
                    assert math.isclose(g, float(v), rel_tol=0, abs_tol=0) or (g == float(v))
                elif isinstance(g, str):
                    assert g == str(v)
                else:
                    assert g == v


def test_commit_replaces_a_retried_cell_whole(tmp_path):
    commit_cell(tmp_path, "abc", _row(0, {"status": "error"}) | {"status": "error", "error": "boom"},
                {"jobs.parquet": b"old"})
    commit_cell(tmp_path, "abc", _row(0, {"m_a": 1.0}), {"jobs.parquet": b"new"})
    rows = load_rows(tmp_path)
    assert rows["abc"]["status"] == "ok" and rows["abc"]["m_a"] == 1.0
    assert (tmp_path / "cells" / "abc" / "jobs.parquet").read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == ["abc"]
