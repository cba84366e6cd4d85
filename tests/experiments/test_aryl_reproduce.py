"""`cosim reproduce aryl --size small` (the testbed configuration) end to end, the stand-in
workload's recorded statistics (aryl.md §5), and the `aryl:` trace spec + `load_series` sweep
key that run Aryl's cells through the generic sweep layer with the same numbers."""

from __future__ import annotations

import json

import pandas as pd
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


def test_aryl_trace_specs_and_bad_specs():
    from cosim.errors import InputError

    w = W.parse_spec("aryl:advanced:0.03125:ef0.2", seed=3)
    assert (w.scenario, w.scale, w.elastic_frac, w.elastic_share, w.seed) == ("advanced", 0.03125, 0.2, 1.0, 3)
    assert W.parse_spec("aryl:testbed") == ("basic", 0) and W.parse_spec("aryl:testbed:ideal", 1) == ("ideal", 1)
    assert W.servers("aryl:basic:0.03125") == (14, 16, 15 * 86400.0)  # the medium size's 14+16 servers
    assert W.servers("aryl:testbed") == (4, 4, 8 * 3600.0)
    for bad in ("aryl:", "aryl:foo:0.5", "aryl:basic", "aryl:basic:2", "aryl:basic:x", "aryl:testbed:x",
                "aryl:basic:0.5:x0.2", "aryl:basic:0.5:ef2"):
        with pytest.raises(InputError):
            W.parse_spec(bad)


def test_spec_table_is_the_one_the_earlier_parquet_path_read(shared_data, tmp_path):
    """Before the spec, aryl_repro wrote each workload to Parquet and the runner read it back; the
    spec builds it in the runner. The canonical tables are equal, so the results are too."""
    from traces.io import read_jobs

    for spec, (df, st) in (("aryl:testbed:advanced", W.testbed(shared_data, scenario="advanced")),
                           ("aryl:basic:0.015625:ef0.6",
                            W.build(W.ArylWorkload(scale=0.015625, elastic_frac=0.6, elastic_share=1.0), shared_data))):
        old = read_jobs(W.write(df, st, tmp_path / "w.parquet"))
        new = W.from_spec(spec, 0, shared_data)
        cols = [c for c in old.columns if c != "source"]
        pd.testing.assert_frame_equal(old[cols].reset_index(drop=True), new[cols].reset_index(drop=True))


def test_generic_sweep_cell_equals_the_reproduction_run(shared_data, tmp_path, monkeypatch):
    """Aryl's Basic cell as a plain sweep (`aryl:testbed` on the aryl-testbed preset, `load_series =
    "diurnal:0.05"`) gives the reproduction's numbers for the same variant."""
    from experiments import wiring
    from experiments.aryl_repro import _one, load_catalog, plan
    from simcore.sweep import parse_sweep, run_sweep

    monkeypatch.setenv("COSIM_SHARED_DATA", str(shared_data))
    wiring.install()
    cat = load_catalog()
    (tmp_path / "repro" / "traces").mkdir(parents=True)
    job = next(j for j in plan(cat, "small", tmp_path / "repro") if j["variant"] == "basic")
    m = _one(job)
    cfg = parse_sweep({"traces": [job["trace"]], "clusters": ["aryl-testbed"], "contention": [False],
                       "perf": [cat["perf"]], "costs": [cat["costs"]], "load_series": job["series"],
                       "policies": {"aryl": {}}})
    row = run_sweep(cfg, tmp_path / "sweep", workers=1, resume=False).summary.iloc[0]
    assert row["status"] == "ok" and row["finished"] == m["finished"] == 180
    assert row["avg_jct_s"] == pytest.approx(m["jct_mean_s"], rel=1e-12)
    assert row["avg_queueing_s"] == pytest.approx(m["qt_mean_s"], rel=1e-12)
    assert m["preemptions"] > 0  # the load series did reclaim servers (a run without it has none)
