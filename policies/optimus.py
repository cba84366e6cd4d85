"""Optimus: marginal-gain GPU allocation, as the Pollux OSDI'21 simulator (and the Ares artifact) runs it.

Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning Clusters",
EuroSys'18. The baseline of Pollux (Qiao et al., OSDI'21, "Optimus+Oracle") and of Ares: every
round, each job gets one GPU, then GPUs go one at a time to the job with the largest marginal
gain `(step(g) − step(g+1)) × remaining iterations`, i.e. the most seconds saved. The same greedy
allocation (`marginal_greedy`) and the what-if step times (`StepTimes`) serve AFS (`policies.afs`).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from policies.base import BasePolicy, Round
from policies import placement as P
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

#: Smallest local (per-GPU) batch of each model in the Pollux OSDI'21 throughput tables
#: (`simulator/traces/<app>/placements.csv`, column `local_bsz`, minimum), which the Pollux
#: simulator uses to cap Optimus at `target batch // min local batch` GPUs. Keyed by the
#: cosim model-zoo names (Pollux application in the comment).
MIN_LOCAL_BATCH = {
    "resnet18_cifar": 32,  # cifar10
    "neumf": 32,  # ncf
    "bert_base": 4,  # bert
    "deepspeech2": 10,  # deepspeech2
    "yolov3": 4,  # yolov3
    "resnet50": 20,  # imagenet
}


def marginal_greedy(base: np.ndarray, cap: np.ndarray, spare: int,
                    gain: Callable[[int, int], float]) -> np.ndarray:
    """Counts after handing `spare` GPUs out one at a time to the largest `gain(i, n_i)`.

    `base[i]` is where item i starts, `cap[i]` its most GPUs; `gain(i, n)` is the value of
    giving item i its (n+1)-th GPU. Only positive gains are taken; ties go to the lower index
    (the caller's priority order). An item starting at 0 was not admitted this round (its
    base share did not fit) and gets nothing: it may not run below its base share.
    Cost: one `gain` call per GPU handed out plus one per item.
    """
    n = np.asarray(base, np.int64).copy()
    heap = []
    for i in range(n.size):
        if 0 < n[i] < cap[i]:
            g = gain(i, int(n[i]))
            if g > 0:
                heap.append((-g, i))
    heapq.heapify(heap)
    while spare > 0 and heap:
        _, i = heapq.heappop(heap)
        n[i] += 1
        spare -= 1
        if n[i] < cap[i]:
            g = gain(i, int(n[i]))
            if g > 0:
                heapq.heappush(heap, (-g, i))
    return n


class StepTimes:
    """Seconds per iteration of job j on g GPUs packed onto whole nodes (the lowest GPU ids of
    its type: `(4, 4, …, rest)` on 4-GPU nodes, as Optimus' `predict_step_time` in the Pollux
    simulator), at the job's reference global batch, alone on the network: the view's
    what-if query, cached per (model, batch, GPU type, g) for the run.

    A job that accepts any type is timed on the type with the most GPUs. `inf` (the job does
    not fit in memory there) is kept as is.
    """

    def __init__(self) -> None:
        self._rows: dict[tuple, dict[int, float]] = {}  # (model, batch, type) → {g: seconds}
        self._ids: dict[int, np.ndarray] = {}
        # a greedy round asks ~2 times per GPU handed out: each job's (model, batch, type) and
        # the cluster's most common type are kept for the views they were read from
        self._of: tuple = (None, None)
        self._job_key: dict[int, tuple] = {}
        self._common: tuple = (None, -1)

    def gpu_type(self, view: ClusterView, j: int) -> int:
        req = int(view.jobs.gpu_type_req[j])
        if req >= 0:
            return req
        c = view.cluster
        if self._common[0] is not c:  # GPU types never change within a cluster's arrays
            self._common = (c, int(np.argmax(np.bincount(c.gpu_type.astype(np.int64)))))
        return self._common[1]

    def type_size(self, view: ClusterView, t: int) -> int:
        return int(self._type_ids(view, t).size)

    def _type_ids(self, view: ClusterView, t: int) -> np.ndarray:
        ids = self._ids.get(t)
        if ids is None:
            ids = self._ids[t] = np.flatnonzero(view.cluster.gpu_type == t).astype(np.int64)
        return ids

    def row(self, view: ClusterView, j: int) -> dict[int, float]:
        """Job j's times known so far, by GPU count (shared by the jobs of its model, batch and
        type; a count not in it yet: `self(view, j, g)`)."""
        jobs, c = view.jobs, view.cluster
        if self._of[0] is not jobs or self._of[1] is not c:
            self._of, self._job_key = (jobs, c), {}
        row = self._job_key.get(j)
        if row is None:
            key = (jobs.model[j], int(jobs.global_batch[j]), self.gpu_type(view, j))
            row = self._job_key[j] = self._rows.setdefault(key, {})
        return row

    def __call__(self, view: ClusterView, j: int, g: int) -> float:
        row = self.row(view, j)
        s = row.get(g)
        if s is None:
            t = self.gpu_type(view, j)
            ids = self._type_ids(view, t)
            s = float(view.iteration_time(j, ids[:g], int(view.jobs.global_batch[j]))) if 0 < g <= ids.size else np.inf
            row[g] = s
        return s


def apply_counts(policy: BasePolicy, view: ClusterView, jobs: np.ndarray, counts: np.ndarray,
                 strategy: str) -> Decision:
    """The decision that runs `jobs[i]` on `counts[i]` GPUs (0: not at all).

    A running job whose count is unchanged keeps its GPUs; the others are released, then the
    jobs needing GPUs are placed smallest count first (as the Pollux simulator places Optimus'
    allocations), each with `strategy`; one that finds no placement does not run this round.
    """
    r = Round(view)
    want = np.zeros(view.jobs.num_jobs, np.int64)
    want[jobs] = counts
    held = view.jobs.alloc_count
    for k in view.running().tolist():
        if want[k] == held[k] and r.keep(k):
            continue
        r.release(k)
    placer_dem = want

    def placer(j: int, avail: np.ndarray) -> np.ndarray | None:
        return P.place(view.cluster, avail, int(placer_dem[j]), gpu_type=int(view.jobs.gpu_type_req[j]),
                       strategy=strategy, rng=policy.rng, accept=policy.accept_for(view, j))

    todo = [int(j) for j in jobs[np.argsort(counts, kind="stable")] if want[j] > 0 and r.allocation(int(j)) is None]
    for j in todo:
        r.place(j, placer)
    return r.decision()


def first_fit_base(need: np.ndarray, cap: np.ndarray, total: int, fallback: np.ndarray | None = None) -> np.ndarray:
    """Each job's starting share `need[i]` in priority order while GPUs last; a job whose share
    no longer fits (or exceeds its cap) starts with `fallback[i]` if that fits, else none, and
    later ones may still fit (the Pollux simulator's Optimus: `min_replicas` each, skipping
    those that do not fit; no fallback)."""
    base = np.zeros(need.size, np.int64)
    left = total
    for i in range(need.size):
        for want in (need[i],) if fallback is None else (need[i], fallback[i]):
            if want <= left and want <= cap[i]:
                base[i] = want
                left -= int(want)
                break
    return base


def drop_infeasible(view: ClusterView, step: "StepTimes", jobs: np.ndarray, n: np.ndarray) -> np.ndarray:
    """`n` with 0 for jobs that cannot run at their count (what-if time `inf`: memory)."""
    n = n.copy()
    for i, j in enumerate(jobs.tolist()):
        if n[i] > 0 and not np.isfinite(step(view, j, int(n[i]))):
            n[i] = 0
    return n


def caps_of(view: ClusterView, jobs: np.ndarray, batch_cap: bool, single_gpu_models: tuple[str, ...]) -> np.ndarray:
    """Most GPUs of each job: its `max_gpus` (the engine's contract), and with `batch_cap`
    also `global batch // MIN_LOCAL_BATCH[model]` (the Pollux simulator's Optimus cap);
    1 for `single_gpu_models` (the Pollux simulator pins NCF to one replica); never below the
    job's `min_gpus` (a rigid job keeps its size rather than never running)."""
    jv = view.jobs
    cap = jv.max_gpus[jobs].astype(np.int64)
    for i, j in enumerate(jobs.tolist()):
        m = str(jv.model[j])
        if batch_cap and m in MIN_LOCAL_BATCH:
            cap[i] = min(cap[i], max(1, int(jv.global_batch[j]) // MIN_LOCAL_BATCH[m]))
        if m in single_gpu_models:
            cap[i] = min(cap[i], 1)
    return np.maximum(cap, jv.min_gpus[jobs])  # a job's minimum wins: never a cap it cannot run at


@dataclass(frozen=True)
class OptimusConfig(PlacedConfig):
    """Every round each job gets one GPU (in arrival order, while GPUs last); then GPUs go one at
    a time to the job whose next GPU saves the most time, (step time on g GPUs − on g+1) ×
    remaining iterations, up to its cap. The global batch stays fixed. Clairvoyant, like the
    Pollux simulator's "Optimus+Oracle": remaining iterations come from the duration oracle
    instead of Optimus' online loss-curve fit."""

    reference: ClassVar[str] = ("Peng et al., \"Optimus: An Efficient Dynamic Resource Scheduler for Deep "
                                "Learning Clusters\", EuroSys'18, as run by the Pollux OSDI'21 simulator "
                                "(simulator/optimus.py) and the Ares artifact")

    batch_cap: bool = param(
        True,
        "cap each job at global batch // the smallest local batch of its model (MIN_LOCAL_BATCH), besides "
        "its max_gpus",
        source="Pollux simulator: max_replicas = target_batch // min_local_bsz (simulator.py:347)",
    )
    single_gpu_models: tuple[str, ...] = param(
        ("neumf",), "models pinned to one GPU", source="Pollux simulator pins ncf to one replica (simulator.py:350)")
    base_share: str = param(
        "one",
        "each job's share before the marginal-gain GPUs: 'one' = one GPU each in arrival order while GPUs "
        "last (Optimus' 'at least one worker for fairness'); 'requested' = the job's requested GPUs in arrival "
        "order while they fit, one GPU for a job whose request no longer fits",
        choices=("one", "requested"),
        source="'one': Pollux simulator (simulator/optimus.py, min_replicas = 1). 'requested': ONES notes §9.1, "
               "the requested GPUs are 'the DRL/Optimus initial size'")
    interval_s: float | None = param(
        60.0, "time between allocation rounds, the only decision points",
        source="60 s in the Pollux OSDI'21 and Ares experiments; 600 s (the Optimus paper's 10 min) in ONES'")

    remaining: str = param(
        "epoch",
        "remaining iterations in the marginal gain: 'epoch' = measured at the job's latest epoch end (or its "
        "first round) and held until the next, as the Pollux simulator does; 'continuous' = re-read every round "
        "(two equal jobs then trade the odd GPUs every round, each trade a restart). 'epoch' needs the jobs' "
        "epochs (trace epochs, a training run, or --progress goodput): a job without any (a duration-only "
        "replay trace) keeps its first reading, so use 'continuous' there",
        choices=("epoch", "continuous"),
        source="Pollux simulator: remaining = iterations from the current whole epoch to completion "
               "(optimus.py:12-19)")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None, "a positive number of seconds (Optimus is round-based)")


@POLICIES.register("optimus")
class Optimus(BasePolicy):
    """Optimus (EuroSys'18) as the Pollux simulator runs it: 1 GPU each, then GPUs by largest marginal gain (oracle).

    Every `interval_s` (rounds only, like the Pollux simulator; arrivals wait for the next
    round):

    - active jobs in arrival order each get one GPU while GPUs last (later ones get none), or
      with `base_share = 'requested'` their requested GPUs while they fit (else one);
    - each spare GPU goes to the job with the largest `(step(g) − step(g+1)) × remaining
      iterations`; `step(g)` is the what-if iteration time on g GPUs packed onto whole nodes at
      the job's reference batch (`StepTimes`), so local batch = batch / g (with gradient
      accumulation where it does not fit, as the perf model does);
    - a job never exceeds its cap (`caps_of`: `max_gpus`, batch // min local batch, pinned
      models); gains ≤ 0 are never taken, so GPUs may stay idle;
    - jobs whose count is unchanged keep their GPUs, the others are (re)placed (`apply_counts`),
      paying the engine's restart cost.

    Remaining iterations: Optimus fits a loss curve online; the Pollux simulator instead reads
    the true remaining iterations from its validation tables ("Optimus+Oracle"). The view has
    no loss curve, so this policy declares the duration oracle and takes remaining iterations =
    `remaining_s / step(requested GPUs)` (the engine's remaining time at the requested count,
    consolidated, over the step time there).
    """

    name = "optimus"
    Config = OptimusConfig

    def __init__(self, config: OptimusConfig) -> None:
        super().__init__(config)
        self.event_driven = False  # interval rounds only, as the Pollux simulator
        self.needs = frozenset({NEED_DURATION_ORACLE})
        self.step = StepTimes()
        # 'epoch': the engine calls at epoch ends too; those calls only refresh `_rem_iters`
        self.wants_epoch_events = config.remaining == "epoch"
        self._rem_iters: dict[int, float] = {}  # job → remaining iterations at its latest epoch end

    def remaining(self, view: ClusterView, j: int) -> float:
        """Remaining iterations of job j for the gain (see `OptimusConfig.remaining`)."""
        if not self.wants_epoch_events:
            return remaining_iterations(view, self.step, j)
        r = self._rem_iters.get(j)
        if r is None:
            r = self._rem_iters[j] = remaining_iterations(view, self.step, j)
        return r

    def allocate(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """GPU counts of `jobs` (in priority = arrival order) for this round."""
        total = int(np.count_nonzero(view.cluster.gpu_online))
        cap = caps_of(view, jobs, self.config.batch_cap, self.config.single_gpu_models)
        one = np.maximum(1, view.jobs.min_gpus[jobs]).astype(np.int64)
        if self.config.base_share == "requested":
            base = first_fit_base(np.maximum(one, view.jobs.num_gpus[jobs]), cap, total, fallback=one)
        else:
            base = first_fit_base(one, cap, total)
        jl = jobs.tolist()
        rem_iters = [float(self.remaining(view, j)) for j in jl]
        step = self.step
        rows = [step.row(view, j) for j in jl]

        def gain(i: int, g: int) -> float:  # 2 reads of the job's row per GPU handed out
            r = rows[i]
            a, b = r.get(g), r.get(g + 1)
            d = (step(view, jl[i], g) if a is None else a) - (step(view, jl[i], g + 1) if b is None else b)
            return d * rem_iters[i] if math.isfinite(d) else 0.0

        n = marginal_greedy(base, cap, total - int(base.sum()), gain)
        return drop_infeasible(view, self.step, jobs, n)

    def decide(self, view: ClusterView, now: float) -> Decision:
        for ev in view.progress_events:  # an epoch ended: the job's remaining work is re-read now
            if ev.kind == "epoch":
                self._rem_iters[ev.job] = remaining_iterations(view, self.step, ev.job)
        iv = float(self.config.interval_s)
        if self.wants_epoch_events and view.progress_events and abs(now / iv - round(now / iv)) > 1e-9:
            # an epoch-end call between rounds: nothing moves (rounds are the only decisions); with
            # every GPU online, keeping all is the empty list of changes (what the round gives)
            if view.accepts_changes and view.cluster.gpu_online.all():
                return Decision(changes_only=True)
            r = Round(view)
            r.keep_all_undecided()
            return r.decision()
        active = view.active()
        jobs = active[np.lexsort((active, view.jobs.submit_time[active]))].astype(np.int64)
        counts = self.allocate(view, jobs)
        return apply_counts(self, view, jobs, counts, self.config.placement)


def remaining_iterations(view: ClusterView, step: StepTimes, j: int) -> float:
    """Iterations left of job j at its reference batch: the oracle remaining time at the
    requested count over the step time there (1 when unknown, as the Pollux simulator's
    Optimus uses for a job past its completion epoch)."""
    r = float(view.jobs.remaining_s[j])
    t = step(view, j, max(1, int(view.jobs.num_gpus[j])))
    if not np.isfinite(r) or not np.isfinite(t) or t <= 0:
        return 1.0
    return max(r / t, 1.0)
