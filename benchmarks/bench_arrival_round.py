"""One arrival's round at scale: CPU microseconds of a FIFO-like round on 20,000 GPUs.

The situation of every arrival in `bench_scale`'s 100,000-job run (nothing queues): 2,500
nodes × 8 GPUs (20 nodes per leaf, 25 leaves per pod), 110 running jobs of 1-8 GPUs on
random GPUs, one queued job of 4 GPUs. Each round is what FIFO does then: a `Round` on the
view (the engine's per-node usable counts handed over where `ClusterArrays` has them), the
queue walked with the kernel placer and head-of-line blocking, the decision. Prints the
median wall-clock µs of each of the three parts over 20,000 rounds, and of their sum; then the
median of 20,000 calls of FIFO's own `decide` on the same view (its round as FIFO builds it). Run it
from each checkout's root in turn, alternating, to compare two checkouts (the file alone runs
in any checkout whose `Round` has `walk`):

    python -m benchmarks.bench_arrival_round
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

NODES, GPN, NODES_PER_LEAF, LEAVES_PER_POD, RUNNING = 2_500, 8, 20, 25, 110
ROUNDS = 20_000


def build_view():
    from simcore.api import Allocation, ClusterArrays, ClusterView, JobState, JobsView

    rng = np.random.default_rng(0)
    g = NODES * GPN
    leaves = NODES // NODES_PER_LEAF
    owner = np.full(g, -1, np.int32)
    sizes = np.append(rng.choice([1, 2, 4, 8], RUNNING), 4).astype(np.int32)
    n = sizes.shape[0]
    ids = rng.permutation(g)
    allocs, used = [], 0
    for j in range(RUNNING):
        allocs.append(np.sort(ids[used:used + sizes[j]]).astype(np.int32))
        owner[allocs[j]] = j
        used += int(sizes[j])
    allocs.append(np.zeros(0, np.int32))
    c = ClusterArrays(
        gpu_node=np.repeat(np.arange(NODES), GPN).astype(np.int32), gpu_type=np.zeros(g, np.int16),
        node_leaf=(np.arange(NODES) // NODES_PER_LEAF).astype(np.int32),
        leaf_pod=(np.arange(leaves) // LEAVES_PER_POD).astype(np.int32),
        node_first_gpu=(np.arange(NODES) * GPN).astype(np.int32), node_num_gpus=np.full(NODES, GPN, np.int32),
        gpu_type_names=("a100",), gpu_type_mem_gb=np.array([80.0]), gpu_online=np.ones(g, bool), gpu_owner=owner)
    if "node_free" in {f.name for f in dataclasses.fields(c)}:  # as the engine hands them over
        free = np.bincount(c.gpu_node[owner < 0], minlength=NODES).astype(np.int32)
        free.flags.writeable = False
        c = dataclasses.replace(c, node_free=free)
    running = np.arange(n) < RUNNING
    state = np.where(running, int(JobState.RUNNING), int(JobState.QUEUED)).astype(np.int8)
    jv = JobsView(
        job_id=np.array([f"j{i}" for i in range(n)], object), submit_time=np.arange(n, dtype=float),
        num_gpus=sizes, min_gpus=sizes, max_gpus=sizes, model=np.full(n, "resnet50", object),
        global_batch=np.full(n, 256, np.int32), gpu_type_req=np.full(n, -1, np.int16), state=state,
        progress=np.zeros(n), alloc_count=np.where(running, sizes, 0).astype(np.int32),
        batch_size=np.full(n, 256, np.int32), attained_gpu_s=np.zeros(n), executed_s=np.zeros(n),
        first_start=np.where(running, 0.0, np.nan), last_start=np.where(running, 0.0, np.nan),
        num_restarts=np.zeros(n, np.int32), duration=np.full(n, np.nan), remaining_s=np.full(n, np.nan))
    current = {j: Allocation(tuple(allocs[j].tolist())) for j in range(RUNNING)}
    return ClusterView(now=float(n), jobs=jv, cluster=c, iteration_time=lambda *a, **k: 1.0,
                       allocation_of=lambda j: allocs[j], active_jobs=np.arange(n), current=current)


def main() -> None:
    from policies.base import Round, Workspace

    view = build_view()

    class _Policy:  # what a round reads of its policy: the workspace it reuses across rounds
        workspace = Workspace()
        config = None

    order = np.array([view.jobs.num_jobs - 1], np.int64)
    clock = time.perf_counter

    def one_round():
        t0 = clock()
        r = Round(view, _Policy)
        t1 = clock()
        for _ in r.walk(order, kernel=True, blocking=True):
            pass
        t2 = clock()
        d = r.decision()
        return d, (t1 - t0, t2 - t1, clock() - t2)

    assert one_round()[0].allocations, "the queued job is placed"
    for _ in range(300):  # compiled and warm
        one_round()
    t = np.array([one_round()[1] for _ in range(ROUNDS)]) * 1e6
    med = np.median(t, axis=0)
    print(f"µs per arrival round (median of {ROUNDS:,}): building the Round {med[0]:.1f}, the walk {med[1]:.1f}, "
          f"the decision {med[2]:.1f}; in all {np.median(t.sum(axis=1)):.1f}")

    from policies.fifo import Fifo, FifoConfig

    fifo = Fifo(FifoConfig())

    def fifo_call():
        t0 = clock()
        d = fifo.decide(view, view.now)
        return d, clock() - t0

    assert fifo_call()[0].allocations == one_round()[0].allocations, "FIFO places the queued job as the round does"
    for _ in range(300):
        fifo_call()
    f = np.array([fifo_call()[1] for _ in range(ROUNDS)]) * 1e6
    print(f"µs per FIFO decide (median of {ROUNDS:,}): {np.median(f):.1f}")


if __name__ == "__main__":
    main()
