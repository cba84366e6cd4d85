"""Engine speed: the default comparison and the full Philly trace, through the real runner.

Targets:
- 160-job synthetic Philly-like workload on the 64-GPU `dgx-a100` preset, five baseline
  policies, contention on: < 2 s in total after numba compilation (a warm-up run first);
- the full `philly_jobs.csv` (82,247 jobs) on a 512-GPU Philly-like fabric (the `philly`
  preset's 8-GPU P100 servers, 64 of them, its racks and oversubscription), Tiresias,
  contention on: < 30 s on one core, < 2 GB peak memory; events/s reported.

Each measurement runs in a fresh spawned process (peak RSS is the run's own).

    python -m benchmarks.bench_engine
    python -m benchmarks.run --only engine

Comparing two trees: run `_child_philly("tiresias", None)` in a fresh process from each tree's
root (`cd TREE && python -c "from benchmarks.bench_engine import _child_philly;
print(_child_philly('tiresias', None))"`, checking `simcore.__file__`), alternating the trees,
the first (compiling) run of each discarded; compare `cpu_s` as well as `wall_s` when the host
is shared. `_child_philly("tiresias", 20000)` (the first 20,000 jobs) gives more repeats in the
same time. `benchmarks/bench_tiresias_pair.sh TREE_A TREE_B` does the alternation.

Policy CPU apart from the engine's: wrap the policy's `decide` (through `Backends.make_policy`)
in `time.process_time()` deltas; the rest of `cpu_s` is the engine's ("outside"). The outputs
check: `jobs_sha1` of the result (`jobs_sha1`: sha1 of the jobs table without its wall
columns, as CSV, first 12 hex digits, computed after the timed run), equal between the trees
being compared. On a 2-core x86 host the full
trace takes 29–33 s CPU (policy 6.7–7.6 s), 305,232 events, 0.68 GB peak.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COSIM_SHARED_DATA", REPO.parent / "shared" / "data"))
PHILLY_CSV = SHARED / "traces" / "philly" / "philly_jobs.csv"
FIVE = ("fifo", "sjf", "srtf", "tiresias", "gandiva")


def _peak_gb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1e9 if sys.platform == "darwin" else rss * 1024 / 1e9


def philly_512_topology():
    """64 × 8-GPU P100 servers with the `philly` preset's intra-node, NIC and rack tiers."""
    import tomllib

    import netmodel

    src = REPO / "netmodel" / "presets" / "philly.toml"
    data = tomllib.loads(src.read_text())
    data["groups"] = [dict(g, nodes=64) for g in data["groups"] if g["name"] == "8gpu"]
    return netmodel.build_topology(netmodel.spec_from_dict(data, "philly-512 (from philly.toml)"))


def _child_small() -> dict:
    from experiments.runner import RunConfig, run

    cfg = RunConfig(trace="synth:philly:160", cluster="dgx-a100", policies=FIVE, contention=True, seed=0)
    run(cfg, None)  # warm-up: numba compilation and caches of the zoo / comm model
    t0, c0 = time.perf_counter(), time.process_time()
    res = run(cfg, None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "cpu_s": cpu, "engine_s": sum(res.wall_s.values()), "events": int(res.summary["events"].sum()),
            "per_policy_s": {k: round(v, 3) for k, v in res.wall_s.items()}}


def _child_philly(policy: str, limit: int | None) -> dict:
    """`policy` from the registry, or "probe" for `_StrictFifo` (engine throughput)."""
    import dataclasses

    import traces
    from experiments.runner import RunConfig, real_backends, run
    from traces import workload

    t0 = time.perf_counter()
    df = traces.load(PHILLY_CSV)
    if limit:
        df = df.sort_values("submit_time", kind="stable").head(limit)
    df = workload.assemble(df, 0)
    topo = philly_512_topology()
    t_load = time.perf_counter() - t0
    cfg = RunConfig(trace=str(PHILLY_CSV), cluster="philly-512", policies=(policy,), contention=True, seed=0,
                    skip_invalid=True)
    be = dataclasses.replace(real_backends(cfg), load_trace=lambda c: df, topology=lambda c: topo)
    if policy == "probe":
        be = dataclasses.replace(be, make_policy=lambda n, p: _StrictFifo(), policy_names=lambda: ["probe"])
    t1, c1 = time.perf_counter(), time.process_time()
    res = run(cfg, None, backends=be)
    wall, cpu = time.perf_counter() - t1, time.process_time() - c1
    row = res.summary.iloc[0]
    return {"wall_s": wall, "cpu_s": cpu, "engine_s": res.wall_s[policy], "policy_s": res.policy_wall_s[policy],
            "load_s": t_load, "peak_gb": _peak_gb(),
            "jobs": int(row["jobs"]), "finished": int(row["finished"]), "events": int(row["events"]),
            "policy_calls": int(row["policy_calls"]), "skipped": len(res.invalid),
            "jobs_sha1": jobs_sha1(res.jobs[policy])}


def jobs_sha1(table) -> str:
    """The outputs check between two trees: sha1 of a jobs table without its wall-clock
    columns, as CSV (first 12 hex digits)."""
    import hashlib

    kept = table.drop(columns=[c for c in table if "wall" in c])
    return hashlib.sha1(kept.to_csv(index=False).encode()).hexdigest()[:12]


class _StrictFifo:
    """Engine-throughput probe: strict FIFO, first fit, running jobs kept by handing back the
    engine's own Allocation objects (`view.current`), so nearly all time is the engine's."""

    name = "strict-fifo-probe"
    interval_s = None
    event_driven = True
    needs = frozenset()

    def decide(self, view, now):
        import numpy as np

        from simcore.api import Allocation, Decision

        keep = dict(view.current)
        free = view.cluster.free_gpus()
        for j in view.queued():
            n = int(view.jobs.num_gpus[j])
            if free.shape[0] < n:
                break
            nodes = view.cluster.gpu_node[free]
            order = np.argsort(-np.bincount(nodes)[nodes], kind="stable")  # fullest nodes first
            take = np.sort(free[order[:n]])
            keep[int(j)] = Allocation(tuple(take.tolist()))
            free = np.setdiff1d(free, take, assume_unique=True)
        return Decision(keep)


def _run_to_queue(q, fn, args) -> None:
    try:
        q.put(("ok", fn(*args)))
    except BaseException as exc:  # report any failure to the parent
        q.put(("error", f"{type(exc).__name__}: {exc}"))


def _in_child(fn, *args, limit_s: float = 900.0) -> dict:
    """Run `fn(*args)` in a fresh spawned process; give up (and kill it) after `limit_s`."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_run_to_queue, args=(q, fn, args), daemon=True)
    proc.start()
    try:
        status, value = q.get(timeout=limit_s)
    except queue.Empty:
        raise TimeoutError(f"{fn.__name__}{args} did not finish within {limit_s:.0f} s") from None
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
    if status != "ok":
        raise RuntimeError(value)
    return value


def _us_per_event(r: dict) -> float:
    """Engine time outside `policy.decide`, per event (the engine's own per-event cost)."""
    return 1e6 * (r["engine_s"] - r["policy_s"]) / max(r["events"], 1)


def bench_engine_small_five_policies() -> dict:
    r = _in_child(_child_small)
    return dict(name="160 jobs, 64 GPUs, 5 policies", value=round(r["wall_s"], 3), unit="s", target="< 2 s",
                detail=f"cpu {r['cpu_s']:.2f} s, engine {r['engine_s']:.2f} s, {r['events']} events; "
                       f"per policy {r['per_policy_s']}")


def _philly_row(policy: str, name: str, target: str) -> dict:
    """One full-Philly run of `policy` in a fresh process, as a benchmark row."""
    if not PHILLY_CSV.is_file():
        raise FileNotFoundError(f"{PHILLY_CSV} (needs ../shared/data or $COSIM_SHARED_DATA)")
    r = _in_child(_child_philly, policy, None)
    return dict(name=name, value=round(r["wall_s"], 2), unit="s", target=target,
                detail=f"cpu {r['cpu_s']:.1f} s, of which in the policy {r['policy_s']:.1f} s; "
                       f"engine alone {_us_per_event(r):.0f} µs/event; "
                       f"{r['events']} events ({r['events'] / r['engine_s']:.0f}/s), {r['policy_calls']} policy "
                       f"calls, peak {r['peak_gb']:.2f} GB, {r['finished']}/{r['jobs']} finished, "
                       f"{r['skipped']} skipped, trace load {r['load_s']:.1f} s")


def bench_engine_philly_tiresias() -> dict:
    return _philly_row("tiresias", "philly 82k jobs, 512 GPUs, tiresias", "< 30 s, < 2 GB")


def bench_engine_philly_engine_only() -> dict:
    return _philly_row("probe", "philly 82k jobs, 512 GPUs, engine only", "(engine share of < 30 s)")


def main() -> None:
    rows = [bench_engine_small_five_policies(), bench_engine_philly_engine_only(), bench_engine_philly_tiresias()]
    for r in rows:
        print(f"{r['name']:<42} {r['value']:>10} {r['unit']:<3} target {r['target']:<16} {r['detail']}")


if __name__ == "__main__":
    main()
