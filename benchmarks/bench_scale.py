"""Scale: one simulation of a large synthetic trace on a large fabric, through the real runner.

Target: a 1,000,000-job Philly-like synthetic trace on a 20,000-GPU fabric
(`dgx-a100` resized to 2,500 nodes x 8 GPUs, non-blocking fat tree), FIFO, contention on,
in < 60 s and < 2 GB. Each size runs in a fresh spawned process, so the peak resident
memory measured (the process's high-water mark) is the run's own: numba start-up, trace
synthesis, topology, engine and result tables. A run still going after `LIMIT_S` is killed
and reported as not finished (value = the time it was given, status in the detail), so
`cosim bench` always ends. Where the time goes: `python -m benchmarks.profile_engine scale`.

    python -m benchmarks.bench_scale            # the 10k and 100k steps and the 1M-job target
    python -m benchmarks.run --only scale_10k   # just the quick step

Comparing two checkouts (outputs and speed): `--hash` runs one size in this process and
prints its CPU and wall seconds, peak memory, events and the sha1 of its jobs table (wall-clock
columns left out, as CSV; the first 12 hex digits); `--pair BEFORE AFTER` runs that same
measurement from each checkout's root in a fresh process, alternating them `--rounds` times
after one compiling run each, so both see the same load over time (compare CPU seconds and
the hashes; the code run is the runner's public API, so any checkout can be measured):

    python -m benchmarks.bench_scale --jobs 100000 --hash
    python -m benchmarks.bench_scale --jobs 100000 --pair ../before . --rounds 3
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import subprocess
import sys
import time
from pathlib import Path

TARGET_JOBS, TARGET_NODES = 1_000_000, 2_500
TARGET_S, TARGET_GB = 60.0, 2.0
LIMIT_S = 1200.0  # a 1M-job run still going then is killed (reported as not finished)
POLICY = "fifo"  # the cheapest baseline: measures the engine, not a policy's own cost


def _peak_gb_of(pid: int) -> float:
    """VmHWM of a live process (Linux), in GB; NaN elsewhere."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    return float("nan")


def _child(conn, jobs: int, nodes: int, policy: str, contention: bool) -> None:
    """Runs in a fresh process: the runner end to end; sends wall time, peak RSS and counters."""
    try:
        t0 = time.perf_counter()
        from experiments.runner import RunConfig, run

        t_import = time.perf_counter() - t0
        cfg = RunConfig(trace=f"synth:philly:{jobs}", cluster="dgx-a100", cluster_nodes=nodes, policies=(policy,),
                        contention=contention, seed=0)
        t1 = time.perf_counter()
        result = run(cfg, None, progress=False)
        wall = time.perf_counter() - t1
        row = result.summary.iloc[0].to_dict()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        conn.send({"status": "ok", "wall_s": wall, "import_s": t_import,
                   "peak_gb": rss / 1e9 if sys.platform == "darwin" else rss * 1024 / 1e9,
                   "finished": int(row.get("finished", 0)), "events": int(row.get("events", 0))})
    except Exception as exc:
        conn.send({"status": "error", "error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def measure(jobs: int, nodes: int, policy: str = POLICY, contention: bool = True, limit_s: float = 3600) -> dict:
    """Run one size in a fresh process; kill it after `limit_s` seconds."""
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, jobs, nodes, policy, contention), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    peak = float("nan")
    while proc.is_alive() and time.perf_counter() - t0 < limit_s:
        peak = max(peak, _peak_gb_of(proc.pid)) if peak == peak else _peak_gb_of(proc.pid)
        if recv.poll(1.0):
            break
    if recv.poll(0):
        out = recv.recv()
        proc.join(30)
        return out
    if proc.is_alive():
        peak = _peak_gb_of(proc.pid)
        proc.kill()
        proc.join()
        return {"status": "timeout", "wall_s": time.perf_counter() - t0, "peak_gb": peak}
    return {"status": "error", "error": f"the run's process died (exit code {proc.exitcode})", "peak_gb": peak}


def _result(label: str, jobs: int, nodes: int, target_s: float | None, target_gb: float | None) -> list[dict]:
    limit = LIMIT_S if target_s else 1800.0
    m = measure(jobs, nodes, limit_s=limit)
    what = f"{jobs:,} synth:philly jobs on {nodes * 8:,} GPUs (dgx-a100 x{nodes}), {POLICY}, contention on"
    if m["status"] == "error":
        raise RuntimeError(f"{what}: {m['error']}")
    if m["status"] == "timeout":
        detail = f"{what}: NOT FINISHED, killed after {m['wall_s']:.0f} s"
    else:
        rate = m["events"] / m["wall_s"] if m["wall_s"] > 0 else float("nan")
        detail = (f"{what}: {m['finished']:,} finished, {m['events']:,} events, {rate:,.0f} events/s; "
                  f"import {m['import_s']:.1f} s")
    return [
        {"name": f"{label} wall", "value": m["wall_s"], "unit": "s",
         "target": f"< {target_s:g} s" if target_s else "", "detail": detail},
        {"name": f"{label} peak memory", "value": m["peak_gb"], "unit": "GB",
         "target": f"< {target_gb:g} GB" if target_gb else "",
         "detail": "high-water resident memory of the run's process" + (" (at the kill)" if m["status"] == "timeout"
                                                                          else "")},
    ]


def bench_scale_10k() -> list[dict]:
    """A quick step (10k jobs on 2,000 GPUs): how the engine's cost grows towards the target."""
    return _result("10k jobs / 2k GPUs", 10_000, 250, None, None)


def bench_scale_100k() -> list[dict]:
    """The middle step (100k jobs on 20,000 GPUs, the target fabric): per-event cost at the
    target's running-set size, in a tenth of its events."""
    return _result("100k jobs / 20k GPUs", 100_000, TARGET_NODES, None, None)


def bench_scale_1m() -> list[dict]:
    """The target: 1M jobs on 20k GPUs in < 60 s and < 2 GB (killed at 20 min)."""
    return _result("1M jobs / 20k GPUs", TARGET_JOBS, TARGET_NODES, TARGET_S, TARGET_GB)


#: one measured run in this process (`--hash`), as source text so that `--pair` can run the very
#: same code from another checkout's root (it uses only the runner's public API)
_MEASURE = """
import hashlib, json, os, resource, sys, time
from experiments.runner import RunConfig, run
import simcore
jobs, nodes, policy = {jobs}, {nodes}, {policy!r}
cfg = RunConfig(trace=f"synth:philly:{{jobs}}", cluster="dgx-a100", cluster_nodes=nodes, policies=(policy,),
                contention=True, seed=0)
t0, c0 = time.perf_counter(), time.process_time()
res = run(cfg, None, progress=False)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
t = res.jobs[policy]
table = t.drop(columns=[c for c in t if "wall" in c])
digest = hashlib.sha1(table.to_csv(index=False).encode()).hexdigest()[:12]
row = res.summary.iloc[0]
print(json.dumps({{"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "engine_s": round(res.wall_s[policy], 2),
                  "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9, 3),
                  "events": int(row["events"]), "policy_calls": int(row["policy_calls"]), "jobs_sha1": digest,
                  "simcore": os.path.dirname(simcore.__file__)}}))
"""


def measure_here(jobs: int, nodes: int, policy: str = POLICY) -> None:
    """`--hash`: one run of `jobs` synthetic jobs on `nodes` nodes in this process, printed as JSON."""
    exec(compile(_MEASURE.format(jobs=jobs, nodes=nodes, policy=policy), "<bench_scale measure>", "exec"), {})


def pair(before: Path, after: Path, jobs: int, nodes: int, rounds: int, policy: str = POLICY) -> None:
    """`--pair`: the `--hash` run from each checkout's root, alternating, a fresh process each;
    round 0 compiles each checkout's kernels (its numbers are printed but not comparable)."""
    code = _MEASURE.format(jobs=jobs, nodes=nodes, policy=policy)
    for r in range(rounds + 1):
        for label, tree in (("before", before), ("after", after)):
            out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True,
                                 check=False)
            line = out.stdout.strip().splitlines()[-1:] or [f"failed: {out.stderr.strip()[-500:]}"]
            print(f"round {r} {label}: {line[0]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000, help="synthetic jobs (with --hash or --pair)")
    ap.add_argument("--nodes", type=int, default=TARGET_NODES, help="8-GPU nodes (with --hash or --pair)")
    ap.add_argument("--hash", action="store_true", help="one run in this process, with the jobs table's hash")
    ap.add_argument("--pair", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="alternate the --hash run between two checkouts")
    ap.add_argument("--rounds", type=int, default=3, help="measured runs per checkout with --pair")
    a = ap.parse_args(argv)
    if a.pair:
        pair(a.pair[0], a.pair[1], a.jobs, a.nodes, a.rounds)
        return 0
    if a.hash:
        measure_here(a.jobs, a.nodes)
        return 0
    from benchmarks.run import main as run_main

    return run_main(["--only", "scale"])


if __name__ == "__main__":
    sys.exit(main())
