"""Two identical runs write identical bytes: the clock's columns (wall and solver seconds, what a
time-limited solve reached) go to timing.parquet and solver.parquet, never into summary.parquet."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq

from cosim.columns import TIMING_COLUMNS
from experiments.runner import RunConfig, run
from experiments.sweep import parse_sweep, run_sweep

TRACE = "synth:fft-trace2:16"


def _config():
    return RunConfig(trace=TRACE, cluster="fft-hetero", policies=("fft",), seed=0, costs="migrate-state")


def test_two_fft_runs_write_the_same_summary_bytes(tmp_path):
    a, b = run(_config(), tmp_path / "a"), run(_config(), tmp_path / "b")
    assert a.timing["fft"]["fft_solver_s_mean"] > 0  # measured, and kept apart
    for f in ("summary.parquet", "fft/jobs.parquet", "fft/timeline.parquet"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    names = pq.read_schema(tmp_path / "a" / "summary.parquet").names
    assert "fft_rounds" in names and not set(names) & set(TIMING_COLUMNS)
    timing = pd.read_parquet(tmp_path / "a" / "timing.parquet")
    assert list(timing["policy"]) == ["fft"] and timing.loc[0, "wall_s"] > 0
    assert timing.loc[0, "fft_limit_rounds"] == 0  # 16 jobs: every round solved to optimality
    log = pd.read_parquet(tmp_path / "a" / "fft" / "solver.parquet")
    assert len(log) == pd.read_parquet(tmp_path / "a" / "summary.parquet").loc[0, "fft_rounds"]
    assert set(log["status"]) <= {"optimal", "lp_round", "empty"} and (log["solve_s"] >= 0).all()


def test_two_sweeps_write_the_same_summary_bytes(tmp_path):
    grid = parse_sweep({"name": "det", "traces": [TRACE], "clusters": ["fft-hetero"], "policies": ["fft", "fifo"],
                        "costs": ["migrate-state"]})
    a, b = run_sweep(grid, tmp_path / "a"), run_sweep(grid, tmp_path / "b")
    assert (tmp_path / "a" / "summary.parquet").read_bytes() == (tmp_path / "b" / "summary.parquet").read_bytes()
    assert "wall_s" not in pq.read_schema(tmp_path / "a" / "summary.parquet").names
    assert (a.summary["wall_s"] > 0).all() and a.summary["fft_solver_s_mean"].notna().sum() == 1  # joined back
    assert (tmp_path / "a" / "cells" / a.summary.loc[a.summary["policy"] == "fft", "cell_id"].iloc[0]
            / "solver.parquet").is_file()
