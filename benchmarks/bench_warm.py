"""Warm start-up, before/after: `cosim simulate` (the default run) and `cosim --help`, two checkouts interleaved.

Targets: warm `cosim simulate` ≤ 2 s, `cosim --help` ≤ 0.5 s (2-core machine). On
a shared host one number means little, so each repeat runs the other checkout's command right
before this one's (same load), and every line carries wall and CPU seconds (user + system of
the child). Each checkout runs its own code (`python -m cli.app`
from its root) with its own warm kernel cache (one untimed run first fills it if empty).

    python -m benchmarks.bench_warm --base /path/to/main-checkout            # 5 repeats
    python -m benchmarks.bench_warm --base /path/to/main-checkout -n 9 --help-only
    python -m benchmarks.bench_warm                                           # this checkout only

`--python` picks the interpreter (e.g. a venv's, to compare dependency versions such as typer).
One untimed run per checkout first fills its kernel cache and writes its bytecode.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.child_env import user_env

REPO = Path(__file__).resolve().parents[1]


def run_once(repo: Path, args: list[str], python: str = sys.executable, env: dict | None = None
             ) -> tuple[float, float]:
    """(wall s, CPU s) of `python -m cli.app ARGS` run from `repo`."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "cli.app", *args], cwd=repo, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="the other checkout (before), run interleaved with this one")
    ap.add_argument("-n", type=int, default=5, help="repeats per checkout and command (default 5)")
    ap.add_argument("--help-only", action="store_true", help="time `cosim --help` only")
    ap.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    args = ap.parse_args(argv)
    repos = ([("base", args.base.resolve())] if args.base else []) + [("this", REPO)]
    commands = [["--help"]] + ([] if args.help_only else [["simulate"]])
    # not counted: fill an empty kernel cache, and write the checkout's bytecode (__pycache__) as an
    # installed copy has it (`benchmarks.child_env`)
    writes_pyc = user_env()
    for _, repo in repos:
        run_once(repo, ["--help"] if args.help_only else ["simulate"], args.python, writes_pyc)
    for cmd in commands:
        walls: dict[str, list[float]] = {name: [] for name, _ in repos}
        cpus: dict[str, list[float]] = {name: [] for name, _ in repos}
        for i in range(args.n):
            for name, repo in repos:
                wall, cpu = run_once(repo, cmd, args.python)
                walls[name].append(wall)
                cpus[name].append(cpu)
                print(f"cosim {' '.join(cmd):9s} {name:4s} #{i + 1}: {wall:5.2f} s wall, {cpu:5.2f} s CPU",
                      flush=True)
        for name, repo in repos:
            print(f"cosim {' '.join(cmd)} {name} ({repo}): median {statistics.median(walls[name]):.2f} s wall, "
                  f"{statistics.median(cpus[name]):.2f} s CPU over {args.n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
