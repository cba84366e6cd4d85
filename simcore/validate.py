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
found by C-level scans (`_suspects`: identity with the engine's own `Allocation` objects
by dict equality and set operations, then equal GPU tuples), never a Python loop over the
running set. The same scan finds the
running jobs the decision leaves out (preempted), so the engine does not scan again.
A `Decision(changes_only=True)` (offered through `ClusterView.accepts_changes`) lists only
the changes, an empty `Allocation` stopping a job; every running job it does not list keeps
its GPUs, so there is nothing to scan at all.

Each changed allocation is checked by one pass (`_plan`) that also looks up the phases the
engine will run it with (the memory check is `PerfModel.phases` returning None, the same
rule, computed once for both); the first fault, in the order the checks are listed above,
raises the error naming it, its message built only then. One path: what is validated is
what the engine applies.
"""

from __future__ import annotations

import math
from itertools import compress, filterfalse, repeat
from operator import and_, attrgetter, eq, is_, is_not, not_
from types import MappingProxyType
from typing import Mapping, NamedTuple

import numpy as np

from cosim.errors import PolicyError
from simcore.api import Allocation, Decision, JobState
from simcore.perf import Phases, PerfModel
from simcore.state import ClusterState, JobTable

_ACTIVE = (int(JobState.QUEUED), int(JobState.RUNNING), int(JobState.RESTARTING))  # plain ints: fast `in`
_gpus_of = attrgetter("gpus")
_batch_of = attrgetter("batch_size")
_NONE = repeat(None)


class Plan(NamedTuple):
    """A validated change: job j runs on `gpus` (ascending, read-only int32) at global batch
    `batch`, with these phases."""

    job: int
    alloc: Allocation
    gpus: np.ndarray
    batch: int
    phases: Phases


class Checked(NamedTuple):
    """What `validate_decision` found: the changes to apply (in decision order), jobs listed
    with no GPUs, and jobs held now but absent from the decision (ascending)."""

    plans: list[Plan]
    emptied: list[int]
    gone: list[int]

    @property
    def changed(self) -> list[int]:
        return [p.job for p in self.plans]


def _scan(allocs: Mapping[int, Allocation], objs: Mapping[int, Allocation],
          current: Mapping[int, tuple[int, ...]]) -> tuple[list, list | None]:
    """(`_suspects`, the keys of `objs` absent from `allocs` — or None when not worked out).

    The common decisions keep every running job it does not preempt by handing back the
    engine's own object, and add a few: then the suspects are the new keys and the rest of
    the decision is checked by one C-level comparison (identity first) against the engine's
    objects, less the preempted ones."""
    if objs and len(current) == len(objs) and type(allocs) is dict:
        if len(allocs) == len(objs) and allocs == objs:
            return [], []  # every running job kept with the same (or an equal) object, nothing new
        new = set(allocs).difference(objs)  # set operations and dict equality: no Python call per key
        kept = allocs.copy()
        for k in new:
            del kept[k]
        if len(kept) == len(objs):
            rest, gone = objs, []
        else:
            gone = list(set(objs).difference(allocs))
            rest = objs.copy() if isinstance(objs, (dict, MappingProxyType)) else dict(objs)
            for k in gone:
                del rest[k]
        if kept == rest:  # the others kept with the same (or an equal) object
            return (list(new) if len(new) <= 1 else list(filter(new.__contains__, allocs))), gone
    keys = list(allocs)
    vals = list(allocs.values())
    if objs:
        mask = list(map(is_not, vals, map(objs.get, keys)))
        keys = list(compress(keys, mask))
        vals = list(compress(vals, mask))
    if not keys or not current:
        return keys, None
    if set(map(type, vals)) != {Allocation}:
        return keys, None  # foreign entries: the per-job check reports them
    same = map(and_, map(eq, map(_gpus_of, vals), map(current.get, keys)), map(is_, map(_batch_of, vals), _NONE))
    return list(compress(keys, map(not_, same))), None


def _suspects(allocs: Mapping[int, Allocation], objs: Mapping[int, Allocation],
              current: Mapping[int, tuple[int, ...]]) -> list:
    """Jobs of the decision whose allocation may differ from the current one, found with
    C-level iteration (map/compress) so an unchanged running set costs no Python loop:
    first the very objects the engine handed out (identity), then equal fresh Allocations
    (same GPU tuple, batch None) — exactly the allocations the full check would skip."""
    return _scan(allocs, objs, current)[0]


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
) -> Checked:
    """Check `decision`; return the changes to apply, the jobs listed with no GPUs and the
    jobs held now (keys of `current`) that the decision leaves out (to be preempted)."""
    if not isinstance(decision, Decision):
        raise _err(policy, now, f"decide() returned {type(decision).__name__}, expected simcore.api.Decision")
    allocs = decision.allocations
    nj = jobs.num_jobs
    if decision.wake_at is not None and not (math.isfinite(decision.wake_at) and decision.wake_at >= now):
        raise _err(policy, now, f"wake_at={decision.wake_at!r} is not a finite time >= now")
    if decision.quiet_until is not None and math.isnan(decision.quiet_until):  # a time in the past promises nothing
        raise _err(policy, now, "quiet_until=nan is not a time")
    changed: list[int] = []
    emptied: list[int] = []
    objs = current_objs or {}
    get = objs.get
    changes_only = decision.changes_only
    if changes_only:  # only changes listed: nothing to scan, no running job left out
        suspects, gone = list(allocs), []
    else:  # unchanged allocations (the engine's own objects, or equal fresh ones) skipped at C speed
        suspects, gone = _scan(allocs, objs, current) if allocs else ([], None)
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
    gone = sorted(filterfalse(allocs.__contains__, current)) if gone is None else sorted(gone)
    if not changed:
        return Checked([], emptied, gone)
    plans = _plan(changed, allocs, jobs, cluster, perf, _keeper(allocs, changed, emptied, changes_only), policy, now)
    return Checked(plans, emptied, gone)


def _keeper(allocs: Mapping[int, Allocation], changed: list[int], emptied: list[int], changes_only: bool):
    """Whether running job o keeps its GPUs after the decision: listed with GPUs and not
    changed (complete form), or not changed and not stopped (changes-only form)."""
    changed_set = set(changed)
    if changes_only:
        stopped = changed_set.union(emptied)
        return lambda o: o not in stopped
    return lambda o: o in allocs and o not in changed_set and bool(allocs[o].gpus)


def _plan(changed: list[int], allocs: Mapping[int, Allocation], jobs: JobTable, cluster: ClusterState,
          perf: PerfModel, keeps, policy: str, now: float) -> list[Plan]:
    """The changes as `Plan`s, checked job by job in decision order and each job's checks in
    the order of the module docstring; the first fault raises its `PolicyError` (its message
    built only then: the checks themselves are the lean ones of an accepted decision)."""
    ng = cluster.num_gpus
    online, owner = cluster.gpu_online, cluster.gpu_owner
    gpu_type = cluster.topology.gpu_type
    state, batch_size, model, min_gpus, max_gpus = jobs.state, jobs.batch_size, jobs.model, jobs.min_gpus, jobs.max_gpus
    per_job = perf.per_job_scaling  # phases depend on the job's own range too (`PerfModel.job_phases`)
    claimed: dict[int, int] = {}  # GPU -> the changed job given it
    plans = []
    # the cached GPU arrays and phases, where the perf model has them for this very topology
    placed = getattr(perf, "placed", None)
    if placed is not None and getattr(perf, "gpu_type", None) is not gpu_type:
        placed = None
    for j in changed:
        a = allocs[j]
        g = a.gpus
        n = len(g)
        if state.item(j) not in _ACTIVE:
            raise _err(policy, now, f"job {jobs.job_id[j]} is {JobState(state[j]).name}, cannot be allocated")
        if not min_gpus.item(j) <= n <= max_gpus.item(j):
            raise _err(policy, now, f"job {jobs.job_id[j]}: {n} GPUs outside [{min_gpus[j]}, {max_gpus[j]}]")
        for x in g:
            if not 0 <= x < ng or not online.item(x) or x in claimed:  # claimed: listed twice, or by two jobs
                _gpu_fault(jobs, j, x, ng, online, claimed, policy, now)
            claimed[x] = j
            o = owner.item(x)
            if o >= 0 and o != j and keeps(o):  # an unchanged allocation keeps its GPUs
                raise _err(policy, now, f"GPU {x} given to both job {jobs.job_id[o]} and job {jobs.job_id[j]}")
        req = jobs.gpu_type_req.item(j)
        if placed is not None:  # cached per GPU tuple (`PerfModel.placed`)
            gpus, ty = placed(g)
            typed = req < 0 or ty == req
        else:
            gpus = np.array(g, np.int32)
            if n > 1:
                gpus.sort()
            gpus.setflags(write=False)
            typed = req < 0 or bool((gpu_type[gpus] == req).all())
        if not typed:
            bad = int(gpus[gpu_type[gpus] != req][0])
            names = cluster.topology.gpu_type_names
            raise _err(policy, now, f"job {jobs.job_id[j]}: GPU {bad} is {names[gpu_type[bad]]}, job requires {names[req]}")
        batch = batch_size.item(j) if a.batch_size is None else int(a.batch_size)
        if batch < n:
            raise _err(policy, now, f"job {jobs.job_id[j]}: global batch {batch} is smaller than its {n} GPUs")
        ph = perf.phases(model[j], gpus, batch) if placed is None else perf.phases_of(model[j], g, gpus, batch)
        if per_job and ph is not None:
            if perf.scaling_factor(n, min_gpus.item(j), max_gpus.item(j)) <= 0:
                raise _err(policy, now, f"job {jobs.job_id[j]}: {n} GPUs leave no throughput under the backend's "
                                        f"imperfect scaling (range [{min_gpus.item(j)}, {max_gpus.item(j)}])")
            ph = perf.job_phases(ph, n, min_gpus.item(j), max_gpus.item(j))
        if ph is None:  # the local batch does not fit memory (`PerfModel.micro_batching`), or the shape
            local = math.ceil(batch / n)
            if perf.micro_batching(model[j], np.unique(gpu_type[gpus]), local) is None:
                raise _err(policy, now, f"job {jobs.job_id[j]}: local batch {local} of {model[j]} does not fit "
                                        f"GPU {int(gpus[0])} memory")
            raise _err(policy, now, f"job {jobs.job_id[j]}: {model[j]} cannot run on {n} GPUs at global batch "
                                    f"{batch} (whole tensor-parallel groups, a sample per data-parallel rank)")
        plans.append(Plan(j, a, gpus, batch, ph))
    return plans


def _gpu_fault(jobs: JobTable, j: int, x: object, ng: int, online: np.ndarray, claimed: dict[int, int],
               policy: str, now: float) -> None:
    """Raise the error of GPU id `x` of job j: out of range, offline, listed twice by j, or
    already given to another changed job."""
    jid = jobs.job_id[j]
    if not isinstance(x, (int, np.integer)) or not 0 <= x < ng:
        raise _err(policy, now, f"job {jid}: GPU {x} out of range 0..{ng - 1}")
    if not online[x]:
        raise _err(policy, now, f"job {jid}: GPU {x} is offline")
    other = claimed[x]
    if other == j:
        raise _err(policy, now, f"job {jid}: GPU {x} listed twice")
    raise _err(policy, now, f"GPU {x} given to both job {jobs.job_id[other]} and job {jid}")
