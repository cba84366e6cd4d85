"""The simulation alone (in process) on the Pollux OSDI'21 workloads (target: ≥ 200× faster than the Pollux simulator's whole process).

The setting is the one `cosim simulate` runs for the comparison with the peer simulator:

    cosim simulate --trace workloads-pollux-osdi21/workload-N.csv --cluster t4-pcie --nodes 16 \\
        --policy tiresias-pollux|optimus --perf measured-pollux-sim --progress goodput --costs pollux-sim

and the number is the engine's own time, `RunResult.wall_s` (the "wall s" column `cosim
simulate` prints: `Engine.run`, the policy's calls included, start-up and output writing not),
taken in a fresh process per run as the CLI does (caches the run fills are part of it). The
CPU time of the same call (`time.process_time`) is printed beside it: the better number on a
shared host. The peer's time is its whole process (docs/peers.md); its import is ~2.5 s.

    python -m benchmarks.bench_inproc time [--policies tiresias-pollux,optimus] [--workloads 1-5] [--repeats 3]
    python -m benchmarks.bench_inproc dump DIR [--policies ...] [--workloads ...]   # outputs, for `diff`
    python -m benchmarks.bench_inproc diff DIR_A DIR_B                               # value for value

`dump` writes DIR/<policy>/w<N>/{jobs,timeline,summary}.parquet; `diff` compares every table of
two dumps exactly (the summary without its wall-time columns) and exits 1 on a difference.
Comparing two trees: run `time` from each tree's root, alternating, and compare `cpu_s`.
Needs ../shared/data (the workloads and the measured tables).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from cosim.columns import TIMING_COLUMNS, TIMING_FILES

POLICIES = ("tiresias-pollux", "optimus")


def workload_path(n: int) -> str:
    from benchmarks.bench_peer_process import workload_path as path

    return str(path(n))


def config(policy: str, n: int):
    from experiments.runner import RunConfig

    return RunConfig(trace=workload_path(n), cluster="t4-pcie", cluster_nodes=16, policies=(policy,),
                     perf="measured-pollux-sim", progress="goodput", costs="pollux-sim")


def run_case(policy: str, n: int, out: Path | None = None) -> dict:
    """One run in this process: the engine's wall and CPU seconds (and the policy's share)."""
    from experiments import runner

    cpu: dict[str, float] = {}
    engine_cls = runner.Engine

    class _Timed(engine_cls):  # CPU seconds of exactly what RunResult.wall_s times
        def run(self):
            c0 = time.process_time()
            try:
                return super().run()
            finally:
                cpu["engine"] = time.process_time() - c0

    runner.Engine = _Timed
    try:
        res = runner.run(config(policy, n), out)
    finally:
        runner.Engine = engine_cls
    return {"policy": policy, "workload": n, "wall_s": res.wall_s[policy], "cpu_s": cpu["engine"],
            "policy_wall_s": res.policy_wall_s[policy], "load1": os.getloadavg()[0],
            "policy_calls": int(res.summary["policy_calls"].iloc[0]), "events": int(res.summary["events"].iloc[0])}


def _ints(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def _time(args) -> None:
    for r in range(args.repeats):
        for p in args.policies.split(","):
            for n in _ints(args.workloads):
                code = (f"import json; from benchmarks.bench_inproc import run_case; "
                        f"print(json.dumps(run_case({p!r}, {n})))")
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{p:16s} w{n} run {r}: wall_s {row['wall_s']:.3f}  cpu_s {row['cpu_s']:.3f}  "
                      f"policy_s {row['policy_wall_s']:.3f}  calls {row['policy_calls']}  events {row['events']}  "
                      f"load1 {row['load1']:.2f}", flush=True)


def _dump(args) -> None:
    import pandas as pd

    for p in args.policies.split(","):
        for n in _ints(args.workloads):
            d = Path(args.dir) / p / f"w{n}"
            run_case(p, n, d)
            s = pd.read_parquet(d / "summary.parquet")
            print(p, n, "avg_jct_s", float(s["avg_jct_s"].iloc[0]), flush=True)


def _diff(args) -> int:
    import pandas as pd

    a, b = Path(args.a), Path(args.b)
    bad = 0
    files = sorted(p.relative_to(a) for p in a.rglob("*.parquet") if p.name not in TIMING_FILES)
    if not files:
        print(f"no Parquet files under {a}")
        return 1
    for rel in files:
        x, y = pd.read_parquet(a / rel), pd.read_parquet(b / rel)
        if rel.name == "summary.parquet":
            x, y = (t.drop(columns=[c for c in TIMING_COLUMNS if c in t]) for t in (x, y))
        try:
            pd.testing.assert_frame_equal(x, y, check_exact=True)
            print("same     ", rel, x.shape)
        except AssertionError as exc:
            bad += 1
            print("DIFFERENT", rel, str(exc).splitlines()[:6])
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_inproc", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("time", "dump"):
        s = sub.add_parser(name)
        if name == "dump":
            s.add_argument("dir")
        s.add_argument("--policies", default=",".join(POLICIES))
        s.add_argument("--workloads", default="1-5")
        s.add_argument("--repeats", type=int, default=1)
    s = sub.add_parser("diff")
    s.add_argument("a")
    s.add_argument("b")
    args = ap.parse_args(argv)
    if args.cmd == "time":
        _time(args)
    elif args.cmd == "dump":
        _dump(args)
    else:
        return _diff(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
