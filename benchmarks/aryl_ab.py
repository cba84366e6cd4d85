"""Before/after timing of one Aryl stand-in run in two source trees, interleaved, with an output diff.

    python -m benchmarks.aryl_ab BASE_TREE NEW_TREE [--scale 0.25] [--variant basic] [--reps 2]

Runs `python -m benchmarks.bench_aryl --run SCALE --variant VARIANT` in BASE_TREE, then NEW_TREE,
`reps` times (A B A B …: on a shared machine load drifts, interleaving spreads it over both),
each a fresh process whose CPU time (user + sys, `os.wait4`) is printed with the run's own CPU
seconds (`bench_aryl`'s `CPU … s`: the simulation without
the reclaim benchmarks printed before it). The trees' harness is their own `benchmarks/bench_aryl.py`
(a tree without the `advanced`/`ideal` variants runs `basic` only). Then the last run of each
tree is compared file by file (`decisions`, `jobs`, `reclaims`, `timeline` Parquet: every column,
value for value, NaN equal to NaN): "identical" or the columns that differ. Wall time is not
compared anywhere; the files hold none.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def one(tree: Path, scale: float, variant: str) -> dict:
    """One bench_aryl run in `tree`: process CPU (user+sys), run CPU, run dir."""
    before = set(Path("/tmp").glob(f"cosim-bench-aryl-{scale}-*"))
    p = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_aryl", "--run", str(scale), "--variant", variant],
                         cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read() if p.stdout else ""
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"aryl_ab: run in {tree} failed:\n{out[-2000:]}")
    m = re.search(r"CPU ([0-9.]+) s", out)
    runs = sorted(set(Path("/tmp").glob(f"cosim-bench-aryl-{scale}-*")) - before)
    return {"cpu": ru.ru_utime + ru.ru_stime, "run_cpu": float(m.group(1)) if m else float("nan"),
            "dir": runs[-1] / "run" / "aryl" if runs else None, "line": out.strip().splitlines()[-1]}


def diff(a: Path, b: Path) -> list[str]:
    """Files/columns that differ between two run directories (empty: identical)."""
    bad = []
    for f in sorted(a.glob("*.parquet")):
        x, y = pd.read_parquet(f), pd.read_parquet(b / f.name)
        if list(x.columns) != list(y.columns) or len(x) != len(y):
            bad.append(f"{f.name}: shape {x.shape} vs {y.shape}")
            continue
        for c in x.columns:
            u, v = x[c].to_numpy(), y[c].to_numpy()
            eq = (u == v) | (pd.isna(u) & pd.isna(v))
            if not np.all(eq):
                bad.append(f"{f.name}:{c} ({int((~np.asarray(eq, bool)).sum())} rows)")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--variant", default="basic")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    last = {}
    for rep in range(a.reps):
        for name, tree in (("base", a.base), ("new", a.new)):
            r = one(tree, a.scale, a.variant)
            last[name] = r
            print(f"{name:<4} rep {rep}: process CPU {r['cpu']:7.1f} s  run CPU {r['run_cpu']:7.1f} s  "
                  f"| {r['line']}", flush=True)
    if last["base"]["dir"] and last["new"]["dir"]:
        bad = diff(last["base"]["dir"], last["new"]["dir"])
        print(f"outputs {last['base']['dir']} vs {last['new']['dir']}: " + ("identical" if not bad else "; ".join(bad)))


if __name__ == "__main__":
    main()
