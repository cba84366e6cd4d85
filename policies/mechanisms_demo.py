"""`mechanisms-demo`: a test and demonstration policy, not a paper's scheduler.

It exists so that one policy drives every mechanism of the policy contract in a
single run, end to end, and so that `cosim policies show mechanisms-demo` documents them:

- what-ifs: queued jobs are started on the GPU type and count the engine's throughput matrix
  and goodput what-ifs rank best (`ClusterView.throughput_matrix`, `ClusterView.goodput`);
- epoch events (`wants_epoch_events`): at a job's epoch end it either scales an elastic job
  out onto free GPUs of its nodes (a resize) or grows its global batch on the same GPUs (a
  batch change), when the goodput what-if says the change does not lower its goodput;
- reclaims answered by choice (`answers_reclaims`, `answer_reclaim`): the nodes with the
  fewest running GPUs go back, node id breaking ties — a rule of its own, not the engine's
  default answer;
- sharded memory: a job whose model is sharded (`sharding` zero3/fsdp, `model_parallel`) is
  placed like any other; the what-ifs already price its memory limit and extra traffic.

It reads only observable facts (no `needs`): requests, states, allocations, epoch events and
the what-ifs. The costs of its changes are the run's for this policy (`--costs
mechanisms-demo=...`): see the Config's docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy
from policies.config import PolicyConfig, param
from policies.registry import POLICIES
from simcore.api import Allocation, ClusterView, Decision, JobState, ReclaimAnswer, ReclaimDemand

_RUNNING = int(JobState.RUNNING)


@dataclass(frozen=True)
class MechanismsDemoConfig(PolicyConfig):
    """A TEST/DEMONSTRATION policy (not a published scheduler) that exercises every mechanism of
    the policy contract in one run. Each mechanism, and the cost of change the engine charges
    for the action (the run's costs for this policy: `--costs mechanisms-demo=PRESET` or a table
    of `restart_s`, `resize_s`, `batch_change_s`, `migrate_s`, `start_s`):

    1. What-ifs (start): queued jobs, oldest first, start on the GPU type with the highest
       throughput in the throughput matrix (job × type at its requested count), and, for an
       elastic job, the GPU count in [min_gpus, num_gpus] with the highest goodput whose
       per-GPU goodput is at least `scaling_floor` of the smallest count's. Cost: `start_s`
       on a first start, `restart_s` (or its per-model forms) when a job evicted by a reclaim
       resumes.
    2. Epoch events (`wants_epoch_events`): at each epoch end of a running job, an elastic job
       below max_gpus scales out onto up to as many free GPUs again of the same type, its
       current nodes first, when the goodput what-if rises and keeps `scaling_floor` of its
       per-GPU goodput (a superset of its GPUs: a resize, cost `resize_s`); any other job grows its global
       batch by `batch_growth` on the same GPUs (a batch change, cost `batch_change_s`, which
       defaults to `resize_s`) up to `max_batch_factor` × its trace batch, when the goodput
       what-if at the new batch is at least the current one. At most one resize per call.
    3. Reclaims answered by choice (`answers_reclaims`): the candidate nodes with the fewest
       GPUs held by jobs go back (node id breaks ties), at once. Jobs on them scale in where
       they keep min_gpus (a resize, `resize_s`) and are evicted otherwise (their resume
       later costs `restart_s`).
    4. Sharded memory: jobs whose model is sharded (trace columns `sharding` = zero1..3/fsdp,
       `model_parallel`) are placed through the same what-ifs, which price the sharded memory
       limit and the extra ZeRO-3/FSDP traffic; no separate path.

    It declares no oracle (`needs` is empty): progress, remaining time and trace duration are
    NaN to it. Running jobs are never preempted or moved by it (no `migrate_s` is charged
    unless a job resumes elsewhere). A larger batch helps only jobs counted in samples or
    Pollux epochs (`--progress goodput`); a job of a fixed number of iterations then processes
    more samples in slower iterations. The view's `jobs.work_mode` tells them apart; this demo
    grows batches regardless, to exercise the batch-change cost on every kind of job."""

    reference: ClassVar[str] = ("test/demo policy exercising cosim's policy contract; "
                                "not a published scheduler")

    batch_growth: float = param(2.0, "factor by which an epoch end grows a job's global batch")
    max_batch_factor: float = param(4.0, "largest global batch as a multiple of the job's trace batch")
    scaling_floor: float = param(0.5, "an elastic job's per-GPU goodput after a start or a scale-out must be "
                                      "at least this fraction of the per-GPU goodput at min_gpus (start) or "
                                      "before (scale-out)")

    def validate(self) -> None:
        self.check("batch_growth", self.batch_growth > 1.0, "a factor > 1")
        self.check("max_batch_factor", self.max_batch_factor >= 1.0, "a factor ≥ 1")
        self.check("scaling_floor", 0.0 <= self.scaling_floor <= 1.0, "a fraction in [0, 1]")


@POLICIES.register("mechanisms-demo")
class MechanismsDemo(BasePolicy):
    """Test/demo policy that drives every mechanism of the policy contract (see module doc)."""

    name = "mechanisms-demo"
    Config = MechanismsDemoConfig
    wants_epoch_events = True
    answers_reclaims = True

    # ---- reclaims -------------------------------------------------------------------
    def answer_reclaim(self, view: ClusterView, demand: ReclaimDemand) -> ReclaimAnswer:
        """The candidates with the fewest GPUs held by jobs, node id breaking ties, at once."""
        c = view.cluster
        cand = np.asarray(demand.candidates, np.int64)
        busy = np.array([int((c.gpu_owner[c.node_first_gpu[n]:c.node_first_gpu[n] + c.node_num_gpus[n]] >= 0).sum())
                         for n in cand.tolist()], np.int64)
        order = np.lexsort((cand, busy))
        return ReclaimAnswer(tuple(int(n) for n in cand[order][:demand.count]), None)

    # ---- decide ---------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        c = view.cluster
        free = c.gpu_online & (c.gpu_owner < 0)  # a copy: claimed below as jobs start or grow
        changes: dict[int, Allocation] = {}
        self._on_epochs(view, free, changes)
        self._start_queued(view, free, changes)
        if view.accepts_changes:
            return Decision(changes, changes_only=True)
        alloc = view.keep_running()
        alloc.update(changes)
        return Decision(alloc)

    def _on_epochs(self, view: ClusterView, free: np.ndarray, changes: dict[int, Allocation]) -> None:
        jobs, cfg = view.jobs, self.config
        resized = False
        seen: set[int] = set()
        for ev in view.progress_events:
            j = int(ev.job)
            if ev.kind != "epoch" or j in seen or int(jobs.state[j]) != _RUNNING:
                continue
            seen.add(j)
            gpus = np.asarray(view.allocation_of(j), np.int64)
            if not resized and int(jobs.max_gpus[j]) > int(jobs.min_gpus[j]) and gpus.size < int(jobs.max_gpus[j]):
                more = self._grow_gpus(view, j, gpus, free)
                if more is not None:
                    changes[j] = Allocation(tuple(sorted(more.tolist())))
                    free[more[~np.isin(more, gpus)]] = False
                    resized = True
                    continue
            b = int(jobs.batch_size[j])
            nb = min(math.floor(b * cfg.batch_growth), int(cfg.max_batch_factor * int(jobs.global_batch[j])))
            if nb <= b:
                continue
            g = tuple(int(x) for x in gpus)
            if view.goodput(j, g, nb) >= view.goodput(j, g, b) > 0.0:
                changes[j] = Allocation(g, nb)

    def _grow_gpus(self, view: ClusterView, j: int, gpus: np.ndarray, free: np.ndarray) -> np.ndarray | None:
        """Job j's GPUs plus as many free GPUs of its type again (its own nodes first), at most
        max_gpus in all, if the goodput what-if there keeps at least `scaling_floor` of its
        per-GPU goodput now; None otherwise."""
        c = view.cluster
        t = int(c.gpu_type[gpus[0]])
        want = min(int(view.jobs.max_gpus[j]), 2 * gpus.size) - gpus.size
        cand = np.flatnonzero(free & (c.gpu_type == t))
        if cand.size == 0:
            return None
        own = np.isin(c.gpu_node[cand], c.gpu_node[gpus])
        cand = cand[np.lexsort((cand, ~own))][:want]
        new = np.sort(np.concatenate([gpus, cand]))
        now_g, new_g = view.goodput(j, tuple(gpus.tolist())), view.goodput(j, tuple(new.tolist()))
        if new_g > now_g > 0.0 and new_g / new.size >= self.config.scaling_floor * now_g / gpus.size:
            return new
        return None

    def _start_queued(self, view: ClusterView, free: np.ndarray, changes: dict[int, Allocation]) -> None:
        queued = view.queued()
        if queued.size == 0:
            return
        jobs = view.jobs
        order = queued[np.lexsort((queued, jobs.submit_time[queued]))]
        tput = view.throughput_matrix(order)  # samples/s, job × GPU type, NaN where it cannot run
        for i, j in enumerate(order.tolist()):
            row = tput[i]
            for t in np.argsort(-np.nan_to_num(row, nan=-1.0), kind="stable").tolist():
                if not np.isfinite(row[t]):
                    break
                gpus = self._place(view, j, t, free)
                if gpus is not None:
                    changes[j] = Allocation(tuple(gpus.tolist()))
                    free[gpus] = False
                    break

    def _counts(self, view: ClusterView, j: int, t: int, avail: int) -> list[int]:
        """GPU counts to try for job j on type t, best first: the requested one for a rigid job;
        for an elastic one, counts in [min_gpus, requested] ranked by goodput among those whose
        per-GPU goodput is at least `scaling_floor` of the per-GPU goodput at min_gpus (epoch
        ends may grow it later towards max_gpus)."""
        jobs = view.jobs
        lo, hi = int(jobs.min_gpus[j]), max(int(jobs.min_gpus[j]), int(jobs.num_gpus[j]))
        if lo == hi:
            return [lo] if lo <= avail else []
        counts = sorted({n for n in (lo, hi, *(1 << k for k in range(12))) if lo <= n <= min(hi, avail)})
        if not counts:
            return []
        base = view.goodput(j, lo, None, t) / lo
        scored = [(view.goodput(j, n, None, t), n) for n in counts]
        ok = [(g, n) for g, n in scored if g > 0.0 and g / n >= self.config.scaling_floor * base]
        return [n for _, n in sorted(ok, key=lambda x: (-x[0], x[1]))]

    def _place(self, view: ClusterView, j: int, t: int, free: np.ndarray) -> np.ndarray | None:
        """Free GPUs of type t for job j, consolidated: the fullest-fitting node if one holds
        them, else whole nodes with the most free GPUs first; checked with the what-if."""
        c = view.cluster
        mask = free & (c.gpu_type == t)
        ids = np.flatnonzero(mask)
        for n in self._counts(view, j, t, int(ids.size)):
            per_node = np.bincount(c.gpu_node[ids], minlength=c.node_first_gpu.shape[0])
            fit = np.flatnonzero(per_node >= n)
            if fit.size:  # best fit: the node with the fewest free GPUs that still holds n
                node = int(fit[np.argmin(per_node[fit])])
                gpus = ids[c.gpu_node[ids] == node][:n]
            else:
                nodes = np.flatnonzero(per_node)
                nodes = nodes[np.lexsort((nodes, -per_node[nodes]))]
                take, left = [], n
                for node in nodes.tolist():
                    g = ids[c.gpu_node[ids] == node][:left]
                    take.append(g)
                    left -= g.size
                    if left == 0:
                        break
                gpus = np.sort(np.concatenate(take))
            if math.isfinite(view.iteration_time(j, tuple(gpus.tolist()), None)):
                return gpus
        return None
