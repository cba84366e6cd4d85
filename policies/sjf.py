"""Shortest job first (non-preemptive) and shortest remaining time first (preemptive).

Both are clairvoyant baselines: they read the duration oracle (`JobsView.duration`,
`JobsView.remaining_s`), which the engine shows only to policies that declare
`NEED_DURATION_ORACLE`. A job whose oracle value is unknown (NaN) is ranked last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy, shape_key
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision


def ranked(view: ClusterView, jobs: np.ndarray, key: np.ndarray) -> np.ndarray:
    """`jobs` by ascending `key` (NaN last), then submit time, then index."""
    jobs = np.asarray(jobs, np.int64)
    k = np.where(np.isnan(key[jobs]), np.inf, key[jobs])
    return jobs[np.lexsort((jobs, view.jobs.submit_time[jobs], k))]


@dataclass(frozen=True)
class SjfConfig(PlacedConfig):
    """Whenever GPUs are free, the waiting job with the smallest size starts (size = its trace
    duration, or duration × GPUs). Running jobs are never preempted. A job that cannot be
    placed is skipped and smaller-ranked ones behind it may start, unless `blocking=true`.
    Clairvoyant: it reads the jobs' true durations (the duration oracle)."""

    reference: ClassVar[str] = ("clairvoyant baseline; SJF by duration and by GPU-time as compared in Gu et al., "
                                "\"Tiresias\", NSDI'19; SJF with skip as in Aryl's phase 1 (EuroSys'22)")

    by: str = param(
        "duration",
        "job size: duration = trace duration (s) at the requested GPUs; gpu_time = duration × GPUs (GPU-s)",
        choices=("duration", "gpu_time"),
    )
    blocking: bool = param(False, "true: stop at the first job that cannot be placed; false: skip it",
                           source="skip: Aryl's phase 1 (EuroSys'22)")


@POLICIES.register("sjf")
class Sjf(BasePolicy):
    """Shortest job first, non-preemptive, by trace duration or GPU-time (duration oracle).

    Whenever GPUs are free, the queued job with the smallest size starts (size = `duration`,
    or `duration × GPUs` with `by=gpu_time`; Tiresias, NSDI'19, compares both as
    clairvoyant baselines). Running jobs are never preempted. By default a job that cannot
    be placed is skipped and smaller-ranked ones behind it may start ("SJF with skip", as in
    Aryl's phase 1); `blocking=true` gives the textbook head-of-line version.
    """

    name = "sjf"
    single_type_placement = True  # the shared placer keeps a job on one type (`simcore.admission`)
    Config = SjfConfig
    rounds_need_queue = True  # non-preemptive: with nothing queued a round changes nothing
    completions_need_queue = True  # ... and so does a completion (nothing grows into freed GPUs)
    ignores_restart_ends = True  # a restart end frees no GPU and changes no priority here

    def __init__(self, config: SjfConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE})

    def decide(self, view: ClusterView, now: float) -> Decision:
        r = self.round(view)
        r.keep_all_undecided()
        placer = r.placer()
        queued = view.queued()
        size = np.empty(view.jobs.num_jobs)  # filled on the queued jobs only (cost: the queue)
        size[queued] = view.jobs.duration[queued] * (r.dem[queued] if self.config.by == "gpu_time" else 1)
        memo = self.placement_is_deterministic(view, self.config.placement)
        order = ranked(view, queued, size)
        shape = shape_key(r.dem[order], view.jobs.gpu_type_req[order]).tolist()
        for j, key in zip(order.tolist(), shape):
            if memo and r.failed_before(key):  # a job of the same shape just failed on this pool
                gpus = None
            else:
                gpus = r.place(j, placer)
                if gpus is None and memo:
                    r.note_failure(key)
            if gpus is None and self.config.blocking:
                break
        return r.decision()


@dataclass(frozen=True)
class SrtfConfig(PlacedConfig):
    """The job with the shortest remaining time runs first: jobs are visited by remaining
    seconds (or remaining × GPUs); a running job keeps its GPUs unless a job with strictly
    shorter remaining time needs them, in which case the fewest lowest-priority jobs are
    preempted. Ties never preempt. Clairvoyant: it reads the duration oracle."""

    reference: ClassVar[str] = ("clairvoyant preemptive baseline; shortest-remaining-GPU-time as in Gu et al., "
                                "\"Tiresias\", NSDI'19")

    by: str = param(
        "time",
        "priority: time = remaining seconds at the requested GPUs; gpu_time = remaining × GPUs (GPU-s)",
        choices=("time", "gpu_time"),
    )


@POLICIES.register("srtf")
class Srtf(BasePolicy):
    """Shortest remaining time first, preemptive (duration oracle).

    Priority = `remaining_s` (the engine's estimate of the seconds left at the requested GPU
    count on a consolidated placement), or `remaining_s × GPUs` with `by=gpu_time`
    (Tiresias' "shortest-remaining-gputime"). Jobs are visited in priority order; a running
    job keeps its GPUs unless a job with strictly shorter remaining time needs them, in
    which case the fewest lowest-priority jobs whose GPUs make a placement possible are
    preempted. Ties never preempt, so equal jobs do not thrash.
    """

    name = "srtf"
    single_type_placement = True  # the shared placer keeps a job on one type (`simcore.admission`)
    Config = SrtfConfig
    rounds_need_queue = True  # only a waiting job preempts: with none queued every job is kept

    def __init__(self, config: SrtfConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE})

    def decide(self, view: ClusterView, now: float) -> Decision:
        r = self.round(view)
        placer = r.placer()
        active = view.active()
        key = np.empty(view.jobs.num_jobs)  # filled on the active jobs only (cost: the active set)
        ka = view.jobs.remaining_s[active] * (r.dem[active] if self.config.by == "gpu_time" else 1)
        key[active] = np.where(np.isnan(ka), np.inf, ka)
        order = ranked(view, active, key)
        und = r.undecided
        rev = order[::-1]
        running_rev = rev[und[rev]]  # by key descending: a job's victims are a prefix of it
        # victims of a job: running jobs with a strictly longer key, i.e. of a higher dense
        # rank of the key (`Round.walk`'s preemption class)
        klass = np.unique(key[order], return_inverse=True)[1].ravel()
        keys = None
        if self.placement_is_deterministic(view, self.config.placement):
            # shape = (demand, type, victim-prefix length), one int per job: a job shaped like
            # one that just failed on the same pool, with no more victims, fails too
            kr = key[running_rev][::-1]
            n_vic = running_rev.size - np.searchsorted(kr, key[order], side="right")
            keys = shape_key(r.dem[order], view.jobs.gpu_type_req[order]) * (running_rev.size + 1) + n_vic
        # the walk keeps, places (`consolidate`) and preempts itself; it hands back the jobs a
        # Python placer must handle (other strategies, several GPU types) and running jobs to check
        kernel = self.config.placement == "consolidate"
        for j in r.walk(order, klass=klass, keys=keys, kernel=kernel, preempt=True):
            if und[j] and r.keep(j):
                continue
            if r.place(j, placer, victims=r.victims) is None:
                r.walk_failed()
        return r.decision()
