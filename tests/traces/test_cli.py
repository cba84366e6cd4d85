"""`cosim traces …` through the real app: outputs, one-line errors with exit 2, nothing left behind."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.app import app
from traces.io import read_jobs

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, ["traces", *map(str, args)])


def test_convert_and_stats(fixtures, tmp_path):
    out = tmp_path / "p.parquet"
    r = _run("convert", fixtures / "philly_cluster_job_log.json", "-o", out)
    assert r.exit_code == 0, r.output
    assert "kept 3; excluded 4 (never_started: 1, no_start_time: 1, still_running: 1, zero_gpus: 1)" in r.output
    assert len(read_jobs(out)) == 3
    r = _run("stats", out)
    assert r.exit_code == 0 and "3 jobs" in r.output and "GPUs per job: 1: 1, 2: 1, 8: 1" in r.output
    r = _run("stats", fixtures / "philly_cluster_job_log.json", "--json")
    s = json.loads(r.output)
    assert s["jobs"] == 3 and s["excluded"]["still_running"] == 1
    assert s["gpu_hours"] == pytest.approx((8 * 7281 + 1800 + 2 * 7200) / 3600)


@pytest.mark.parametrize("fmt", ["philly-csv", "helios", "sensetime", "pollux", "ones"])
def test_convert_each_format_by_name(fixtures, tmp_path, fmt):
    src = {"philly-csv": "philly_derived_small.csv", "helios": "helios_cluster_log.csv", "sensetime": "sensetime_poisson.json",
           "pollux": "pollux_workload.csv", "ones": "ones_trace.csv"}[fmt]
    r = _run("convert", fixtures / src, "-o", tmp_path / "o.parquet", "--format", fmt)
    assert r.exit_code == 0, r.output
    assert read_jobs(tmp_path / "o.parquet")["source"].iloc[0] == fmt


def test_sample_and_synth(tmp_path):
    syn = tmp_path / "syn.parquet"
    assert _run("synth", "--like", "philly", "--jobs", 3000, "--seed", 2, "-o", syn).exit_code == 0
    again = tmp_path / "again.parquet"
    assert _run("synth", "--like", "philly", "--jobs", 3000, "--seed", 2, "-o", again).exit_code == 0
    assert syn.read_bytes() == again.read_bytes()
    out = tmp_path / "s.parquet"
    r = _run("sample", syn, "--jobs", 160, "--window", "8h", "--seed", 1, "-o", out, "--assemble")
    assert r.exit_code == 0, r.output
    s = read_jobs(out)
    assert len(s) == 160 and s["submit_time"].max() < 8 * 3600 and s["model"].notna().all()


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["convert", "{fx}/philly_derived_small.csv", "--format", "helios"], "field 'job_id'"),
        (["convert", "{fx}/philly_derived_small.csv", "--format", "nope"], "unknown trace format 'nope'"),
        (["convert", "{bad}"], "row 2: field 'num_gpus'"),
        (["sample", "{fx}/pollux_workload.csv", "--jobs", "100", "--window", "1h"], "holding ≥ 100 jobs"),
        (["sample", "{fx}/pollux_workload.csv", "--jobs", "1", "--window", "soon"], "field '--window'"),
        (["synth", "--like", "nope", "--jobs", "5"], "unknown synthetic trace 'nope'"),
    ],
)
def test_bad_input_one_line_exit_2_no_output(fixtures, tmp_path, args, fragment):
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a\n"
                   "2017-10-09 07:01:56,66,two,66,a\n")
    out = tmp_path / "out" / "o.parquet"
    r = _run(*[a.format(fx=fixtures, bad=bad) for a in args], "-o", out)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], r.output
    assert not out.exists() and (not out.parent.exists() or not any(out.parent.iterdir()))


@pytest.mark.shared_data
def test_stats_and_convert_real_philly(shared_data, tmp_path):
    src = shared_data / "traces/philly/philly_jobs.csv"
    r = _run("stats", src)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == ("philly_jobs.csv: 82247 jobs (philly-csv; 82247 rows read; "
                                        "excluded 0: none)")
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    assert _run("convert", src, "-o", a).exit_code == 0
    assert _run("convert", src, "-o", b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    r = _run("stats", a, "--json")
    assert json.loads(r.output)["gpu_histogram"] == {"1": 76627, "2": 1818, "4": 1870, "8": 1643, "12": 7,
                                                     "16": 199, "24": 7, "32": 67, "64": 6, "128": 3}
