"""AFS: base share to every job, then each spare GPU to the job with the best marginal throughput per GPU.

Hwang et al., "Elastic Resource Sharing for Distributed Deep Learning" (Apathetic Future Share),
NSDI'21, in the form the Aryl paper (Li et al., EuroSys'22) evaluates it: "allocating base demand
to each job first and allocating one more worker to the job with the largest throughput gain
per GPU" (`../shared/seeds/notes/aryl.md` §6), with elasticity unbounded as AFS assumes ("AFS
unlimitedly scales up jobs as long as they have a good throughput gain"). The NSDI paper's own
AFS-L pseudocode (which also weighs job lengths pairwise) was not at hand when this was written;
`gain=job_fraction` brings job length in through the remaining work, as aryl.md §6 recommends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy, demands
from policies.config import PlacedConfig, param
from policies.optimus import StepTimes, apply_counts, drop_infeasible, first_fit_base, marginal_greedy
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

GAINS = ("job_fraction", "speedup")


def afs_gain(step_g: float, step_g1: float, step_base: float, remaining_iters: float, gain: str) -> float:
    """The value of one more GPU (g → g+1) for a job, normalised so jobs compare.

    - `job_fraction`: the gain in fraction of the job's remaining work done per second,
      Δ(1/T) = (1/step(g+1) − 1/step(g)) / remaining iterations (the aryl.md §6 resolution of
      "throughput gain per GPU" under linear scaling; it needs the remaining work, the oracle);
    - `speedup`: the gain in throughput relative to the job's own base share,
      step(base)/step(g+1) − step(base)/step(g) (non-clairvoyant).
    """
    if not (np.isfinite(step_g1) and step_g1 > 0):
        return 0.0
    inv_g = 1.0 / step_g if np.isfinite(step_g) and step_g > 0 else 0.0
    d = 1.0 / step_g1 - inv_g
    if gain == "job_fraction":
        return d / max(remaining_iters, 1.0)
    return d * step_base if np.isfinite(step_base) else d


@dataclass(frozen=True)
class AfsConfig(PlacedConfig):
    """Each job first gets its requested GPUs (in arrival order, while GPUs last); each spare GPU
    then goes, one at a time, to the job whose throughput gains most from one more GPU,
    normalised so jobs compare (`gain`). Recomputed at every arrival and completion; jobs
    whose GPU count changes are restarted on new GPUs."""

    reference: ClassVar[str] = ("Hwang et al., \"Elastic Resource Sharing for Distributed Deep Learning\" (AFS), "
                                "NSDI'21, as the Aryl paper (EuroSys'22) runs it")

    gain: str = param(
        "job_fraction",
        "marginal throughput per GPU: job_fraction = gain in fraction of the remaining work done per second "
        "(reads the duration oracle); speedup = gain in throughput relative to the job's base share",
        choices=GAINS,
        source="job_fraction: aryl.md §6's resolution of 'throughput gain per GPU'",
    )
    event_driven: bool = param(
        True,
        "also run a round at every arrival and completion (false: rounds only every `interval_s` and at "
        "capacity changes, as `aryl event_driven=false`; the Aryl catalog's paper-size grids use false with "
        "interval_s = 60 so AFS decides at the same 60-s tick as Aryl: ~21k rounds instead of ~350k)",
        source="aryl.md §2.0 [I] (scheduler tick 60 s)",
    )
    max_gpus: str = param(
        "job",
        "job: up to the job's max_gpus (the engine accepts no more); unbounded: up to every GPU of its type, "
        "as AFS assumes — only for traces whose jobs' max_gpus allow it (else the engine rejects the "
        "decision, naming the job)",
        choices=("unbounded", "job"),
        source="unbounded: Aryl §7.4 ('AFS assumes unbounded elasticity')",
    )

    def validate(self) -> None:
        self.check("event_driven", self.event_driven or self.interval_s is not None,
                   "true, or false together with an interval_s (else no round would ever start a job)")


@POLICIES.register("afs")
class Afs(BasePolicy):
    """AFS (NSDI'21) as Aryl runs it: base demand to each job in arrival order, then each spare GPU to the best marginal gain per GPU.

    - Base share: each active job, in arrival order, gets its requested count (clipped to
      [min, max]) while GPUs last; one that does not fit gets none, later ones may.
    - Spare GPUs, one at a time, to the job with the largest `afs_gain` (option `gain`) of
      one more GPU, computed from the view's what-if step times on packed GPUs at the job's
      reference batch (`policies.optimus.StepTimes`); only positive gains.
    - Caps: the job's `max_gpus` by default, the only counts the engine accepts;
      `max_gpus=unbounded`, as the paper assumes, lets a job grow to every GPU of its type on
      traces whose jobs allow it.
    - Recomputed at every arrival and completion (and every `interval_s` if set; with
      `event_driven=false` only every `interval_s` and at capacity changes); jobs whose count
      is unchanged keep their GPUs.
    """

    name = "afs"
    Config = AfsConfig

    def __init__(self, config: AfsConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE}) if config.gain == "job_fraction" else frozenset()
        self.step = StepTimes()
        self.event_driven = bool(config.event_driven)

    def allocate(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """GPU counts of `jobs` (in arrival order) for this round."""
        jl = jobs.tolist()
        total = int(np.count_nonzero(view.cluster.gpu_online))
        if self.config.max_gpus == "job":
            cap = view.jobs.max_gpus[jobs].astype(np.int64)
        else:
            cap = np.array([self.step.type_size(view, self.step.gpu_type(view, j)) for j in jl], np.int64)
        base = first_fit_base(demands(view)[jobs], cap, total)
        ref = np.maximum(base, 1)
        rem = np.ones(jobs.size)
        if self.config.gain == "job_fraction":
            for i, j in enumerate(jl):
                t = self.step(view, j, max(1, int(view.jobs.num_gpus[j])))
                r = float(view.jobs.remaining_s[j])
                rem[i] = r / t if np.isfinite(r) and np.isfinite(t) and t > 0 else 1.0

        def gain(i: int, g: int) -> float:
            j = jl[i]
            return afs_gain(self.step(view, j, g), self.step(view, j, g + 1), self.step(view, j, int(ref[i])),
                            rem[i], self.config.gain)

        n = marginal_greedy(base, cap, total - int(base.sum()), gain)
        return drop_infeasible(view, self.step, jobs, n)

    def decide(self, view: ClusterView, now: float) -> Decision:
        active = view.active()
        jobs = active[np.lexsort((active, view.jobs.submit_time[active]))].astype(np.int64)
        return apply_counts(self, view, jobs, self.allocate(view, jobs), self.config.placement)
