"""Machinery shared by the baseline policies: a scheduling round over a `ClusterView`.

A `Round` walks jobs in a policy's priority order and builds the complete desired running
set. It tracks, per GPU, whether it is online, already claimed this round, or held by a
running job that has not been visited yet. A running job visited with all its GPUs still
online and unclaimed keeps them (no needless migration). A job that needs GPUs is placed on
the usable pool: online, unclaimed, and not held by a running job still to be visited. If
that fails and the policy allows it, `Round.place` preempts: the policy names the victims it
may take (unvisited running jobs, lowest priority first: strictly lower queue for Tiresias,
strictly longer remaining time for SRTF); the round keeps only those holding usable GPUs of
the job's type, takes the shortest prefix of that list whose GPUs make a placement possible
(by GPU count first, which is exact for unconstrained placements; a binary search over the
prefix length for constrained ones), and preempts only the victims whose GPUs the placement
actually uses. A preempted job is visited later in the order like any queued job and may
restart elsewhere if room remains.

Forced preemption (capacity loss) needs no special case: the engine shows such jobs as
QUEUED, their GPUs offline; a running job whose GPUs went offline is re-placed.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import numpy as np

from policies import placement as P
from simcore.api import Allocation, ClusterView, Decision


def demands(view: ClusterView) -> np.ndarray:
    """GPUs each job asks for: the requested count clipped to [min_gpus, max_gpus]."""
    j = view.jobs
    return np.clip(j.num_gpus, j.min_gpus, np.maximum(j.min_gpus, j.max_gpus)).astype(np.int64)


class BasePolicy:
    """Common attributes and helpers; subclasses implement `decide`."""

    name: ClassVar[str]
    Config: ClassVar[type]

    def __init__(self, config) -> None:
        self.config = config
        self.interval_s = getattr(config, "interval_s", None)
        self.event_driven = True
        self.needs: frozenset[str] = frozenset()
        self.rng = np.random.default_rng(getattr(config, "seed", 0))
        self._mem_ok: dict[tuple[int, int], bool] = {}

    def __repr__(self) -> str:
        args = ", ".join(f"{f.name}={getattr(self.config, f.name)!r}" for f in dataclasses.fields(self.config))
        return f"{type(self).__name__}({args})"

    def accept_for(self, view: ClusterView, j: int) -> Callable[[np.ndarray], bool] | None:
        """Memory-fit veto for jobs that accept any GPU type on a heterogeneous cluster.

        Asks the engine's what-if query once per (job, GPU type); a job pinned to one type
        (or a one-type cluster) needs no check, the engine rejected impossible jobs upfront.
        """
        c = view.cluster
        if len(c.gpu_type_names) <= 1 or int(view.jobs.gpu_type_req[j]) >= 0:
            return None

        def ok(gpus: np.ndarray) -> bool:
            key = (j, int(c.gpu_type[gpus[0]]))
            if key not in self._mem_ok:
                self._mem_ok[key] = bool(np.isfinite(view.iteration_time(j, gpus, None)))
            return self._mem_ok[key]

        return ok


Placer = Callable[[int, np.ndarray], "np.ndarray | None"]


class Round:
    """One scheduling call: claimed GPUs, kept jobs, new allocations (see module docstring)."""

    def __init__(self, view: ClusterView) -> None:
        c = view.cluster
        self.view = view
        self.c = c
        self.online = np.asarray(c.gpu_online, bool)
        self.owner = np.asarray(c.gpu_owner, np.int64)
        self.claimed = np.zeros(c.num_gpus, bool)
        self.held = self.owner >= 0  # by a running job not visited yet (or an unknown owner)
        running = np.asarray(view.running(), np.int64)
        self.running = set(int(k) for k in running)
        self.cur = {int(k): np.asarray(view.allocation_of(int(k)), np.int64) for k in running}
        self.undecided = np.zeros(view.jobs.num_jobs, bool)
        self.undecided[running] = True
        self.dem = demands(view)
        self.alloc: dict[int, Allocation] = {}
        self.started: list[int] = []  # jobs given GPUs they did not hold before this call

    def avail(self) -> np.ndarray:
        return self.online & ~self.claimed & ~self.held

    def claim(self, j: int, gpus: np.ndarray, keep: bool = False) -> None:
        gpus = np.asarray(gpus, np.int64)
        self.claimed[gpus] = True
        self.held[gpus] = False
        self.alloc[j] = Allocation(tuple(gpus.tolist()))
        if not keep:
            self.started.append(j)

    def release(self, k: int) -> None:
        """Running job k gives up its GPUs this round (preempted, or about to be re-placed)."""
        if self.undecided[k]:
            self.undecided[k] = False
            g = self.cur[k]
            self.held[g[~self.claimed[g]]] = False

    def keep(self, k: int) -> bool:
        """Running job k keeps its current GPUs if they are all online and unclaimed."""
        if not self.undecided[k]:
            return False
        g = self.cur[k]
        if g.size and self.online[g].all() and not self.claimed[g].any():
            self.undecided[k] = False
            self.claim(k, g, keep=True)
            return True
        self.release(k)
        return False

    def place(self, j: int, placer: Placer, victims: Callable[[], np.ndarray] | None = None) -> np.ndarray | None:
        """Give job j GPUs via `placer(j, avail_mask)`; if that fails, preempt among `victims()`.

        `victims()` returns unvisited running jobs j may preempt, lowest priority first; it is
        called only when the free pool is not enough.
        """
        self.release(j)  # a running job asked to move may reuse its own GPUs
        gpus = placer(j, self.avail())
        if gpus is None and victims is not None:
            gpus = self._place_preempting(j, placer, victims)
        if gpus is not None:
            self.claim(j, gpus)
        return gpus

    def _place_preempting(self, j: int, placer: Placer, victims_fn: Callable[[], np.ndarray]) -> np.ndarray | None:
        victims = np.asarray(victims_fn(), np.int64)
        victims = victims[self.undecided[victims] & (victims != j)]
        dem = int(self.dem[j])
        if victims.size == 0 or np.count_nonzero(self.avail()) + int(self.view.jobs.alloc_count[victims].sum()) < dem:
            return None  # not enough GPUs even preempting every candidate (upper bound)
        req = int(self.view.jobs.gpu_type_req[j])
        base = self.avail()
        rank_of_job = np.full(self.view.jobs.num_jobs, victims.size, np.int64)
        rank_of_job[victims] = np.arange(victims.size)
        vr = np.where(self.owner >= 0, rank_of_job[np.maximum(self.owner, 0)], victims.size)
        vr[~(self.online & ~self.claimed)] = victims.size
        typed = np.ones(self.c.num_gpus, bool) if req < 0 else (self.c.gpu_type == req)
        per_rank = np.bincount(vr[typed & (vr < victims.size)], minlength=victims.size)[: victims.size]
        have = int((base & typed).sum())
        cum = have + np.cumsum(per_rank)
        if cum.size == 0 or cum[-1] < dem:
            return None  # not enough GPUs even preempting every candidate

        def pool(n: int) -> np.ndarray:
            return base | (vr < n)

        # fewest victims by GPU count alone; for an unconstrained placement that is exact, so
        # usually one placement call decides; constrained ones (tier, memory) search further
        n_all = victims.size
        lo = int(np.searchsorted(cum, dem)) + 1
        gpus = placer(j, pool(lo))
        if gpus is None and lo < n_all:
            if placer(j, pool(n_all)) is None:
                return None
            lo, hi = lo + 1, n_all
            while lo < hi:  # shortest prefix with a feasible placement
                mid = (lo + hi) // 2
                if placer(j, pool(mid)) is not None:
                    hi = mid
                else:
                    lo = mid + 1
            gpus = placer(j, pool(lo))
            if gpus is None:  # feasibility was not monotone here: use every candidate
                lo = n_all
                gpus = placer(j, pool(lo))
        if gpus is None:
            return None
        hit = np.unique(vr[np.asarray(gpus, np.int64)])
        for rank in hit[hit < lo]:
            self.release(int(victims[rank]))
        return gpus

    def keep_all_undecided(self) -> None:
        for k in np.flatnonzero(self.undecided):
            self.keep(int(k))

    def decision(self, wake_at: float | None = None) -> Decision:
        self.keep_all_undecided()
        return Decision(allocations=dict(self.alloc), wake_at=wake_at)


def make_placer(policy: BasePolicy, view: ClusterView, strategy: str, dem: np.ndarray,
                max_tier: Callable[[int], int | None] | None = None) -> Placer:
    """A `Placer` using one of `placement.STRATEGIES`, the job's type requirement and memory veto."""
    c = view.cluster
    req = view.jobs.gpu_type_req

    def placer(j: int, avail: np.ndarray) -> np.ndarray | None:
        return P.place(c, avail, int(dem[j]), gpu_type=int(req[j]), strategy=strategy, rng=policy.rng,
                       accept=policy.accept_for(view, j), max_tier=None if max_tier is None else max_tier(j))

    return placer
