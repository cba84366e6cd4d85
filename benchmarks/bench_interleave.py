"""Before/after timings of a benchmark, interleaved on a shared machine.

Runs the benchmark alternately in two checkouts (e.g. a `git worktree add ../base main` copy
and the working tree), `--rounds` times each, each run a fresh process, so that both see the
same load over time instead of one run each at different loads; prints every run's rows
labelled with its checkout and round. The default benchmark is the decision-time table
(`benchmarks.bench_policies --table`: wall ms, CPU ms in the detail);
`--module` names another benchmark module and its arguments, e.g. one Aryl cell:

    nice -n 10 python -m benchmarks.bench_interleave ../base . --only gavel,pal --rounds 3
    python -m benchmarks.bench_interleave ../base . --rounds 3 \\
        --module "benchmarks.bench_aryl --run 0.03125 --params event_driven=false"
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="checkout with the code before the change")
    ap.add_argument("new", type=Path, help="checkout with the code after the change")
    ap.add_argument("--only", default="", help="policies to time (comma-separated; default: all)")
    ap.add_argument("--rounds", type=int, default=3, help="runs per checkout, alternating")
    ap.add_argument("--repeats", type=int, default=3, help="calls per row within a run")
    ap.add_argument("--module", default="", help="another benchmark: its module and arguments in one string "
                                                 "(--only and --repeats are bench_policies' and ignored then)")
    a = ap.parse_args(argv)
    if a.module:
        cmd = [sys.executable, "-m", *shlex.split(a.module)]
    else:
        cmd = [sys.executable, "-m", "benchmarks.bench_policies", "--table", "--repeats", str(a.repeats)]
        if a.only:
            cmd += ["--only", a.only]
    for r in range(a.rounds):
        for label, where in (("old", a.old), ("new", a.new)):
            out = subprocess.run(cmd, cwd=where, capture_output=True, text=True, check=False)
            print(f"## round {r + 1} {label} ({where.resolve()})")
            print(out.stdout.rstrip() or out.stderr[-2000:])
            sys.stdout.flush()


if __name__ == "__main__":
    main()
