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


def test_entry_point_collects_garbage_less_often_but_still_collects(tmp_path):
    """`main()` raises the collector's thresholds for the `cosim` process only (cli.app.GC_THRESHOLDS);
    in-process use (`app(...)`, the test runner) keeps Python's, and garbage cycles are still freed."""
    import gc

    from cli import app as cli_app

    assert gc.get_threshold() != cli_app.GC_THRESHOLDS  # importing the CLI changes nothing
    done = _run("import gc, sys, weakref, cli.app as app\n"
                "class Cycle: pass\n"
                "freed = []\n"
                "def command():\n"
                "    print(gc.get_threshold())\n"
                "    for _ in range(3):  # cycles of garbage, as long commands make\n"
                "        for _ in range(60_000):\n"
                "            a = Cycle(); a.me = a\n"
                "        probe = Cycle(); probe.me = probe; weakref.finalize(probe, freed.append, 1); del probe\n"
                "        for _ in range(60_000):\n"
                "            b = Cycle(); b.me = b\n"
                "    print(len(freed))\n"
                "app.app = command\n"
                "app.main()\n", tmp_path)
    assert done.returncode == 0, done.stderr
    thresholds, freed = done.stdout.split("\n")[:2]
    assert thresholds == str(cli_app.GC_THRESHOLDS)
    assert int(freed) >= 2, "cyclic garbage was not collected during a long command"
