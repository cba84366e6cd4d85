"""Whole process, side by side with the Pollux OSDI'21 simulator (target: Tiresias
and Optimus >= 20x faster on the Pollux workloads, 16 x 4 T4).

Each measurement is a fresh process, timed from outside as CPU seconds (user + sys of the child,
`resource.getrusage(RUSAGE_CHILDREN)` deltas) with the wall time beside it: on a shared host CPU
time is the comparable number, wall time is inflated by whatever else runs.

- cosim: `python -m cli.app simulate --trace workload-N.csv --cluster t4-pcie --nodes 16 --policy
  {tiresias-pollux|optimus} --perf measured-pollux-sim --progress goodput --costs pollux-sim`, run
  in `--repo` (default: this checkout), after one untimed warm-up run per repo and workload (numba's
  kernel cache, the measured-table cache `simcore.measured_cache` and the trace cache `traces.cache`
  are then warm, as for any user's second run of that workload);
- the peer: `python simulator.py --policy {tiresias|optimus} workloads/workload-N.csv` in
  `--peer-dir` (petuum/adaptdl branch osdi21-artifact, `simulator/`) with `--peer-python`, when
  both exist and `--run-peer` is given; otherwise its times come from `--peer-times`, a file of
  lines `POLICY wN wall=S user=S sys=S` (`/usr/bin/time -f` output).

Runs are interleaved (for each workload and policy: every repo, then the peer), so a change of
load hits all sides alike. Usage:

    python -m benchmarks.bench_peer_process                                   # w1-w5, both policies
    python -m benchmarks.bench_peer_process --workloads 1 3 --repeat 3 --repo . --repo OTHER_CHECKOUT
    python -m benchmarks.bench_peer_process --run-peer --workloads 1 --policies tiresias
    python -m benchmarks.bench_peer_process --run-peer --workloads 6 --policies tiresias --repeat 3 \
        --repo . --repo BEFORE_CHECKOUT      # a held-out workload (from the peer's folder), before/after
    python -m benchmarks.bench_peer_process --peer-times PEER_TIMES.txt
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.child_env import user_env

REPO = Path(__file__).resolve().parents[1]
POLICIES = {"tiresias": "tiresias-pollux", "optimus": "optimus"}  # peer name -> cosim name
DEFAULT_PEER_DIR = Path("/tmp/adaptdl/simulator")
DEFAULT_PEER_PYTHON = Path("/tmp/pollux-venv/bin/python")
_TIME_LINE = re.compile(r"^(\w+)\s+w(\d+)\s+wall=([\d.]+)\s+user=([\d.]+)\s+sys=([\d.]+)")


def workload_path(n: int, peer_dir: Path | None = None) -> Path:
    """Pollux workload `n`: the shared data's copy (workloads 1-5), else the peer's own
    `workloads/workload-N.csv` in `peer_dir` (the artifact's held-out workloads 6-8, which no
    cosim model was fitted or tested on), else the shared path (the run then names it missing)."""
    from cosim.paths import shared_data_dir

    shared = shared_data_dir("traces") / "philly" / "workloads-pollux-osdi21" / f"workload-{n}.csv"
    peer = None if peer_dir is None else Path(peer_dir) / "workloads" / f"workload-{n}.csv"
    return peer if not shared.is_file() and peer is not None and peer.is_file() else shared


#: the children's environment: a user's shell (`benchmarks.child_env`: bytecode cached after the warm-up run)
CHILD_ENV = user_env()


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, int]:
    """(CPU s user+sys, wall s, exit code) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, check=False, cwd=cwd, env=env or CHILD_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, rc


def simulate_args(trace: Path | str, policy: str, out: Path | str) -> list[str]:
    """The Pollux-workload command after `cosim` (16 x 4 T4, the peer's measured tables and goodput
    progress): the one command every peer benchmark times or compares."""
    return ["simulate", "--trace", str(trace), "--cluster", "t4-pcie", "--nodes", "16", "--policy", policy,
            "--perf", "measured-pollux-sim", "--progress", "goodput", "--costs", "pollux-sim", "--out", str(out),
            "--overwrite"]


def cosim_cmd(trace: Path, policy: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "cli.app", *simulate_args(trace, policy, out)]


def read_peer_times(path: Path) -> dict[tuple[str, int], list[float]]:
    """(peer policy, workload) -> CPU s (user + sys) of each recorded peer run."""
    out: dict[tuple[str, int], list[float]] = {}
    for line in path.read_text().splitlines():
        m = _TIME_LINE.match(line.strip())
        if m:
            out.setdefault((m.group(1), int(m.group(2))), []).append(float(m.group(4)) + float(m.group(5)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    ap.add_argument("--repo", type=Path, action="append", help="cosim checkout(s) to time (default: this one)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--run-peer", action="store_true", help="also run the peer simulator (slow: 15-90 s CPU a run)")
    ap.add_argument("--peer-dir", type=Path, default=DEFAULT_PEER_DIR)
    ap.add_argument("--peer-python", type=Path, default=DEFAULT_PEER_PYTHON)
    ap.add_argument("--peer-times", type=Path, help="recorded peer times (`POLICY wN wall= user= sys=` lines)")
    args = ap.parse_args(argv)
    repos = [r.resolve() for r in (args.repo or [REPO])]
    peer_ok = args.run_peer and args.peer_dir.is_dir() and args.peer_python.is_file()
    if args.run_peer and not peer_ok:
        print(f"peer not found ({args.peer_dir}, {args.peer_python}): not run", file=sys.stderr)
    recorded = read_peer_times(args.peer_times) if args.peer_times else {}
    out = Path(tempfile.mkdtemp(prefix="bench-peer-"))
    for repo in repos:  # warm-up: numba kernels, the measured-table and trace caches of each checkout
        for n in args.workloads:
            cpu, wall, rc = timed(cosim_cmd(workload_path(n, args.peer_dir), "tiresias-pollux", out / "warm"), repo)
            print(f"warm-up {repo} w{n}: {cpu:.2f} s CPU, {wall:.2f} s wall, rc {rc}", flush=True)
    rows = []
    for n in args.workloads:
        trace = workload_path(n, args.peer_dir)
        for peer_name in args.policies:
            for rep in range(args.repeat):
                line = {"workload": n, "policy": peer_name, "rep": rep}
                for i, repo in enumerate(repos):
                    cpu, wall, rc = timed(cosim_cmd(trace, POLICIES[peer_name], out / f"r{i}"), repo)
                    if rc != 0:
                        print(f"cosim failed (rc {rc}) in {repo} on workload {n} {peer_name}", file=sys.stderr)
                    line[f"cosim{i}"] = (cpu, wall)
                if peer_ok:
                    cpu, wall, rc = timed([str(args.peer_python), "simulator.py", "--policy", peer_name,
                                                 f"workloads/workload-{n}.csv"], args.peer_dir)
                    line["peer"] = (cpu, wall) if rc == 0 else None
                rows.append(line)
                print(_fmt(line, repos, recorded), flush=True)
    _summary(rows, repos, recorded)
    return 0


def _summary(rows: list[dict], repos: list[Path], recorded: dict) -> None:
    """Per workload and policy: each checkout's median CPU s (range), the peer's, and the ratio of the medians."""
    import statistics

    print("\nmedians (min-max) of CPU s; ratio = peer median / cosim median")
    for key in sorted({(r["workload"], r["policy"]) for r in rows}):
        sel = [r for r in rows if (r["workload"], r["policy"]) == key]
        peer = [r["peer"][0] for r in sel if r.get("peer")] or recorded.get((key[1], key[0]), [])
        parts = [f"w{key[0]} {key[1]:<8}"]
        pm = statistics.median(peer) if peer else None
        for i, _ in enumerate(repos):
            c = [r[f"cosim{i}"][0] for r in sel]
            cm = statistics.median(c)
            parts.append(f"cosim[{i}] {cm:.2f} ({min(c):.2f}-{max(c):.2f})" + (f" {pm / cm:5.1f}x" if pm else ""))
        if peer:
            parts.append(f"peer {pm:.2f} ({min(peer):.2f}-{max(peer):.2f}){'' if sel[0].get('peer') else ' recorded'}")
        print(" | ".join(parts), flush=True)


def _fmt(line: dict, repos: list[Path], recorded: dict) -> str:
    parts = [f"w{line['workload']} {line['policy']:<8}"]
    for i, _ in enumerate(repos):
        cpu, wall = line[f"cosim{i}"]
        parts.append(f"cosim[{i}] {cpu:5.2f} s CPU ({wall:5.2f} s wall)")
    peer = line.get("peer")
    ref = None
    if peer:
        ref = peer[0]
        parts.append(f"peer {peer[0]:6.2f} s CPU ({peer[1]:6.2f} s wall)")
    elif (line["policy"], line["workload"]) in recorded:
        ref = min(recorded[(line["policy"], line["workload"])])
        parts.append(f"peer (recorded) {ref:6.2f} s CPU")
    if ref:
        parts.append("ratio " + " / ".join(f"{ref / line[f'cosim{i}'][0]:5.1f}x" for i in range(len(repos))))
    return " | ".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
