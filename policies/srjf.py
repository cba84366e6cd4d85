"""SRJF: shortest-remaining-job-first at the requested GPU count, the Ares artifact's stand-in for Lucid.

Lucid (Hu et al., ASPLOS'23) "preferentially serves jobs with the shorter computation time"; the
Ares artifact does not run Lucid but `SRJFPolicy` (`simulator/policy/srjf.py`), which ranks jobs
by remaining time at their requested GPU count and gang-schedules them
(`../shared/seeds/notes/ares.md` §6 item 5). Label results "SRJF (Lucid stand-in)", not Lucid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy, Round, make_placer
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from policies.sjf import ranked
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision


def remaining_key(view: ClusterView, jobs: np.ndarray) -> np.ndarray:
    """SRJF's key over all job indices (filled on `jobs`): the engine's remaining seconds at the
    requested count, consolidated (`JobsView.remaining_s`, the oracle). Never the trace duration:
    the Pollux/Sia/Ares workloads have none (NaN), and that is why `sjf`, which ranks by it,
    degrades to FIFO there. Unknown (NaN) ranks last."""
    key = np.full(view.jobs.num_jobs, np.inf)
    k = view.jobs.remaining_s[jobs]
    key[jobs] = np.where(np.isnan(k), np.inf, k)
    return key


def srjf_set(order: np.ndarray, dem: np.ndarray, budget: int, blocking: bool) -> np.ndarray:
    """The jobs of `order` (shortest first) that run, counting GPUs against `budget`: each
    takes its requested count; one that does not fit stops the walk (`blocking`, the artifact's
    `break`) or is skipped."""
    chosen = []
    for j in order.tolist():
        d = int(dem[j])
        if d > budget:
            if blocking:
                break
            continue
        budget -= d
        chosen.append(j)
    return np.asarray(chosen, np.int64)


@dataclass(frozen=True)
class SrjfConfig(PlacedConfig):
    """Shortest remaining job first: free GPUs go to the waiting jobs with the least remaining
    time at their requested GPU count, each gang-scheduled at that count; running jobs are not
    preempted unless `preemptive=true`. Clairvoyant: it reads the jobs' true remaining time
    (the duration oracle), never the trace duration. This is the Ares artifact's stand-in for
    Lucid, not Lucid itself."""

    reference: ClassVar[str] = ("Ares artifact SRJFPolicy (simulator/policy/srjf.py), its stand-in for Lucid "
                                "(Hu et al., ASPLOS'23)")

    preemptive: bool = param(
        False,
        "false: running jobs keep their GPUs, free GPUs go to the shortest waiting jobs; true: every call "
        "re-picks the running set from all active jobs, shortest first, preempting running jobs that fall out",
        source="false: ares.md §6 ('non-preemptive'); true: what the artifact's code does each 60-s round",
    )
    blocking: bool = param(
        True,
        "true: stop at the first job (shortest first) whose requested GPUs exceed what is left; false: skip "
        "it and try the jobs behind it",
        source="the artifact's loop stops (`break`)",
    )
    interval_s: float | None = param(
        None, "time between periodic rounds; none = on events only; 60 = the Ares artifact's round")


@POLICIES.register("srjf")
class Srjf(BasePolicy):
    """SRJF, the Ares artifact's stand-in for Lucid: shortest remaining time at the requested GPUs first, gang, non-preemptive (oracle).

    - Key: `remaining_s` (`remaining_key`), the engine's remaining seconds at the requested GPU
      count on a consolidated placement — the artifact's `predict_step_time(requested) ×
      remaining iterations`. Clairvoyant: declares the duration oracle.
    - Each job runs at its requested count (`num_gpus` clipped to [min, max]) or waits.
    - Non-preemptive by default; `preemptive=true` re-picks the whole running set each call,
      as the artifact's code (which recomputes the set every 60-s round and drops running jobs
      that no longer make it).
    - GPUs are counted, as in the artifact, then the chosen jobs are placed with `placement`;
      a chosen job that finds no placement (fragmentation, type) waits this round.
    """

    name = "srjf"
    single_type_placement = True  # the shared placer keeps a job on one type (`simcore.admission`)
    Config = SrjfConfig
    ignores_restart_ends = True  # the key does not move while a job restarts; no GPU is freed

    def __init__(self, config: SrjfConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE})
        #: non-preemptive: with nothing queued a round changes nothing
        self.rounds_need_queue = not config.preemptive

    def decide(self, view: ClusterView, now: float) -> Decision:
        r = Round(view)
        placer = make_placer(self, view, self.config.placement, r.dem)
        online = int(np.count_nonzero(view.cluster.gpu_online))
        if self.config.preemptive:
            cand = view.active()
            budget = online
        else:
            r.keep_all_undecided()
            cand = view.queued()
            budget = online - int(view.jobs.alloc_count[view.running()].sum())
        order = ranked(view, cand, remaining_key(view, cand))
        chosen = srjf_set(order, r.dem, budget, self.config.blocking)
        if self.config.preemptive:
            keep = np.zeros(view.jobs.num_jobs, bool)
            keep[chosen] = True
            for k in view.running().tolist():
                if not keep[k]:
                    r.release(k)
            for k in chosen.tolist():
                if r.undecided[k]:
                    r.keep(k)
        for j in chosen.tolist():
            if r.allocation(j) is None:
                r.place(j, placer)
        return r.decision()
