"""How long `cosim simulate` (the default run) takes as a user sees it, and that it stays the same.

Targets: warm `cosim simulate` ≤ 2 s; the first `cosim simulate` with an empty kernel cache
≤ 20 s on a 2-core machine. Each measurement is a fresh process running the CLI
(`python -m cli.app simulate`, so a checkout measures its own code), timed from outside as wall
and CPU seconds (user + system of the child); on a shared host compare CPU s of runs taken side by
side (`--against`).

    python -m benchmarks.bench_startup                 # warm: median of 3 (after one warm-up run)
    python -m benchmarks.bench_startup --fresh         # first run, empty COSIM_NUMBA_CACHE_DIR
    python -m benchmarks.bench_startup --save DIR      # write the default run's outputs to DIR
    python -m benchmarks.bench_startup --compare DIR   # rerun, and fail unless its outputs equal DIR's
    python -m benchmarks.bench_startup --repo OTHER    # measure another checkout (before/after)
    python -m benchmarks.bench_startup --record-kernels # rewrite cosim/default_kernels.txt (cosim.warmup)
    python -m benchmarks.bench_startup --fresh --against OTHER --repeat 3  # alternate with another
                                                        # checkout, each run's wall and CPU s

Where a first run's time goes: nearly all of it is numba compiling the kernels the default run
calls, with their callees (about 100 compiles). `python -m benchmarks.compile_profile` gives the
compile CPU per function and signature. The time is spread over typing, lowering and code
generation of those functions; no one pass or kernel dominates (`NUMBA_OPT=0` saves about a
quarter, and numba then refuses to cache some kernels). What keeps it down:

- `cosim.warmup` compiles the default run's kernel signatures (`cosim/default_kernels.txt`,
  rewritten by `--record-kernels`) on two cores when a second one is free: a worker process
  compiles whole module families into the shared cache while the CLI compiles the others
  (numba compiles under one process-wide lock, so one process never uses the second core);
  `COSIM_PRIME=1` forces it, `=0` turns it off;
- `cosim.nsort` replaces numba's sorts (each built from several separately compiled helpers),
  and reductions, slice fills and `np.round`/`np.argmax`/`np.cumsum` are loops where a kernel
  needs them only once;
- one specialisation per kernel: no literal arguments (`0`, `-1`, `False`) that make numba
  compile a second copy, one integer dtype per argument, thin wrappers inlined, no C-callable
  wrappers (`no_cfunc_wrapper=True`);
- the default run calls only the kernels it executes: the duty-cycle contention solver for
  large groups is compiled once such a group comes up.

`--compare` is the before/after check for start-up work (lazy imports, fewer kernel
specialisations): summary.parquet and every policy's jobs.parquet and timeline.parquet must be
equal cell for cell (NaN equal to NaN) to the saved run's; wall-clock columns are excluded.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_repo = REPO  # the checkout whose CLI runs (--repo: measure another one, e.g. main, for before/after)


def _simulate(env: dict | None = None, out: Path | None = None, cpu: list | None = None) -> float:
    """Wall seconds of one CLI run; its CPU seconds (user + system, less sensitive to a loaded
    host than wall time) are appended to `cpu`."""
    cmd = [sys.executable, "-m", "cli.app", "simulate"] + (["--out", str(out), "--overwrite"] if out else [])
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=_repo, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return wall


def bench_simulate_warm(reps: int = 3) -> dict:
    _simulate()  # fills the cache if it is empty; not counted
    cpu: list[float] = []
    times = [_simulate(cpu=cpu) for _ in range(reps)]
    return {"name": "cosim simulate, warm kernel cache", "value": statistics.median(times), "unit": "s",
            "target": "<= 2 s", "detail": f"median of {reps}: {', '.join(f'{t:.2f}' for t in times)}; CPU s "
                                          f"{', '.join(f'{t:.2f}' for t in cpu)}"}


def bench_simulate_first() -> dict:
    with tempfile.TemporaryDirectory(prefix="cosim-numba-") as cache:
        env = dict(os.environ, COSIM_NUMBA_CACHE_DIR=cache)
        env.pop("NUMBA_CACHE_DIR", None)
        cpu: list[float] = []
        t = _simulate(env, cpu=cpu)
    return {"name": "cosim simulate, empty kernel cache", "value": t, "unit": "s", "target": "<= 20 s",
            "detail": f"CPU s {cpu[0]:.2f}"}


def interleave(other: Path, repeat: int, fresh: bool) -> None:
    """Alternate this checkout and `other` (e.g. a `git worktree add /tmp/base main` copy),
    `repeat` times each, printing every run's wall s and CPU s: on a shared host only runs
    taken side by side compare."""
    global _repo
    mine = _repo
    for i in range(repeat):
        for name, repo in (("this", mine), ("other", other.resolve())):
            _repo = repo
            r = bench_simulate_first() if fresh else bench_simulate_warm(reps=1)
            print(f"{i} {name:5s} {repo}: {r['value']:.2f} s wall; {r['detail']}", flush=True)
    _repo = mine


def _frames(folder: Path) -> dict:
    import pandas as pd

    files = sorted(p for p in folder.rglob("*.parquet"))
    from cosim.columns import TIMING_COLUMNS  # measured on the clock: they differ between identical runs

    return {str(p.relative_to(folder)): pd.read_parquet(p).drop(columns=list(TIMING_COLUMNS), errors="ignore")
            for p in files}


def compare(saved: Path, fresh: Path) -> list[str]:
    """Differences between two runs' Parquet outputs (empty: identical)."""
    import pandas as pd

    a, b = _frames(saved), _frames(fresh)
    problems = [f"{name}: only in {saved}" for name in sorted(set(a) - set(b))]
    problems += [f"{name}: only in {fresh}" for name in sorted(set(b) - set(a))]
    for name in sorted(set(a) & set(b)):
        try:
            pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)
        except AssertionError as exc:
            problems.append(f"{name}: {str(exc).splitlines()[0]}")
    return problems


def _capture(path: Path) -> None:
    """In this process: run the default `simulate` and write, per kernel signature compiled from
    Python, `module<TAB>qualname<TAB>signature<TAB>seconds` (process CPU of that first call,
    callees it compiled first included) to `path`."""
    import numba.core.dispatcher as nd

    sys.path.insert(0, str(_repo))
    rows = []
    original = nd.Dispatcher._compile_for_args

    def recording(self, *args, **kws):
        sig = tuple(self.typeof_pyval(a) for a in args)
        t0 = time.process_time()
        result = original(self, *args, **kws)
        rows.append((self.py_func.__module__, self.py_func.__qualname__, repr(sig), time.process_time() - t0))
        return result

    nd.Dispatcher._compile_for_args = recording
    from cli.app import app

    try:
        app(["simulate"])
    except SystemExit:
        pass
    path.write_text("".join(f"{m}\t{q}\t{s}\t{t:.3f}\n" for m, q, s, t in rows), encoding="utf-8")


#: the priming units (cosim.warmup): kernels sharing callees in one unit (a second process would
#: compile those again); a module not named here is a unit of its own
_UNITS = {"collectives.shape": "costs", "collectives.algorithms": "costs", "collectives.model": "costs",
          "collectives.contention": "contention", "collectives.contention_dutycycle": "contention",
          "collectives.contention_exact": "contention", "collectives.contention_groups": "groups",
          "simcore.kernels": "engine", "simcore.gps": "gps",
          "policies._kernels": "placement", "policies._round_state_kernels": "walk",
          "policies._preempt_kernels": "walk", "policies._walk_kernels": "walk", "policies._tiresias_kernels": "tiresias",
          "policies._fifo_kernels": "fifo"}
#: units that call another unit's kernels, compiled after it (then they load those from the cache):
#: the walk kernel places with `consolidate_gpus`, Tiresias' and FIFO's round kernels run the walk kernel
_AFTER = {"walk": ("placement",), "tiresias": ("placement", "walk"), "fifo": ("placement", "walk")}


def _family(module: str) -> str:
    return _UNITS.get(module, module)


def record_kernels() -> Path:
    """Rewrite cosim/default_kernels.txt from a default run with an empty cache (no priming):
    every kernel signature it compiles from Python, with its first-call compile time, in
    units (kernels sharing callees together, `_FAMILIES`) numbered heaviest first: the
    priming processes claim whole units (cosim.warmup.compile_claimed)."""
    target = _repo / "cosim" / "default_kernels.txt"
    with tempfile.TemporaryDirectory(prefix="cosim-numba-") as cache:
        env = dict(os.environ, COSIM_NUMBA_CACHE_DIR=cache, COSIM_PRIME="0")
        env.pop("NUMBA_CACHE_DIR", None)
        passes = []
        for name in ("cold", "warm"):  # cold: compile times; warm: also the kernels a cold run compiled
            raw = Path(cache) / f"{name}.tsv"  # as callees first (then called from Python, they load)
            subprocess.run([sys.executable, "-m", "benchmarks.bench_startup", "--repo", str(_repo), "--capture",
                            str(raw)], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
            passes.append([line.split("\t") for line in raw.read_text(encoding="utf-8").splitlines()])
    cold = {(m, q, s): t for m, q, s, t in passes[0]}
    rows = [(m, q, s, cold.get((m, q, s), "0")) for m, q, s, _ in passes[1]]
    per_family: dict[str, float] = {}
    for module, _, _, seconds in rows:
        per_family[_family(module)] = per_family.get(_family(module), 0.0) + float(seconds)
    order = sorted(per_family, key=lambda f: (-per_family[f], f))
    unit = {family: i for i, family in enumerate(order)}
    lines = ["# Kernels the default `cosim simulate` compiles from Python (read by cosim/warmup.py).",
             "# Written by `python -m benchmarks.bench_startup --record-kernels`; do not edit by hand.",
             "# unit<TAB>first-call CPU s<TAB>module<TAB>function<TAB>numba signature; units "
             + ", ".join(f"{unit[f]} {f} {per_family[f]:.1f} s" for f in order)]
    lines += [f"#after\t{unit[f]}\t{','.join(str(unit[d]) for d in _AFTER[f] if d in unit)}"
              for f in order if f in _AFTER]
    lines += [f"{unit[_family(m)]}\t{float(t):.2f}\t{m}\t{q}\t{s}" for m, q, s, t in rows]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", action="store_true", help="time the first run with an empty kernel cache")
    ap.add_argument("--against", type=Path, help="alternate runs of this checkout and this other one")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each checkout with --against")
    ap.add_argument("--save", type=Path, help="write the default run's outputs to this folder")
    ap.add_argument("--compare", type=Path, help="rerun and compare with the outputs saved in this folder")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to run (default: this one)")
    ap.add_argument("--record-kernels", action="store_true",
                    help="rewrite cosim/default_kernels.txt (the list cosim.warmup compiles on a first run)")
    ap.add_argument("--capture", type=Path, help=argparse.SUPPRESS)  # record-kernels' child process
    args = ap.parse_args(argv)
    global _repo
    _repo = args.repo.resolve()
    if args.capture:
        _capture(args.capture)
        return 0
    if args.record_kernels:
        print(f"wrote {record_kernels()}")
        return 0
    if args.save:
        _simulate(out=args.save)
        print(f"saved the default run to {args.save}")
        return 0
    if args.compare:
        with tempfile.TemporaryDirectory(prefix="cosim-compare-") as tmp:
            _simulate(out=Path(tmp) / "run")
            problems = compare(args.compare, Path(tmp) / "run")
        print("\n".join(problems) if problems else f"identical to {args.compare} (every Parquet file, every cell)")
        return 1 if problems else 0
    if args.against:
        interleave(args.against, args.repeat, args.fresh)
        return 0
    r = bench_simulate_first() if args.fresh else bench_simulate_warm()
    print(f"{r['name']}: {r['value']:.2f} s (target {r['target']}); {r['detail']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
