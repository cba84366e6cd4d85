"""Decision time of every baseline policy at 2,048 GPUs and 1,000 active jobs (< 60 ms per call).

Scenario (built here from `simcore.api` arrays, no engine): 256 nodes × 8 GPUs, 8 nodes per
leaf (32 leaves), 8 leaves per pod (4 pods); one GPU type. 1,000 jobs with Philly-like sizes
(1 GPU 60 %, 2: 10 %, 4: 12 %, 8: 12 %, 16: 4 %, 32: 2 %), 10 % of them VGG/AlexNet (skewed
for Tiresias); jobs are started in arrival order with consolidated placement until the
cluster is ~90 % full, the rest queue (442 running, 558 queued). Attained service
and oracle times are random. The number is the best wall time of one `decide` call over
several calls (the detail gives mean wall and CPU time; the box may be shared) on a warm (compiled) policy; the target is the Ares paper's policy runtime at
2,048 GPUs (< 0.06 s per invocation, seeds/notes/ares.md §8 item 7).

Run: ``python -m benchmarks.bench_policies`` (the older per-policy rows), or the one table of
every registered policy: ``nice -n 10 python -m benchmarks.bench_policies --table``
(``--only NAME[,NAME]`` to time a few, ``--repeats N`` calls each, default 3; each row's detail
gives the CPU ms of the best fresh and warm call beside the wall ms).
Before/after a change, interleaved: ``python -m benchmarks.bench_interleave OLD_CHECKOUT NEW_CHECKOUT
--only gavel,pal``. The table times each registered policy on the one-type
view and, for the heterogeneity-aware ones (`HETERO`), on the same 2,048 GPUs split into 8 types
of 256 (`_TableWhatIf` throughput table); policies whose decision needs their own fitted state
(`OWN_BENCH`) point to their own benchmark instead.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import time_calls

NODES, GPN, NODES_PER_LEAF, LEAVES_PER_POD = 256, 8, 8, 8
JOBS = 1000
TARGET_MS = 60.0


def build_view(seed: int = 0, n_jobs: int = JOBS, fill: float = 0.9, engine_fields: bool = False):
    from policies import placement as P
    from simcore.api import ClusterArrays, ClusterView, JobState, JobsView

    rng = np.random.default_rng(seed)
    g = NODES * GPN
    leaves = NODES // NODES_PER_LEAF
    owner = np.full(g, -1, np.int32)
    c = ClusterArrays(
        gpu_node=np.repeat(np.arange(NODES), GPN).astype(np.int32),
        gpu_type=np.zeros(g, np.int16),
        node_leaf=(np.arange(NODES) // NODES_PER_LEAF).astype(np.int32),
        leaf_pod=(np.arange(leaves) // LEAVES_PER_POD).astype(np.int32),
        node_first_gpu=(np.arange(NODES) * GPN).astype(np.int32),
        node_num_gpus=np.full(NODES, GPN, np.int32),
        gpu_type_names=("a100",),
        gpu_type_mem_gb=np.array([80.0]),
        gpu_online=np.ones(g, bool),
        gpu_owner=owner,
    )
    sizes = rng.choice([1, 2, 4, 8, 16, 32], size=n_jobs, p=[0.60, 0.10, 0.12, 0.12, 0.04, 0.02]).astype(np.int32)
    state = np.full(n_jobs, int(JobState.QUEUED), np.int8)
    allocs = [np.zeros(0, np.int32)] * n_jobs
    used = 0
    for j in range(n_jobs):
        if used + sizes[j] > fill * g:
            break
        gp = P.consolidate(c, owner < 0, int(sizes[j]))
        if gp is None:
            continue
        owner[gp] = j
        allocs[j] = gp
        state[j] = int(JobState.RUNNING)
        used += int(sizes[j])
    running = state == int(JobState.RUNNING)
    models = np.where(rng.random(n_jobs) < 0.1, "vgg16", "resnet50").astype(object)
    executed = np.where(running, rng.uniform(0, 36_000, n_jobs), 0.0)
    dur = rng.lognormal(8, 1.5, n_jobs)
    jv = JobsView(
        job_id=np.array([f"j{i}" for i in range(n_jobs)], object),
        submit_time=np.sort(rng.uniform(0, 36_000, n_jobs)),
        num_gpus=sizes, min_gpus=sizes, max_gpus=sizes, model=models,
        global_batch=np.full(n_jobs, 256, np.int32), gpu_type_req=np.full(n_jobs, -1, np.int16),
        state=state, progress=np.zeros(n_jobs), alloc_count=np.where(running, sizes, 0).astype(np.int32),
        batch_size=np.full(n_jobs, 256, np.int32), attained_gpu_s=executed * sizes, executed_s=executed,
        first_start=np.where(running, 0.0, np.nan), last_start=np.where(running, 0.0, np.nan),
        num_restarts=np.zeros(n_jobs, np.int32), duration=dur, remaining_s=dur * rng.uniform(0.05, 1, n_jobs),
    )
    extra = {}
    if engine_fields:  # as the engine fills them: the active set and the current Allocation objects
        from simcore.api import Allocation

        extra = dict(active_jobs=np.flatnonzero(state != int(JobState.PENDING)),
                     current={j: Allocation(tuple(allocs[j].tolist()))
                              for j in np.flatnonzero(running).tolist()})
    work = rng.uniform(0.2, 1.0, n_jobs)  # a job's one-GPU compute seconds per iteration
    node_of = c.gpu_node

    def iteration_time(j, gp, b=None, gpu_type=None):
        """Seconds per iteration: compute split over the GPUs plus a ring all-reduce that costs
        more across nodes (diminishing returns, so marginal-gain policies have work to do); `gp`
        GPU ids or a count (then packed on nodes of GPN), as the what-if contract allows."""
        if isinstance(gp, (int, np.integer)):
            n, nodes = int(gp), -(-int(gp) // GPN)
        else:
            n = len(gp)
            nodes = len(set(node_of[np.asarray(gp)].tolist())) if n > 1 else 1
        if n <= 1:
            return float(work[j])
        return float(work[j] / n + 0.02 * (n - 1) / n * (1.0 if nodes == 1 else 4.0))

    return ClusterView(now=40_000.0, jobs=jv, cluster=c, iteration_time=iteration_time,
                       allocation_of=lambda j: allocs[j], **extra)


def _time_policy(name: str, repeats: int = 5, engine_fields: bool = True, **params) -> dict:
    import policies

    view = build_view(engine_fields=engine_fields)
    pol = policies.make(name, **params)
    d = pol.decide(view, view.now)  # warm-up: numba compile / cache load
    wall, cpu, d = time_calls(lambda: pol.decide(view, view.now), repeats)
    ms = min(wall) * 1e3
    run = set(int(k) for k in view.running())
    detail = (f"2048 GPUs, {view.jobs.num_jobs} jobs ({len(run)} running); decision keeps/starts "
              f"{len(d.allocations)} jobs, preempts {len(run - set(d.allocations))}; "
              f"{'with' if engine_fields else 'without'} the engine's active_jobs/current; "
              f"best of {repeats} calls "
              f"(mean wall {np.mean(wall) * 1e3:.1f} ms, mean CPU {np.mean(cpu) * 1e3:.1f} ms)")
    return dict(name=f"policy_decide_{name}_2048gpu_1000jobs", value=ms, unit="ms", target=f"< {TARGET_MS:g} ms",
                detail=detail)


def bench_fifo() -> dict:
    return _time_policy("fifo")


def bench_fifo_backfill() -> dict:
    return _time_policy("fifo-backfill")


def bench_sjf() -> dict:
    return _time_policy("sjf")


def bench_srtf() -> dict:
    return _time_policy("srtf")


def bench_tiresias() -> dict:
    return _time_policy("tiresias")


def bench_gandiva() -> dict:
    return _time_policy("gandiva")


class _TableWhatIf:
    """Throughput matrix of the heterogeneous benchmark view: samples/s of a job on type t =
    batch / (1 s × the type's slowdown × the model's factor), a fixed table (the real what-if
    costs 0.8 ms for 1,000 × 8 cached, benchmarks/bench_whatif.py)."""

    SLOW = np.array([1.0, 1.6, 2.5, 4.0])  # four types, fastest first

    def __init__(self, jobs, slow: np.ndarray | None = None) -> None:
        slow = self.SLOW if slow is None else slow
        factor = np.where(jobs.model == "vgg16", 1.5, 1.0) * (1.0 + 0.05 * np.log2(jobs.num_gpus))
        self.table = jobs.global_batch[:, None] / (factor[:, None] * slow[None, :])

    def throughput_matrix(self, jobs, batch=None):
        return self.table[np.asarray(jobs)]


def hetero_view(types: int = 4):
    """`build_view` (with the engine's fields) split into `types` GPU types of equal size on
    consecutive nodes, with a `_TableWhatIf` throughput table (slowdowns 1 … 4, geometric)."""
    import dataclasses

    view = build_view(engine_fields=True)
    c = view.cluster
    per = c.gpu_type.size // types
    c = dataclasses.replace(c, gpu_type=(np.arange(c.gpu_type.size) // per).astype(np.int16),
                            gpu_type_names=tuple(f"t{i}" for i in range(types)),
                            gpu_type_mem_gb=np.full(types, 80.0))
    slow = _TableWhatIf.SLOW if types == 4 else np.geomspace(1.0, 4.0, types) if types > 1 else np.ones(1)
    return dataclasses.replace(view, cluster=c, whatif=_TableWhatIf(view.jobs, slow))


def _time_hetero_policy(name: str, repeats: int = 3, **params) -> dict:
    """`_time_policy` on the same 2,048 GPUs split into four types of 512 (consecutive nodes),
    1,000 jobs (the same running/queued split), with a throughput matrix: the LP policies'
    scenario. One call = one allocation recomputation (Gavel's LP) plus one round."""
    import dataclasses

    import policies

    view = build_view(engine_fields=True)
    c = view.cluster
    c = dataclasses.replace(c, gpu_type=(np.arange(c.gpu_type.size) // 512).astype(np.int16),
                            gpu_type_names=("t0", "t1", "t2", "t3"), gpu_type_mem_gb=np.full(4, 80.0))
    view = dataclasses.replace(view, cluster=c, whatif=_TableWhatIf(view.jobs))
    wall, rnd = [], []
    for _ in range(repeats + 1):  # a fresh policy each call: the allocation is recomputed every time
        pol = policies.make(name, **params)
        t0 = time.perf_counter()
        d = pol.decide(view, view.now)
        wall.append(time.perf_counter() - t0)
        t0 = time.perf_counter()  # the same policy again, same jobs: a round without recomputation
        pol.decide(view, view.now + 360.0)
        rnd.append(time.perf_counter() - t0)
    wall, rnd = wall[1:], rnd[1:]
    ms = min(wall) * 1e3
    label = name + "".join(f"_{v}" for v in params.values())
    return dict(name=f"policy_decide_{label}_2048gpu_4types_1000jobs", value=ms, unit="ms",
                target="< 50 ms", detail=f"{len(d.allocations)} allocations; best of {repeats} fresh calls "
                                         f"(mean {np.mean(wall) * 1e3:.1f} ms); a later round of the same "
                                         f"policy (no recomputation): {min(rnd) * 1e3:.1f} ms")


def bench_gavel() -> list[dict]:
    """Gavel's four objectives (LP + round), and AlloX (matching), at 2,048 GPUs of 4 types."""
    out = [_time_hetero_policy("gavel", objective=o)
           for o in ("max_min_fairness", "max_sum_throughput", "finish_time_fairness", "sjf_like")]
    return out + [_time_hetero_policy("gavel", objective="max_min_fairness", fill_slack=False)]


def bench_allox() -> dict:
    return _time_hetero_policy("allox")


def bench_placement_consolidate() -> dict:
    """One consolidate call on the 2,048-GPU cluster with ~40 % of GPUs free at random."""
    from policies import placement as P

    view = build_view()
    rng = np.random.default_rng(1)
    avail = rng.random(view.cluster.num_gpus) < 0.4
    P.consolidate(view.cluster, avail, 8)
    demands = [1, 2, 4, 8, 16, 32, 64] * 50
    t0 = time.perf_counter()
    for d in demands:
        P.consolidate(view.cluster, avail, d)
    us = (time.perf_counter() - t0) / len(demands) * 1e6
    return dict(name="placement_consolidate_2048gpu", value=us, unit="us", target="< 500 us",
                detail="mean over demands 1-64, 40 % of GPUs free at random")


def bench_philly_cut_per_call(policy: str = "tiresias", limit: int = 3000) -> dict:
    """Mean `decide` time per call through the real runner: first `limit` Philly jobs, 512-GPU fabric.

    The engine benchmark's setting (benchmarks/bench_engine.py's philly-512 cluster, contention on) on
    a cut of the trace; the full trace makes ~241k policy calls, so the policy share of the
    30 s target is about this number × 241k.
    """
    import dataclasses

    import traces
    from benchmarks.bench_engine import PHILLY_CSV, philly_512_topology
    from experiments.runner import RunConfig, real_backends, run
    from traces import workload

    if not PHILLY_CSV.exists():
        return dict(name=f"policy_call_{policy}_philly{limit}", value=float("nan"), unit="ms", target="-",
                    detail=f"skipped: {PHILLY_CSV} absent")
    df = workload.assemble(traces.load(PHILLY_CSV).sort_values("submit_time", kind="stable").head(limit), 0)
    topo = philly_512_topology()
    cfg = RunConfig(trace=str(PHILLY_CSV), cluster="philly-512", policies=(policy,), contention=True, seed=0,
                    skip_invalid=True)
    base = real_backends(cfg)
    spent = [0.0, 0]

    def make(name, params):
        pol = base.make_policy(name, params)
        decide = pol.decide

        def timed(view, now):
            t0 = time.perf_counter()
            try:
                return decide(view, now)
            finally:
                spent[0] += time.perf_counter() - t0
                spent[1] += 1

        pol.decide = timed
        return pol

    be = dataclasses.replace(base, load_trace=lambda c: df, topology=lambda c: topo, make_policy=make)
    t0 = time.perf_counter()
    run(cfg, None, backends=be)
    wall = time.perf_counter() - t0
    per_call_ms = spent[0] / max(1, spent[1]) * 1e3
    return dict(name=f"policy_call_{policy}_philly{limit}", value=per_call_ms, unit="ms",
                target=f"< {30.0 / 241_515 * 1e3 * 0.5:.2f} ms",
                detail=f"{spent[1]} calls, {spent[0]:.1f} s in decide of {wall:.1f} s run wall; "
                       f"target = half of "
                       f"30 s over the full trace's 241,515 calls")


#: heterogeneity-aware policies (their LP / matching / auction / typed queues run over GPU types):
#: timed on the 8-type view as well; name → parameter sets (one row each)
HETERO = {
    "gavel": [dict(objective=o) for o in ("max_min_fairness", "max_sum_throughput", "finish_time_fairness",
                                          "sjf_like")],
    "themis": [{}], "themis-ftf-lp": [{}], "allox": [{}], "tiresias-typed": [{}], "pal": [{}],
}
#: policies whose first call on a job set is the one to time: Gavel re-solves its LP whenever jobs
#: arrive or finish, Themis its auction every lease, Ares decides on job-set changes only (a warm
#: call on the same jobs returns at once); the others are judged on a warm call (their first call
#: also builds per-run state, such as PAL's variability profile)
FRESH = {"gavel", "themis", "themis-ftf-lp", "allox", "ares", "ares-artifact"}
#: policies whose decision needs fitted state or a view of their own: their own benchmark
OWN_BENCH = {
    "pollux": "benchmarks/bench_pollux.py (GA over fitted agents; 2,048 GPUs at reduced population)",
    "ones": "benchmarks/bench_ones.py (one evolutionary generation)",
    "fft": "benchmarks/bench_fft.py (the per-round ILP, 4,000 jobs x 8 types)",
    "dally": "benchmarks/bench_dally.py (lease/timer state)",
    "dally-manual": "benchmarks/bench_dally.py", "dally-nowait": "benchmarks/bench_dally.py",
    "dally-fullyconsolidated": "benchmarks/bench_dally.py",
    "mechanisms-demo": "a test policy, not a baseline",
}


def _time_view(view, name: str, params: dict, repeats: int) -> tuple[float, float, int, float, float]:
    """(best ms of a fresh policy's first call, best ms of a warm policy's later call on the
    same view, allocations, and the CPU ms of those two calls) of `decide` on `view`; one
    untimed call first loads numba kernels. On a shared machine wall times inflate with the load;
    the CPU times (user + sys of this process) much less."""
    import policies

    policies.make(name, **params).decide(view, view.now)  # numba compile / cache load
    fresh, warm, fresh_cpu, warm_cpu = [], [], [], []
    for _ in range(repeats):
        pol = policies.make(name, **params)
        c0, t0 = time.process_time(), time.perf_counter()
        d = pol.decide(view, view.now)
        fresh.append(time.perf_counter() - t0)
        fresh_cpu.append(time.process_time() - c0)
        c0, t0 = time.process_time(), time.perf_counter()
        pol.decide(view, view.now)
        warm.append(time.perf_counter() - t0)
        warm_cpu.append(time.process_time() - c0)
    return min(fresh) * 1e3, min(warm) * 1e3, len(d.allocations), min(fresh_cpu) * 1e3, min(warm_cpu) * 1e3


def table(only: tuple[str, ...] = (), repeats: int = 3) -> list[dict]:
    """One row per registered policy (and per parameter set of `HETERO`) on the one-type view,
    plus 8-type rows for `HETERO`: best of `repeats` first calls of a fresh policy and best of
    `repeats` later calls of a warm one, in ms. The target (< 50 ms) applies to the fresh call
    for `FRESH` (their program is re-solved whenever jobs arrive or finish) and to the warm
    call for the others (a first call also builds per-run state, e.g. PAL's profile)."""
    import policies  # noqa: F401 - fills the registry
    from policies.registry import POLICIES

    names = [n for n in POLICIES.names() if not only or n in only]
    one = hetero_view(1)  # one type, with a throughput table for the LP policies
    eight = hetero_view(8)
    rows = []
    for name in names:
        if name in OWN_BENCH:
            rows.append(dict(policy=name, params="", view="-", fresh_ms=float("nan"), warm_ms=float("nan"),
                             detail=OWN_BENCH[name]))
            continue
        for params in HETERO.get(name, [{}]):
            for label, view in (("1 type", one), ("8 types", eight)) if name in HETERO else (("1 type", one),):
                try:
                    fresh, warm, n, fresh_cpu, warm_cpu = _time_view(view, name, params, repeats)
                    detail = f"{n} allocations; CPU ms fresh {fresh_cpu:.1f}, warm {warm_cpu:.1f}"
                except Exception as e:  # noqa: BLE001 - a row says why the policy cannot run here
                    fresh = warm = float("nan")
                    detail = f"error: {type(e).__name__}: {str(e)[:80]}"
                rows.append(dict(policy=name, params=",".join(f"{k}={v}" for k, v in params.items()), view=label,
                                 fresh_ms=fresh, warm_ms=warm, detail=detail))
    return rows


def print_table(rows: list[dict]) -> None:
    w = max(len(r["policy"] + r["params"]) for r in rows) + 1
    print(f"{'policy':<{w}}  {'view':<7}  {'fresh ms':>8}  {'warm ms':>8}  <50ms  detail")
    for r in rows:
        key = r["fresh_ms"] if r["policy"] in FRESH else r["warm_ms"]
        ok = "-" if key != key else ("yes" if key < 50 else "NO")
        name = r["policy"] + (f" {r['params']}" if r["params"] else "")
        print(f"{name:<{w}}  {r['view']:<7}  {r['fresh_ms']:8.1f}  {r['warm_ms']:8.1f}  {ok:<5}  {r['detail']}")


def main() -> None:
    import sys

    if "--table" in sys.argv:
        only = ()
        if "--only" in sys.argv:
            only = tuple(sys.argv[sys.argv.index("--only") + 1].split(","))
        repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 3
        print_table(table(only, repeats))
        return
    rows = [f() for f in (bench_fifo, bench_fifo_backfill, bench_sjf, bench_srtf, bench_tiresias, bench_gandiva,
                          bench_allox, bench_placement_consolidate, bench_philly_cut_per_call)]
    rows[6:6] = bench_gavel()
    w = max(len(r["name"]) for r in rows)
    print(f"{'name':<{w}}  {'value':>9}  unit  target      detail")
    for r in rows:
        print(f"{r['name']:<{w}}  {r['value']:9.2f}  {r['unit']:<4}  {r['target']:<10}  {r['detail']}")


if __name__ == "__main__":
    main()
