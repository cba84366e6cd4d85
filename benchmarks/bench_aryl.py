"""Aryl benchmarks: the reclaim decision at the paper's 963 servers, and one 15-day run.

    python -m benchmarks.bench_aryl            # reclaim decisions (ms)
    python -m benchmarks.bench_aryl --run 0.0625   # plus one Aryl Basic run at that scale of 443+520
    python -m benchmarks.bench_aryl --run 1 --variant baseline --params event_driven=false  # paper size, FIFO
    python -m benchmarks.bench_aryl --run 1 --variant advanced --params event_driven=false  # Advanced scenario

The reclaim benchmark builds a loaded 443 + 520-server cluster (seeded): every on-loan server
hosts 1-3 jobs, a quarter of them spanning 2-4 servers (some with workers on training
servers), and times Algorithm 1 (`policies.aryl.reclaim.greedy_reclaim`) for N_R = 1, 10, 60,
200 out of the 520 on-loan servers (the paper: 1-3 ms).

A run prints its wall and CPU seconds (the CPU of the simulation alone, in this process; the
target is under 300 s per paper-size Aryl cell). To see where a cell's time goes, sample it
at 1/32 first (seconds), then at 1/4 (about a minute of CPU), where the per-round costs that
grow with the cluster and the job table show as they do at full size:

    py-spy record -r 200 --format raw -o prof.txt -- python -m benchmarks.bench_aryl --run 0.03125 \\
        --params event_driven=false        # collapsed stacks; `-o prof.svg` gives a flame graph

Before/after a change, in fresh processes taking turns (`git worktree add ../base main`):

    python -m benchmarks.bench_interleave ../base . --rounds 3 \\
        --module "benchmarks.bench_aryl --run 0.03125 --params event_driven=false"

Aryl's decisions must not change with its speed: `tests/policies/test_outputs_identical_aryl.py`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np


def loaded_hosting(train: int = 443, loaned: int = 520, seed: int = 0) -> tuple[dict, list[int]]:
    rng = np.random.default_rng(seed)
    servers = list(range(train, train + loaned))
    host: dict[int, dict[int, int]] = {}
    j = 0
    for s in servers:
        for _ in range(int(rng.integers(1, 4))):
            if rng.random() < 0.25:
                span = [s] + [int(x) for x in rng.choice(train + loaned, size=int(rng.integers(1, 4)), replace=False)]
            else:
                span = [s]
            host[j] = {x: 2 for x in span}
            j += 1
    return host, servers


def bench_reclaim() -> list[dict]:
    from policies.aryl.reclaim import greedy_reclaim

    host, servers = loaded_hosting()
    out = []
    for n_r in (1, 10, 60, 200):
        greedy_reclaim(host, servers, n_r)
        reps = 5
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            greedy_reclaim(host, servers, n_r)
        dt, dc = (time.perf_counter() - t0) / reps, (time.process_time() - c0) / reps
        out.append(dict(name=f"aryl reclaim N_R={n_r}", value=dc * 1e3, unit="ms CPU", target="ms (paper 1-3 ms)",
                        detail=f"{len(servers)} on-loan of 963 servers, {len(host)} jobs; wall {dt * 1e3:.1f} ms"))
    return out


def bench_gap(trials: int = 300, servers: int = 16, seed: int = 0) -> dict:
    """Optimality gap of Algorithm 1 against exhaustive search on random loaded on-loan pools
    (16 servers, 1-3 jobs each, a third spanning 2-4 servers), N_R = 2..8: the paper reports
    the same preemptions as optimal below 60 servers and an 84 % "resemblance"."""
    from policies.aryl.reclaim import exhaustive_reclaim, greedy_reclaim, preempted_jobs

    rng = np.random.default_rng(seed)
    same = worse = 0
    extra = overlap = 0.0
    for _ in range(trials):
        host, j = {}, 0
        for s in range(servers):
            for _ in range(int(rng.integers(0, 4))):
                span = [s] + ([int(x) for x in rng.choice(servers, int(rng.integers(1, 4)), replace=False)]
                              if rng.random() < 1 / 3 else [])
                host[j] = {x: 2 for x in span}
                j += 1
        n_r = int(rng.integers(2, 9))
        g = greedy_reclaim(host, list(range(servers)), n_r)
        opt, k = exhaustive_reclaim(host, list(range(servers)), n_r)
        kg = len(preempted_jobs(host, g))
        same += kg == k
        worse += kg > k
        extra += (kg - k) / max(k, 1)
        overlap += len(set(g) & set(opt)) / n_r
    return dict(name="aryl greedy vs optimum", value=100.0 * same / trials, unit="%", target="paper: = below 60",
                detail=f"{trials} pools of {servers}: optimal in {same}, worse in {worse}, mean extra "
                       f"preemptions {100 * extra / trials:.1f}%, mean overlap with an optimum {100 * overlap / trials:.0f}%")


def bench_run(scale: float, variant: str = "basic", params: dict | None = None) -> dict:
    """One run of the Philly stand-in at `scale` (wall and CPU s; target < 300 s at scale 1), with the
    settings of the aryl catalog's `loan` grid (or `noloan` for its variants, e.g. baseline = FIFO;
    their load series is the 520-server one, so scale 1 only; or `advanced` / `ideal`, whose
    workload scenario is the grid's trace at `scale`) at the full size: `variant` a named variant
    of those grids, `params` policy options over the variant's (e.g. event_driven=false for the
    paper-size run; `perf=linear:hetero_efficiency=1.0` overrides the backend)."""
    from experiments.aryl_metrics import policy_metrics
    from experiments.runner import RunConfig, run
    from experiments.spec import load_experiment
    from traces import aryl as W

    exp = load_experiment("aryl")
    found = {g: exp.variants(g, "full") for g in ("loan", "noloan", "advanced", "ideal")}
    gname = next((g for g, vs in found.items() if variant in vs), None)
    if gname is None:
        raise SystemExit(f"bench_aryl: unknown variant {variant!r}; valid: {sorted(v for vs in found.values() for v in vs)}")
    grid = exp.grid(gname, "full")
    policy, vparams = found[gname][variant]
    params = {**vparams, **(params or {})}
    perf = params.pop("perf", grid["perf"][0])
    trace = f"{grid['traces'][0]['synth'].rpartition(':')[0]}:{scale}"  # the grid's scenario at `scale`
    tr, inf, window = W.servers(trace)
    out = Path(f"/tmp/cosim-bench-aryl-{scale}-{time.time_ns()}")
    out.mkdir(parents=True)
    cluster = out / f"cluster-{tr}+{inf}.toml"
    cluster.write_text(W.cluster_toml(tr, inf, normalized="normalized" in grid["clusters"][0]))  # the grid's kind
    cfg = RunConfig(trace=trace, cluster=str(cluster), policies=(policy,), policy_params={policy: params},
                    contention=False, seed=0, costs=grid["costs"][0], perf=perf, load_series=grid["load_series"],
                    write_decisions=True)
    t0, c0 = time.perf_counter(), time.process_time()
    run(cfg, out / "run")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    m = policy_metrics(out / "run" / policy, window)
    return dict(name=f"aryl {variant} 15-day run, scale {scale}", value=wall, unit="s",
                target="< 300 s at scale 1", detail=f"{m['jobs']} jobs, {m['finished']} finished; CPU {cpu:.1f} s; "
                f"qt_mean {m.get('qt_mean_s', float('nan')):.0f} s, jct_mean {m.get('jct_mean_s', float('nan')):.0f} s")


if __name__ == "__main__":
    rows = bench_reclaim() + [bench_gap()]
    if "--run" in sys.argv:
        var = sys.argv[sys.argv.index("--variant") + 1] if "--variant" in sys.argv else "basic"
        extra = {}
        for kv in sys.argv[sys.argv.index("--params") + 1].split(",") if "--params" in sys.argv else []:
            k, _, v = kv.partition("=")
            extra[k] = {"true": True, "false": False}.get(v.lower(), v)
        rows.append(bench_run(float(sys.argv[sys.argv.index("--run") + 1]), var, extra))
    for r in rows:
        print(f"{r['name']:<32} {r['value']:>10.3f} {r['unit']:<7} target {r['target']:<18} {r['detail']}")
