"""The `cosim` entry point ends the process without the interpreter's teardown (cli.app.main).

What an ordinary exit does that matters outside the process must still happen: the exit code,
everything written to stdout/stderr, the `atexit` handlers (temporary folders, multiprocessing
and Ray clean-up); with another thread still running, the ordinary exit is taken (it waits for
that thread). Each case runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_exit_keeps_code_output_and_atexit_handlers(tmp_path):
    mark = tmp_path / "atexit-ran"
    done = _run("import atexit, sys, tempfile, cli.app as app\n"
                f"atexit.register(lambda: open({str(mark)!r}, 'w').write('yes'))\n"
                "keep = tempfile.TemporaryDirectory(prefix='cosim-exit-test-')\n"
                "print(keep.name)\n"
                "sys.stdout.write('x' * 200000)\n"
                "sys.stderr.write('to stderr')\n"
                "app._exit_now(3)\n"
                "print('not reached')\n", tmp_path)
    assert done.returncode == 3, done.stderr
    first, rest = done.stdout.split("\n", 1)
    assert rest == "x" * 200000 and done.stderr == "to stderr"
    assert mark.read_text() == "yes"
    assert not Path(first).exists(), "the TemporaryDirectory's exit finaliser did not run"


def test_exit_waits_for_another_thread(tmp_path):
    done = _run("import threading, time, cli.app as app\n"
                "t = threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True)))\n"
                "t.start()\n"
                "app._exit_now(0)\n"
                "print('ordinary exit', flush=True)\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["ordinary exit", "thread done"]


def test_entry_point_exit_codes(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "cli.app", "--version"], cwd=REPO, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("cosim ")
    bad = subprocess.run([sys.executable, "-m", "cli.app", "simulate", "--seed", "-1"], cwd=REPO, capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    usage = subprocess.run([sys.executable, "-m", "cli.app", "no-such-command"], cwd=REPO, capture_output=True,
                           text=True)
    assert usage.returncode == 2 and "No such command" in usage.stderr
