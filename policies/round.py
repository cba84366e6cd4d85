"""The round toolkit shared by every policy: a scheduling round over a `ClusterView`.

Roles stay separate (as in Blox): the policy orders jobs and names who may be preempted; a
`Round` holds the round state and applies keeps, placements, resizes and preemptions; the
placement helpers (`Round.fit`, `policies.placement`) choose GPUs for any count.

Round state: per GPU, whether it is online, already claimed this round, or held by a running
job that has not been visited yet (`online`, `claimed`, `held`; `avail()` = usable now), and
per node the number of usable GPUs: the cluster's `node_free` at the start, kept in step by
every claim and release, from which the walk counts its free pool and its kernel placer picks
nodes (reading only the GPUs of the nodes it picks). A running job visited with all its GPUs
still online and unclaimed keeps them (`keep`, no needless migration). A job that needs GPUs
is placed on the usable pool (`place(job, count_or_gpus_or_placer, batch=, gpu_type=)`); a
running job changes its GPU count or batch size with `resize`; `preempt` stops one. If a placement fails and the policy allows it, the
round preempts: the policy names the victims it may take (unvisited running jobs, lowest
priority first); the round keeps those holding usable GPUs of the job's type, takes the
shortest prefix of that list whose GPUs make a placement possible (`_preempt_kernels.
preempt_plan` by GPU count, then `prefix_next`'s search), and preempts only the victims whose
GPUs the placement uses. A preempted job is visited later like any queued job.

The walk (`Round.walk`, from `policies.round_walk`): policies that visit jobs in priority order ("for j in order: keep
it if it runs, else place it, preempting jobs of a strictly higher class") call it, and it
does that in one numba kernel (`_walk_kernels.walk_run`) wherever the job's placer is the
kernel one (`consolidate` on a one-type cluster), keeping running jobs in bulk and passing
over jobs that cannot be placed (a shape that just failed on the same pool, or fewer free
plus preemptible GPUs than the job needs); it hands back to Python only the jobs that need
a Python placer or a check. So a round costs what it changes, not the running set or the
trace. There is one implementation of the walk, keeping and preemption: every policy,
Tiresias included, goes through it.

Forced preemption (capacity loss) needs no special case: the engine shows such jobs as
QUEUED, their GPUs offline; a running job whose GPUs went offline is re-placed.

Scratch arrays of trace size (the undecided mask, kernel scratch) belong to the policy
instance (`Workspace`), reused across its rounds; none is process-wide. Reads of the masks
need no preparation: the bulk-kept jobs' GPUs are marked claimed on first read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from policies import _preempt_kernels as PK
from policies import _round_state_kernels as RS
from policies import placement as P
from policies.round_walk import _NO_INT, RoundWalk, _new
from policies.workspace import Workspace
from simcore.api import Allocation, ClusterView, Decision

if TYPE_CHECKING:
    from policies.base import BasePolicy


Placer = Callable[[int, np.ndarray], "np.ndarray | None"]


class _Cur(dict):
    """Job → its current GPU ids (int64 array), built on first access from the view."""

    def __init__(self, view: ClusterView) -> None:
        super().__init__()
        self._view = view

    def __missing__(self, k: int) -> np.ndarray:
        a = self._view.current.get(k)
        g = np.asarray(a.gpus if a is not None else self._view.allocation_of(int(k)), np.int64)
        self[k] = g
        return g


class Round(RoundWalk):
    """One scheduling call's state and its operations (see the module docstring).

    `Round(view, policy=None, demand=None)`: with a policy, its workspace, placement strategy
    (`config.placement`), rng and memory veto are used; without one (tests, quick policies)
    a fresh workspace and `consolidate`. `dem` = GPUs per job (requested counts clipped to
    [min, max], or `demand`).

    Cost is per job the round changes: running jobs come from the engine's active set; a
    running job kept as it is (the common case) is recorded in bulk, as an index array, its
    `Allocation` being the engine's own object in `ClusterView.current`; its GPUs move from
    held to claimed in one batch on the next read of the masks. That is exact because an
    unvisited running job's GPUs are `held`, so no placement can claim them before it is
    visited. `alloc` holds the jobs decided one by one (placements, resizes, checked keeps);
    `placed()` gives every job that runs after the round. `decision()` lists only the
    changes where the engine accepts that (`ClusterView.accepts_changes`).
    """

    def __init__(self, view: ClusterView, policy: "BasePolicy | None" = None, demand: np.ndarray | None = None,
                 begun: tuple | None = None) -> None:
        c = view.cluster
        self.view = view
        self.c = c
        self.policy = policy
        ws = policy.workspace if policy is not None else Workspace()
        self._ws = ws
        self.online = online = c.gpu_online
        self.owner = owner = c.gpu_owner  # int32: no per-call conversion
        running = view.running()
        self.running_idx = running
        self._current = view.current
        # claimed: given to a job this round; held: by a running job not visited yet (or an
        # unknown owner); both the workspace's, filled by `round_begin`. The running jobs are
        # undecided until kept or released. `begun` = (undecided mask from this workspace's
        # `take_mask`, `round_begin`'s result): a policy kernel ran `round_begin` itself (with
        # its own per-call pass, and the walk's first run: `walk(ran=)`) and emptied the memo
        self._w = w = ws.walk_state(c, view.jobs.num_jobs)
        self._claimed, self._held = w[14], w[15]
        # the usable GPUs per node (online, unclaimed, not held): a copy of the cluster's
        # counts at the start (`round_begin`), kept in step by every claim and release
        self._nfree = w[16]
        self._memo_n = w[7]
        if begun is None:
            und = ws.take_mask(view.jobs.num_jobs)
            n_off = RS.round_begin(owner, online, running, view.jobs.alloc_count, und, self._claimed, self._held,
                                   ws.node_free(c), c.gpu_node, self._nfree, w[17])
            w[7][0] = 0
        else:
            und, n_off = begun
        # running jobs kept one by one (a GPU offline); empty: none
        self._slow = RS.slow_jobs(owner, online, und.shape[0], n_off) if n_off else _NO_BOOL
        self.undecided = und  # handed back by `decision`
        self._n_und = running.shape[0]  # running jobs still undecided (all leave it by keep or release)
        self.dem = ws.demands(view) if demand is None else np.asarray(demand, np.int64)
        self.alloc: dict[int, Allocation] = {}  # decided one by one (placements, checked keeps)
        self._alloc_n: dict[int, int] = {}  # their GPU counts, in the same order (`placed`)
        self.started: list[int] = []  # jobs given GPUs they did not hold before this call
        self.released: list[int] = []  # running jobs that gave up their GPUs this call
        self._kept: list[np.ndarray] = []  # running jobs kept as they are, in bulk
        self._kept_one: list[int] = []  # the same, one at a time
        self._pending: list[int] = []  # kept jobs whose GPUs are not yet marked claimed
        self._pending_arr: list[np.ndarray] = []  # the same, in arrays
        # the failed-shape memo (`ws.memo[:memo_n]`): shapes (`shape_key` ints) that found no
        # GPUs on the pool as it is now; emptied by every claim and release. Keeps leave it: a
        # kept job's GPUs were held (never usable) and it only leaves the victim sets, so no
        # failure can turn into a success

    # Per-round fields that start the same in every round live here as class defaults (set on
    # the instance only when they change): a round is built on every policy call.
    _running_set: set[int] | None = None  # `running`, built on first use
    _cur: "_Cur | None" = None  # `cur`, built on first use
    _returned = False  # undecided mask handed back (`decision`)

    # -- reading the state -----------------------------------------------------------
    @property
    def strategy(self) -> str:
        """The placement strategy of `place`/`fit` by count: the policy's `placement`, else consolidate."""
        return getattr(getattr(self.policy, "config", None), "placement", "consolidate")

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

    @property
    def claimed(self) -> np.ndarray:
        """GPUs given to a job this round (kept, placed or resized): read-only for callers."""
        self._flush()
        return self._claimed

    @property
    def held(self) -> np.ndarray:
        """GPUs of running jobs not visited yet: read-only for callers."""
        self._flush()
        return self._held

    def _flush(self) -> None:
        """Mark the GPUs of jobs kept in bulk since the last read as claimed (one G-sized pass)."""
        if self._pending or self._pending_arr:
            ks = self._pending_arr
            if self._pending:
                ks.append(np.asarray(self._pending, np.int64))
            ks = ks[0] if len(ks) == 1 else np.concatenate(ks)
            RS.claim_kept(self._held, self._claimed, self.owner, self._ws.mark(self.view.jobs.num_jobs), ks)
            self._pending.clear()
            self._pending_arr = []

    def avail(self) -> np.ndarray:
        """GPUs a placement may take now: online, unclaimed, not held."""
        return RS.usable_mask(self.online, self._claimed, self._held)

    # -- the failed-shape memo ---------------------------------------------------------
    def failed_before(self, key: int) -> bool:
        """Whether a placement of shape `key` (`shape_key`, or any int a policy derives from
        it) already failed with the pool as it is now.

        Only for deterministic placers whose outcome depends on the pool and `key` alone
        (see `BasePolicy.placement_is_deterministic`); the caller records failures with
        `note_failure` (`walk` callers: `walk_failed`). Any claim or release forgets them.
        """
        return bool(RS.memo_has(self._ws.memo, self._memo_n[0], int(key)))

    def note_failure(self, key: int) -> None:
        ws = self._ws
        n = int(self._memo_n[0])
        if n == ws.memo.shape[0]:
            ws.memo = np.concatenate([ws.memo, np.empty(n, np.int64)])
        ws.memo[n] = int(key)
        self._memo_n[0] = n + 1

    # -- operations --------------------------------------------------------------------
    def _record(self, j: int, gpus: list[int], batch: int | None, keep: bool) -> None:
        a = self._current.get(j)
        if a is None or a.gpus != tuple(gpus) or (batch is not None and a.batch_size != batch):
            a = Allocation(tuple(gpus), batch)
        self.alloc[j] = a
        self._alloc_n[j] = len(gpus)
        if not keep:
            self.started.append(j)

    def claim(self, j: int, gpus: np.ndarray, keep: bool = False, batch: int | None = None) -> None:
        """Give job j exactly `gpus` (usable now, or its own) at global batch `batch` (None:
        keep its batch); `keep`: it held GPUs before and is not counted as started."""
        self._memo_n[0] = 0
        gpus = np.asarray(gpus, np.int64)
        RS.claim_gpus(gpus, self.online, self._claimed, self._held, self.c.gpu_node, self._nfree, self._w[17])
        self._record(j, gpus.tolist(), batch, keep)

    def release(self, k: int) -> None:
        """Running job k gives up its GPUs this round (preempted, or about to be re-placed)."""
        if self.undecided[k]:
            self._memo_n[0] = 0
            self.undecided[k] = False
            self._n_und -= 1
            self.released.append(k)
            RS.release_gpus(self.cur[k], self.online, self._claimed, self._held, self.c.gpu_node, self._nfree)

    def preempt(self, k: int) -> None:
        """Stop running job k this round (its GPUs become usable); same as `release`."""
        self.release(k)

    def _fast(self, ks: np.ndarray) -> np.ndarray:
        """Which running jobs of `ks` can be kept through the engine's own objects
        (`ClusterView.current`), as they are: all but the `slow` ones (a GPU offline)."""
        if self._slow.shape[0] == 0:
            return np.ones(ks.size, bool)
        return ~self._slow[ks]

    def keep(self, k: int, batch: int | None = None) -> bool:
        """Running job k keeps its current GPUs if they are all online and unclaimed (at global
        batch `batch`; None keeps its batch). False (and k released) otherwise."""
        if not self.undecided[k]:
            return False
        if batch is None and (self._slow.shape[0] == 0 or not self._slow[k]):
            self.undecided[k] = False
            self._n_und -= 1
            self._kept_one.append(k)
            self._pending.append(k)
            return True
        g = self.cur[k]
        if g.size and self.online[g].all() and not self.claimed[g].any():
            self.undecided[k] = False
            self._n_und -= 1
            self.claim(k, g, keep=True, batch=batch)
            return True
        self.release(k)
        return False

    def keep_all_undecided(self) -> None:
        """`keep` every unvisited running job: in bulk where they can stay as they are."""
        if not self._n_und:
            return
        run = self.running_idx
        if self._n_und == run.shape[0] and self._slow.shape[0] == 0:  # none visited, none slow: all kept
            ks = run.copy()  # writable, as the kernels that read the kept jobs take them
            self.undecided[ks] = False
            self._kept.append(ks)
            self._pending_arr.append(ks)
            self._n_und = 0
            return
        ks = run[self.undecided[run]]
        if ks.size:
            fast = self._fast(ks)
            ks_fast = ks[fast]
            self.undecided[ks_fast] = False
            self._kept.append(ks_fast)
            self._pending_arr.append(ks_fast)
            for k in ks[~fast].tolist():
                self.keep(k)
        self._n_und = 0

    def fit(self, j: int, count: int | None = None, pool: np.ndarray | None = None, *, strategy: str | None = None,
            gpu_type: int | None = None, max_tier: int | None = None, batch: int | None = None) -> np.ndarray | None:
        """GPUs for job j (`count`, default its demand) out of `pool` (default: usable now),
        without claiming them: the round's (or the given) strategy, its type requirement
        (or `gpu_type`), a tier cap (`max_tier`: index into `placement.TIERS`, the delay
        tiers of delay scheduling) and the memory veto at `batch`. None if none fits."""
        pol = self.policy
        n = int(self.dem[j]) if count is None else int(count)
        req = int(self.view.jobs.gpu_type_req[j]) if gpu_type is None else int(gpu_type)
        accept = pol.accept_for(self.view, j, batch) if pol is not None else None
        return P.place(self.c, self.avail() if pool is None else pool, n, gpu_type=req,
                       strategy=strategy or self.strategy, rng=pol.rng if pol is not None else None,
                       accept=accept, max_tier=max_tier)

    def placer(self, strategy: str | None = None, counts: np.ndarray | None = None,
               max_tier: Callable[[int], int | None] | None = None) -> Placer:
        """A `Placer` (`placer(j, pool)`) through `fit`, for `place` and preemption."""
        cnt = self.dem if counts is None else counts

        def placer(j: int, pool: np.ndarray) -> np.ndarray | None:
            return self.fit(j, int(cnt[j]), pool, strategy=strategy, max_tier=None if max_tier is None else max_tier(j))

        return placer

    def place(self, j: int, how=None, victims: Callable[[], np.ndarray] | None = None, *, batch: int | None = None,
              gpu_type: int | None = None) -> np.ndarray | None:
        """Give job j GPUs and claim them; returns them, or None (nothing changed but the
        failed attempt's own release of j).

        `how`: a GPU count (placed with the round's strategy through `fit`), explicit GPU ids,
        a `Placer` (`placer(j, pool)`), or None (its demand). `batch`: the global batch to
        run at (None: keep). `gpu_type`: a type to place on (default the job's requirement).
        A running job asked to move may reuse its own GPUs (it is released first). If no
        placement fits and `victims` is given (`victims()`: unvisited running jobs j may
        preempt, lowest priority first; called only when the free pool is not enough), the
        fewest victims whose GPUs make a placement possible are preempted.
        """
        return self._place(j, how, victims, batch, gpu_type, False)

    def _place(self, j, how, victims, batch, gpu_type, keep) -> np.ndarray | None:
        self.release(j)
        if isinstance(how, (np.ndarray, list, tuple)):
            gpus = np.asarray(how, np.int64)
            self.claim(j, gpus, keep=keep, batch=batch)
            return gpus
        if callable(how):
            placer, n = how, int(self.dem[j])
        else:
            n = int(self.dem[j]) if how is None else int(how)

            def placer(jj: int, pool: np.ndarray) -> np.ndarray | None:
                return self.fit(jj, n, pool, gpu_type=gpu_type, batch=batch)
        gpus = placer(j, self.avail())
        if gpus is None and victims is not None:
            gpus = self._place_preempting(j, n, placer, victims, gpu_type)
        if gpus is not None:
            self.claim(j, gpus, keep=keep, batch=batch)
        return gpus

    def resize(self, j: int, count: int, batch: int | None = None) -> np.ndarray | None:
        """Job j runs on `count` GPUs at global batch `batch` (None: keep) from now on.

        A running job not visited yet: same count keeps its GPUs (only the batch changes);
        fewer keeps the ones the round's strategy picks among its own (elsewhere if its own
        cannot hold them); more takes its own GPUs plus usable ones, as the strategy places
        the new count there. If nothing fits it is left undecided, as it was (returns None),
        so the caller may keep it or try another count. Any other job is placed (`place`).
        """
        count = int(count)
        if not self.undecided[j]:
            return self._place(j, count, None, batch, None, j in self.running)
        own = self.cur[j]
        if count == own.size:
            return own if self.keep(j, batch=batch) else None
        mine = np.zeros(self.c.num_gpus, bool)
        mine[own[self.online[own]]] = True
        gpus = self.fit(j, count, mine, batch=batch) if count < own.size else None
        if gpus is None:
            gpus = self.fit(j, count, self.avail() | mine, batch=batch)
        if gpus is None:
            return None
        self.release(j)
        self.claim(j, gpus, keep=True, batch=batch)
        return gpus

    def _place_preempting(self, j: int, n: int, placer: Placer, victims_fn: Callable[[], np.ndarray],
                          gpu_type: int | None = None) -> np.ndarray | None:
        req = int(self.view.jobs.gpu_type_req[j]) if gpu_type is None else int(gpu_type)
        # candidates, each GPU's owner rank among them, the fewest victims by GPU count (`lo`;
        # 0: not enough even preempting every candidate): one numba call
        cand, vr, lo, _ = PK.preempt_plan(self.owner, self.online, self._claimed, self._held, self.c.gpu_type, req,
                                          self.undecided, self.view.jobs.alloc_count,
                                          np.asarray(victims_fn(), np.int64), j, n,
                                          self._w[13])
        if lo == 0:
            return None
        st = PK.prefix_start(lo, cand.size)
        m = PK.prefix_next(st, False)
        gpus = None
        while m >= 0:  # the shortest prefix of victims with a feasible placement
            gpus = placer(j, RS.pool_mask(self.online, self._claimed, self._held, vr, m))
            m = PK.prefix_next(st, gpus is not None)
        if m == PK.PREFIX_FAIL:
            return None
        for k in PK.hit_victims(vr, np.asarray(gpus, np.int64), st[4], cand).tolist():
            self.release(k)
        return gpus

    # -- the outcome -------------------------------------------------------------------
    def kept_jobs(self) -> np.ndarray:
        """Running jobs kept as they are through the engine's own objects (not in `alloc`)."""
        parts = self._kept + ([np.asarray(self._kept_one, np.int64)] if self._kept_one else [])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def placed(self) -> tuple[np.ndarray, np.ndarray]:
        """(jobs that run after this round, their GPU counts): `alloc` and the kept jobs."""
        kept = self._kept[0] if len(self._kept) == 1 and not self._kept_one else self.kept_jobs()
        cnt = self.view.jobs.alloc_count[kept]
        if not self.alloc:
            return kept, cnt
        m = len(self.alloc)
        idx = np.fromiter(self.alloc, np.int64, m)
        n = np.fromiter(self._alloc_n.values(), np.int64, m)
        return np.concatenate([idx, kept]), np.concatenate([n, cnt])

    def placed_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`placed()` in parts, without concatenating: (jobs decided one by one, their GPU
        counts, jobs kept as they are)."""
        kept = self._kept[0] if len(self._kept) == 1 and not self._kept_one else self.kept_jobs()
        m = len(self.alloc)
        if not m:
            return _NO_INT, _NO_INT, kept
        return np.fromiter(self.alloc, np.int64, m), np.fromiter(self._alloc_n.values(), np.int64, m), kept

    def allocation(self, j: int) -> Allocation | None:
        """The allocation job j runs under after this round (None if it does not run)."""
        a = self.alloc.get(j)
        if a is None and not self.undecided[j] and j in self._current and j not in self.released:
            a = self._current[j]
        return a

    def decision(self, wake_at: float | None = None, quiet_until: float | None = None) -> Decision:
        """The round as a `Decision`: every unvisited running job kept; only the changes where
        the engine accepts that (`quiet_until`: `Decision.quiet_until`)."""
        if self._n_und:
            self.keep_all_undecided()
        if not self._returned:  # all False now: every running job was kept or released
            self._returned = True
            self._ws.give_back(self.undecided)
        cur = self._current
        if self.view.accepts_changes:
            allocs = {j: a for j, a in self.alloc.items() if a is not cur.get(j)}
            for j in self.released:
                if j not in self.alloc:
                    allocs[j] = _STOP
            d = _new(Decision)  # `Decision(allocations=, wake_at=, changes_only=True)` at half the cost
            d.__dict__.update(allocations=allocs, wake_at=wake_at, changes_only=True, quiet_until=quiet_until)
            return d
        allocs = dict(self.alloc)
        kept = self.kept_jobs().tolist()
        allocs.update(zip(kept, map(cur.__getitem__, kept)))
        return Decision(allocations=allocs, wake_at=wake_at, quiet_until=quiet_until)


_NO_BOOL = np.zeros(0, bool)
_STOP = Allocation(())  # in a changes-only decision: the job stops (is preempted)
