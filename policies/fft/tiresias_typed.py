"""Tiresias as FFT's evaluation runs it (ICS'25 §6.1.4): one queue per GPU type, no inter-type migration.

FFT describes Tiresias as SRSTF (shortest remaining service time first) and, since it is not
heterogeneity-aware, keeps one queue per GPU type: a job joins one type's queue on arrival and
stays there. Which queue is described twice (notes A11): "randomly placed in one of the queues"
(§6.1.4 intro) or "the queue of the GPU type with the smallest cumulative remaining service
time" (the bullet, default). Within a queue, jobs run in priority order (remaining service
d_j × remaining time on the type, or Tiresias' own attained service, LAS) while their GPUs fit;
running jobs of lower priority are preempted; jobs are placed consolidated on the type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies import placement as P
from policies.base import BasePolicy, Round
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision


@dataclass(frozen=True)
class TiresiasTypedConfig(PlacedConfig):
    """Tiresias with one queue per GPU type (FFT's baseline): a job is assigned a type's queue when
    it arrives and never leaves it; each queue runs its jobs in order of priority (shortest remaining
    service first, or least attained service), preempting lower-priority jobs of the same type.
    Reads the duration oracle for remaining service (FFT describes Tiresias as SRSTF)."""

    reference: ClassVar[str] = ("Gu et al., Tiresias, NSDI'19, as FFT (ICS'25 §6.1.4) runs it on heterogeneous "
                                "GPUs; seeds/notes/fft.md A11")

    assign: str = param(
        "min_remaining_service", "A11: the queue a new job joins: min_remaining_service = the type whose queue "
        "holds the least Σ d × remaining time (the §6.1.4 bullet); random = a uniformly random type it can use "
        "(§6.1.4 intro)", choices=("min_remaining_service", "random"), source="FFT §6.1.4, notes A11")
    priority: str = param(
        "srstf", "order within a queue: srstf = least d × remaining time on the type first (FFT's description); "
        "las = least attained GPU-service first (Tiresias' discretised-free 2D-LAS)",
        choices=("srstf", "las"), source="FFT §6.1.4 ('SRSTF'); Tiresias §3")
    interval_s: float | None = param(300.0, "round length (FFT's rounds)", source="FFT §6.4.1")
    on_events: bool = param(
        False, "also decide at every arrival and completion (Tiresias' own scheduler); false = only at the "
        "rounds, as every policy in FFT's round-based system", source="[I] FFT §5 runs all policies per round")


@POLICIES.register("tiresias-typed")
class TiresiasTyped(BasePolicy):
    """Tiresias with per-type queues and no cross-type migration (FFT's baseline)."""

    name = "tiresias-typed"
    Config = TiresiasTypedConfig
    single_type_placement = True  # a job joins one type's queue and never migrates across types (`simcore.admission`)

    def __init__(self, config: TiresiasTypedConfig) -> None:
        super().__init__(config)
        self.event_driven = bool(config.on_events)
        self.needs = frozenset({NEED_DURATION_ORACLE})
        self.queue: dict[int, int] = {}
        self.ref: dict[int, float] = {}

    def _rem_on(self, view: ClusterView, jobs: np.ndarray, tput: np.ndarray) -> np.ndarray:
        """Remaining seconds of each job on each type (inf where it cannot run there)."""
        from policies.gavel import reference_gpus

        jv = view.jobs
        ref = np.zeros(jobs.size)
        for q, j in enumerate(jobs.tolist()):
            v = self.ref.get(j)
            if v is None:
                ids = reference_gpus(view, int(jv.num_gpus[j]), int(jv.gpu_type_req[j]))
                b = int(jv.global_batch[j])
                s = np.inf if ids is None else float(view.iteration_time(j, ids, b))
                v = self.ref[j] = b / s if 0 < s < np.inf else 0.0
            ref[q] = v
        rem = np.asarray(jv.remaining_s[jobs], float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(tput > 0, (rem * ref)[:, None] / tput, np.inf)

    def decide(self, view: ClusterView, now: float) -> Decision:
        jv = view.jobs
        c = view.cluster
        jobs = np.asarray(view.active(), np.int64)
        ntypes = len(c.gpu_type_names)
        online = np.asarray(c.gpu_online, bool)
        cap = np.bincount(np.asarray(c.gpu_type, np.int64)[online], minlength=ntypes)
        d = np.asarray(jv.num_gpus[jobs], np.int64)
        if jobs.size:
            tput = np.asarray(view.throughput_matrix(jobs, batch=jv.global_batch[jobs].astype(np.int64)), float)
            tput = np.where(np.isfinite(tput) & (d[:, None] <= cap[None, :]), tput, 0.0)
        else:
            tput = np.zeros((0, ntypes))
        rem = self._rem_on(view, jobs, tput)
        pos = {j: q for q, j in enumerate(jobs.tolist())}
        load = np.zeros(ntypes)
        for j, i in self.queue.items():
            q = pos.get(j)
            if q is not None and np.isfinite(rem[q, i]):
                load[i] += d[q] * rem[q, i]
        for q, j in enumerate(jobs.tolist()):
            if j in self.queue or not (tput[q] > 0).any():
                continue
            ok = np.flatnonzero(tput[q] > 0)
            if self.config.assign == "random":
                i = int(self.rng.choice(ok))
            else:
                i = int(ok[np.argmin(load[ok])])
            self.queue[j] = i
            load[i] += d[q] * rem[q, i]
        r = Round(view, self)
        prio = np.zeros(jobs.size)
        for q, j in enumerate(jobs.tolist()):
            i = self.queue.get(j, -1)
            prio[q] = (float(jv.attained_gpu_s[j]) if self.config.priority == "las"
                       else (d[q] * rem[q, i] if i >= 0 else np.inf))
        run: set[int] = set()
        left = cap.astype(np.int64).copy()
        for q in np.argsort(prio, kind="stable").tolist():
            j = int(jobs[q])
            i = self.queue.get(j, -1)
            if i >= 0 and d[q] <= left[i]:
                left[i] -= d[q]
                run.add(j)
        for k in view.running().tolist():
            if k in run and r.keep(k):
                continue
            r.release(k)
        for q in np.argsort(prio, kind="stable").tolist():
            j = int(jobs[q])
            if j in run and r.allocation(j) is None:
                g = P.place(c, r.avail(), int(d[q]), gpu_type=self.queue[j], strategy=self.config.placement,
                            rng=self.rng)
                if g is not None:
                    r.claim(j, g)
        return r.decision()
