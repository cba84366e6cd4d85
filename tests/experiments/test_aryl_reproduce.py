"""`cosim reproduce aryl --size small` (the testbed configuration) end to end, and the stand-in
workload's recorded statistics (aryl.md §5)."""

from __future__ import annotations

import json

import pytest

from traces import aryl as W


def test_basic_workload_matches_the_papers_elastic_cut(shared_data):
    df, st = W.build(W.ArylWorkload(scale=1 / 16), shared_data)
    assert st["elastic_job_frac"] == pytest.approx(0.05, abs=0.002)
    assert st["elastic_gpu_time_share"] == pytest.approx(0.36, abs=0.01)
    assert st["agnostic_frac"] == pytest.approx(0.21, abs=0.005)
    assert df["submit_time"].max() <= 15 * 86400
    elastic = df["min_gpus"] < df["max_gpus"]
    assert df.loc[elastic, "gpu_type"].isna().all()  # elastic jobs may run on loaned T4 servers
    _, ideal = W.build(W.ArylWorkload(scenario="ideal", scale=1 / 16), shared_data)
    assert ideal["elastic_job_frac"] == 1.0 and ideal["agnostic_frac"] == 1.0


def test_testbed_workload(shared_data):
    df, st = W.testbed(shared_data)
    assert len(df) == 180 and st["elastic_jobs"] == 10
    assert df["duration"].between(120, 7200).all() and df["num_gpus"].max() <= 16
    assert df["submit_time"].max() == pytest.approx(8 * 3600)


def test_reproduce_aryl_small(shared_data, tmp_path):
    from experiments.aryl_repro import reproduce_aryl

    report, _ = reproduce_aryl("small", tmp_path, workers=1, shared=shared_data)
    text = report.read_text()
    assert "## Table 5" in text and "## Table 12" in text
    assert "- basic < baseline on qt_mean_s: yes" in text  # the headline direction
    runs = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/metrics.json")}
    assert runs["baseline"]["preemption_ratio"] == 0.0
    assert all(m["finished"] == m["jobs"] == 180 for m in runs.values())
