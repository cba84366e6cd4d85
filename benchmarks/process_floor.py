"""Where a cached `cosim simulate` process spends its CPU, stage by stage (the floor under any command).

Each repetition is a fresh `python` process that imports, in order, what the Pollux-workload
command needs — typer and the CLI, numpy, numba, pyarrow(+parquet), the policy registry, the
engine, the runner, numba's runtime initialisation (all a cached kernel load now does before
loading: `cosim.numba_cache.defer_target_refresh` skips numba's full target refresh), rich — and
then runs the command itself (`--perf measured-pollux-sim --progress goodput --costs pollux-sim`,
16 x 4 T4, caches warm), noting `time.process_time()` after each stage; within the command it
sums the CPU of the calls of the functions in `PART_HOOKS` (backends, cluster, fabric, perf
model, trace, job table, the engine's run, Parquet writes, the printed table, and inside those
the kernels' first calls and numba's cached-kernel loads). The table gives each stage's and
part's median CPU seconds over the repetitions (with their range) and whether pandas was imported (it should not be, with the trace cache warm).

    python -m benchmarks.process_floor --repeat 5 --workload 3 --policy tiresias-pollux
    python -m benchmarks.process_floor --repeat 11 --workload 6 --repo . --repo BEFORE_CHECKOUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.child_env import user_env

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import sys, time, json, io, contextlib, os
T = [("interpreter start + site", time.process_time())]
def mark(n): T.append((n, time.process_time()))
sys.path.insert(0, os.getcwd())
import typer; mark("typer")
sys.argv = ["cosim", "simulate"]
import cli.app; mark("cli.app (simulate registered)")
import cosim.process_settings; cosim.process_settings.apply()  # as cli.app.main() does
import numpy; mark("numpy")
import numba; mark("numba")
import pyarrow, pyarrow.parquet; mark("pyarrow + pyarrow.parquet")
import policies; mark("policies (registry, placement kernels)")
import simcore.engine; mark("simcore.engine (+ collectives, kernels)")
import experiments.runner; mark("experiments.runner (rest of the runner)")
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys
rtsys.initialize(cpu_target.target_context); mark("numba runtime init (what a cached load needs)")
import rich.console, rich.table; mark("rich console + table")
import importlib, netmodel, cli.simulate_cmd, numba.core.caching, numba.core.dispatcher
PARTS = {}
def timed(owner, attr, label):
    inner, active = getattr(owner, attr), []
    def wrapper(*a, **k):
        if active:
            return inner(*a, **k)
        active.append(1); t0 = time.process_time()
        try:
            return inner(*a, **k)
        finally:
            PARTS[label] = PARTS.get(label, 0.0) + time.process_time() - t0; active.pop()
    setattr(owner, attr, wrapper)
R = experiments.runner
for owner, attr, label in PART_HOOKS:
    timed(eval(owner), attr, label)
sys.argv = ["cosim", *ARGS]
try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli.app.app()
except SystemExit:
    pass
mark("the command (perf tables, kernels, run, write, print)")
print(json.dumps({"stages": T, "parts": PARTS, "pandas": "pandas" in sys.modules}))
"""

#: parts of the command's own stage, each the CPU of every call of one function (in the child:
#: the owner expression, the attribute, the label); the last two happen inside the others
PART_HOOKS = [
    ("R", "real_backends", "backends: zoo, comm model, policy registry"),
    ("netmodel", "load_cluster", "cluster preset (TOML)"),
    ("netmodel", "build_topology", "fabric (topology)"),
    ("R", "build_perf", "perf model (measured tables, calibration profile)"),
    ("R", "load_trace", "trace (cached)"),
    ("R", "build_jobs", "job table"),
    ("simcore.engine.Engine", "run", "simulation (Engine.run, kernel loads included)"),
    ("R", "write_parquet", "Parquet writes"),
    ("cli.simulate_cmd", "_print_table", "printed table (rich)"),
    ("numba.core.dispatcher.Dispatcher", "_compile_for_args", "  inside those: kernels' first calls (typing, cache lookup, load)"),
    ("numba.core.caching.Cache", "load_overload", "  of which loading cached kernels"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workload", type=int, default=3)
    ap.add_argument("--policy", default="tiresias-pollux")
    ap.add_argument("--repo", type=Path, action="append",
                    help="checkout to run (default: this one); give two to alternate them, run by run (before/after)")
    args = ap.parse_args(argv)
    import tempfile

    from benchmarks.bench_peer_process import DEFAULT_PEER_DIR, simulate_args, workload_path

    repos = args.repo or [REPO]
    out = Path(tempfile.mkdtemp(prefix="process-floor-")) / "out"
    code = (f"ARGS = {simulate_args(workload_path(args.workload, DEFAULT_PEER_DIR).resolve(), args.policy, out)!r}\n"
            f"PART_HOOKS = {PART_HOOKS!r}\n" + _CHILD)
    runs: dict[Path, list[dict]] = {repo: [] for repo in repos}
    for i in range(args.repeat + 1):  # the first run warms the caches and is not counted
        for repo in repos:  # alternated: a change of the host's load hits every checkout alike
            res = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True,
                                 env=user_env())  # bytecode cached, as for a user (benchmarks.child_env)
            if i:
                runs[repo].append(json.loads(res.stdout.strip().splitlines()[-1]))
    for repo in repos:
        _report(repo, runs[repo], args)
    return 0


def _report(repo: Path, runs: list[dict], args) -> None:
    """Print one checkout's median CPU s per stage and per part of the command."""
    names = [n for n, _ in runs[0]["stages"]]
    print(f"{repo} w{args.workload} {args.policy}: median of {args.repeat} processes, CPU s "
          f"(pandas imported: {sorted({r['pandas'] for r in runs})})")
    prev = [0.0] * len(runs)
    for k, name in enumerate(names):
        cum = [r["stages"][k][1] for r in runs]
        print(f"  {name:56s} {_spread([c - p for c, p in zip(cum, prev)])}")
        prev = cum
    print(f"  {'total (in-process; exit not counted)':56s} {_spread(prev)}")
    print("  the command's parts (median (min-max) CPU s of each over the processes):")
    for _, _, label in PART_HOOKS:
        print(f"    {label:64s} {_spread([r['parts'].get(label, 0.0) for r in runs])}")
    rest = [(r["stages"][-1][1] - r["stages"][-2][1])
            - sum(v for k, v in r["parts"].items() if not k.startswith(" ")) for r in runs]
    print(f"    {'rest (options, checks, policy, goodput, FTF reference, summaries)':64s} {_spread(rest)}")


def _spread(values: list[float]) -> str:
    """`median (min-max)` of CPU seconds."""
    return f"{statistics.median(values):6.3f} ({min(values):.3f}-{max(values):.3f})"


if __name__ == "__main__":
    raise SystemExit(main())
