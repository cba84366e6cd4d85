"""Where a simulation's time goes: one run of the scale or full-Philly benchmark under a
sampling profiler, summarised per function (share of samples, inclusive and own).

    python -m benchmarks.profile_engine scale --jobs 100000          # bench_scale's run, FIFO
    python -m benchmarks.profile_engine philly --policy tiresias     # bench_engine's full Philly
    python -m benchmarks.profile_engine scale --jobs 30000 --sampler cprofile --top 40

After the per-function list, the engine's samples are summed by part of its round (the
policy's view, its `decide`, validation and planning, applying, the step, accepting events,
contention re-solves, the timeline row), each with its share and its microseconds per event
(the run's engine seconds times the share, over its events: per event, not per run).

The run is the benchmark's own (`bench_scale`: synthetic Philly-like jobs on `dgx-a100`
resized to `--nodes` nodes, contention on; `bench_engine`: the full `philly_jobs.csv` on its
512-GPU fabric). `--sampler py-spy` (the default when `py-spy` is on PATH) samples a child
process at `--rate` Hz and barely slows it; `cprofile` runs in this process and inflates
functions with many small calls, so read its shares as call counts more than as time. Run the
command once before profiling a fresh checkout: numba compiles its kernels on the first run,
and a profile with compilation in it shows numba's compiler.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_FRAME = re.compile(r"(.*) \((.*?):\d+\)$")
_COUNTS = re.compile(r"events (\d+), policy calls \d+, engine ([\d.]+) s")  # `run_case`'s last line


def run_case(case: str, jobs: int, nodes: int, policy: str) -> None:
    """The benchmark's run, in this process."""
    if case == "scale":
        from experiments.runner import RunConfig, run

        cfg = RunConfig(trace=f"synth:philly:{jobs}", cluster="dgx-a100", cluster_nodes=nodes,
                        policies=(policy,), contention=True, seed=0)
        res = run(cfg, None, progress=False)
        row = res.summary.iloc[0]
        events, calls, engine_s = int(row["events"]), int(row["policy_calls"]), res.wall_s[policy]
    else:
        from benchmarks.bench_engine import _child_philly

        r = _child_philly(policy, jobs or None)
        events, calls, engine_s = r["events"], r["policy_calls"], r["engine_s"]
    print(f"events {events}, policy calls {calls}, engine {engine_s:.1f} s", file=sys.stderr)


def _name(frame: str) -> str:
    m = _FRAME.match(frame)
    if not m:
        return frame
    path = Path(m.group(2))
    return f"{m.group(1)} ({path.parent.name}/{path.name})"


def summarise(stacks: dict[tuple[str, ...], int], top: int) -> str:
    """Per function: share of samples with it anywhere on the stack, and at the top."""
    total = sum(stacks.values()) or 1
    incl, own = collections.Counter(), collections.Counter()
    for frames, n in stacks.items():
        names = [_name(f) for f in frames]
        own[names[-1]] += n
        for f in set(names):
            incl[f] += n
    lines = [f"{total} samples", "  incl%   own%  function"]
    for f, n in incl.most_common(top):
        lines.append(f"{100 * n / total:7.1f} {100 * own[f] / total:6.1f}  {f}")
    return "\n".join(lines)


#: the parts of the engine's round, by the function right under `Engine._run` (`parts`)
_PARTS = {"Engine._decide": "the policy call", "validate_decision": "validation and planning",
          "Applying._apply": "applying", "Stepping._step": "the step to the next instant",
          "EventHandling._accept": "accepting events (arrivals, completions)",
          "RateBook.refresh": "contention re-solves", "Recording._observe": "the timeline row"}


def parts(stacks: dict[tuple[str, ...], int], events: int = 0, engine_s: float = 0.0) -> str:
    """The engine's samples by part of its round (the frame right under `Engine._run`; the
    policy call split into the view and the policy's own `decide`): share of the engine's
    samples and, given the run's events and engine seconds, microseconds per event."""
    by: collections.Counter = collections.Counter()
    for frames, n in stacks.items():
        names = [_name(f).split(" (")[0] for f in frames]
        if "Engine._run" not in names:
            continue
        i = len(names) - 1 - names[::-1].index("Engine._run")
        under = names[i + 1] if i + 1 < len(names) else ""
        part = _PARTS.get(under, "the round loop itself")
        if under == "Engine._decide":
            part = "the policy's view" if "PolicyView._view" in names[i + 2:i + 3] else "the policy's decide"
        by[part] += n
    total = sum(by.values()) or 1
    lines = [f"{total} samples in the engine", "  share   µs/event  part"]
    for part, n in by.most_common():
        per = f"{1e6 * engine_s * n / total / events:9.1f}" if events and engine_s else "        -"
        lines.append(f"{100 * n / total:6.1f}%  {per}  {part}")
    return "\n".join(lines)


def _py_spy(args) -> dict[tuple[str, ...], int]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stacks.txt"
        cmd = ["py-spy", "record", "-r", str(args.rate), "-f", "raw", "-o", str(out), "--",
               sys.executable, "-m", "benchmarks.profile_engine", args.case, "--jobs", str(args.jobs),
               "--nodes", str(args.nodes), "--policy", args.policy, "--sampler", "none"]
        done = subprocess.run(cmd, cwd=REPO, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        if done.returncode:
            raise SystemExit(f"the profiled run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        m = _COUNTS.search(done.stderr)
        args.counts = (int(m.group(1)), float(m.group(2))) if m else (0, 0.0)
        stacks: dict[tuple[str, ...], int] = collections.Counter()
        for line in out.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            if stack:
                stacks[tuple(stack.split(";"))] += int(n)
        return stacks


def _cprofile(args) -> str:
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.runcall(run_case, args.case, args.jobs, args.nodes, args.policy)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=("scale", "philly"))
    ap.add_argument("--jobs", type=int, default=100_000,
                    help="scale: synthetic jobs; philly: the first N jobs of the trace (0: all)")
    ap.add_argument("--nodes", type=int, default=2_500,
                    help="scale: 8-GPU nodes (2,500 = the 20,000-GPU target)")
    ap.add_argument("--policy", default=None, help="default: fifo (scale), tiresias (philly)")
    ap.add_argument("--sampler", choices=("py-spy", "cprofile", "none"),
                    default="py-spy" if shutil.which("py-spy") else "cprofile")
    ap.add_argument("--rate", type=int, default=50, help="py-spy samples per second")
    ap.add_argument("--top", type=int, default=50, help="functions listed")
    args = ap.parse_args(argv)
    if args.case == "philly" and args.jobs == 100_000:
        args.jobs = 0  # the whole trace unless told otherwise
    args.policy = args.policy or ("fifo" if args.case == "scale" else "tiresias")
    if args.sampler == "none":
        run_case(args.case, args.jobs, args.nodes, args.policy)
    elif args.sampler == "py-spy":
        stacks = _py_spy(args)
        print(summarise(stacks, args.top))
        print(parts(stacks, *args.counts))
    else:
        print(_cprofile(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
