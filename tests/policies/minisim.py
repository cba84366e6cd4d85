"""A minimal event loop to run a policy over a small workload in tests (not the real engine).

Jobs need `duration` seconds of service at their requested GPU count; a running job
progresses at rate 1 whatever its placement; preemption and migration are free and keep the
progress; `capacity` events take nodes out of the cluster (the jobs on them are preempted,
as the engine does) and bring them back. The loop calls the policy at arrivals,
completions, capacity changes, its interval and its `wake_at`, checks every decision, and
returns per-job completion times.
"""

from __future__ import annotations

import numpy as np

from simcore.api import NEED_DURATION_ORACLE, Allocation, ClusterView, JobsView, JobState
from tests.policies.conftest import build_arrays


def simulate(policy, submit, gpus, duration, *, nodes=4, gpus_per_node=4, leaves=2, models=None,
             capacity=(), max_calls=20_000, engine_fields=False):
    """Run `policy`; `capacity` = [(time, node, online_bool), ...]. Returns (end_times, calls).

    `engine_fields`: also fill the view's `active_jobs` and `current` as the engine does.
    """
    n = len(submit)
    submit = np.asarray(submit, float)
    gpus = np.asarray(gpus, np.int32)
    duration = np.asarray(duration, float)
    c0 = build_arrays(nodes, gpus_per_node, leaves)
    online = np.ones(c0.num_gpus, bool)
    owner = np.full(c0.num_gpus, -1, np.int32)
    state = np.full(n, int(JobState.PENDING), np.int8)
    done = np.zeros(n)
    attained = np.zeros(n)
    executed = np.zeros(n)
    first = np.full(n, np.nan)
    end = np.full(n, np.nan)
    allocs = [np.zeros(0, np.int32) for _ in range(n)]
    oracle = NEED_DURATION_ORACLE in policy.needs
    cap = sorted(capacity)
    now, calls, wake = 0.0, 0, None
    models = np.array(models if models is not None else ["resnet50"] * n, object)
    while True:
        state[(state == JobState.PENDING) & (submit <= now)] = JobState.QUEUED
        while cap and cap[0][0] <= now:
            _, node, up = cap.pop(0)
            sel = c0.gpu_node == node
            online[sel] = up
            for j in set(owner[sel & (owner >= 0)].tolist()):  # forced preemption
                owner[allocs[j]] = -1
                allocs[j] = np.zeros(0, np.int32)
                state[j] = JobState.QUEUED
        if (state == JobState.FINISHED).all():
            return end, calls
        c = build_arrays(nodes, gpus_per_node, leaves, online=online.copy(), owner=owner.copy())
        jv = JobsView(
            job_id=np.array([f"j{i}" for i in range(n)], object), submit_time=submit, num_gpus=gpus,
            min_gpus=gpus, max_gpus=gpus, model=models, global_batch=np.full(n, 256, np.int32),
            gpu_type_req=np.full(n, -1, np.int16), state=state.copy(), progress=done / duration,
            alloc_count=np.array([a.size for a in allocs], np.int32), batch_size=np.full(n, 256, np.int32),
            attained_gpu_s=attained.copy(), executed_s=executed.copy(), first_start=first.copy(),
            last_start=np.full(n, np.nan), num_restarts=np.zeros(n, np.int32),
            duration=duration if oracle else np.full(n, np.nan),
            remaining_s=(duration - done) if oracle else np.full(n, np.nan),
        )
        snap = [a.copy() for a in allocs]
        extra = {}
        if engine_fields:
            st = jv.state
            extra = dict(active_jobs=np.flatnonzero((st == JobState.QUEUED) | (st == JobState.RUNNING)),
                         current={j: Allocation(tuple(a.tolist())) for j, a in enumerate(snap) if a.size})
        view = ClusterView(now=now, jobs=jv, cluster=c, iteration_time=lambda j, g, b: 1.0,
                           allocation_of=lambda j: snap[j], **extra)
        d = policy.decide(view, now)
        calls += 1
        assert calls < max_calls, "policy keeps being called without progress"
        active = set(view.active().tolist())
        assert set(d.allocations) <= active
        owner[:] = -1
        new_allocs = [np.zeros(0, np.int32) for _ in range(n)]
        for j, a in d.allocations.items():
            g = np.asarray(a.gpus, np.int32)
            assert online[g].all() and (owner[g] < 0).all() and g.size == gpus[j]
            owner[g] = j
            new_allocs[j] = g
            if np.isnan(first[j]):
                first[j] = now
        allocs = new_allocs
        for j in active:
            state[j] = JobState.RUNNING if allocs[j].size else JobState.QUEUED
        running = np.flatnonzero(state == JobState.RUNNING)
        wake = d.wake_at
        # next event
        t_next = [np.inf]
        pend = submit[state == JobState.PENDING]
        if pend.size:
            t_next.append(pend.min())
        if running.size:
            t_next.append(now + (duration[running] - done[running]).min())
        if cap:
            t_next.append(cap[0][0])
        if wake is not None:
            t_next.append(wake)
        if policy.interval_s is not None and (state == JobState.QUEUED).any() and running.size:
            t_next.append(now + policy.interval_s)
        t = min(t_next)
        assert np.isfinite(t), "deadlock: queued jobs but nothing will ever happen"
        dt = t - now
        done[running] += dt
        attained[running] += dt * gpus[running]
        executed[running] += dt
        now = t
        fin = running[done[running] >= duration[running] - 1e-9]
        for j in fin:
            state[j] = JobState.FINISHED
            end[j] = now
            owner[allocs[j]] = -1
            allocs[j] = np.zeros(0, np.int32)
