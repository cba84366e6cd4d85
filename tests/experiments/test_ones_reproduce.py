"""`cosim reproduce ones --size small` (what CI runs) and ONES' metrics (experiments.ones_metrics):
the report's cosim column agrees with cells.parquet, every cell ran, and the paired Wilcoxon
tests keep the relation the paper's Table 4 shows (one-sided 'greater' p = 1 − two-sided/2 when
ONES is smaller)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosim.errors import InputError
from experiments import ones_metrics as M
from experiments.spec import load_experiment


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    from cosim.errors import InputError
    from cosim.paths import shared_file
    from experiments import reproduce

    try:  # ONES' predictor is warm-started from the artifact's history (policies/ones/config.py)
        shared_file("traces/ones/job_history.csv", "the ONES history")
    except InputError:
        pytest.skip("the shared data folder (COSIM_SHARED_DATA or ../shared/data) is not here")
    out = tmp_path_factory.mktemp("ones") / "small"
    return reproduce("ones", "small", out, workers=1)


def test_catalog_declares_fig15_and_the_capacity_sweep():
    exp = load_experiment("ones")
    names = {f.name: f for f in exp.figures}
    assert {"avg-jct", "avg-queueing", "capacity-jct", "avg-jct-longhorn", "avg-queueing-longhorn"} <= set(names)
    assert names["avg-jct-longhorn"].grid == "fig15-longhorn"
    assert names["capacity-jct"].rows == "cluster_nodes"


def test_small_runs_every_cell_and_reports_them(small):
    cells = small.cells
    assert (cells["status"] == "ok").all()
    assert set(cells["policy_label"]) == {"ones", "tiresias", "optimus(interval_s=600)", "drl",
                                          "drl(interval_s=60)", "drl(interval_s=600)"}
    assert (cells["progress"] == "batch-history").all()
    longhorn = cells["grid"] == "fig15-longhorn"  # the variant with the testbed's sub-linear scaling
    assert (cells.loc[longhorn, "calibration"] == "ones-longhorn").all() and longhorn.sum() == 5
    assert (cells.loc[~longhorn, "calibration"] == "ones-artifact").all()
    text = small.report.read_text()
    fig = cells[cells["grid"] == "fig15"].set_index("policy_label")["avg_jct_s"]
    assert f"{fig['ones'] / 3600:.3g} h" in text  # the report shows the cell's value
    assert "--calibration ones-longhorn" in text and "--calibration ones-artifact" in text  # rerun lines
    # the ONES cell's jobs all finished and ran elastic: per-job metrics are computable
    run_dirs = sorted((small.out_dir / "runs" / "fig15" / "cells").glob("*"))
    per = M.load_runs(run_dirs)
    assert set(per) == {"ones", "tiresias", "optimus", "drl", "drl(interval_s=600)"}
    assert all(len(d) == 20 for d in per.values())
    cmp = M.compare(per)
    assert set(cmp["baseline"]) == {"tiresias", "optimus", "drl", "drl(interval_s=600)"}


def test_command_line_help_and_a_folder_without_runs(tmp_path, capsys):
    """`python -m experiments.ones_metrics`: --help prints the usage; a folder without jobs.parquet is one
    `error:` line naming it (exit 2), not a traceback."""
    with pytest.raises(SystemExit) as e:
        M.main(["--help"])
    assert e.value.code == 0 and "RUN_DIR" in capsys.readouterr().out
    assert M.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {tmp_path}: expected jobs.parquet (or <policy>/jobs.parquet)"


def test_metrics_piped_into_a_reader_that_stops_is_not_a_traceback(small):
    """`python -m experiments.ones_metrics CELLS | head -1`: the reader has closed the pipe before the
    tables are written; the tool stops quietly with exit 0, without a BrokenPipeError on stderr."""
    import subprocess
    import sys

    cells = sorted(str(d) for d in (small.out_dir / "runs" / "fig15" / "cells").glob("*"))
    proc = subprocess.Popen([sys.executable, "-m", "experiments.ones_metrics", *cells], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
    proc.stdout.close()  # a reader that has stopped: every write to the pipe fails
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0 and err == "", err


def test_wilcoxon_relations_and_reductions():
    rng = np.random.default_rng(0)
    base = rng.uniform(100, 1000, 50)
    ones = base * rng.uniform(0.4, 0.9, 50)
    w = M.paired_wilcoxon(ones, base)
    assert w["two_sided"] < 1e-6
    assert w["greater"] == pytest.approx(1 - w["two_sided"] / 2)  # the paper's "one-sided negative" p ≈ 1
    assert w["less"] == pytest.approx(w["two_sided"] / 2)
    assert M.reduction_pct(244.97, 450.3) == pytest.approx(45.6, abs=0.05)  # the paper's Tiresias figure
    assert M.cdf(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 2.0, 10.0])).tolist() == [0.0, 0.5, 1.0]


def test_per_job_queue_is_jct_minus_execution():
    jobs = pd.DataFrame({"job_id": ["a", "b"], "jct_s": [100.0, 50.0], "executed_s": [60.0, 50.0],
                         "finished": [True, True]})
    d = M.per_job(jobs)
    assert d["queue_s"].tolist() == [40.0, 0.0]
    s = M.summary({"ones": d})
    assert s.loc[0, "frac_jct_le_200s"] == 1.0 and s.loc[0, "avg_queue_s"] == 20.0


def test_by_class_splits_queueing_execution_and_gpus_held_by_request():
    jobs = pd.DataFrame({"job_id": ["a", "b", "c"], "jct_s": [100.0, 50.0, 30.0], "executed_s": [60.0, 50.0, 10.0],
                         "gpu_s": [240.0, 100.0, 20.0], "num_gpus": [16, 16, 4], "finished": [True, True, True]})
    c = M.by_class({"ones": M.per_job(jobs)}).set_index("requested_gpus")
    assert c.loc[16, "jobs"] == 2 and c.loc[16, "avg_exec_s"] == 55.0 and c.loc[16, "avg_queue_s"] == 20.0
    assert c.loc[16, "held_gpus"] == 3.0 and c.loc[4, "held_gpus"] == 2.0 and c.loc[4, "avg_queue_s"] == 20.0


def test_idle_gpus_split_by_whether_a_job_waits():
    # 0-10 s: 2 of 4 GPUs idle, nothing queued; 10-30 s: 1 idle, one job queued; 30-40 s: all busy
    tl = pd.DataFrame({"time_s": [0.0, 10.0, 30.0, 40.0], "busy_gpus": [2, 3, 4, 0],
                       "online_gpus": [4, 4, 4, 4], "queued": [0, 1, 0, 0]})
    d = M.idle_gpus(tl)
    assert d["capacity_gpu_s"] == 160.0
    assert d["idle_gpu_s"] == 40.0 and d["idle_no_queue_gpu_s"] == 20.0 and d["idle_queued_gpu_s"] == 20.0
    assert d["idle_share"] == 0.25
    with pytest.raises(InputError):
        M.idle_gpus(tl.drop(columns=["queued"]))


def test_idle_gpus_after_the_last_arrival_with_one_job_left():
    # arrivals up to 10 s; 10-20 s: two jobs run, 1 GPU idle; 20-50 s: one job left on 1 of 4 GPUs
    tl = pd.DataFrame({"time_s": [0.0, 10.0, 20.0, 50.0], "busy_gpus": [2, 3, 1, 0], "online_gpus": [4, 4, 4, 4],
                       "running": [1, 2, 1, 0], "restarting": [0, 0, 0, 0], "queued": [1, 0, 0, 0]})
    d = M.idle_gpus(tl, last_arrival_s=10.0)
    assert d["idle_gpu_s"] == 20.0 + 10.0 + 90.0
    assert d["idle_last_job_gpu_s"] == 90.0
    assert M.idle_gpus(tl, last_arrival_s=25.0)["idle_last_job_gpu_s"] == 0.0  # a job may still arrive at 20-25 s
    assert "idle_last_job_gpu_s" not in M.idle_gpus(tl)


def test_fitted_predictor_beats_the_prior_on_held_out_jobs():
    from benchmarks.bench_ones import predictor_accuracy

    acc = predictor_accuracy(num_jobs=20, seed=1)
    assert acc["test_points"] > 50
    assert acc["mae_rho"] < 0.8 * acc["mae_rho_prior"]
    assert 0.0 <= acc["coverage_90"] <= 1.0
