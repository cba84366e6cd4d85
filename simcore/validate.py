"""Validation of a policy's `Decision` before the engine applies it.

A decision is the complete desired running set. It is rejected with a `PolicyError` naming
the policy, the job id, the GPU (where one is at fault) and the simulated time if:
a job index is out of range or the job is not active (not yet submitted, finished,
unschedulable); a GPU id is out of range, offline, or given to two jobs; a job's GPUs are
not all of its required type; its GPU count is outside [min_gpus, max_gpus]; its global
batch is not a positive integer of at least one sample per GPU; or the local batch does not
fit GPU memory (even with gradient accumulation, when that is allowed).

Allocations identical to a job's current one were checked when applied and only take part
in the double-booking check, so validating a round costs what the round changes: they are
found by C-level scans (`_suspects`: identity with the engine's own `Allocation` objects,
then equal GPU tuples), never a Python loop over the running set.
"""

from __future__ import annotations

import math
from itertools import compress, islice, repeat
from operator import and_, attrgetter, eq, is_, is_not, not_
from typing import Mapping

import numpy as np

from cosim.errors import PolicyError
from simcore.api import Allocation, Decision, JobState
from simcore.perf import PerfModel
from simcore.state import ClusterState, JobTable

_ACTIVE = (int(JobState.QUEUED), int(JobState.RUNNING), int(JobState.RESTARTING))  # plain ints: fast `in`
_gpus_of = attrgetter("gpus")
_batch_of = attrgetter("batch_size")
_NONE = repeat(None)


def _suspects(allocs: Mapping[int, Allocation], objs: Mapping[int, Allocation],
              current: Mapping[int, tuple[int, ...]]) -> list:
    """Jobs of the decision whose allocation may differ from the current one, found with
    C-level iteration (map/compress) so an unchanged running set costs no Python loop:
    first the very objects the engine handed out (identity), then equal fresh Allocations
    (same GPU tuple, batch None) — exactly the allocations the full check would skip."""
    if objs and len(allocs) >= len(objs) and objs.items() <= allocs.items():
        # the common "keep everything, add some" decision: every current object is handed
        # back (identity short-cuts the comparison), so the rest are the additions; with
        # insertion order they are the dict's tail, which the membership test confirms
        tail = list(islice(allocs, len(objs), None))
        if not any(map(objs.__contains__, tail)):
            return tail
    keys = list(allocs)
    vals = list(allocs.values())
    if objs:
        mask = list(map(is_not, vals, map(objs.get, keys)))
        keys = list(compress(keys, mask))
        vals = list(compress(vals, mask))
    if not keys or not current:
        return keys
    if set(map(type, vals)) != {Allocation}:
        return keys  # foreign entries: the per-job check reports them
    same = map(and_, map(eq, map(_gpus_of, vals), map(current.get, keys)), map(is_, map(_batch_of, vals), _NONE))
    return list(compress(keys, map(not_, same)))


def _err(policy: str, now: float, msg: str) -> PolicyError:
    return PolicyError(f"policy '{policy}' at t={now:.3f}s: {msg}")


def validate_decision(
    decision: object,
    jobs: JobTable,
    cluster: ClusterState,
    perf: PerfModel,
    current: Mapping[int, tuple[int, ...]],
    policy: str,
    now: float,
    current_objs: Mapping[int, Allocation] | None = None,
) -> tuple[list[int], list[int]]:
    """Check `decision`; return (jobs whose allocation or batch changes, jobs listed with no
    GPUs). Jobs held now but absent from the decision are preempted by the caller."""
    if not isinstance(decision, Decision):
        raise _err(policy, now, f"decide() returned {type(decision).__name__}, expected simcore.api.Decision")
    allocs = decision.allocations
    nj, ng = jobs.num_jobs, cluster.num_gpus
    if decision.wake_at is not None and not (math.isfinite(decision.wake_at) and decision.wake_at >= now):
        raise _err(policy, now, f"wake_at={decision.wake_at!r} is not a finite time >= now")
    changed: list[int] = []
    emptied: list[int] = []
    objs = current_objs or {}
    get = objs.get
    # unchanged allocations (the engine's own objects, or equal fresh ones) skipped at C speed
    suspects = _suspects(allocs, objs, current) if allocs else []
    for j in suspects:
        a = allocs[j]
        cur = get(j)
        if cur is not None and type(a) is Allocation and a.batch_size is None and a.gpus == cur.gpus:
            continue
        if not isinstance(j, (int, np.integer)) or not 0 <= int(j) < nj:
            raise _err(policy, now, f"job index {j!r} out of range 0..{nj - 1}")
        if not isinstance(a, Allocation):
            raise _err(policy, now, f"job {jobs.job_id[j]}: allocation is {type(a).__name__}, expected Allocation")
        if not a.gpus:
            emptied.append(int(j))
            continue
        batch = a.batch_size
        if current.get(int(j)) == a.gpus and (batch is None or batch == jobs.batch_size[j]):
            continue
        changed.append(int(j))
    claimed: dict[int, int] = {}
    changed_set = set(changed)
    for j in changed:
        a = allocs[j]
        jid = jobs.job_id[j]
        if int(jobs.state[j]) not in _ACTIVE:
            raise _err(policy, now, f"job {jid} is {JobState(jobs.state[j]).name}, cannot be allocated")
        n = len(a.gpus)
        if not jobs.min_gpus[j] <= n <= jobs.max_gpus[j]:
            raise _err(policy, now, f"job {jid}: {n} GPUs outside [{jobs.min_gpus[j]}, {jobs.max_gpus[j]}]")
        for g in a.gpus:
            if not 0 <= g < ng:
                raise _err(policy, now, f"job {jid}: GPU {g} out of range 0..{ng - 1}")
            if not cluster.gpu_online[g]:
                raise _err(policy, now, f"job {jid}: GPU {g} is offline")
            other = claimed.get(g)
            if other == j:
                raise _err(policy, now, f"job {jid}: GPU {g} listed twice")
            if other is None:
                owner = int(cluster.gpu_owner[g])
                # an unchanged allocation in the decision keeps its GPUs
                if owner >= 0 and owner != j and owner in allocs and owner not in changed_set and allocs[owner].gpus:
                    other = owner
            if other is not None:
                raise _err(policy, now, f"GPU {g} given to both job {jobs.job_id[other]} and job {jid}")
            claimed[g] = j
        req = int(jobs.gpu_type_req[j])
        gpus = np.asarray(a.gpus, np.int32)
        tys = cluster.topology.gpu_type[gpus]
        types = tys[:1] if (tys == tys[0]).all() else np.unique(tys)  # one type: skip the sort
        if req >= 0:
            bad = gpus[cluster.topology.gpu_type[gpus] != req]
            if bad.shape[0]:
                names = cluster.topology.gpu_type_names
                raise _err(policy, now, f"job {jid}: GPU {int(bad[0])} is {names[cluster.topology.gpu_type[bad[0]]]}, "
                                        f"job requires {names[req]}")
        batch = int(jobs.batch_size[j] if a.batch_size is None else a.batch_size)
        if batch < n:
            raise _err(policy, now, f"job {jid}: global batch {batch} is smaller than its {n} GPUs")
        if perf.micro_batching(jobs.model[j], types, math.ceil(batch / n)) is None:
            raise _err(policy, now, f"job {jid}: local batch {math.ceil(batch / n)} of {jobs.model[j]} does not fit "
                                    f"GPU {int(gpus[0])} memory")
    return changed, emptied
