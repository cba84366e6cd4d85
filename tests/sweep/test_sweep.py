"""Running sweeps: rows per cell, determinism across backends and across kill + resume,
failing cells recorded, the CLI. Drives the real `experiments.runner` when it can run here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from cli.app import app
from experiments.sweep import NONDETERMINISTIC, SUMMARY_FILE, parse_sweep, run_sweep
from experiments.sweep.store import clean_partial, load_rows
from tests.sweep import runners

REPO = Path(__file__).resolve().parents[2]


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=list(NONDETERMINISTIC)).reset_index(drop=True)


@pytest.fixture(scope="module")
def grid():
    return parse_sweep(runners.small_grid(), source="test-grid")


@pytest.fixture(scope="module")
def reference(grid, tmp_path_factory):
    """The uninterrupted in-process run every other run must reproduce."""
    out = tmp_path_factory.mktemp("ref")
    return run_sweep(grid, out, runner=runners.runner())


def test_one_row_per_cell_with_coordinates_and_metrics(grid, reference):
    s = reference.summary
    cells = grid.cells()
    assert len(cells) == 24 and reference.ran == 24 and reference.failed == 0
    assert list(s["cell_id"]) == [c.cell_id for c in cells]  # grid order
    assert set(s["status"]) == {"ok"}
    for col in ("trace", "cluster", "cluster_nodes", "policy", "policy_label", "contention", "calibration", "seed",
                "avg_jct_s", "p99_jct_s", "makespan_s", "wall_s", "error"):
        assert col in s.columns, col
    assert s.groupby(["trace", "seed"]).size().eq(4).all()
    assert (s["wall_s"] > 0).all()
    # each cell folder holds its job table, and the summary matches the row files
    for c in cells:
        d = reference.out_dir / "cells" / c.cell_id
        assert (d / "jobs.parquet").is_file() and (d / "row.parquet").is_file()
    assert sorted(load_rows(reference.out_dir)) == sorted(s["cell_id"])


def test_process_pool_matches_in_process(grid, reference, tmp_path):
    res = run_sweep(grid, tmp_path / "pool", workers=2, runner=runners.runner())
    pd.testing.assert_frame_equal(comparable(res.summary), comparable(reference.summary))


@pytest.mark.ray
def test_ray_matches_local(grid, reference, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        res = run_sweep(grid, tmp_path / "ray", backend="ray", runner=runners.runner())
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(comparable(res.summary), comparable(reference.summary))
    # the driver committed the files the workers sent back
    for cid in res.summary["cell_id"]:
        assert (tmp_path / "ray" / "cells" / cid / "jobs.parquet").is_file()


def test_killed_then_resumed_equals_uninterrupted(grid, reference, tmp_path):
    out = tmp_path / "killed"
    code = ("from experiments.sweep import parse_sweep, run_sweep\n"
            "from experiments.sweep.cell import Runner\n"
            "from tests.sweep import killing_runner as k, runners\n"
            f"run_sweep(parse_sweep(runners.small_grid(), source='test-grid'), {str(out)!r}, "
            "runner=Runner(k.RunConfig, k.run, k.policy_factory))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    from tests.sweep.killing_runner import KILL_AFTER

    committed = load_rows(out)
    assert len(committed) == KILL_AFTER  # the cell running at the kill is lost, nothing else
    assert any(p.name.startswith(".tmp-") for p in (out / "cells").iterdir())  # its scratch is left behind
    if (out / SUMMARY_FILE).exists():  # whatever summary exists is whole and holds only committed cells
        assert set(pq.read_table(out / SUMMARY_FILE)["cell_id"].to_pylist()) <= set(committed)
    res = run_sweep(grid, out, resume=True, runner=runners.runner())
    assert res.skipped == KILL_AFTER and res.ran == 24 - KILL_AFTER
    assert not any(p.name.startswith(".") for p in (out / "cells").iterdir())
    pd.testing.assert_frame_equal(comparable(res.summary), comparable(reference.summary))
    # resuming a complete sweep runs nothing and changes nothing
    again = run_sweep(grid, out, resume=True, runner=runners.runner())
    assert again.ran == 0
    pd.testing.assert_frame_equal(again.summary, res.summary)


def _children(pid: int) -> set[int]:
    """Live processes whose parent is `pid` (Linux /proc)."""
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the workers through /proc")
def test_killing_the_main_process_stops_its_workers(grid, reference, tmp_path):
    """`cosim sweep -j 2`, SIGKILL of its main process only: the pool workers (and the
    resource tracker) are gone within 5 s, nothing more is committed, and a resume equals
    the uninterrupted sweep."""
    import json
    import os
    import signal
    import time

    toml = tmp_path / "grid.toml"
    data = runners.small_grid()
    lines = [f"name = {json.dumps(data['name'])}", f"traces = {json.dumps(data['traces'])}",
             f"seeds = {json.dumps(list(data['seeds']))}", "[[clusters]]", 'preset = "dgx-a100"']
    for name, params in data["policies"].items():
        lines.append(f"[policies.{json.dumps(name)}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in params.items()]
    toml.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "cli.app", "sweep", str(toml), "-o", str(out), "-j", "2"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (out.is_dir() and load_rows(out)):
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert len(workers) >= 2, workers  # two pool workers (+ the resource tracker)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        gone_by = time.monotonic() + 5.0
        while time.monotonic() < gone_by and any(_alive(p) for p in workers):
            time.sleep(0.05)
        assert not [p for p in workers if _alive(p)], "workers outlived the sweep's main process by 5 s"
    finally:
        for p in _children(proc.pid) if proc.poll() is None else ():
            os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
    committed = set(load_rows(out))
    assert 0 < len(committed) < 24
    time.sleep(2.0)
    assert set(load_rows(out)) == committed  # nobody is committing cells into the unlocked folder
    res = run_sweep(grid, out, resume=True, runner=runners.runner())
    assert res.skipped == len(committed) and res.ran == 24 - len(committed)
    pd.testing.assert_frame_equal(comparable(res.summary), comparable(reference.summary))


def test_failing_cell_is_recorded_and_the_rest_finish(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    data = runners.small_grid(runners.policies(2), seeds=(0,), traces=(runners.TRACES[0], str(bad)))
    res = run_sweep(parse_sweep(data, source="t", base_dir=tmp_path), tmp_path / "out", runner=runners.runner())
    s = res.summary
    assert len(s) == 4 and res.failed == 2
    failed = s[s["status"] == "error"]
    assert set(failed["trace"]) == {str(bad)}
    assert failed["error"].str.len().gt(0).all() and failed["avg_jct_s"].isna().all()
    assert (s[s["status"] == "ok"]["avg_jct_s"] > 0).all()
    # a resume retries the failed cells (still failing) and keeps the good ones
    again = run_sweep(parse_sweep(data, source="t", base_dir=tmp_path), tmp_path / "out", resume=True,
                      runner=runners.runner())
    assert again.ran == 2 and again.skipped == 2 and again.failed == 2


def test_clean_partial_removes_only_scratch(tmp_path):
    (tmp_path / "cells" / ".tmp-abc-1").mkdir(parents=True)
    (tmp_path / "cells" / "0123abcd").mkdir()
    assert clean_partial(tmp_path) == 1
    assert [p.name for p in (tmp_path / "cells").iterdir()] == ["0123abcd"]


def _write_grid(tmp_path: Path, data: dict) -> Path:
    import json

    lines = [f"{k} = {json.dumps(data[k])}" for k in ("name", "traces", "seeds")]
    lines.append(f'clusters = [{{ preset = "{data["clusters"][0]["preset"]}" }}]')
    for name, params in data["policies"].items():
        lines.append(f'[policies."{name}"]')
        lines += [f"{k} = {json.dumps(v)}" for k, v in params.items()]
    path = tmp_path / "grid.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_sweep_resume_and_errors(tmp_path):
    data = runners.small_grid(runners.policies(2), seeds=(0,), traces=runners.TRACES[:1])
    toml = _write_grid(tmp_path, data)
    out = tmp_path / "out"
    cli = CliRunner()
    if runners.runner_name() != runners.REAL:
        pytest.skip("the CLI runs the real runner")
    args = ["sweep", str(toml), "--out", str(out), "--workers", "1"]
    r = cli.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "2 cells" in r.output and "0 failed" in r.output
    r = cli.invoke(app, args)  # same folder without --resume: refused in one line
    assert r.exit_code == 2 and "already holds a sweep" in r.output and "Traceback" not in r.output
    r = cli.invoke(app, args + ["--resume"])
    assert r.exit_code == 0 and "2 resumed" in r.output
    r = cli.invoke(app, ["sweep", str(tmp_path / "nope.toml"), "--out", str(out)])
    assert r.exit_code == 2 and "expected an existing sweep file" in r.output
    r = cli.invoke(app, args[:-2] + ["--backend", "slurm"])
    assert r.exit_code == 2 and "backend" in r.output


def test_unknown_policy_fails_before_running(tmp_path):
    if runners.runner_name() != runners.REAL:
        pytest.skip("name checks use the real policy registry")
    from cosim.errors import CosimError, UnknownNameError

    data = runners.small_grid(["fifo", "no-such-policy"], seeds=(0,), traces=runners.TRACES[:1])
    with pytest.raises(UnknownNameError, match="no-such-policy"):
        run_sweep(parse_sweep(data), tmp_path / "o")
    data = runners.small_grid(["fifo"], seeds=(0,), traces=runners.TRACES[:1])
    data["clusters"] = ["no-such-cluster"]
    with pytest.raises(CosimError, match=r"clusters\[0\].*no-such-cluster.*dgx-a100"):
        run_sweep(parse_sweep(data), tmp_path / "o")
    assert not (tmp_path / "o" / "cells").exists()


def test_sampled_file_trace_is_materialised_once(tmp_path):
    from traces.io import write_jobs
    from traces.synth import synthesize

    write_jobs(synthesize("philly", 40, seed=3), tmp_path / "base.parquet")
    data = {"traces": [{"path": "base.parquet", "jobs": 8, "seed": 1, "name": "base-8"}],
            "policies": runners.policies(2), "seeds": [0]}
    res = run_sweep(parse_sweep(data, source="t", base_dir=tmp_path), tmp_path / "out", runner=runners.runner())
    assert list(res.summary["status"]) == ["ok", "ok"], res.summary["error"].tolist()
    assert set(res.summary["trace"]) == {"base-8"}
    sampled = list((tmp_path / "out" / "traces").glob("*.parquet"))
    assert len(sampled) == 1
    import pandas as pd

    assert len(pd.read_parquet(sampled[0])) == 8


def test_ray_missing_is_one_clear_error(tmp_path, monkeypatch):
    from cosim.errors import CosimError

    monkeypatch.setitem(sys.modules, "ray", None)
    data = runners.small_grid(runners.policies(1), seeds=(0,), traces=runners.TRACES[:1])
    with pytest.raises(CosimError, match=r"pip install 'cosim\[ray\]'"):
        run_sweep(parse_sweep(data), tmp_path / "o", backend="ray", runner=runners.runner())


def test_resume_names_cells_computed_by_other_code(grid, tmp_path, monkeypatch, caplog):
    """sweep.json records which code computed each cell; resuming over cells from other code
    says so in one warning (count and versions) instead of mixing them silently."""
    import json
    import logging

    from experiments import reproduction_report

    out = tmp_path / "s"
    monkeypatch.setattr(reproduction_report, "version_line", lambda: "cosim 0, commit aaaa")
    first = run_sweep(grid, out, runner=runners.runner())
    codes = json.loads((out / "sweep.json").read_text())["cell_code"]
    assert set(codes) == set(first.summary["cell_id"]) and set(codes.values()) == {"cosim 0, commit aaaa"}
    with caplog.at_level(logging.WARNING):
        again = run_sweep(grid, out, resume=True, runner=runners.runner())
    assert again.ran == 0 and not [r for r in caplog.records if "other code" in r.getMessage()]
    monkeypatch.setattr(reproduction_report, "version_line", lambda: "cosim 0, commit bbbb")
    with caplog.at_level(logging.WARNING):
        run_sweep(grid, out, resume=True, runner=runners.runner())
    msg = [r.getMessage() for r in caplog.records if "other code" in r.getMessage()]
    assert len(msg) == 1 and f"{len(codes)} of {len(codes)} finished cells" in msg[0]
    assert "commit aaaa" in msg[0] and "commit bbbb" in msg[0]
    # the reused cells keep the code that computed them
    assert set(json.loads((out / "sweep.json").read_text())["cell_code"].values()) == {"cosim 0, commit aaaa"}
