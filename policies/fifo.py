"""FIFO with strict head-of-line blocking, and FIFO with EASY backfilling.

Both are non-preemptive: a running job keeps its GPUs until it finishes (or the engine
takes them away when capacity is lost, after which the job queues again in its original
arrival position). Jobs are served in arrival order (`submit_time`, then job index).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies._fifo_kernels import arrival_sorted, fifo_round
from policies.base import BasePolicy, Round, shape_key
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision


class _NanInf:
    """`remaining_s` with NaN read as inf, element by element (no pass over every trace job)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __getitem__(self, j):
        x = self.a[j]
        return np.inf if np.isnan(x) else x


def arrival_order(view: ClusterView, jobs: np.ndarray) -> np.ndarray:
    """`jobs` (ascending, as the view's index arrays are) sorted by submit time, then index:
    the order FIFO's round kernel walks (`_fifo_kernels.arrival_sorted`, the one sort of both)."""
    jobs = np.asarray(jobs, np.int64)
    if jobs.shape[0] < 2:  # nothing to order (the usual call on a lightly loaded cluster: one arrival)
        return jobs
    return arrival_sorted(jobs, view.jobs.submit_time)


@dataclass(frozen=True)
class FifoConfig(PlacedConfig):
    """Jobs start in arrival order; while the oldest waiting job cannot be placed, no other job
    starts, even one that would fit. Running jobs are never preempted."""

    reference: ClassVar[str] = ("the classic batch-scheduler baseline (FIFO in Gu et al., \"Tiresias\", NSDI'19, "
                                "and in Aryl, EuroSys'22)")


@POLICIES.register("fifo")
class Fifo(BasePolicy):
    """First in, first out; strict head-of-line blocking: nothing starts while the oldest queued job waits.

    The classic batch-scheduler baseline (the "FIFO" of Tiresias, NSDI'19, and Aryl's
    baseline). When the oldest queued job cannot be placed (not enough GPUs of its type, or
    a placement constraint), no later job starts, even one that would fit.
    """

    name = "fifo"
    single_type_placement = True  # the shared placer keeps a job on one type (`simcore.admission`)
    Config = FifoConfig
    rounds_need_queue = True  # non-preemptive: with nothing queued a round changes nothing
    completions_need_queue = True  # ... and so does a completion (nothing grows into freed GPUs)
    ignores_restart_ends = True  # a restart end frees no GPU and changes no priority here

    def decide(self, view: ClusterView, now: float) -> Decision:
        # the walk keeps the running jobs, then places the queue in arrival order and stops at
        # the first job that cannot start; `consolidate` on a one-type cluster is placed inside
        # its kernel, other strategies are handed back here. The round's begin, the order and
        # the walk's first run are one kernel call (`_fifo_kernels.fifo_round`)
        c, jobs, ws = view.cluster, view.jobs, self.workspace
        w = ws.walk_state(c, jobs.num_jobs)
        active = view.active()
        zeros, none, no, yes = ws.walk_defaults(active.shape[0])
        kernel = self.config.placement == "consolidate"
        order = np.empty(active.shape[0], np.int64)
        und = ws.take_mask(jobs.num_jobs)
        n_off, n, i = fifo_round(c.gpu_owner, c.gpu_online, view.running(), active, jobs.state, jobs.submit_time,
                                 und, ws.demands(view), jobs.gpu_type_req, jobs.alloc_count, ws.memo, w[3], w[4],
                                 w[5], ws.node_free(c), w[16], order, zeros, none, yes if kernel and w[2] else no)
        r = Round(view, self, begun=(und, n_off))
        if i >= n:  # the kernel ran the whole walk: nothing for Python
            r.take_walk()
            return r.decision()
        placer = r.placer()
        for j in r.walk(order[:n], kernel=kernel, blocking=True, ran=i):
            if r.undecided[j]:  # a running job with a GPU gone offline: kept if it can be, else stopped
                r.keep(j)
                continue
            if r.place(j, placer) is None:
                break
        return r.decision()


@dataclass(frozen=True)
class BackfillConfig(PlacedConfig):
    """Jobs are served in arrival order. The oldest job that cannot start gets a reservation: the
    time when enough GPUs of its type will have been freed by running jobs (from their oracle
    remaining times). A later job starts now only if it does not delay that reservation: it
    ends before it, or uses only GPUs the reserved job will not need. Only the oldest waiting
    job holds a reservation; running jobs are never preempted. `reservation=none` drops the
    reservation (every job that fits starts, in arrival order) and needs no oracle."""

    reference: ClassVar[str] = ("EASY backfilling: Lifka, \"The ANL/IBM SP scheduling system\", JSSPP'95; "
                                "Mu'alem & Feitelson, IEEE TPDS 2001; applied to GPU gangs")

    reservation: str = param(
        "easy",
        "easy: EASY backfilling, a reservation for the oldest waiting job from oracle remaining "
        "times; none: first-fit skipping, no reservation (non-clairvoyant)",
        choices=("easy", "none"),
        source="EASY (Lifka 1995)",
    )


@POLICIES.register("fifo-backfill")
class FifoBackfill(BasePolicy):
    """FIFO with EASY backfilling: later jobs may jump ahead only if they do not delay the oldest waiting job.

    EASY (Lifka, "The ANL/IBM SP scheduling system", JSSPP'95; Mu'alem & Feitelson, TPDS 2001),
    adapted to GPU gangs. The engine keeps no reservations, so this policy recomputes one per
    call, for the oldest queued job that cannot start (the head):

    - shadow time: walk the running jobs (and those started this call) in order of their
      estimated end, `now + remaining_s` (the duration oracle, hence `needs`), adding the
      GPUs each frees that the head can use (its type, or all types if it accepts any) to
      the ones usable now, until the head's demand is covered;
    - extra GPUs: that sum minus the head's demand at the shadow time.

    A later job is started now if it can be placed now and either it is estimated to end by
    the shadow time, or it takes no more head-usable GPUs than the extra ones left (which
    it then consumes), or it uses no GPU the head could use. Only the head holds a
    reservation (EASY, not conservative backfilling). The reservation counts GPUs, not a
    placement: the head is guaranteed enough GPUs of its type at the shadow time, not a
    consolidated set. When the head's demand cannot be covered by every GPU that running
    jobs will free (capacity lost), the shadow time is infinite and later jobs backfill
    freely. A running job whose remaining time is unknown (NaN) is taken never to end.

    `reservation=none` drops the reservation: every job that fits starts, in arrival order
    (first-fit skipping, Tiresias' "fjf"); it needs no oracle.
    """

    name = "fifo-backfill"
    single_type_placement = True  # the shared placer keeps a job on one type (`simcore.admission`)
    Config = BackfillConfig
    rounds_need_queue = True  # non-preemptive: with nothing queued a round changes nothing
    completions_need_queue = True  # ... and so does a completion (nothing grows into freed GPUs)

    def __init__(self, config: BackfillConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE}) if config.reservation == "easy" else frozenset()

    def decide(self, view: ClusterView, now: float) -> Decision:
        r = self.round(view)
        r.keep_all_undecided()
        placer = r.placer()
        easy = self.config.reservation == "easy"
        rem = _NanInf(view.jobs.remaining_s)
        head = -1
        shadow, extra, usable = np.inf, 0, None
        memo = self.placement_is_deterministic(view, self.config.placement)
        order = arrival_order(view, view.queued())
        shape = shape_key(r.dem[order], view.jobs.gpu_type_req[order]).tolist()
        for j, key in zip(order.tolist(), shape):
            if memo and r.failed_before(key):  # a job of the same shape just failed on this pool
                gpus = None
            else:
                gpus = r.place(j, placer) if head < 0 or not easy else placer(j, r.avail())
                if gpus is None and memo:
                    r.note_failure(key)
            if head < 0 or not easy:
                if gpus is None and head < 0:
                    head = j
                    if easy:
                        shadow, extra, usable = self._reservation(view, r, j, now, rem)
                continue
            if gpus is None:
                continue
            take = int(usable[gpus].sum())
            if take == 0 or now + rem[j] <= shadow or np.isinf(shadow):
                r.claim(j, gpus)
            elif take <= extra:
                extra -= take
                r.claim(j, gpus)
        return r.decision()

    @staticmethod
    def _reservation(view: ClusterView, r: Round, head: int, now: float, rem: np.ndarray):
        """(shadow time, extra GPUs, mask of GPUs usable by the head) for EASY."""
        c = view.cluster
        req = int(view.jobs.gpu_type_req[head])
        usable = r.online.copy() if req < 0 else r.online & (c.gpu_type == req)
        need = int(r.dem[head])
        have = int((usable & r.avail()).sum())
        # GPUs each kept/started job frees that the head can use, via the owner map of this
        # round (claimed GPUs belong to the jobs in r.alloc): one pass over the GPUs
        n = view.jobs.num_jobs
        ow = np.full(c.num_gpus, n, np.int64)
        cur = view.current
        for k, a in r.alloc.items():
            if cur.get(k) is not a:
                ow[np.asarray(a.gpus, np.int64)] = k
        same = r.claimed & (ow == n) & (r.owner >= 0)
        ow[same] = r.owner[same]  # kept jobs: their GPUs are the ones they own
        freed = np.bincount(ow[usable & (ow < n)], minlength=n + 1)
        running, _ = r.placed()
        ends = sorted((now + rem[k], k, int(freed[k])) for k in running.tolist())
        if have >= need:  # enough GPUs now, but no placement fits (fragmentation/constraint)
            return now, have - need, usable
        for t_end, _, freed in ends:
            if not np.isfinite(t_end):
                break
            have += freed
            if have >= need:
                return t_end, have - need, usable
        return np.inf, 0, usable
