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

Cost (issue 4: ~160k–240k calls on the full Philly trace): a round costs what it changes,
not the running set or the trace. Running jobs come from `ClusterView.running()` (the
engine's index array); `Round.walk` scans the priority order in numba, keeping running jobs
in bulk (as index arrays, their `Allocation` being the engine's own object in
`ClusterView.current`) and passing over queued jobs that cannot be placed — a shape that just
failed on the same pool (placement is a deterministic function of pool and shape there), or
fewer free plus preemptible GPUs than the job needs — so Python runs only for jobs a
placement could change. Kept jobs' GPUs are marked claimed in one numba pass; scratch arrays
of trace size are pooled, not allocated per call; `decision()` lists only the changes where
the engine accepts that (`ClusterView.accepts_changes`). A preemption attempt's arithmetic
(candidates, owner ranks, shortest prefix by GPU count, its pool, the victims a placement
hits) is one numba call each (`_kernels.preempt_plan`, `hit_victims`), leaving Python only
the placer call(s) and the releases. Without `current` (test engines)
every running job goes through the per-job `keep`, with the same decisions.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import numpy as np

from policies import _kernels as K
from policies import placement as P
from simcore.api import Allocation, ClusterView, Decision


def demands(view: ClusterView) -> np.ndarray:
    """GPUs each job asks for: the requested count clipped to [min_gpus, max_gpus]."""
    j = view.jobs
    return np.clip(j.num_gpus, j.min_gpus, np.maximum(j.min_gpus, j.max_gpus)).astype(np.int64)


def demands_cached(view: ClusterView) -> np.ndarray:
    """`demands(view)`, recomputed only when the engine hands over different request arrays.

    The engine reuses one `JobsView` (static request arrays) for a whole run, so this avoids
    a pass over every trace job per call. The cache holds the arrays themselves, so an
    identity match cannot be a recycled id. Callers must not modify the result.
    """
    j = view.jobs
    c = _DEM_CACHE
    if c[0] is not j.num_gpus or c[1] is not j.min_gpus or c[2] is not j.max_gpus:
        c[:] = [j.num_gpus, j.min_gpus, j.max_gpus, demands(view)]
    return c[3]


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

    @staticmethod
    def placement_is_deterministic(view: ClusterView, strategy: str) -> bool:
        """True when a failed placement depends only on the pool and the job's (demand, type).

        Not for the random strategy (it draws from the rng even when it fails) nor with the
        per-job memory veto of heterogeneous clusters.
        """
        return strategy != "random" and len(view.cluster.gpu_type_names) <= 1

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


class _Cur(dict):
    """Job → its current GPU ids (int64 array), built on first access from the view."""

    def __init__(self, view: ClusterView) -> None:
        super().__init__()
        self._view = view

    def __missing__(self, k: int) -> np.ndarray:
        cur = self._view.current
        a = cur.get(k) if cur is not None else None
        g = np.asarray(a.gpus if a is not None else self._view.allocation_of(int(k)), np.int64)
        self[k] = g
        return g


_DEM_CACHE: list = [None, None, None, None]  # (num_gpus, min_gpus, max_gpus) arrays, demands
_SCRATCH: dict[int, list[np.ndarray]] = {}  # J → all-False bool arrays free for reuse


def _scratch(n: int) -> np.ndarray:
    """An all-False bool array of n entries, reused across rounds: a round on a trace of a
    million jobs should not allocate (and zero) megabytes per call. Returned with
    `_unscratch` once all False again; one never returned is simply garbage."""
    free = _SCRATCH.get(n)
    return free.pop() if free else np.zeros(n, bool)


def _clean(n: int, dtype, fill) -> np.ndarray:
    """One shared n-entry array of `fill`, for kernels that use it as scratch and leave it as
    they found it (`claim_kept`'s marks, `preempt_plan`'s ranks): no allocation per call."""
    key = (n, np.dtype(dtype).str, fill)
    a = _CLEAN.get(key)
    if a is None:
        a = _CLEAN[key] = np.full(n, fill, dtype)
    return a


_CLEAN: dict[tuple, np.ndarray] = {}


def _unscratch(a: np.ndarray) -> None:
    free = _SCRATCH.setdefault(a.shape[0], [])
    if len(free) < 4:
        free.append(a)


class Round:
    """One scheduling call: claimed GPUs, kept jobs, new allocations (see module docstring).

    Cost is per job the round changes, not per running or trace job: running jobs come from
    the engine's active set; a running job kept as it is (the common case) is only recorded
    in bulk, as an index array (`_kept`), its `Allocation` being the engine's own object in
    `ClusterView.current`; its GPUs are marked claimed in one batch (`_flush`) before
    anything reads the masks. That is exact because an unvisited running job's GPUs are
    `held`, so no placement can claim them before it is visited; keeping them only moves
    them from held to claimed. The batch finds them through `gpu_owner`, which the engine
    keeps equal to the current allocations. `alloc` holds the jobs decided one by one
    (placements, and keeps that had to check their GPUs); `placed()` gives every job that
    runs after the round. Where the engine accepts them (`ClusterView.accepts_changes`),
    `decision()` lists only the changes (`Decision.changes_only`).
    """

    def __init__(self, view: ClusterView) -> None:
        c = view.cluster
        self.view = view
        self.c = c
        self.online = np.asarray(c.gpu_online, bool)
        self.owner = np.asarray(c.gpu_owner)  # int32: no per-call conversion
        self.claimed = np.zeros(c.num_gpus, bool)
        self.held = self.owner >= 0  # by a running job not visited yet (or an unknown owner)
        running = np.asarray(view.running(), np.int64)
        self.running_idx = running
        self._running_set: set[int] | None = None
        self._cur: _Cur | None = None  # built on first use (`cur`)
        self._current = view.current if view.current is not None else {}
        self.undecided = _scratch(view.jobs.num_jobs)  # returned to the pool by `decision`
        self.undecided[running] = True
        self._offline_jobs: set[int] = set()  # running jobs with a GPU offline
        if np.count_nonzero(self.online) < self.online.size:
            off = self.owner[~self.online]
            self._offline_jobs = set(off[off >= 0].tolist())
        self.dem = demands_cached(view)
        self.alloc: dict[int, Allocation] = {}  # decided one by one (placements, checked keeps)
        self._alloc_n: dict[int, int] = {}  # their GPU counts, in the same order (`placed`)
        self.started: list[int] = []  # jobs given GPUs they did not hold before this call
        self.released: list[int] = []  # running jobs that gave up their GPUs this call
        self._kept: list[np.ndarray] = []  # running jobs kept as they are, in bulk
        self._kept_one: list[int] = []  # the same, one at a time
        self._pending: list[int] = []  # kept jobs whose GPUs are not yet marked claimed
        self._pending_arr: list[np.ndarray] = []  # the same, in arrays
        self._returned = False  # scratch arrays handed back (`decision`)
        #: bumped by every claim and release; a failed placement retried at the same version
        #: (same job shape) fails again. Keeps do not bump it: a kept job's GPUs were held
        #: (never usable) and it only leaves the victim sets, so no failure can turn into a
        #: success (the usable pool and every victim set only shrink between bumps)
        self.version = 0
        self._walk_key = -1  # shape of the job `walk` yielded last
        self._fail: set = set()  # placement shapes that found no GPUs at version `_fail_ver`
        self._fail_ver = -1

    @property
    def cur(self) -> _Cur:
        """Job → its current GPU ids (int64), looked up on first access per job."""
        if self._cur is None:
            self._cur = _Cur(self.view)
        return self._cur

    @property
    def running(self) -> set[int]:
        """Jobs holding GPUs when the round began (a set, built on first use)."""
        if self._running_set is None:
            self._running_set = set(self.running_idx.tolist())
        return self._running_set

    def _flush(self) -> None:
        """Mark the GPUs of jobs kept since the last flush as claimed (one G-sized pass)."""
        if self._pending or self._pending_arr:
            ks = self._pending_arr
            if self._pending:
                ks.append(np.asarray(self._pending, np.int64))
            ks = ks[0] if len(ks) == 1 else np.concatenate(ks)
            K.claim_kept(self.held, self.claimed, self.owner, _clean(self.view.jobs.num_jobs, bool, False), ks)
            self._pending.clear()
            self._pending_arr = []

    def avail(self) -> np.ndarray:
        self._flush()
        return self.online & ~self.claimed & ~self.held

    def claim(self, j: int, gpus: np.ndarray, keep: bool = False) -> None:
        self._flush()
        self.version += 1
        gpus = np.asarray(gpus, np.int64)
        self.claimed[gpus] = True
        self.held[gpus] = False
        a = self._current.get(j)
        if a is None or len(a.gpus) != gpus.size or list(a.gpus) != gpus.tolist():
            a = Allocation(tuple(gpus.tolist()))
        self.alloc[j] = a
        self._alloc_n[j] = gpus.size
        if not keep:
            self.started.append(j)

    def release(self, k: int) -> None:
        """Running job k gives up its GPUs this round (preempted, or about to be re-placed)."""
        if self.undecided[k]:
            self._flush()
            self.version += 1
            self.undecided[k] = False
            self.released.append(k)
            g = self.cur[k]
            self.held[g[~self.claimed[g]]] = False

    def _fast(self, ks: np.ndarray) -> np.ndarray:
        """Which running jobs of `ks` can be kept through the engine's own objects, as they
        are: all but those with a GPU offline (`ClusterView.current` lists every running job;
        without it, none)."""
        if not self._current:
            return np.zeros(ks.size, bool)
        fast = np.ones(ks.size, bool)
        if self._offline_jobs:
            fast &= ~np.isin(ks, np.fromiter(self._offline_jobs, np.int64))
        return fast

    def _keep_fast(self, ks: np.ndarray) -> None:
        self.undecided[ks] = False
        self._kept.append(ks)
        self._pending_arr.append(ks)

    def keep(self, k: int) -> bool:
        """Running job k keeps its current GPUs if they are all online and unclaimed."""
        if not self.undecided[k]:
            return False
        if self._current and k not in self._offline_jobs:
            self.undecided[k] = False
            self._kept_one.append(k)
            self._pending.append(k)
            return True
        g = self.cur[k]
        if g.size and self.online[g].all() and not self.claimed[g].any():
            self.undecided[k] = False
            self.claim(k, g, keep=True)
            return True
        self.release(k)
        return False

    def _failures(self) -> set:
        """Shapes that failed on the pool as it is now (forgotten at any claim or release)."""
        if self.version != self._fail_ver:
            self._fail.clear()
            self._fail_ver = self.version
        return self._fail

    def failed_before(self, key) -> bool:
        """Whether a placement of shape `key` already failed with the pool as it is now.

        Only for deterministic placers whose outcome depends on the pool and `key` alone
        (see `BasePolicy.placement_is_deterministic`); the caller records failures with
        `note_failure` (`walk` callers: `walk_failed`). Any claim or release since then
        forgets them.
        """
        return key in self._failures()

    def note_failure(self, key) -> None:
        self._failures().add(key)

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
        self._flush()
        dem = int(self.dem[j])
        req = int(self.view.jobs.gpu_type_req[j])
        # candidates, each GPU's owner rank among them, the fewest victims by GPU count (`lo`;
        # 0: not enough even preempting every candidate) and the pool they leave: one numba call
        victims, vr, lo, pool = K.preempt_plan(self.owner, self.online, self.claimed, self.held, self.c.gpu_type, req,
                                               self.undecided, self.view.jobs.alloc_count,
                                               np.asarray(victims_fn(), np.int64), j, dem,
                                               _clean(self.view.jobs.num_jobs, np.int64, -1))
        if lo == 0:
            return None
        # by GPU count alone is exact for an unconstrained placement, so usually one placement
        # call decides; constrained ones (tier, memory) search further
        n_all = victims.size
        gpus = placer(j, pool)
        if gpus is None and lo < n_all:
            base = self.avail()

            def pool_of(n: int) -> np.ndarray:
                return base | (vr < n)

            if placer(j, pool_of(n_all)) is None:
                return None
            lo, hi = lo + 1, n_all
            while lo < hi:  # shortest prefix with a feasible placement
                mid = (lo + hi) // 2
                if placer(j, pool_of(mid)) is not None:
                    hi = mid
                else:
                    lo = mid + 1
            gpus = placer(j, pool_of(lo))
            if gpus is None:  # feasibility was not monotone here: use every candidate
                lo = n_all
                gpus = placer(j, pool_of(lo))
        if gpus is None:
            return None
        for k in K.hit_victims(vr, np.asarray(gpus, np.int64), lo, victims).tolist():
            self.release(k)
        return gpus

    def walk(self, order: np.ndarray, klass: np.ndarray | None = None, keys: np.ndarray | None = None,
             num_classes: int | None = None):
        """Walk `order` (all jobs of the round in priority order), yielding only the jobs a
        placement attempt could change; the caller `keep`s or places each before the walk
        goes on, exactly as in "for j in order: if keep(j): continue; place(j)".

        A numba scan (`_kernels.walk_next`) keeps running jobs as they are (`_fast`) and passes
        over every job that holds nothing and cannot be placed now: its shape (`keys`, one int
        per position, or None) already failed on this pool (the caller reports a failed
        attempt with `walk_failed`), or the free GPUs plus all GPUs of the running jobs it may
        preempt are fewer than it needs. `klass[i]` is the preemption class of position i: the
        job may preempt undecided running jobs of a strictly higher class (Tiresias: its
        queue); all zeros (the default) means it may preempt none, which is the bound for
        callers that place without victims. Both skips are exact: the count bound is checked
        first by every placement and preemption attempt (before any random draw). So the walk
        costs Python time per job that might be placed, not per queued or running job.
        `num_classes` (optional) is an upper bound on `klass` + 1.
        """
        n = int(order.size)
        if n == 0:
            return
        order = np.ascontiguousarray(order, np.int64)
        und = self.undecided
        # which running jobs can be kept as they are (see `_fast`): every one in the common case
        all_fast = bool(self._current) and not self._offline_jobs
        if all_fast:
            fast = np.zeros(0, bool)
        else:
            fast = und[order]
            fast[fast] = self._fast(order[fast])
        if klass is None:
            klass = np.zeros(n, np.int64)
            ncls = 1
        else:
            klass = np.ascontiguousarray(klass, np.int64)
            ncls = int(klass.max()) + 1 if num_classes is None else int(num_classes)
        keys = np.full(n, -1, np.int64) if keys is None else np.ascontiguousarray(keys, np.int64)
        cnt = np.asarray(self.view.jobs.alloc_count)
        kept = np.empty(n, np.int64)
        i = 0
        while i < n:
            self._flush()
            failed = self._failures()  # the shapes `walk_failed` recorded (ints), one memo with `failed_before`
            failed = np.fromiter(failed, np.int64, len(failed))
            i, nk = K.walk_next(order, i, und, fast, all_fast, klass, ncls, self.dem, cnt, keys,
                                failed, failed.size, self.online, self.claimed, self.held, kept)
            if nk:
                ks = kept[:nk].copy()
                self._kept.append(ks)
                self._pending_arr.append(ks)
            if i >= n:
                return
            self._walk_key = int(keys[i])
            yield int(order[i])
            i += 1

    def walk_failed(self) -> None:
        """The job `walk` just yielded found no placement: skip its shape until the pool grows."""
        if self._walk_key >= 0:
            self.note_failure(self._walk_key)

    def keep_all_undecided(self) -> None:
        """`keep` every unvisited running job: in bulk where they can stay as they are."""
        ks = self.running_idx[self.undecided[self.running_idx]]
        if ks.size:
            fast = self._fast(ks)
            self._keep_fast(ks[fast])
            for k in ks[~fast].tolist():
                self.keep(k)

    def kept_jobs(self) -> np.ndarray:
        """Running jobs kept as they are through the engine's own objects (not in `alloc`)."""
        parts = self._kept + ([np.asarray(self._kept_one, np.int64)] if self._kept_one else [])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def placed(self) -> tuple[np.ndarray, np.ndarray]:
        """(jobs that run after this round, their GPU counts): `alloc` and the kept jobs."""
        kept = self.kept_jobs()
        if not self.alloc:
            return kept, self.view.jobs.alloc_count[kept].astype(np.int64)
        idx = np.fromiter(self.alloc, np.int64, len(self.alloc))
        n = np.fromiter(self._alloc_n.values(), np.int64, len(self.alloc))
        return np.concatenate([idx, kept]), np.concatenate([n, self.view.jobs.alloc_count[kept].astype(np.int64)])

    def allocation(self, j: int) -> Allocation | None:
        """The allocation job j runs under after this round (None if it does not run)."""
        a = self.alloc.get(j)
        if a is None and not self.undecided[j] and j in self._current and j not in self.released:
            a = self._current[j]
        return a

    def decision(self, wake_at: float | None = None) -> Decision:
        self.keep_all_undecided()
        if not self._returned:  # all False now: every running job was kept or released
            self._returned = True
            _unscratch(self.undecided)
        cur = self._current
        if self.view.accepts_changes:
            allocs = {j: a for j, a in self.alloc.items() if a is not cur.get(j)}
            for j in self.released:
                if j not in self.alloc:
                    allocs[j] = _STOP
            return Decision(allocations=allocs, wake_at=wake_at, changes_only=True)
        allocs = dict(self.alloc)
        kept = self.kept_jobs().tolist()
        allocs.update(zip(kept, map(cur.__getitem__, kept)))
        return Decision(allocations=allocs, wake_at=wake_at)


_STOP = Allocation(())  # in a changes-only decision: the job stops (is preempted)


def make_placer(policy: BasePolicy, view: ClusterView, strategy: str, dem: np.ndarray,
                max_tier: Callable[[int], int | None] | None = None) -> Placer:
    """A `Placer` using one of `placement.STRATEGIES`, the job's type requirement and memory veto."""
    c = view.cluster
    req = view.jobs.gpu_type_req

    def placer(j: int, avail: np.ndarray) -> np.ndarray | None:
        return P.place(c, avail, int(dem[j]), gpu_type=int(req[j]), strategy=strategy, rng=policy.rng,
                       accept=policy.accept_for(view, j), max_tier=None if max_tier is None else max_tier(j))

    return placer
