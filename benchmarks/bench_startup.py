"""How long `cosim simulate` (the default run) takes as a user sees it, and that it stays the same.

Targets (issue 15): warm `cosim simulate` ≤ 2 s; the first `cosim simulate` with an empty kernel
cache ≤ 20 s (on the 2-core project machine). Each measurement is a fresh process running the CLI
(`python -m cli.app simulate`, so a checkout measures its own code), timed from outside; the load
average is recorded beside it because the host is shared.

    python -m benchmarks.bench_startup                 # warm: median of 3 (after one warm-up run)
    python -m benchmarks.bench_startup --fresh         # first run, empty COSIM_NUMBA_CACHE_DIR
    python -m benchmarks.bench_startup --save DIR      # write the default run's outputs to DIR
    python -m benchmarks.bench_startup --compare DIR   # rerun, and fail unless its outputs equal DIR's
    python -m benchmarks.bench_startup --repo /work/main   # measure another checkout (before/after)
    python -m benchmarks.bench_startup --record-kernels # rewrite cosim/default_kernels.txt (cosim.warmup)
    python -m benchmarks.bench_startup --fresh --against /tmp/base --repeat 3  # alternate with another
                                                        # checkout, each run's wall, CPU and load

Where the first run's time goes (issue 15): all of it is numba compiling the 23 kernels the
default run calls (with their callees, 209 compiles on main). Per-kernel times come from numba's
`numba:compile` events (an in-process listener around `cli.app simulate`, process CPU; the
`numba:llvm_lock` event gives the LLVM share). On main (b6c3ccd) at load ≈ 21: 58.7 s CPU, of it
56.7 s compiling (LLVM 26.8 s); the biggest were numba's own sorts (np.sort / np.argsort
mergesort / np.unique, 1.3–2.8 s per function and dtype, ≈ 10 s together, each built from 5–8
separately compiled helpers), an array-slice shape check whose error formatter compiled str()
and unicode concatenation (2.3 s), copies of `consolidate_gpus`/`take_gpus`/`prefix_next`
specialised on a literal `-1`/`False` argument (≈ 2 s), and `_beta` inlined at 5 call sites.
After (the previous session, up to 418f1ab): `cosim.nsort` sorts (0.4–0.7 s each), loops instead of slice copies, typed
constants, `_beta` compiled once: 42.0 s CPU at load ≈ 16–21 (LLVM 19.4 s, 144 compiles), the
same default-run outputs cell for cell (`--compare`). What is left is spread over the kernels
(walk_run 6.4 s, solve_large_groups 7.4 s, consolidate_gpus 5.5 s, _gather_and_cost 4.8 s, …);
≤ 20 s would need fewer / smaller kernels on the default path, not fewer specialisations.

`bench_startup --fresh`, interleaved b6c3ccd / that tree, same load (CPU s is the comparable
number on this shared host; wall s is inflated by the load):

    main 173.7 s wall, 56.7 s CPU (load 14.7) | this tree 102.1 s wall, 41.3 s CPU (load 12.8)
    main 263.9 s wall, 60.6 s CPU (load 12.7) | this tree 124.0 s wall, 45.4 s CPU (load 11.4)

Fresh venv (`python -m venv V && V/bin/pip install .`, then `V/bin/cosim simulate` from
another folder with a new COSIM_NUMBA_CACHE_DIR, `/usr/bin/time`), load 15–21:

    main (b6c3ccd):  install 142 s wall (28 s user CPU); first simulate 207 s wall, 57.1 s CPU;
                     warm 8.4 / 7.8 s wall, 2.5 / 2.4 s CPU
    this tree:       install 138 s wall; first simulate 189 s wall, 47.5 s CPU (before the
                     literal/_beta commit), 204 s wall, 44.9 s CPU (after it, load 12.5);
                     warm 7.9-12.1 s wall, 2.3-2.5 s CPU

Per-kernel compile time on 418f1ab (numba `numba:compile` events in one process, process CPU
s, load 7-14; "own" excludes the callees it compiled, "with callees" includes them; 142
compiles, 38.2 s CPU of which 36.6 s compiling and 17.9 s under the LLVM lock). Called from
Python (with callees): solve_large_groups 6.7, walk_run 6.3, consolidate_gpus 5.1,
_gather_and_cost 4.4, gps_completion 2.6, _begin_prepare_walk 2.2, simulate_group 2.1,
_placement_shape 2.1, linked_inputs 0.9, _eval_buckets 0.7, step 0.6, _prepare_job 0.6,
one_over_n_completion 0.5, view_sets 0.5, the other ten ≤ 0.4 each. Largest own times:
walk_run 2.35, _shape_costs 1.84, solve_large_groups 1.59, dutycycle_group 1.53, _kpreempt
1.30, simulate_group 1.26, _kfit 1.09, tiresias._prepare 1.08, nsort.sorted_copy (2 dtypes)
0.99, _gather_and_cost 0.91, consolidate_gpus 0.86, consolidate_nodes 0.85, split_groups
0.83, gps_completion 0.82, nsort.argsort_stable (2 dtypes) 0.81, _placement_shape 0.81,
_expected_rates_count_dp 0.78, preempt_plan 0.76, linked_inputs 0.75; numba's quicksort
(np.sort / ndarray.sort on int64 in step, view_sets, linked_inputs, _placement_shape) ≈ 1.6
with its helpers; numba's own np.empty/np.zeros/np.full/reductions ≈ 1.5 together.
`NUMBA_OPT=0` would save only ≈ 10 s (28.0 s CPU, and numba then refuses to cache some
kernels), `NUMBA_OPT=1` nothing (37.5 s): the time is spread over typing, lowering and code
generation of ≈ 140 functions, no one pass or kernel dominates.

What this tree changes (issue 15):
- `cosim.warmup` compiles the default run's 26 kernel signatures (`cosim/default_kernels.txt`,
  rewritten by `--record-kernels`) on both cores: a worker process compiles one half into the
  shared cache while the CLI compiles the other, then the run loads all of them. numba compiles
  under one process-wide lock, so one process never uses the second core. Halves are whole
  module families (kernels sharing callees), recorded as 24.3 / 21.1 s of CPU. It primes only
  with a free second core (1-minute load ≤ cores - 1; `COSIM_PRIME=1` forces it, `=0` never):
  at load 8 here both halves at once took 84 s wall, one after the other 80 s (no core free),
  and priming costs ≈ 5 s more CPU in all (work both processes repeat). Measured per process
  (fresh cache, load 8-15): group 0 22.3 s CPU, group 1 23.8 s, vs 43-48 s for one process;
  on an idle 2-core machine the first run should take about the larger half plus ≈ 2 s
  (imports, the run) — not measurable on this shared host during this session.
- numba's quicksort replaced by `cosim.nsort.sorted_copy` in simcore.kernels (step, view_sets,
  linked_inputs) and collectives.shape (_placement_shape); reductions (`sum`, `max`, `min`) and
  slice fills written as loops in _shape_costs and simulate_group. First-call CPU of the kernel
  in a fresh process, before → after, load 17-21: step+view_sets+linked_inputs 4.2/3.9 →
  3.6/3.2 s; _placement_shape (after them) 2.6 → 1.1 s; _gather_and_cost 5.2 → 4.5 s;
  simulate_group 4.0 → 3.1 s. Inlining the duty-cycle solver's helpers (`inline="always"`)
  and `error_model="numpy"` were tried and gave nothing measurable (±0.3 s).

Measured on this tree's final state (bench_startup, nice 10, interleaved with /work/main =
418f1ab, 2026-11-24 10:14-10:28 UTC; wall is inflated by the shared host, CPU s comparable):

    --fresh, main                 76.5 / 91.2 / 85.2 s wall, 43.1 / 45.0 / 42.9 s CPU (load 5-8)
    --fresh, COSIM_PRIME=0        85.9 / 81.1 s wall, 46.3 / 46.0 s CPU (load 5-6): one process,
                                  no gain from the sort/loop trims in the whole run, because
                                  policies/_kernels._min_nodes still compiles numba's int64
                                  quicksort (np.sort) that the trimmed kernels no longer need
    --fresh, primed (forced)      114.9 s wall, 48.3 s CPU (load 8: no free core, no wall gain)
    warm, main / this             3.71 / 3.60 s median, CPU 2.41-2.52 / 2.30-2.44 s (load 5-6)
    cosim --help, main / this     0.37-0.56 / 0.39-0.41 s (load 5)

Session 7 (branch jc-compile; per-kernel table: `python -m benchmarks.compile_profile`, which
times numba's `Dispatcher.compile` per function and signature, process CPU, in one process with
an empty cache and no priming). main 78a4a53 and this tree run side by side at load 19-22:
54.5 s CPU / 126 compiles (52.9 s compiling, LLVM 26.5 s) → 43.6 s / 113 (42.0 s, LLVM 19.7 s)
before the Tiresias split below. What changed, all with the same default-run outputs (`--compare`):
- signatures compiled twice: `walk_run` (a literal `0` for `start` inside Tiresias' kernel:
  a whole second walk, 3.0 s), `_heap_push` (a loop counter starting as literal 0: numba
  compiles callees for the intermediate literal type too), `_group_nodes_needed` (int32 leaf
  ids vs int64 pod ids), `sorted_copy` on int32 (`take_gpus` sorts int64 now); gps'
  `np.searchsorted` (numba's, 0.6 s with helpers) replaced by an 8-line binary search;
- `_kfit` and `_kpreempt` inlined into `walk_run` (numba IR): each was a thin kernel holding
  a copy of `consolidate_gpus` and all it calls, optimised and compiled again (1.2 + 1.7 s).
  Inlining kernels with small callees (`_shape_costs`, `dutycycle_group`, `maxmin_rates`)
  gained nothing (typing a bigger function costs what the second module saved): not kept;
- `no_cfunc_wrapper=True` on the default path's kernels: numba builds a C-callable wrapper
  per compiled function that nothing in cosim calls (≈ 2 s, 5 %, measured side by side);
- Tiresias' `_round_kernel` is three calls (`_round_begin`, `walk_run`, `_round_wake`), not
  one kernel that held a second copy of the walk and the placement kernels;
- `cosim.warmup`: the worker starts before the CLI's heavy imports; both processes claim
  units (modules sharing callees) heaviest chain first, a unit calling another unit's kernels
  waits for it (then loads them), so the two processes end together without a recorded split.
Cache writes are 0.8 s of a first run (not worth avoiding). After the split: 42.5 s CPU, 114
compiles (40.9 s compiling, LLVM 18.3 s) at load 17. `--fresh --against /tmp/jc-base`
(COSIM_PRIME=1 in both, this tree first), CPU s of both processes: 46.1 vs 55.8 (load 15-17),
48.6 vs 60.7 (load 13-15); wall 321.8 / 330.5 s and 179.4 / 169.5 s: on a host at load 13-17
wall time says nothing about the ≤ 20 s target, which needs an idle second core. Warm
(`--against /tmp/jc-base --repeat 3`, load 13-14): CPU 2.70 / 2.77 / 2.86 s vs main 2.81 / 2.87 /
2.82 s (the Tiresias split's two more dispatches a call do not show).

Session 8 (branch kc-compile): compile only what the default run executes. The default run
called `solve_large_groups` (the duty-cycle solver for groups above `exact_max_jobs`, 4.1 s of
own compile CPU with its helpers at load 4) on every contention solve, but none of its groups
is that large (1,245 calls, 587 groups, 0 large); `_solve_groups` now calls it only once a
large group comes up (then on every call, so the full-Philly hot path, 54,927 of 56,291 calls
with a large group, is unchanged). numba's np.round, np.argmax and np.cumsum helpers gave way
to np.rint (equal on every float64) and loops. `python -m benchmarks.compile_profile --repo R`,
alternating this tree and /tmp/kc-base (main 9c14525), process CPU at load 6-8: 36.2 / 37.9 s,
98 compiles (this) vs 44.2 / 43.5 s, 115 compiles (main); the 17 signatures main compiles and
this tree does not took 6.6 / 6.7 s of own compile CPU in those main runs (4.1 s for the
duty-cycle ones at load 4). Hot paths, interleaved, CPU s: full-Philly Tiresias
(`bash benchmarks/bench_tiresias_pair.sh /tmp/kc-base .`, load 6-12) main 38.9 / 37.4 / 37.3,
this 35.5 / 37.3 / 38.0; bench_inproc optimus w1-w5 mean of 2 runs main 0.606, this 0.595,
tiresias-pollux 0.096 / 0.093. The default run's outputs are identical cell for cell (`--save`
on main, `--compare` here).

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
#: columns that measure the host, not the simulation
WALL_COLUMNS = ("wall_s", "policy_wall_s", "sim_wall_s")
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


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def bench_simulate_warm(reps: int = 3) -> dict:
    _simulate()  # fills the cache if it is empty; not counted
    cpu: list[float] = []
    times = [_simulate(cpu=cpu) for _ in range(reps)]
    return {"name": "cosim simulate, warm kernel cache", "value": statistics.median(times), "unit": "s",
            "target": "<= 2 s", "detail": f"median of {reps}: {', '.join(f'{t:.2f}' for t in times)}; CPU s "
                                          f"{', '.join(f'{t:.2f}' for t in cpu)}; {_load()}"}


def bench_simulate_first() -> dict:
    with tempfile.TemporaryDirectory(prefix="cosim-numba-") as cache:
        env = dict(os.environ, COSIM_NUMBA_CACHE_DIR=cache)
        env.pop("NUMBA_CACHE_DIR", None)
        cpu: list[float] = []
        t = _simulate(env, cpu=cpu)
    return {"name": "cosim simulate, empty kernel cache", "value": t, "unit": "s", "target": "<= 20 s",
            "detail": f"CPU s {cpu[0]:.2f}; {_load()}"}


def interleave(other: Path, repeat: int, fresh: bool) -> None:
    """Alternate this checkout and `other` (e.g. a `git worktree add /tmp/base main` copy),
    `repeat` times each, printing every run's wall s, CPU s and the 1-minute load beside it:
    on a shared host only runs taken side by side compare."""
    global _repo
    mine = _repo
    for i in range(repeat):
        for name, repo in (("this", mine), ("other", other.resolve())):
            _repo = repo
            load0 = os.getloadavg()[0]
            r = bench_simulate_first() if fresh else bench_simulate_warm(reps=1)
            print(f"{i} {name:5s} {repo}: {r['value']:.2f} s wall; {r['detail']}; load at start {load0:.2f}",
                  flush=True)
    _repo = mine


def _frames(folder: Path) -> dict:
    import pandas as pd

    files = sorted(p for p in folder.rglob("*.parquet"))
    return {str(p.relative_to(folder)): pd.read_parquet(p).drop(columns=list(WALL_COLUMNS), errors="ignore")
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
          "policies._kernels": "placement", "policies._round_kernels": "walk", "policies.tiresias": "tiresias"}
#: units that call another unit's kernels, compiled after it (then they load those from the cache):
#: the walk kernel places with `consolidate_gpus`, Tiresias' round kernel runs the walk kernel
_AFTER = {"walk": ("placement",), "tiresias": ("placement", "walk")}


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
             + ", ".join(f"{unit[f]} {f} {per_family[f]:.1f} s" for f in order) + f"; {_load()}"]
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
