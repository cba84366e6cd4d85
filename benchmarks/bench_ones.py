"""One ONES evolution step (a generation: refresh, crossover, mutation, reorder, Eq. 8 scoring of
3K candidates, top-K selection) at 64 GPUs with ~50 active jobs (issue 20 target: < 50 ms).

Scenario: the engine runs ONES (K = 64, the cluster size) on `ones-longhorn` (16 × 4 V100) with
the 50-job Table-2 trace compressed so every job has arrived within 60 s (`synth:ones:50:60s`);
at t = `PROBE_S` the policy's population and the live view are taken and `evolve` is timed
`REPEATS` times (the population restored each time; what-if answers cached as in a run). The
value is the best wall time of one generation; the detail gives the mean and the active jobs.

Run: ``python -m benchmarks.bench_ones``.
"""

from __future__ import annotations

import time

import numpy as np

TARGET_MS = 50.0
PROBE_S = 240.0
REPEATS = 10


class _Done(Exception):
    pass


def bench_ones_generation(probe_s: float = PROBE_S, repeats: int = REPEATS) -> dict:
    from experiments.runner import RunConfig, run
    from policies.ones.policy import Ones
    from policies.registry import POLICIES

    out: dict = {}

    class Probe(Ones):
        def decide(self, view, now):
            if now < probe_s or out:
                return super().decide(view, now)
            slots = np.flatnonzero(view.cluster.gpu_online).astype(np.int64)
            owner = view.cluster.gpu_owner
            deployed = np.where(owner[slots] >= 0, owner[slots], -1).astype(np.int32)
            super().decide(view, now)  # warm: caches of this instant
            pop, times, cpu = self.pop.copy(), [], []
            for _ in range(repeats):
                self.pop = pop.copy()
                t0, c0 = time.perf_counter(), time.process_time()
                self.evolve(view, slots, deployed)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            out.update(best=min(times), mean=float(np.mean(times)), cpu=min(cpu), active=int(view.active().size),
                       running=int(view.running().size), K=int(pop.shape[0]), G=int(slots.size))
            raise _Done

    name = "ones-bench-probe"
    if name not in POLICIES.names():
        POLICIES.register(name)(type("OnesProbe", (Probe,), {"name": name, "Config": Ones.Config}))
    cfg = RunConfig(trace="synth:ones:50:60s", cluster="ones-longhorn", policies=(name,),
                    policy_params={name: {"warm_start": "prior"}},
                    policy_costs={name: {"base": "inplace", "restart_s": 20.0, "migrate_s": 1.0}}, costs=20.0)
    from cosim.errors import PolicyError

    try:
        run(cfg, None)
    except PolicyError as exc:  # the engine wraps the probe's stop signal
        if not isinstance(exc.__cause__, _Done):
            raise
    ms = 1e3 * out["best"]
    return {"name": "ones_generation_64gpu_50jobs", "value": round(ms, 2), "unit": "ms",
            "target": f"< {TARGET_MS:.0f} ms",
            "detail": f"mean {1e3 * out['mean']:.1f} ms over {repeats}, best CPU time {1e3 * out['cpu']:.1f} ms; K={out['K']}, G={out['G']}, "
                      f"{out['active']} active / {out['running']} running jobs at t={probe_s:.0f} s"}


if __name__ == "__main__":
    print(bench_ones_generation())
