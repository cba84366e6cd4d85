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
    """`main()` raises the collector's thresholds for the `cosim` process only
    (cosim.process_settings.GC_THRESHOLDS); in-process use (`app(...)`, the test runner) keeps
    Python's, and garbage cycles are still freed."""
    import gc

    from cosim.process_settings import GC_THRESHOLDS

    assert gc.get_threshold() != GC_THRESHOLDS  # importing the CLI changes nothing
    done = _run("import gc, sys, weakref, cli.app as app\n"
                "class Cycle: pass\n"
                "freed = []\n"
                "def command():\n"
                "    print(gc.get_threshold())\n"
                "    for _ in range(3):  # cycles of garbage, as long commands make\n"
                f"        for _ in range({GC_THRESHOLDS[0]}):  # a young generation's worth, and more\n"
                "            a = Cycle(); a.me = a\n"
                "        probe = Cycle(); probe.me = probe; weakref.finalize(probe, freed.append, 1); del probe\n"
                f"        for _ in range({GC_THRESHOLDS[0]}):\n"
                "            b = Cycle(); b.me = b\n"
                "    print(len(freed))\n"
                "app.app = command\n"
                "app.main()\n", tmp_path)
    assert done.returncode == 0, done.stderr
    thresholds, freed = done.stdout.split("\n")[:2]
    assert thresholds == str(GC_THRESHOLDS)
    assert int(freed) >= 2, "cyclic garbage was not collected during a long command"


def test_entry_point_malloc_reuses_freed_blocks(tmp_path):
    """`main()` fixes glibc's malloc thresholds (cosim.process_settings): blocks of growing size
    freed and allocated again are served from the heap's free memory, not from fresh zeroed pages
    each time (the Pollux policy's 1.7 million page faults). Compared with the same allocations in
    a process without the settings."""
    import pytest

    if _run("import ctypes; ctypes.CDLL(None).mallopt", tmp_path).returncode != 0:
        pytest.skip("no glibc mallopt here")
    churn = ("import resource\n"
             "def command():\n"
             "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
             "    for _ in range(3):\n"
             "        for mb in range(1, 25, 2):\n"
             "            block = bytearray(mb << 20)  # zero-filled: every page touched\n"
             "            del block\n"
             "    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, flush=True)\n")
    tuned = _run("import cli.app as app\n" + churn + "app.app = command\napp.main()\n", tmp_path)
    plain = _run(churn + "command()\n", tmp_path)
    assert tuned.returncode == 0 and plain.returncode == 0, tuned.stderr + plain.stderr
    tuned_faults, plain_faults = int(tuned.stdout.split()[0]), int(plain.stdout.split()[0])
    assert plain_faults > 20_000, plain_faults  # most of 3 x 144 MB as fresh pages (42,762 measured)
    assert tuned_faults < plain_faults / 4, (tuned_faults, plain_faults)  # 5,887 measured: the heap grows once
