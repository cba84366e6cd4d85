"""`cosim simulate` through typer's CliRunner: fake backends for exact checks, and one short
run on the project's real packages (trace synthesis, netmodel, collectives, zoo, policies)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app
from tests.simcore.helpers import fake_backends
from tests.simcore.test_runner import golden_trace
from cosim.columns import TIMING_FILES

runner = CliRunner()


@pytest.fixture
def fake(monkeypatch):
    import experiments.runner as r

    monkeypatch.setattr(r, "real_backends", lambda cfg: fake_backends(golden_trace()))


def test_simulate_prints_table_and_writes_outputs(fake, tmp_path):
    res = runner.invoke(app, ["simulate", "--policy", "fifo-test,random-elastic", "--out", str(tmp_path),
                              "--decisions"])
    assert res.exit_code == 0, res.output
    assert "fifo-test" in res.output and "random-elastic" in res.output and "8/8" in res.output
    s = pd.read_parquet(tmp_path / "summary.parquet")
    assert list(s["policy"]) == ["fifo-test", "random-elastic"]
    assert (tmp_path / "random-elastic" / "decisions.parquet").is_file()


def test_unknown_policy_lists_valid(fake):
    res = runner.invoke(app, ["simulate", "--policy", "fifo-test,nope"])
    assert res.exit_code == 2
    assert "unknown policy 'nope'; valid: fifo-test, random-elastic" in res.output


def test_trace_and_synth_are_exclusive(fake, tmp_path):
    res = runner.invoke(app, ["simulate", "--trace", str(tmp_path / "x.parquet"), "--synth", "philly:10"])
    assert res.exit_code == 2 and "at most one of --trace and --synth" in res.output


def test_unknown_cluster_lists_presets():
    res = runner.invoke(app, ["simulate", "--cluster", "nosuch", "--synth", "philly:5", "--policy", "fifo"])
    assert res.exit_code == 2
    assert "unknown cluster preset 'nosuch'" in res.output and "dgx-a100" in res.output


def test_real_packages_end_to_end_and_byte_identical(tmp_path):
    for out in ("a", "b"):
        res = runner.invoke(app, ["simulate", "--synth", "philly:30", "--policy", "fifo,tiresias,gandiva", "--out",
                                  str(tmp_path / out), "--nodes", "4", "--decisions"])
        assert res.exit_code == 0, res.output
    s = pd.read_parquet(tmp_path / "a" / "summary.parquet")
    assert list(s["policy"]) == ["fifo", "tiresias", "gandiva"]
    assert (s["finished"] + s["unfinished"] == 30).all()
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.parquet")
                   if p.name not in TIMING_FILES)  # the clock's files differ by design
    assert len(files) == 10
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_capacity_file(fake, tmp_path):
    f = tmp_path / "cap.csv"
    f.write_text("time_s,node,online\n100,0,0\n2000,0,1\n")
    res = runner.invoke(app, ["simulate", "--policy", "fifo-test", "--capacity", str(f), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    tl = pd.read_parquet(tmp_path / "o" / "fifo-test" / "timeline.parquet")
    assert tl["online_gpus"].min() == 12 and tl["online_gpus"].iloc[-1] == 16
    f.write_text("time_s,node,online\n100,0,maybe\n")
    res = runner.invoke(app, ["simulate", "--policy", "fifo-test", "--capacity", str(f)])
    assert res.exit_code == 2 and "row 1: field 'online': expected 1/0/true/false" in res.output
