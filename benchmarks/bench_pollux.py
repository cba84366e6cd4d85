"""Decision time of Pollux (OSDI'21): one round = speedup tables + the genetic algorithm + placement.

- `bench_pollux_round_16x4`: the Pollux simulator's cluster (16 nodes × 4 GPUs), 40 active jobs
  (20 running on one GPU each), every job's agent already fitted (random throughput parameters,
  profiled up to 4 GPUs, so each may use 8), population 100 and 100 generations (the paper's and
  the artifact's setting). The peer's time per round on the same cluster is its whole Pollux run
  divided by its rounds (docs/peers.md, "Pollux").
- `bench_pollux_round_2048gpu_1000jobs`: the policy benchmarks' cluster (256 nodes × 8 GPUs,
  1,000 jobs, 442 running; `bench_policies.build_view`), agents fitted as above, the same
  population 100 × 100 generations (`POP_BIG`, `GEN_BIG`). The allocation matrix is 1,000 jobs ×
  256 nodes, but the GA keeps individuals row-sparse (`policies.pollux._ga_kernels`), so a
  generation costs ~pop × (J + non-zeros + N), not pop × J × N.

Each number is the best wall time of `repeats` `decide` calls on a warm policy (the GA starts
from the previous call's population, as between rounds, and the speedup tables are built); the
detail adds the CPU time of the same call (`time.process_time`), the better number on a shared
machine.

Run: ``python -m benchmarks.run --only pollux``.
"""

from __future__ import annotations

import numpy as np

from benchmarks import time_calls

POP_BIG, GEN_BIG = 100, 100


def _fit_agents(pol, view, rng, profiled: int = 4) -> None:
    from policies.pollux.agent import ThroughputParams

    for j in range(view.jobs.num_jobs):
        a = pol.agent(view, j)
        a.params = ThroughputParams(rng.uniform(0.01, 0.05), rng.uniform(1e-4, 1e-3), rng.uniform(0.05, 0.2),
                                    rng.uniform(1e-3, 1e-2), rng.uniform(0.01, 0.05), rng.uniform(1e-4, 1e-3),
                                    rng.uniform(1.0, 3.0))
        a.profile[(1, profiled, 32)] = (0.1, 0.12)


def small_view(seed: int = 0, nodes: int = 16, gpn: int = 4, jobs: int = 40, running: int = 20):
    from simcore.api import ClusterArrays, ClusterView, JobState, JobsView

    rng = np.random.default_rng(seed)
    g = nodes * gpn
    owner = np.full(g, -1, np.int32)
    owner[:running] = np.arange(running)
    c = ClusterArrays(gpu_node=np.repeat(np.arange(nodes), gpn).astype(np.int32), gpu_type=np.zeros(g, np.int16),
                      node_leaf=np.zeros(nodes, np.int32), leaf_pod=np.zeros(1, np.int32),
                      node_first_gpu=(np.arange(nodes) * gpn).astype(np.int32),
                      node_num_gpus=np.full(nodes, gpn, np.int32), gpu_type_names=("t4",),
                      gpu_type_mem_gb=np.array([16.0]), gpu_online=np.ones(g, bool), gpu_owner=owner)
    run = np.arange(jobs) < running
    models = rng.choice(["resnet18_cifar", "resnet50", "bert_base", "deepspeech2", "yolov3"], jobs).astype(object)
    ones = np.ones(jobs, np.int32)
    jv = JobsView(
        job_id=np.array([f"j{i}" for i in range(jobs)], object), submit_time=np.sort(rng.uniform(0, 3600, jobs)),
        num_gpus=ones, min_gpus=ones, max_gpus=np.full(jobs, 64, np.int32), model=models,
        global_batch=np.full(jobs, 256, np.int32), gpu_type_req=np.full(jobs, -1, np.int16),
        state=np.where(run, int(JobState.RUNNING), int(JobState.QUEUED)).astype(np.int8), progress=np.zeros(jobs),
        alloc_count=run.astype(np.int32), batch_size=np.full(jobs, 256, np.int32),
        attained_gpu_s=rng.uniform(0, 3600, jobs), executed_s=np.zeros(jobs), first_start=np.full(jobs, np.nan),
        last_start=np.full(jobs, np.nan), num_restarts=np.zeros(jobs, np.int32), duration=np.full(jobs, np.nan),
        remaining_s=np.full(jobs, np.nan))
    allocs = [np.array([j], np.int32) if j < running else np.zeros(0, np.int32) for j in range(jobs)]
    return ClusterView(now=3600.0, jobs=jv, cluster=c, iteration_time=lambda j, gp, b: 0.1 + b * 1e-4 / max(len(gp), 1),
                       allocation_of=lambda j: allocs[j], active_jobs=np.arange(jobs))


def _time(view, name: str, target: str, repeats: int, **params) -> dict:
    import policies

    pol = policies.make("pollux", **params)
    _fit_agents(pol, view, np.random.default_rng(1))
    pol.decide(view, view.now)  # warm: the population exists, as after the first round
    wall, cpu, d = time_calls(lambda: pol.decide(view, view.now), repeats)
    gens = max(pol.config.generations, 1)
    G, J = view.cluster.num_gpus, view.jobs.num_jobs
    return {"name": name, "value": min(wall), "unit": "s", "target": target,
            "detail": f"{G} GPUs, {J} jobs; population {pol.config.population}, {pol.config.generations} "
                      f"generations ({min(wall) / gens * 1e3:.1f} ms per generation); {len(d.allocations)} jobs "
                      f"run after the round; best of {repeats} (mean {np.mean(wall):.3f} s; CPU {min(cpu):.3f} s)"}


def bench_pollux_round_16x4() -> dict:
    return _time(small_view(), "pollux_round_64gpu_40jobs", "< 1 s (Pollux's GA)", repeats=3)


def bench_pollux_round_2048gpu_1000jobs() -> dict:
    from benchmarks.bench_policies import build_view

    view = build_view(engine_fields=True)
    return _time(view, "pollux_round_2048gpu_1000jobs", "< 1 s (at the population and generations stated)",
                 repeats=2, population=POP_BIG, generations=GEN_BIG)


if __name__ == "__main__":
    for f in (bench_pollux_round_16x4, bench_pollux_round_2048gpu_1000jobs):
        print(f())
