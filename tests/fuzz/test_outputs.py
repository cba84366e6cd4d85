"""Output folders (`cosim.outdir`): checked before the run, one writer at a time, no tracebacks.

Not generated cases: each test is one of the issue's output failures, run through the CLI on
the fake backends of tests/simcore (the real runner and writers, a stand-in trace/topology).
"""

from __future__ import annotations

import errno
from unittest import mock

import pytest
from typer.testing import CliRunner

from cli.app import app
from cosim.errors import InputError
from cosim.outdir import LOCK_NAME, claim_out_dir
from tests.fuzz._harness import one_line

SIM = ["simulate", "--policy", "fifo-test"]


@pytest.fixture
def fake(monkeypatch):
    import experiments.runner as r
    from tests.simcore.helpers import fake_backends
    from tests.simcore.test_runner import golden_trace

    monkeypatch.setattr(r, "real_backends", lambda cfg: fake_backends(golden_trace()))


def _error(res) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    one_line(lines[0])
    return lines[0]


def test_out_naming_a_file_fails_before_the_run(fake, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    res = CliRunner().invoke(app, SIM + ["--out", str(f)])
    assert "not an existing file" in _error(res)
    assert "simulating" not in res.output  # refused before any work
    assert f.read_text() == "x"


def test_rerun_refuses_then_overwrite_clears_old_policy_folders(fake, tmp_path):
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["simulate", "--policy", "fifo-test,random-elastic", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "random-elastic" / "jobs.parquet").is_file()
    assert "--overwrite" in _error(CliRunner().invoke(app, SIM + ["--out", str(out)]))
    r = CliRunner().invoke(app, SIM + ["--out", str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    assert not (out / "random-elastic").exists()  # the old run's folder is gone, not mixed with the new one
    assert sorted(p.name for p in out.iterdir()) == sorted([LOCK_NAME, "config.json", "fifo-test", "summary.parquet",
                                                           "timing.parquet"])


def test_overwrite_never_clears_a_folder_that_is_not_cosim_output(fake, tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    assert "refusing to clear" in _error(CliRunner().invoke(app, SIM + ["--out", str(tmp_path), "--overwrite"]))
    assert (tmp_path / "thesis.tex").read_text() == "precious"


def test_second_writer_is_refused_while_the_first_holds_the_folder(fake, tmp_path):
    out = tmp_path / "o"
    with claim_out_dir(out):
        msg = _error(CliRunner().invoke(app, SIM + ["--out", str(out)]))
        assert "in use by process" in msg
        with pytest.raises(InputError, match="in use"):
            claim_out_dir(out, resume=True)
    with claim_out_dir(out, resume=True):  # released: the next writer gets it
        pass


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_disk_full_or_unwritable_during_the_run_is_one_line(fake, tmp_path, err):
    import experiments.runner as r

    def full(*a, **k):
        raise OSError(err, "simulated", str(tmp_path / "o" / "fifo-test" / "jobs.parquet"))

    with mock.patch.object(r, "write_parquet", full):
        msg = _error(CliRunner().invoke(app, SIM + ["--out", str(tmp_path / "o")]))
    assert "jobs.parquet" in msg


def test_pyarrow_style_oserror_without_errno_is_one_line(fake, tmp_path):
    import experiments.runner as r

    with mock.patch.object(r, "write_parquet", side_effect=OSError("IOError: No space left on device. Detail: x")):
        msg = _error(CliRunner().invoke(app, SIM + ["--out", str(tmp_path / "o")]))
    assert "No space left" in msg


def test_other_oserrors_are_not_hidden(fake, tmp_path):
    """Only disk/permission errors become one line; anything else is a bug and keeps its traceback."""
    import experiments.runner as r

    with mock.patch.object(r, "write_parquet", side_effect=OSError(errno.EIO, "I/O error")):
        res = CliRunner().invoke(app, SIM + ["--out", str(tmp_path / "o")])
    assert isinstance(res.exception, OSError)


def test_sweep_overwrite_and_resume(tmp_path):
    from experiments.sweep import parse_sweep, run_sweep
    from tests.sweep import runners

    cfg = parse_sweep(runners.small_grid(runners.policies(1), seeds=(0,), traces=runners.TRACES[:1]), source="t")
    run_sweep(cfg, tmp_path / "s", runner=runners.runner())
    with pytest.raises(Exception, match="--overwrite"):
        run_sweep(cfg, tmp_path / "s", runner=runners.runner())
    res = run_sweep(cfg, tmp_path / "s", runner=runners.runner(), resume=True)
    assert res.ran == 0 and res.skipped == len(cfg.cells())
    res = run_sweep(cfg, tmp_path / "s", runner=runners.runner(), overwrite=True)
    assert res.ran == len(cfg.cells()) and res.skipped == 0
    with claim_out_dir(tmp_path / "s", resume=True):  # a running sweep holds the folder
        with pytest.raises(InputError, match="in use"):
            run_sweep(cfg, tmp_path / "s", runner=runners.runner(), resume=True)
