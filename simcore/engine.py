"""The discrete-event engine: one policy, one trace, one cluster.

`Engine.run` is the visible round loop — accept → decide → validate → apply → observe.
Between two instants every running job advances at a constant rate, and the next
completion is computed, never stepped (one numba call, `kernels.step`, finds the next
instant and advances every job to it). Events (arrivals, restart ends, capacity changes,
policy wake-ups and rounds) live in one `EventQueue`.

Capacity (`simcore.capacity`): besides node changes from a CSV (a node leaving evicts its
jobs), a load series issues join and reclaim demands per pool; a reclaim is answered by the
policy (`answers_reclaims`) or by the default answer, checked, and its nodes leave at the
answer's time, their elastic jobs scaled in where they can run on what they keep.

Progress marks: a job may have to stop at a progress below 1 — the end of an epoch, where
the Pollux efficiency of its batch changes (`simcore.goodput`, `--progress goodput`), or a
point the policy asked to hear about (`Policy.wants_epoch_events`, `Policy.milestones`).
Each job's next one is `JobTable.mark` (1 when there is none), and the same kernel that finds
the next completion finds the first mark reached: an exact instant, no stepping, and no
Python work per event for jobs without marks (their mark is 1).

Per-event cost follows what changed, not the trace or the running set: all events of one
instant are accepted before a single policy call (simultaneous arrivals → one call); the
active and held sets are rebuilt once per call, in one kernel (`kernels.view_sets`), and
counted without arrays; the jobs holding GPUs sit in an unordered array updated in O(1)
per start and stop, which is all the time kernels walk; policies may answer with the
changes only (`Decision.changes_only`), and a complete decision's unchanged allocations are skipped by
validation with C-level scans; each change is validated and planned once (`validate.Plan`:
GPUs, batch, phases) and applied from the plan; rates are re-solved only for the contention
groups a change touched, from inputs prepared once per placement (`simcore.rates`).
Instants at which only goodput epoch ends happen (the efficiency refreshes, no policy call)
are stepped through inside one kernel call (`kernels.step_through`), and periodic rounds a
policy promised to leave unchanged (`Decision.quiet_until`) are answered without calling it:
on the Pollux workload-1, Tiresias' 10,398 Python steps and 1,400 calls became 693 and 236.
"""

from __future__ import annotations

import gc
import logging
import math
import time as _time
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Callable, Sequence

import numpy as np

from cosim.errors import CosimError, PolicyError
from simcore import kernels
from simcore.api import (NEED_DURATION_ORACLE, NEED_PROGRESS_ORACLE, ORACLE_NEEDS, Allocation, ClusterView, Decision,
                         JobState, PolicyFlags, ReclaimDemand)
from simcore.capacity import CapacityPlan, ReclaimLog, check_answer, default_answer
from simcore.convergence import ConvergenceLog
from simcore.costs import ChangeCosts, CostCharger
from simcore.events import Event, EventQueue, Priority
from simcore.marks import ProgressMarks
from simcore.perf import Phases, PerfModel
from simcore.rates import RateBook
from simcore.state import ClusterState, JobTable
from simcore.validate import Checked, Plan, validate_decision
from simcore.whatif import WhatIf
from simcore.work import UNIT_GAIN_MODES, ConstantEfficiency, StatEfficiency, work_gain

log = logging.getLogger(__name__)

# plain ints for the hot path (enum attribute access is slow)
_QUEUED, _RUNNING, _RESTARTING = int(JobState.QUEUED), int(JobState.RUNNING), int(JobState.RESTARTING)
_FINISHED, _UNSCHEDULABLE = int(JobState.FINISHED), int(JobState.UNSCHEDULABLE)
# event kinds as module constants (enum attribute access is slow on the hot path)
_ARRIVAL, _CAPACITY, _RESTART_END = Priority.ARRIVAL, Priority.CAPACITY, Priority.RESTART_END
_WAKE, _ROUND = Priority.WAKE, Priority.ROUND
# events from outside the policy (RESTART_END, ARRIVAL, CAPACITY) are the priorities in
# [_RESTART_END, _CAPACITY]: tested by int range compares (hashing an enum member is slow)
assert (int(_RESTART_END), int(_ARRIVAL), int(_CAPACITY)) == (1, 2, 3)
_UNIT_GAIN = frozenset(int(m) for m in UNIT_GAIN_MODES)  # modes whose `work_gain` is 1 (`simcore.work`)
_EMPTY = np.zeros(0, np.int32)
_EMPTY.flags.writeable = False
_NONE = np.zeros(0, np.int64)  # no job done / at a mark in a step
_NONE.flags.writeable = False
_new = object.__new__
_TIMELINE = ("busy_gpus", "online_gpus", "running", "restarting", "queued")  # columns beside time_s
_VIEW_FIELDS = {f.name: None for f in fields(ClusterView)}.keys()  # `Engine._view` fills every one


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass(frozen=True)
class CapacityChange:
    """Node `node` leaves (`online=False`) or (re)joins the cluster at `time_s`."""

    time_s: float
    node: int
    online: bool


@dataclass(frozen=True)
class EngineOptions:
    completion_tol_s: float = 1e-6  # completions this close together happen at one instant
    record_decisions: bool = False
    #: policy calls in a row that change nothing while nothing runs and no outside event
    #: is pending, before the run is declared stuck (its queued jobs reported unfinished)
    stuck_after_calls: int = 3
    progress_every: int = 2000  # events between progress callbacks
    #: re-solve only contention groups a change touched (False: every group, every change —
    #: the reference the incremental path is tested against)
    incremental_contention: bool = True
    #: after every decision, check that GPU ownership matches the allocations (tests)
    check_invariants: bool = False


@dataclass
class EngineResult:
    jobs: JobTable
    timeline: dict[str, list]
    decisions: dict[str, list] | None
    end_time: float
    num_events: int
    num_policy_calls: int
    stuck: bool
    wall_s: float
    policy_wall_s: float
    online_gpu_s: float  # integral of online GPUs over [0, end_time]
    busy_gpu_s: float = field(default=0.0)
    reclaims: ReclaimLog | None = None  # one row per reclaim demand (`simcore.capacity`)


class Engine:
    def __init__(
        self,
        jobs: JobTable,
        cluster: ClusterState,
        perf: PerfModel,
        policy: Any,
        costs: ChangeCosts,
        capacity_changes: Sequence[CapacityChange] = (),
        efficiency: StatEfficiency | None = None,
        options: EngineOptions | None = None,
        on_progress: Callable[[float, int, int], None] | None = None,
        goodput: Any = None,
        capacity_plan: CapacityPlan | None = None,
    ) -> None:
        if capacity_plan is not None:  # nodes a load series gives inference first are not ours yet
            t = cluster.topology
            capacity_plan.take_offline(cluster.gpu_online, np.asarray(t.node_first_gpu), np.asarray(t.node_num_gpus))
        self.jobs, self.cluster, self.perf, self.policy, self.costs = jobs, cluster, perf, policy, costs
        self.eff = efficiency or goodput or ConstantEfficiency()
        self.goodput = goodput  # simcore.goodput.GoodputModel (epoch ends refresh efficiency) or None
        self.opt = options or EngineOptions()
        self.on_progress = on_progress
        self.name = str(getattr(policy, "name", type(policy).__name__))
        self.queue = EventQueue()
        self.now = 0.0
        self._alloc: dict[int, np.ndarray] = {}  # job → GPU ids (ascending, read-only)
        self._alloc_t: dict[int, tuple[int, ...]] = {}
        self._last_alloc: dict[int, tuple[int, ...]] = {}  # GPUs before a change (to classify it)
        self._current: dict[int, Allocation] = {}  # job → Allocation(gpus) handed to policies
        self._current_ro = MappingProxyType(self._current)
        # jobs holding GPUs, unordered, in `_held[:_held_n]` (the kernels' input), with each
        # one's position: O(1) per start/stop instead of a sorted rebuild per change
        self._held = np.zeros(max(cluster.num_gpus, 1), np.int64)
        self._done_buf = np.empty_like(self._held)  # `kernels.step`'s outputs (as long as `_held`)
        self._hit_buf = np.empty_like(self._held)
        self._held_n = 0
        self._held_pos: dict[int, int] = {}
        self._running_arr: np.ndarray | None = None  # `_held[:_held_n]` sorted, read-only; None: stale
        self._queued_since = np.full(jobs.num_jobs, np.nan)  # waiting is accounted on leaving the queue
        self._changed = True  # occupancy may have changed since the last timeline row
        self._restarting: set[int] = set()  # jobs holding GPUs while paying a change cost
        self.flags = flags = PolicyFlags.of(policy)  # the optional behaviour flags, read once
        self._rounds_need_queue = flags.rounds_need_queue
        self._call_on_restart_end = policy.event_driven and not flags.ignores_restart_ends
        self._phases: dict[int, Phases] = {}
        # active jobs (submitted, unfinished), ascending; replaced (never mutated) on change,
        # so arrays handed to policies stay valid
        self._active_arr = np.zeros(0, np.int64)
        self._active_n = 0  # len of the active set, pending changes included
        self._add_buf = np.zeros(max(jobs.num_jobs, 1), np.int64)  # arrivals not yet merged into `_active_arr`
        self._add_n = 0
        self._drop_buf = np.zeros(max(jobs.num_jobs, 1), np.int64)  # completions not yet removed from it
        self._drop_n = 0
        self.rates = RateBook(jobs, perf, self._phases, self._alloc, incremental=self.opt.incremental_contention)
        self._next_arrival = 0
        self._order = np.argsort(jobs.submit_time, kind="stable")
        self._pending_outside = 0  # queued RESTART_END/CAPACITY/ARRIVAL events
        self._wakes: set[float] = set()
        self._round_pending = False
        self._round_due = False  # a periodic round is due at this instant (`_accept`)
        # the last decision's `quiet_until` (-inf: none, or an outside event since): rounds
        # before it are answered here, each counted as a call (`Decision.quiet_until`)
        self._quiet_until = -math.inf
        self.quiet_rounds = 0
        self._idle_calls = 0
        self._unfinished = int(np.count_nonzero(jobs.state != _UNSCHEDULABLE))
        self._busy = 0
        self._online = int(cluster.gpu_online.sum())
        self._online_gpu_s = 0.0
        self._busy_gpu_s = 0.0
        self.num_events = 0
        self._next_progress = 0
        self.num_calls = 0
        self.policy_wall_s = 0.0
        needs = flags.needs
        if needs - ORACLE_NEEDS:
            raise PolicyError(f"policy '{self.name}' declares unknown needs {sorted(needs - ORACLE_NEEDS)} "
                              f"(known: {', '.join(sorted(ORACLE_NEEDS))})")
        if flags.milestones and NEED_PROGRESS_ORACLE not in needs:
            raise PolicyError(f"policy '{self.name}' declares milestones (fractions of a job's work) without "
                              f"needs {NEED_PROGRESS_ORACLE!r}: milestones reveal progress, an oracle fact")
        self._needs_oracle = NEED_DURATION_ORACLE in needs
        self.charger = CostCharger(costs, getattr(perf, "topo", None), getattr(perf, "zoo", None))
        self._rows: list[tuple] = []  # timeline rows (time_s, *_TIMELINE), columns at the end (`timeline`)
        self.decisions: dict[str, list] | None = (
            {k: [] for k in ("time_s", "job_id", "action", "num_gpus", "gpus", "batch_size", "cost_s")}
            if self.opt.record_decisions else None)
        self._last_obs: tuple | None = None
        self.marks = ProgressMarks(jobs, flags, self.name, goodput, self.eff)  # epoch ends, milestones
        self._init_counters(jobs, goodput)
        self._jobs_view = jobs.views(oracle=self._needs_oracle, progress_oracle=NEED_PROGRESS_ORACLE in needs,
                                     **self._counter_views())
        self._cluster_view = cluster.arrays()
        self.whatif = WhatIf(jobs, perf, self.name, goodput, self._last_type)
        self._iter_time, self._alloc_of = self.whatif.iteration_time, self._allocation_of  # bound once
        for ch in sorted(capacity_changes, key=lambda c: (c.time_s, c.node, c.online)):
            self._push(Event(ch.time_s, _CAPACITY, node=ch.node, online=ch.online))
        # capacity protocol (`simcore.capacity`): demand i is Event(job=i, node=-1, version=0);
        # the nodes of its answer leaving later, Event(job=i, node=-1, version=1)
        self._plan = capacity_plan
        self.reclaims = ReclaimLog() if capacity_plan is not None else None
        self._answers_reclaims = flags.answers_reclaims
        self._promised: set[int] = set()  # nodes answered but not yet returned
        self._answered: dict[int, tuple[tuple[int, ...], int]] = {}  # demand → (nodes, log row)
        for i, d in enumerate(capacity_plan.demands if capacity_plan is not None else ()):
            self._push(Event(d.time_s, _CAPACITY, job=i, node=-1, version=0))
        self._push_next_arrival()

    # ---- the round loop -------------------------------------------------------------
    def run(self) -> EngineResult:
        # Everything built before the loop (trace, topology, caches, the policy) lives through
        # the run: frozen, the cyclic collector's full passes during the run skip it (they
        # scale with the heap, so with the trace: on the full Philly trace they were a
        # visible share of the engine's time). Unfrozen when the run ends, however it ends.
        gc.freeze()
        try:
            return self._run()
        finally:
            gc.unfreeze()

    def _run(self) -> EngineResult:
        t0 = _time.perf_counter()
        stuck = False
        while self._unfinished > 0:
            t, done, hit = self._step()  # the next instant; every held job advanced to it
            if not math.isfinite(t):
                stuck = True  # nothing running, nothing pending: remaining jobs can never start
                break
            call = self._accept(t, done)  # completions, restart ends, arrivals, capacity, wakes, rounds
            if hit.shape[0]:
                call = self.marks.reached(hit) or call  # epoch ends (goodput refreshes), milestones
            if self._round_due:
                self._round_due = False
                if not call:
                    if t < self._quiet_until and self._alloc and not self._needs_oracle:
                        # the policy promised this round keeps everything: its decision, answered
                        # here (what `_is_stuck` does after a call that changes nothing while jobs run)
                        self.num_calls += 1
                        self.quiet_rounds += 1
                        self._idle_calls = 0
                    else:
                        call = True
            if call:
                decision = self._decide(t)  # the policy, with its name and the time on failure
                checked = validate_decision(decision, self.jobs, self.cluster, self.perf, self._alloc_t,
                                            self.name, t, self._current)
                did = self._apply(checked, t)  # preempt, start, migrate, resize, rebatch
                q = decision.quiet_until  # a Decision: `validate_decision` checked it
                self._quiet_until = -math.inf if q is None else q
                if self.opt.check_invariants:
                    self._check_ownership()
                if decision.wake_at is not None and decision.wake_at > t and decision.wake_at not in self._wakes:
                    self._wakes.add(decision.wake_at)
                    self.queue.push(Event(decision.wake_at, _WAKE))
                if self._is_stuck(did, decision):
                    stuck = True
                    break
            if self.rates.dirty:
                self.rates.refresh()
            if self._changed:
                self._observe(t)  # timeline row when occupancy changed
        self._finish_unfinished()
        self._close_reclaims()
        res = EngineResult(self.jobs, self.timeline(), self.decisions, self.now, self.num_events, self.num_calls,
                           stuck, _time.perf_counter() - t0, self.policy_wall_s, self._online_gpu_s,
                           self._busy_gpu_s, self.reclaims)
        return res

    # ---- time -----------------------------------------------------------------------
    def _view_sets(self) -> tuple[np.ndarray, np.ndarray]:
        """(active jobs, jobs holding GPUs), each ascending and read-only, for the policy view.
        Arrivals and completions since the last call are merged into the active set, and the
        held set is sorted after a start or stop, in one kernel call (`kernels.view_sets`);
        the arrays are replaced, never mutated (a policy may keep them)."""
        want_a = self._add_n > 0 or self._drop_n > 0
        want_r = self._running_arr is None
        if want_a or want_r:
            # the kernel gets the writable base (numba types read-only arrays on a slow path)
            base = self._active_arr.base if self._active_arr.base is not None else self._active_arr
            a, r = kernels.view_sets(base, self._add_buf, self._add_n, self._drop_buf, self._drop_n, self._held,
                                     self._held_n, want_a, want_r)
            if want_a:
                a = a.view()
                a.flags.writeable = False
                self._active_arr = a
                self._add_n = self._drop_n = 0
            if want_r:
                r.flags.writeable = False
                self._running_arr = r
        return self._active_arr, self._running_arr

    def _held_add(self, j: int) -> None:
        n = self._held_n
        if n == self._held.shape[0]:
            self._held = np.concatenate([self._held, np.zeros(n, np.int64)])
            self._done_buf = np.empty_like(self._held)
            self._hit_buf = np.empty_like(self._held)
        self._held[n] = j
        self._held_pos[j] = n
        self._held_n = n + 1
        self._running_arr = None

    def _held_remove(self, j: int) -> None:
        i = self._held_pos.pop(j)
        n = self._held_n - 1
        if i != n:
            last = int(self._held[n])
            self._held[i] = last
            self._held_pos[last] = i
        self._held_n = n
        self._running_arr = None

    def _step(self) -> tuple[float, np.ndarray, np.ndarray]:
        """The next instant (first completion, progress mark or queued event), with every job
        holding GPUs advanced to it; the RUNNING ones done then and those at a mark, each
        ascending (`kernels.step`)."""
        j = self.jobs
        now = self.now
        queue = self.queue
        t_event = t_other = queue.peek_time()
        if self._quiet_until > now and self._pass_rounds and self._alloc:
            head = queue.peek()
            if head is not None and head.priority == _ROUND:
                t_other = queue.second_time()  # rounds before it (and the promise) pass in the kernel
        if self._through or t_other != t_event:
            # instants with only goodput epoch ends, and quiet rounds, are stepped through in the kernel
            mk, acc = self.marks, self._acc
            acc[0], acc[1] = self._online_gpu_s, self._busy_gpu_s
            t, m, h, rounds, t_round = kernels.step_through(
                self._held, self._held_n, now, t_event, self.opt.completion_tol_s, j.state, j.rate, j.progress,
                j.mark, j.alloc_count, j.attained_gpu_s, j.executed_s, j.restart_s, j.exposed_frac, j.exposed_comm_s,
                self._done_buf, self._hit_buf, acc, self._online, self._busy, self._through, t_other,
                self._quiet_until, self._interval_s, j.epochs_done, j.gain, j.stat_eff, j.batch_size, j.global_batch,
                j.work_iters, self._s_base, self._p_base, self._spp, mk.kb_flat, mk.kb_start, mk.kb_len, mk.ktab)
            done = self._done_buf[:m] if m else _NONE
            hit = self._hit_buf[:h] if h else _NONE
            if t < now:
                raise AssertionError(f"time went backwards: {now} → {t}")
            if rounds:  # each answered as `_run` answers a quiet round; the next one queued instead
                queue.pop()
                queue.push(Event(t_round, _ROUND))
                self.num_events += rounds
                self.num_calls += rounds
                self.quiet_rounds += rounds
                self._idle_calls = 0
            if math.isfinite(t):
                self._online_gpu_s, self._busy_gpu_s = acc.item(0), acc.item(1)
                self.now = t
            return t, done, hit
        t, m, h = kernels.step(self._held, self._held_n, now, self.queue.peek_time(), self.opt.completion_tol_s,
                               j.state, j.rate, j.progress, j.mark, j.alloc_count, j.attained_gpu_s, j.executed_s,
                               j.restart_s, j.exposed_frac, j.exposed_comm_s, self._done_buf, self._hit_buf)
        # views of the step buffers: read before the next step overwrites them
        done = self._done_buf[:m] if m else _NONE
        hit = self._hit_buf[:h] if h else _NONE
        if t < now:
            raise AssertionError(f"time went backwards: {now} → {t}")
        if math.isfinite(t):
            dt = t - now
            if dt > 0:
                self._online_gpu_s += self._online * dt
                self._busy_gpu_s += self._busy * dt
            self.now = t
        return t, done, hit

    # ---- accept ---------------------------------------------------------------------
    def _push(self, ev: Event) -> None:
        if _RESTART_END <= ev.priority <= _CAPACITY:  # from outside the policy
            self._pending_outside += 1
        self.queue.push(ev)

    def _push_next_arrival(self) -> None:
        st = self.jobs.state
        while self._next_arrival < self._order.shape[0]:
            j = int(self._order[self._next_arrival])
            self._next_arrival += 1
            if st[j] != _UNSCHEDULABLE:
                self._push(Event(float(self.jobs.submit_time[j]), _ARRIVAL, job=j))
                return

    def _accept(self, t: float, done: np.ndarray) -> bool:
        """Handle everything that happens at instant `t` (`done`: jobs completing now, ascending);
        True if the policy must be called."""
        call = False
        j = self.jobs
        if done.shape[0]:
            for k in done.tolist():
                self._complete(k, t)
            call = bool(self.policy.event_driven)
        while self.queue.peek_time() <= t:
            ev = self.queue.pop()
            self.num_events += 1
            p = ev.priority
            if _RESTART_END <= p <= _CAPACITY:  # from outside the policy (int compares: no enum hashing)
                self._pending_outside -= 1
            if p == _ARRIVAL:
                self._arrive(ev.job)
                call = call or self.policy.event_driven
            elif p == _RESTART_END:
                if ev.version == j.version[ev.job] and j.state[ev.job] == _RESTARTING:
                    j.state[ev.job] = _RUNNING
                    self._restarting.discard(ev.job)
                    self._changed = True
                    self._mark_rates(ev.job)
                    call = call or self._call_on_restart_end
                    if not self.flags.ignores_restart_ends:
                        self._quiet_until = -math.inf
            elif p == _CAPACITY:
                self._quiet_until = -math.inf
                if ev.node >= 0:
                    self._capacity(ev.node, ev.online, t)
                elif ev.version == 0:  # a join or reclaim demand (`simcore.capacity`)
                    self._capacity_demand(ev.job, t)
                else:  # the nodes of an answer given earlier leave now
                    self._reclaim_due(ev.job, t)
                call = True  # a node leaving or joining always gets a policy call
            elif p == _WAKE:
                self._wakes.discard(ev.time)
                self._quiet_until = -math.inf
                call = call or self._active_n > 0
            elif p == _ROUND:
                self._round_pending = False
                skip = self._rounds_need_queue and not self._any_queued()
                if self._active_n > 0 and not skip:
                    self._round_due = True  # called unless the last decision's promise answers it (`_run`)
        self.num_events += len(done)
        if self.policy.interval_s and not self._round_pending:
            self._schedule_round(t)
        if self.on_progress is not None and self.num_events >= self._next_progress:
            self._next_progress = self.num_events + self.opt.progress_every
            self.on_progress(t, self.jobs.num_jobs - self._unfinished, self.jobs.num_jobs)
        return call

    def _any_queued(self) -> bool:
        return self._active_n > len(self._alloc)  # active jobs hold GPUs exactly when not queued

    def _schedule_round(self, t: float) -> None:
        iv = float(self.policy.interval_s)
        base = t
        if self._active_n == 0:  # idle cluster: next round at the first arrival
            nxt = self.queue.peek_time() if self._pending_outside else math.inf
            if not math.isfinite(nxt):
                return
            base = max(t, nxt - 1e-9)
        self.queue.push(Event((math.floor(base / iv) + 1) * iv, _ROUND))
        self._round_pending = True

    def _arrive(self, j: int) -> None:
        self._quiet_until = -math.inf
        self.jobs.state[j] = _QUEUED
        self._queued_since[j] = self.now
        self._add_buf[self._add_n] = j
        self._add_n += 1
        self._active_n += 1
        self._changed = True
        self._push_next_arrival()

    def _complete(self, j: int, t: float) -> None:
        self._quiet_until = -math.inf
        jobs = self.jobs
        self._release(j)
        jobs.state[j] = _FINISHED
        jobs.progress[j] = 1.0
        self._finish_counters(j)
        jobs.end_time[j] = t
        jobs.rate[j] = 0.0
        jobs.version[j] += 1
        if self.marks.bounds:
            self.marks.completed(j)
        self._drop_buf[self._drop_n] = j
        self._drop_n += 1
        self._active_n -= 1
        self._changed = True
        self._unfinished -= 1
        if self.decisions is not None:
            self._record(t, j, "finish", _EMPTY, int(jobs.batch_size[j]), 0.0)

    def _capacity(self, node: int, online: bool, t: float) -> None:
        gpus = self.cluster.node_gpus(node)
        was = self.cluster.gpu_online[gpus]
        if not online:
            owners = sorted({int(o) for o in self.cluster.gpu_owner[gpus] if o >= 0})
            for j in owners:  # forced preemption: the node's jobs lose all their GPUs
                self._preempt(j, t, action="evicted")
        self.cluster.gpu_online[gpus] = online
        self._changed = True
        self._online += int(online) * int((~was).sum()) - int(not online) * int(was.sum())

    def _capacity_demand(self, i: int, t: float) -> None:
        """Demand i of the capacity plan: nodes of its pool join (lowest ids first), or the
        policy (or `default_answer`) chooses which to give back, checked by `check_answer`."""
        d = self._plan.demands[i]
        c = self.cluster
        t_ = c.topology
        first, num = np.asarray(t_.node_first_gpu), np.asarray(t_.node_num_gpus)
        pool = self._plan.pools.nodes(d.pool)
        online = c.gpu_online[first[pool]]
        if d.kind == "join":
            for n in pool[~online][:d.count].tolist():
                self._capacity(n, True, t)
            return
        cands = np.array([n for n in pool[online].tolist() if n not in self._promised], np.int32)
        cands.flags.writeable = False
        demand = ReclaimDemand(d.pool, min(d.count, int(cands.shape[0])), d.deadline_s, cands)
        row = self.reclaims.open(t, d, int(cands.shape[0]), self.name if self._answers_reclaims else "default")
        if demand.count == 0:  # nothing of the pool is on loan (a node failure took it): nothing to return
            self.reclaims.close(row, t, (), [], [])
            return
        if self._answers_reclaims:
            w0 = _time.perf_counter()
            try:
                answer = self.policy.answer_reclaim(self._view(t, events=False), demand)
            except CosimError:
                raise
            except Exception as exc:
                raise PolicyError(f"policy '{self.name}' raised {type(exc).__name__} answering a reclaim at "
                                  f"t={t:.3f}s: {exc}") from exc
            finally:
                self.policy_wall_s += _time.perf_counter() - w0
        else:
            answer = default_answer(demand, first, num, c.gpu_owner, self._alloc_t, self.jobs.min_gpus, t)
        nodes, at = check_answer(answer, demand, self.name, t)
        if at <= t:
            self._return_nodes(nodes, t, row)
        else:
            self._promised.update(nodes)
            self._answered[i] = (nodes, row)
            self._push(Event(at, _CAPACITY, job=i, node=-1, version=1))

    def _reclaim_due(self, i: int, t: float) -> None:
        nodes, row = self._answered.pop(i)
        self._promised.difference_update(nodes)
        self._return_nodes(nodes, t, row)

    def _return_nodes(self, nodes: tuple[int, ...], t: float, row: int) -> None:
        """Give `nodes` back: each job holding GPUs there scales in to its GPUs elsewhere when
        it keeps `min_gpus` and fits there (a resize, charged as one), else is evicted; then
        the nodes go offline."""
        c = self.cluster
        gone: set[int] = set()
        for n in nodes:
            gone.update(c.node_gpus(n).tolist())
        owners = sorted({int(c.gpu_owner[g]) for g in gone if c.gpu_owner[g] >= 0})
        scaled, evicted = [], []
        for j in owners:
            keep = tuple(g for g in self._alloc_t[j] if g not in gone)
            plan = self._scale_in_plan(j, keep)
            if plan is None:
                self._preempt(j, t, action="evicted")
                evicted.append(str(self.jobs.job_id[j]))
            else:
                self._release(j)
                self._place(plan, t)
                scaled.append(str(self.jobs.job_id[j]))
        for n in nodes:
            self._capacity(n, False, t)
        self.reclaims.close(row, t, nodes, scaled, evicted)
        if self.opt.check_invariants:
            self._check_ownership()

    def _close_reclaims(self) -> None:
        """Answers still pending when the run ends: their nodes go at the end (no job holds
        GPUs any more), before their deadline."""
        for i in sorted(self._answered):
            nodes, row = self._answered.pop(i)
            self.reclaims.close(row, self.now, nodes, [], [])

    def _scale_in_plan(self, j: int, keep: tuple[int, ...]) -> Plan | None:
        """Job j on `keep` at its batch, if it may run there (≥ `min_gpus`, memory)."""
        if len(keep) < max(1, int(self.jobs.min_gpus[j])):
            return None
        gpus, _ = self.perf.placed(keep)
        batch = int(self.jobs.batch_size[j])
        ph = self.perf.phases_of(self.jobs.model[j], keep, gpus, batch)
        if self.perf.per_job_scaling:  # e.g. `LinearPerf`'s imperfect scaling
            ph = self.perf.job_phases(ph, len(keep), int(self.jobs.min_gpus[j]), int(self.jobs.max_gpus[j]))
        return None if ph is None else Plan(j, Allocation(keep), gpus, batch, ph)

    # ---- decide ---------------------------------------------------------------------
    def _decide(self, t: float) -> Decision:
        view = self._view(t)
        self.num_calls += 1
        w0 = _time.perf_counter()
        try:
            decision = self.policy.decide(view, t)
        except CosimError:
            raise
        except Exception as exc:  # a bug in the policy: say which and when, keep the cause
            raise PolicyError(f"policy '{self.name}' raised {type(exc).__name__} at t={t:.3f}s: {exc}") from exc
        finally:
            self.policy_wall_s += _time.perf_counter() - w0
        return decision

    def _view(self, t: float, events: bool = True) -> ClusterView:
        """The policy's view at `t` (for `decide`, and for reclaim answers with `events=False`:
        progress events wait for the next `decide`)."""
        active, running = self._view_sets()
        if self._needs_oracle:
            j = self.jobs
            j.remaining_s[active] = (1.0 - j.progress[active]) * j.work_iters[active] * j.ref_iter_s[active]
        events = self.marks.take_events() if events and self.marks.events else ()
        w = self.whatif
        w.now = t
        # a frozen dataclass's __init__ sets each of its 12 fields through object.__setattr__;
        # the view is built once per call, so its fields go into a fresh instance's __dict__
        # directly: the same object `ClusterView(**fields)` gives, at a third of the cost
        view = _new(ClusterView)
        view.__dict__.update(now=t, jobs=self._jobs_view, cluster=self._cluster_view, iteration_time=self._iter_time,
                             allocation_of=self._alloc_of, active_jobs=active, current=self._current_ro,
                             running_jobs=running, accepts_changes=True, progress_events=events,
                             whatif=w)
        if self.opt.check_invariants:
            if view.__dict__.keys() != _VIEW_FIELDS:
                raise AssertionError(f"view fields {sorted(view.__dict__)} differ from ClusterView's")
            s = self.jobs.state
            want = np.flatnonzero((s == _RUNNING) | (s == _RESTARTING))
            if not np.array_equal(view.running_jobs, want):
                raise AssertionError(f"running_jobs out of sync with job states at t={t}")
        return view

    def _allocation_of(self, j: int) -> np.ndarray:
        return self._alloc.get(int(j), _EMPTY)

    # ---- apply ----------------------------------------------------------------------
    def _apply(self, checked: Checked, t: float) -> bool:
        did = False
        gone = checked.gone  # held now, absent from the decision (ascending)
        if checked.emptied:
            gone = sorted(set(gone).union(j for j in checked.emptied if j in self._alloc))
        for j in gone:
            self._preempt(j, t, action="preempt")
            did = True
        plans = checked.plans
        for p in plans:  # release first, so GPUs can move between jobs in one decision
            if p.job in self._alloc:
                self._release(p.job)
        for p in plans:
            self._place(p, t)
            did = True
        return did

    def _place(self, plan: Plan, t: float) -> None:
        j, gpus, batch = plan.job, plan.gpus, plan.batch
        jobs = self.jobs
        model = jobs.model[j]
        costs = self.costs
        if jobs.state.item(j) == _QUEUED:  # .item(): plain Python scalars, same values
            jobs.waiting_s[j] += t - self._queued_since.item(j)
            self._queued_since[j] = np.nan
            if math.isnan(jobs.first_start.item(j)):
                action, cost = "start", costs.start_s
                jobs.first_start[j] = t
            else:
                action, cost = "resume", costs.restart_for(model, gpus.shape[0])
                jobs.num_restarts[j] += 1
        else:  # rebatch, resize or migrate (`simcore.costs.CostCharger`)
            action, cost = self.charger.change(model, self._last_alloc.get(j, ()), tuple(gpus.tolist()))
            if cost > 0 or action != "rebatch":
                jobs.num_restarts[j] += 1
        # the samples counter's segment ends where batch and gain may change (as at a mark: `kernels.refresh_hits`)
        p = jobs.progress.item(j)
        self._s_base[j] += (p - self._p_base.item(j)) * self._spp.item(j)
        self._p_base[j] = p
        if batch != jobs.batch_size.item(j):
            jobs.batch_size[j] = batch
        mode = jobs.work_mode.item(j)
        if mode in _UNIT_GAIN:
            g = 1.0
        else:
            ref = jobs.global_batch.item(j)
            g = work_gain(mode, batch, ref, self.eff, j, p)
            if ref > 0:
                jobs.stat_eff[j] = g * ref / batch
        jobs.gain[j] = g
        # the next segment
        self._spp[j] = jobs.work_iters.item(j) * batch / g if g > 0 else 0.0
        if j in self.marks.refresh:  # its gains at the next epoch ends, at this batch
            self.marks.set_batch(j, batch)
        a = plan.alloc
        self._last_type[j] = self.perf.placed(a.gpus)[1]  # cached: the validator looked this tuple up
        self._hold(j, gpus, a)
        jobs.last_start[j] = t
        version = jobs.version.item(j) + 1
        jobs.version[j] = version
        self._phases[j] = plan.phases
        if cost > 0:
            jobs.state[j] = _RESTARTING
            self._restarting.add(j)
            self._push(Event(t + cost, _RESTART_END, job=j, version=version))
        else:
            jobs.state[j] = _RUNNING
        jobs.rate[j] = 0.0
        self.rates.dirty.add(j)
        if self.decisions is not None:
            self._record(t, j, action, gpus, batch, cost)

    def _hold(self, j: int, gpus: np.ndarray, a: Allocation | None = None) -> None:
        """Job j takes `gpus` (ascending, read-only). `a`: the policy's Allocation for it,
        kept as the engine's own object when it says exactly that (GPUs ascending, batch
        None), so the policy can hand back the very object next time."""
        g = tuple(gpus.tolist())
        owner = self.cluster.gpu_owner
        for x in g:  # a few scalar stores beat one fancy-index store on short arrays
            owner[x] = j
        self._alloc[j] = gpus
        self._alloc_t[j] = g
        obj = a if type(a) is Allocation and a.batch_size is None and a.gpus == g else Allocation(g)
        self._current[j] = obj
        self._held_add(j)
        self._changed = True
        self._last_alloc[j] = g
        n = gpus.shape[0]
        self.jobs.alloc_count[j] = n
        self._busy += n

    def _release(self, j: int) -> None:
        gpus = self._alloc.pop(j, None)
        if gpus is None:
            return
        owner = self.cluster.gpu_owner
        for x in self._alloc_t.pop(j):
            owner[x] = -1
        del self._current[j]
        self._restarting.discard(j)
        self._held_remove(j)
        self._changed = True
        self._phases.pop(j, None)
        self._busy -= gpus.shape[0]
        self.jobs.alloc_count[j] = 0
        self.rates.dirty.add(j)

    def _preempt(self, j: int, t: float, action: str) -> None:
        self._release(j)
        jobs = self.jobs
        jobs.state[j] = _QUEUED
        self._queued_since[j] = t
        jobs.rate[j] = 0.0
        jobs.version[j] += 1
        if self.decisions is not None:
            self._record(t, j, action, _EMPTY, int(jobs.batch_size[j]), 0.0)

    def _check_ownership(self) -> None:
        """No GPU held by two jobs; owners, online flags and allocations agree."""
        owner = np.full(self.cluster.num_gpus, -1, np.int64)
        for j, g in self._alloc.items():
            if np.any(owner[g] >= 0):
                raise AssertionError(f"GPU double-booked at t={self.now}: job {j} and {owner[g].max()}")
            owner[g] = j
            if not self.cluster.gpu_online[g].all():
                raise AssertionError(f"job {j} holds an offline GPU at t={self.now}")
        if not np.array_equal(owner, self.cluster.gpu_owner):
            raise AssertionError(f"gpu_owner out of sync with allocations at t={self.now}")
        if self._busy != int((owner >= 0).sum()):
            raise AssertionError(f"busy count {self._busy} != {(owner >= 0).sum()} at t={self.now}")

    def _is_stuck(self, did: bool, decision: Decision) -> bool:
        """Nothing runs, nothing outside the policy can change the state, and the policy keeps
        changing nothing: the queued jobs can never start."""
        if did or self._alloc or self._pending_outside:
            self._idle_calls = 0
            return False
        self._idle_calls += 1
        limit = self.opt.stuck_after_calls if not self._wakes else 1000
        return self._idle_calls >= limit

    # ---- observable counters (the policy view) ---------------------------------------
    def _init_counters(self, jobs: JobTable, goodput: Any) -> None:
        """The view's counters that the step kernel does not integrate: samples done (kept
        per segment of constant batch and gain: samples = base + Δprogress × W × batch / gain),
        iterations/s, waiting so far, epochs done, last GPU type. The lazy ones are refreshed
        over the active set on the first read in a policy call (`_sync_counters`)."""
        n = jobs.num_jobs
        self._s_base = np.zeros(n)  # samples done up to the start of the current segment
        self._p_base = np.zeros(n)  # progress at the start of the current segment
        w = np.nan_to_num(jobs.work_iters, nan=0.0, posinf=0.0)
        self._spp = w * jobs.batch_size  # samples per unit of progress in the current segment (gain 1)
        self._v_samples = np.zeros(n)
        self._v_ips = np.zeros(n)
        self._v_wait = np.zeros(n)
        self._v_epochs = np.zeros(n, np.int32)
        self._last_type = np.full(n, -1, np.int16)
        ne = jobs.num_epochs
        est = np.isfinite(ne) & (ne >= 1)  # epochs from the progress fraction, where no mark counts them
        for j in self.marks.bounds:
            est[j] = False
        self._ep_est = est
        self._ep_max = np.where(est, np.ceil(np.nan_to_num(ne, nan=0.0)), 0.0)
        self._synced = -1
        self.marks.bind_counters(self._s_base, self._p_base, self._spp)
        self._through = self.marks.through
        # rounds the step kernel may pass on a promise: those that would be calls (no rounds the
        # engine skips for want of a queue, no oracle view to refresh)
        self._interval_s = float(self.policy.interval_s or 0.0)
        self._pass_rounds = self._interval_s > 0 and not self._rounds_need_queue and not self._needs_oracle
        self._acc = np.zeros(2)  # (online, busy) GPU-seconds while `kernels.step_through` adds them

    def _counter_views(self) -> dict:
        ro = _ro
        return dict(_samples_done=ro(self._v_samples), _iters_per_s=ro(self._v_ips), _waiting_s=ro(self._v_wait),
                    _epochs_done=ro(self._v_epochs), last_gpu_type=ro(self._last_type),
                    exposed_comm_s=ro(self.jobs.exposed_comm_s), _sync=self._sync_counters,
                    _epoch_log=ConvergenceLog(self.jobs.num_epochs, self.jobs.attrs, self.jobs.job_id).log)

    def _finish_counters(self, j: int) -> None:
        jobs = self.jobs
        p = jobs.progress.item(j)  # the segment closes (as at a mark, once per completion)
        b = self._s_base.item(j) + (p - self._p_base.item(j)) * self._spp.item(j)
        self._s_base[j] = b
        self._p_base[j] = p
        self._v_samples[j] = b
        self._v_ips[j] = 0.0
        self._v_wait[j] = jobs.waiting_s.item(j)
        self._v_epochs[j] = self._ep_max.item(j) if self._ep_est.item(j) else jobs.epochs_done.item(j)

    def _sync_counters(self) -> None:
        """Bring the lazy counters of the active jobs up to `now` (once per policy call)."""
        if self._synced == self.num_calls:
            return
        self._synced = self.num_calls
        a = self._active_arr
        if a.shape[0] == 0:
            return
        j = self.jobs
        p = j.progress[a]
        self._v_samples[a] = self._s_base[a] + (p - self._p_base[a]) * self._spp[a]
        g = j.gain[a]
        run = (j.state[a] == _RUNNING) & (g > 0)
        self._v_ips[a] = np.where(run, j.rate[a] * j.work_iters[a] / np.where(run, g, 1.0), 0.0)
        qs = self._queued_since[a]
        self._v_wait[a] = j.waiting_s[a] + np.where(np.isnan(qs), 0.0, self.now - np.nan_to_num(qs))
        est = self._ep_est[a]
        ep = j.epochs_done[a].copy()
        if est.any():
            ep[est] = np.minimum(np.floor(p[est] * j.num_epochs[a][est] + 1e-9), self._ep_max[a][est])
        self._v_epochs[a] = ep

    # ---- rates ----------------------------------------------------------------------
    def _mark_rates(self, j: int) -> None:
        self.rates.mark(j)

    # ---- observe --------------------------------------------------------------------
    def _observe(self, t: float) -> None:
        if not self._changed:
            return
        self._changed = False
        restarting = len(self._restarting)
        held = len(self._alloc)
        obs = (self._busy, self._online, held - restarting, restarting, self._active_n - held)
        if obs == self._last_obs:
            return
        rows = self._rows
        if rows and rows[-1][0] == t:  # several steps at one instant: keep the last
            rows.pop()
        self._last_obs = obs
        rows.append((t, *obs))

    def timeline(self) -> dict[str, list]:
        """The timeline rows as columns: time_s and the occupancy after each change."""
        cols = list(zip(*self._rows)) if self._rows else [()] * (1 + len(_TIMELINE))
        return {k: list(c) for k, c in zip(("time_s",) + _TIMELINE, cols)}

    def _record(self, t: float, j: int, action: str, gpus: np.ndarray, batch: int, cost: float) -> None:
        """One row of `decisions.parquet`; callers call it only when decisions are recorded
        (the hot paths skip building its arguments otherwise)."""
        d = self.decisions
        d["time_s"].append(t)
        d["job_id"].append(str(self.jobs.job_id[j]))
        d["action"].append(action)
        d["num_gpus"].append(int(gpus.shape[0]))
        d["gpus"].append(",".join(map(str, gpus.tolist())))
        d["batch_size"].append(int(batch))
        d["cost_s"].append(float(cost))

    def _finish_unfinished(self) -> None:
        """Jobs still active or never submitted at the end are left unfinished (end = NaN);
        queued ones are charged their waiting up to the end."""
        for j in sorted(self._alloc):
            self._release(j)
        q = np.flatnonzero(~np.isnan(self._queued_since))
        self.jobs.waiting_s[q] += self.now - self._queued_since[q]
        self._queued_since[q] = np.nan
