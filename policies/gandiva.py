"""Gandiva as the Dally paper's evaluation runs it (network-agnostic baseline with migration).

Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning", OSDI'18, in the
form used as a baseline by Sharma et al., "Dally: A network-placement sensitive cluster
scheduler for deep learning", IEEE BigData'25 (see ../shared/seeds/notes/dally.md §6.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies import placement as P
from policies.base import BasePolicy, Round, shape_key
from policies.config import PolicyConfig, param
from policies.registry import POLICIES
from simcore.api import ClusterView, Decision, JobState


@dataclass(frozen=True)
class GandivaConfig(PolicyConfig):
    """Network-agnostic, with migration. Jobs that have run before come first (by first start),
    then new jobs by arrival; nothing is preempted, a job that cannot be placed is skipped. A
    job that fits one node goes to a node already hosting jobs of the same GPU count, else an
    empty node, else any node with room; with no such node it may take random free GPUs across
    nodes (`split_small`). Larger jobs take random free GPUs (`large_placement`). When GPUs free
    up, running jobs spread over several nodes (or leaves) move to one node (or leaf) with room
    (`migrate`), paying the migration cost. No time-slicing or packing."""

    reference: ClassVar[str] = ("Xiao et al., \"Gandiva: Introspective Cluster Scheduling for Deep Learning\", "
                                "OSDI'18, in the form the Dally paper (Sharma et al., IEEE BigData'25) runs as a baseline")

    large_placement: str = param(
        "random",
        "placement of jobs larger than a node: random = any free GPUs, shuffled (the Dally authors' "
        "Gandiva); consolidate = fewest nodes",
        choices=("random", "consolidate"),
        source="the Dally authors' Gandiva",
    )
    split_small: bool = param(
        True,
        "a job that fits a node but finds no node with room may start on random free GPUs across "
        "nodes (and is migrated later); false = it waits",
    )
    migrate: bool = param(True, "migrate running jobs to a better-consolidated placement when GPUs free up",
                          source="Gandiva's migration, OSDI'18")


@POLICIES.register("gandiva")
class Gandiva(BasePolicy):
    """Gandiva (OSDI'18) as in the Dally paper: start-time order, per-demand machine affinity, migration on free-up.

    - Order: jobs that have started before (by first start time) come before jobs never
      started (by arrival). Nothing is preempted by the scheduler; a job that lost its
      GPUs to a capacity change keeps its start time and so its place ahead of new jobs.
      A job that cannot be placed is skipped (offers go to the next job).
    - Placement, network-agnostic: a job that fits one node uses per-demand machine
      affinity: a node already hosting jobs of the same GPU demand, else an empty node,
      else any node with room; the node with the most free GPUs within each class. With no
      node free enough it takes random free GPUs (`split_small`). A job larger than a node
      takes random free GPUs anywhere (`large_placement`).
    - Migration ("swap"), checked before new jobs are served whenever the policy runs (so
      when GPUs free up), running jobs by earliest start first (the artifact sorts its bids
      by start time descending; with gang placement only the order among movers differs): a running job that fits one node but spans several moves to the
      node with room chosen as above; a larger job spanning several leaves moves to the
      best-fit single leaf with room (consolidated inside it). Moves only ever improve the
      tier a job spans, so they do not repeat; the engine charges the migration cost when a
      job's GPU set changes.
    - No time-slicing, packing or grow-shrink (as in the Dally authors' version).
    """

    name = "gandiva"
    Config = GandivaConfig

    def decide(self, view: ClusterView, now: float) -> Decision:
        c = view.cluster
        jobs = view.jobs
        r = self.round(view)
        node_cap = int(c.node_num_gpus.max(initial=0))
        gpu_dem = np.full(c.num_gpus, -1, np.int64)  # demand of the job on each GPU (affinity)
        # the owner map is the current allocations: one GPU pass
        run_mask = np.zeros(jobs.num_jobs + 1, bool)
        run_mask[r.running_idx] = True
        on = run_mask[np.where(r.owner >= 0, r.owner, jobs.num_jobs)]
        gpu_dem[on] = r.dem[r.owner[on]]
        self._aff = P.node_affinity(c, gpu_dem)
        if self.config.migrate:
            for k in self._movers(view, r, node_cap):
                self._migrate(view, r, k, node_cap, gpu_dem)
        r.keep_all_undecided()
        queued = view.queued()
        started = np.isfinite(jobs.first_start[queued])
        queued = queued[np.lexsort((queued, jobs.submit_time[queued],
                                    np.where(started, jobs.first_start[queued], np.inf)))]
        # on a one-type cluster a failed placement (affinity or random) depends only on the
        # pool and the job's demand (random placement fails on the count before drawing), so
        # a job shaped like one that just failed on the same pool is skipped without a retry
        memo = len(c.gpu_type_names) <= 1
        req = jobs.gpu_type_req
        for j in queued.tolist():
            key = shape_key(int(r.dem[j]), int(req[j]))
            if memo and r.failed_before(key):
                continue
            gpus = self._initial(view, r, j, gpu_dem, node_cap)
            if gpus is None and memo:
                r.note_failure(key)
            if gpus is not None:
                r.claim(j, gpus)
                self._set(c, gpu_dem, gpus, r.dem[j])
        return r.decision()

    def _movers(self, view, r: Round, node_cap: int) -> list[int]:
        """Running jobs `_migrate` may move, in its order (earliest start first).

        Only jobs spanning more than the tier they could fit in are candidates; they are
        found from the owner map in one pass over the GPUs, so the per-job work of
        `_migrate` is paid only by the (few) jobs that may actually move.
        """
        jobs, c = view.jobs, view.cluster
        cand = r.running_idx
        if cand.size:
            ow = r.owner
            held = np.flatnonzero(ow >= 0)
            o = ow[held]
            srt = np.argsort(o, kind="stable")
            o, g = o[srt], held[srt]
            starts = np.flatnonzero(np.r_[True, o[1:] != o[:-1]])
            node = c.gpu_node[g]
            leaf = c.node_leaf[node]
            multi_node = np.minimum.reduceat(node, starts) != np.maximum.reduceat(node, starts)
            multi_leaf = np.minimum.reduceat(leaf, starts) != np.maximum.reduceat(leaf, starts)
            size = np.diff(np.r_[starts, o.size])
            movable = np.where(size <= node_cap, multi_node, multi_leaf)
            cand = np.intersect1d(o[starts[movable]], cand)
        return sorted(cand.tolist(), key=lambda k: (_nan_last(jobs.first_start[k]), jobs.submit_time[k], k))

    def _initial(self, view, r: Round, j: int, gpu_dem: np.ndarray, node_cap: int) -> np.ndarray | None:
        c = view.cluster
        dem = int(r.dem[j])
        req = int(view.jobs.gpu_type_req[j])
        accept = self.accept_for(view, j)
        avail = r.avail()
        if dem <= node_cap:
            g = P.affinity_fit(c, avail, dem, self._aff, gpu_type=req, accept=accept)
            if g is not None or not self.config.split_small:
                return g
            return P.place(c, avail, dem, gpu_type=req, strategy="random", rng=self.rng, accept=accept)
        strategy = "random" if self.config.large_placement == "random" else "consolidate"
        return P.place(c, avail, dem, gpu_type=req, strategy=strategy, rng=self.rng, accept=accept)

    def _migrate(self, view, r: Round, k: int, node_cap: int, gpu_dem: np.ndarray) -> None:
        c = view.cluster
        cur = r.cur[k]
        if cur.size == 0 or not r.undecided[k] or not r.online[cur].all():
            return
        if view.jobs.state[k] != JobState.RUNNING:  # still paying a (re)start: leave it be
            return
        nodes = c.gpu_node[cur]
        multi_node = nodes.min() != nodes.max()
        leaves = c.node_leaf[nodes]
        multi_leaf = leaves.min() != leaves.max()
        dem = cur.size
        req = int(view.jobs.gpu_type_req[k])
        if req < 0:
            req = int(c.gpu_type[cur[0]])  # stay on the type it runs on
        avail = r.avail()
        avail[cur] = True  # its own GPUs count: the target may overlap the old placement
        if dem <= node_cap and multi_node:
            self._set(c, gpu_dem, cur, -1)  # its own placement confers no affinity
            target = P.affinity_fit(c, avail, dem, self._aff, gpu_type=req)
        elif dem > node_cap and multi_leaf:
            target = P.place(c, avail, dem, gpu_type=req, strategy="topo", max_tier=1)
        else:
            return
        if target is None:
            self._set(c, gpu_dem, cur, dem)
            return
        r.release(k)
        r.claim(k, target, keep=True)
        self._set(c, gpu_dem, cur, -1)
        self._set(c, gpu_dem, target, dem)

    def _set(self, c, gpu_dem: np.ndarray, gpus: np.ndarray, dem: int) -> None:
        """Record the demand on `gpus` and refresh the affinity of their nodes."""
        gpu_dem[gpus] = dem
        P.update_node_affinity(c, gpu_dem, self._aff, gpus)


def _nan_last(x: float) -> float:
    return np.inf if np.isnan(x) else float(x)
