"""Dally policy time per decision (target: < 10 ms at 16 racks with 500 jobs).

The cluster: `dally-3tier` at 16 racks (128 machines x 8 GPUs = 1,024 GPUs). 500 jobs with the
GPU-demand histogram of the authors' SenseTime batch set (notes §5.2: 1:270, 2:13, 4:52, 8:109,
16:42, 32:11, 40:1, 48:1, 56:1), placed in random order, consolidated, until the cluster is full
(it holds all but ~1/3 of them: the congested regime of the paper); the others wait. Running jobs
have Nw_sens values and lease starts spread over one lease. Two decisions are timed on a warm
policy (auto-tuner lists filled with 200 waits per tier and demand):

- `typical`: the call at a lease expiry of one job (the common call: ~1/N of the running jobs
  re-offered, all waiting jobs visited);
- `all-expired`: every running job's lease expired at once (the whole cluster re-auctioned).

Run: ``python -m benchmarks.run --only dally``.
"""

from __future__ import annotations

import time

import numpy as np

DEMANDS = {1: 270, 2: 13, 4: 52, 8: 109, 16: 42, 32: 11, 40: 1, 48: 1, 56: 1}
LEASE_S = 3600.0


def _state(seed: int = 0):
    """(ClusterArrays pieces, per-job arrays) of the congested 16-rack cluster."""
    from simcore.api import JobState

    rng = np.random.default_rng(seed)
    dem = rng.permutation(np.repeat(np.array(list(DEMANDS), np.int32), list(DEMANDS.values())))
    n, nodes, gpn, per_rack = dem.size, 128, 8, 8
    owner = np.full(nodes * gpn, -1, np.int32)
    node_free = np.full(nodes, gpn)
    state = np.full(n, int(JobState.QUEUED), np.int8)
    for j, g in enumerate(dem.tolist()):
        if g <= gpn:
            fits = np.flatnonzero(node_free >= g)
            if not fits.size:
                continue
            picks = [(int(fits[0]), g)]
        else:
            picks, need = [], g
            for nd in np.flatnonzero(node_free == gpn)[: g // gpn].tolist():
                picks.append((nd, gpn))
                need -= gpn
            if need:
                continue
        for nd, k in picks:
            free = np.flatnonzero(owner[nd * gpn:(nd + 1) * gpn] < 0)[:k] + nd * gpn
            owner[free] = j
            node_free[nd] -= k
        state[j] = int(JobState.RUNNING)
    return dem, owner, state, rng, nodes, gpn, per_rack


def _view(now: float, dem, owner, state, executed, exposed, last_start, nodes, gpn, per_rack):
    from simcore.api import ClusterArrays, ClusterView, JobsView

    n = dem.size
    c = ClusterArrays(
        gpu_node=np.repeat(np.arange(nodes), gpn).astype(np.int32), gpu_type=np.zeros(nodes * gpn, np.int16),
        node_leaf=(np.arange(nodes) // per_rack).astype(np.int32), leaf_pod=np.zeros(nodes // per_rack, np.int32),
        node_first_gpu=(np.arange(nodes) * gpn).astype(np.int32), node_num_gpus=np.full(nodes, gpn, np.int32),
        gpu_type_names=("H100-80GB",), gpu_type_mem_gb=np.array([80.0]), gpu_online=np.ones(nodes * gpn, bool),
        gpu_owner=owner)
    alloc = np.bincount(owner[owner >= 0], minlength=n).astype(np.int32)
    jv = JobsView(
        job_id=np.array([f"j{i}" for i in range(n)], object), submit_time=np.zeros(n), num_gpus=dem,
        min_gpus=dem, max_gpus=dem, model=np.array(["resnet50"] * n, object), global_batch=dem * 32,
        gpu_type_req=np.full(n, -1, np.int16), state=state, progress=np.full(n, np.nan), alloc_count=alloc,
        batch_size=dem * 32, attained_gpu_s=executed * dem, executed_s=executed, first_start=np.where(
            executed > 0, 0.0, np.nan), last_start=last_start, num_restarts=np.zeros(n, np.int32),
        duration=np.full(n, np.nan), remaining_s=np.full(n, np.nan), exposed_comm_s=exposed)
    by_job = {}
    for g in np.flatnonzero(owner >= 0).tolist():
        by_job.setdefault(int(owner[g]), []).append(g)
    allocs = {j: np.array(v, np.int32) for j, v in by_job.items()}
    return ClusterView(now=now, jobs=jv, cluster=c, iteration_time=lambda j, gpus, batch: 1.0,
                       allocation_of=lambda j: allocs.get(j, np.zeros(0, np.int32)))


def _time_decide(policy_name: str, all_expired: bool, reps: int = 30) -> float:
    import policies
    from policies.dally.tuner import MACHINE, RACK

    dem, owner, state, rng, nodes, gpn, per_rack = _state()
    n = dem.size
    now = 10 * LEASE_S
    executed = rng.uniform(0.5, 8.0, n) * LEASE_S
    exposed = executed * rng.uniform(0.0, 0.5, n)
    running = state == 2
    if all_expired:
        last_start = np.where(running, now - LEASE_S, np.nan)
    else:  # lease starts spread over one lease; exactly one job expires now
        last_start = np.where(running, now - rng.uniform(1.0, LEASE_S - 1.0, n), np.nan)
        last_start[np.flatnonzero(running)[0]] = now - LEASE_S
    times = []
    for _ in range(reps):
        p = policies.make(policy_name, lease_s=LEASE_S)
        v = _view(now, dem, owner.copy(), state.copy(), executed, exposed, last_start, nodes, gpn, per_rack)
        p._reset(v)
        for g in DEMANDS:
            for k in range(200):
                p.tuner.record(MACHINE, g, now - k * 60.0, rng.uniform(0, 12) * 3600.0)
                p.tuner.record(RACK, g, now - k * 60.0, rng.uniform(0, 24) * 3600.0)
        p._last_now = now
        t0 = time.perf_counter()
        p.decide(v, now)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def bench_dally_decision_typical() -> dict:
    t = _time_decide("dally", all_expired=False)
    return {"name": "dally decision, 16 racks, 500 jobs, one lease expiry", "value": t * 1e3, "unit": "ms",
            "target": "< 10 ms", "detail": "median of 30 warm calls; auto-tuner lists of 200 waits per tier/demand"}


def bench_dally_decision_all_expired() -> dict:
    t = _time_decide("dally", all_expired=True)
    return {"name": "dally decision, 16 racks, 500 jobs, every lease expired", "value": t * 1e3, "unit": "ms",
            "target": "< 10 ms", "detail": "median of 30 warm calls: the whole cluster re-auctioned"}
