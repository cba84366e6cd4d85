"""Where a cached `cosim simulate` of a Pollux workload spends its CPU after its imports, and what
the cyclic garbage collector costs it (the whole process's target: Tiresias ≥ 20× faster than the
Pollux simulator).

    python -m benchmarks.command_sections sections [--repeat 9] [--workload 3] [--policy P] [--twice]
    python -m benchmarks.command_sections gc [--workload 3] [--gen0 N]

`sections`: in a fresh process per repeat, the command's modules imported first (so that their
import is not counted), `cosim simulate --trace workload-N.csv --cluster t4-pcie --nodes 16
--perf measured-pollux-sim --progress goodput --costs pollux-sim` runs in process with its main
steps wrapped by `time.process_time` counters (`Engine.run` and its parts, the FTF reference,
build_jobs, the measured-table cache, numba's loads of cached kernels, the Parquet writes, ...);
prints each counter's median and minimum over the repeats. Parts nest (an `eng.*` line is inside
`Engine.run`; `numba kernel loads` overlaps the steps that trigger them). `--twice` runs the
command once before the measured run in the same process (kernels loaded, caches warm): the
Python that remains. Run it from each checkout to compare (alternate them: the host is shared).

`gc`: the real entry point (`python -m cli.app simulate ...`, its `main()` and its GC thresholds)
with a `gc.callbacks` counter: collections per generation and their CPU time, and, with
`--gen0 N`, the young-generation threshold `main()` sets replaced by N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.child_env import user_env

REPO = Path(__file__).resolve().parents[1]


def _args(workload: int, policy: str, out: str) -> list[str]:
    from benchmarks.bench_peer_process import simulate_args, workload_path

    return simulate_args(workload_path(workload), policy, out)


def _child_sections(workload: int, policy: str, twice: bool) -> dict[str, float]:
    """One measured command in this process (see the module docstring); counter → CPU seconds."""
    # the modules the command imports, imported before its clock starts (numba's typeof
    # imports numpy.ma on the first kernel call)
    import numba.core.dispatcher as nd
    import numpy.ma  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import rich.console
    import rich.table  # noqa: F401

    import calibration.importers
    import calibration.stepform
    import calibration.zoo  # noqa: F401
    import cli.app
    import cli.simulate_cmd as sc
    import collectives.contention  # noqa: F401
    import cosim.outdir  # noqa: F401
    import experiments.runner  # noqa: F401
    import netmodel  # noqa: F401
    import policies
    import simcore.engine as eng
    import simcore.measured_cache as mc
    import simcore.perf_measured as pm
    import experiments.runner as rn

    policies.POLICIES.get(policy)  # the policy's module
    acc: dict[str, float] = {}

    def wrap(owner, name: str, label: str) -> None:
        f = getattr(owner, name)

        def timed(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[label] = acc.get(label, 0.0) + time.process_time() - t

        setattr(owner, name, timed)

    for name in ("build_perf", "build_jobs", "ftf_reference_jct", "write_parquet", "summary_extras",
                 "assign_goodput"):
        wrap(rn, name, name)
    wrap(eng.Engine, "run", "Engine.run")
    for name in ("_step", "_accept", "_apply", "_view"):
        wrap(eng.Engine, name, f" eng.{name}")
    wrap(eng, "validate_decision", " eng.validate")
    wrap(eng.Engine, "_decide", " eng.decide")
    wrap(sc, "_print_table", "print_table")
    wrap(pm.MeasuredPerf, "phases", "perf.phases")
    wrap(mc, "load_or_build", "measured_cache.load_or_build")
    wrap(nd.Dispatcher, "_compile_for_args", "numba kernel loads")
    out = f"/tmp/cosim-command-sections-{os.getpid()}"
    args = _args(workload, policy, out)
    for _ in range(2 if twice else 1):
        acc.clear()
        t = time.process_time()
        try:
            cli.app.app(args, standalone_mode=False)
        except SystemExit:
            pass
        acc["TOTAL command"] = time.process_time() - t
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    return acc


def _child_gc(workload: int, policy: str, gen0: int | None) -> None:
    """The real entry point with a collection counter; prints one JSON line at exit."""
    import atexit
    import gc
    import runpy

    st = {"collections": [0, 0, 0], "cpu_s": [0.0, 0.0, 0.0]}
    t0 = [0.0]

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            t0[0] = time.process_time()
        else:
            g = info["generation"]
            st["collections"][g] += 1
            st["cpu_s"][g] += time.process_time() - t0[0]

    gc.callbacks.append(count)
    if gen0 is not None:
        real = gc.set_threshold
        gc.set_threshold = lambda *a: real(gen0, *a[1:])  # what main() sets, its first value replaced
    atexit.register(lambda: print("GC " + json.dumps(st), file=sys.stderr))  # main() runs atexit handlers
    out = f"/tmp/cosim-command-gc-{os.getpid()}"
    sys.argv = ["cli.app", *_args(workload, policy, out)]
    runpy.run_module("cli.app", run_name="__main__", alter_sys=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("sections", "gc", "child-sections", "child-gc"))
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--workload", type=int, default=3)
    ap.add_argument("--policy", default="tiresias-pollux")
    ap.add_argument("--twice", action="store_true")
    ap.add_argument("--gen0", type=int, default=None)
    a = ap.parse_args()
    if a.mode == "child-sections":
        print("JSON" + json.dumps(_child_sections(a.workload, a.policy, a.twice)))
        return
    if a.mode == "child-gc":
        _child_gc(a.workload, a.policy, a.gen0)
        return
    env = dict(user_env(), PYTHONPATH=str(Path.cwd()))  # users' runs read fresh .pyc files (benchmarks.child_env)
    if a.mode == "gc":
        cmd = [sys.executable, "-m", "benchmarks.command_sections", "child-gc", "--workload", str(a.workload),
               "--policy", a.policy] + ([] if a.gen0 is None else ["--gen0", str(a.gen0)])
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)  # its output says why
        line = [x for x in r.stderr.splitlines() if x.startswith("GC ")]
        print(line[-1] if line else r.stderr[-2000:], f"(whole process {time.time() - t:.2f} s wall)")
        return
    rows = []
    for _ in range(a.repeat):
        cmd = [sys.executable, "-m", "benchmarks.command_sections", "child-sections",
               "--workload", str(a.workload), "--policy", a.policy] + (["--twice"] if a.twice else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)  # its output says why
        line = [x for x in r.stdout.splitlines() if x.startswith("JSON")]
        if not line:
            sys.exit(r.stderr[-3000:])
        rows.append(json.loads(line[0][4:]))
    for k in sorted(rows[0]):
        v = [row.get(k, 0.0) * 1000 for row in rows]
        print(f"{k:30s} median {statistics.median(v):7.1f} ms   min {min(v):7.1f} ms")


if __name__ == "__main__":
    main()
