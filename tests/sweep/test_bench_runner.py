"""The benchmark runner (`benchmarks/run.py`, `cosim bench`): discovery, failures, Parquet output."""

from __future__ import annotations

import math
import uuid

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchmarks import run as bench
from cli.app import app
from cosim.atomic import read_metadata

DEMO = '''
def bench_fast():
    return dict(name="fast thing", value=1.5, unit="s", target="< 2 s", detail="ok")

def bench_sizes():
    return [dict(name=f"size {n}", value=n, unit="jobs", target="", detail="") for n in (1, 2)]

def bench_broken():
    raise RuntimeError("no engine yet")

def helper():
    return 1
'''


@pytest.fixture
def bench_dir(tmp_path):
    d = tmp_path / f"benchdemo_{uuid.uuid4().hex[:8]}"
    d.mkdir()
    (d / "__init__.py").write_text("")
    (d / "bench_demo.py").write_text(DEMO)
    (d / "bench_bad.py").write_text("import no_such_module_xyz\n")
    (d / "other.py").write_text("def bench_hidden():\n    return {}\n")
    return d


def test_discover_finds_bench_functions_only(bench_dir):
    found = bench.discover(bench_dir)
    assert [b.key for b in found] == ["bad.<import>", "demo.bench_broken", "demo.bench_fast", "demo.bench_sizes"]
    assert [b.key for b in bench.discover(bench_dir, only=["fast"])] == ["demo.bench_fast"]
    assert [b.key for b in bench.discover(bench_dir, only=["demo"])] == ["demo.bench_broken", "demo.bench_fast",
                                                                       "demo.bench_sizes"]
    assert [b.key for b in bench.discover(bench_dir, only=["demo.*s*"])] == ["demo.bench_fast", "demo.bench_sizes"]


def test_run_records_errors_and_lists(bench_dir, tmp_path):
    rows = bench.run_all(bench.discover(bench_dir))
    by = {r["name"]: r for r in rows}
    assert by["fast thing"]["value"] == 1.5 and by["fast thing"]["status"] == "ok"
    assert by["size 2"]["value"] == 2.0 and by["size 1"]["function"] == "bench_sizes"
    assert by["broken"]["status"] == "error" and "no engine yet" in by["broken"]["detail"]
    assert math.isnan(by["broken"]["value"])
    assert "no_such_module_xyz" in by["<import>"]["detail"]
    out = bench.write_results(rows, tmp_path / "b.parquet")
    df = pd.read_parquet(out)
    assert len(df) == 5 and {"cpu_model", "cores", "memory_gb", "python", "packages", "run_at"} <= set(df.columns)
    assert (df["cores"] > 0).all()
    meta = read_metadata(out)
    assert meta["machine"]["packages"]["numpy"] and meta["machine"]["cores"] == df["cores"].iloc[0]


def test_real_suite_is_discoverable():
    keys = [b.key for b in bench.discover()]
    assert "scale.bench_scale_1m" in keys and "scale.bench_scale_10k" in keys


def test_cli_bench_list_and_no_match():
    cli = CliRunner()
    r = cli.invoke(app, ["bench", "--list"])
    assert r.exit_code == 0 and "scale.bench_scale_1m" in r.output
    r = cli.invoke(app, ["bench", "--only", "nothing-matches-this"])
    assert r.exit_code == 2 and "no benchmark matches" in r.output
