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

The engine is one class, `Engine`, whose parts share its state (so the hot path reads plain
instance attributes); each part is a mixin in its own module, named for what it holds:
`simcore.engine_step` (the held set, and the step to the next instant), `simcore.engine_events`
(accepting one instant's completions and events), `simcore.engine_capacity` (nodes leaving
and joining, reclaim demands), `simcore.engine_view` (the policy's view and its counters),
`simcore.engine_apply` (applying a checked decision: hold, release, place, preempt),
`simcore.engine_record` (timeline and decision rows); the hot path's plain-int job states and
event kinds are in `simcore.engine_constants`. This module holds the options, the result,
the constructor and the round loop.
"""

from __future__ import annotations

import gc
import logging
import math
import time as _time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from cosim.errors import CosimError, PolicyError
from simcore.api import (
    NEED_DURATION_ORACLE,
    NEED_PROGRESS_ORACLE,
    ORACLE_NEEDS,
    Allocation,
    Decision,
    PolicyFlags,
)
from simcore.costs import ChangeCosts, CostCharger
from simcore.engine_apply import Applying
from simcore.engine_capacity import NodeChanges
from simcore.engine_constants import CAPACITY, UNSCHEDULABLE, WAKE
from simcore.engine_events import EventHandling
from simcore.engine_record import Recording
from simcore.engine_step import Stepping
from simcore.engine_view import PolicyView
from simcore.events import Event, EventQueue
from simcore.marks import ProgressMarks
from simcore.perf import PerfModel, Phases
from simcore.rates import RateBook
from simcore.state import ClusterState, JobTable
from simcore.validate import validate_decision
from simcore.whatif import WhatIf
from simcore.work import ConstantEfficiency, StatEfficiency

if TYPE_CHECKING:  # imported only for a run with a load series (~2 ms of import otherwise)
    from simcore.capacity import CapacityPlan, ReclaimLog

log = logging.getLogger(__name__)


class FrozenGarbage:
    """The full collections a process running many simulations needs around `Engine.run`'s freeze.

    `gc.freeze()` at a run's start moves every object the collector tracks, garbage not yet
    collected included, out of its reach until the run ends; a previous run's engine, policy and
    caches (reference cycles) become garbage when its caller drops them, and unless a full
    collection happens between two runs — rare, as little is allocated there — the next run freezes
    them again. A process of many small runs (a policy's training, a sweep worker, a script) then
    grows by their size each run (≈ 1.4 MB per 20-job ONES run). So before a run, when a run has
    ended since the last full collection and the engine seconds since then are at least
    `runs_per_cost` times what that collection took, the process collects in full: the
    collections cost at most 1/`runs_per_cost` of the engine's time, and a single run (a
    `cosim simulate` process's) pays none."""

    def __init__(self, runs_per_cost: float = 20.0) -> None:
        self.runs_per_cost = runs_per_cost
        self.run_s = 0.0  # engine seconds since the last full collection
        self.runs = 0  # runs ended since then
        self.cost_s = 0.0  # the last full collection's seconds
        self.collections = 0

    def before_run(self) -> None:
        if self.runs and self.run_s >= self.runs_per_cost * self.cost_s:
            t0 = _time.perf_counter()
            gc.collect()
            self.cost_s = _time.perf_counter() - t0
            self.run_s, self.runs = 0.0, 0
            self.collections += 1

    def after_run(self, seconds: float) -> None:
        self.run_s += seconds
        self.runs += 1


#: the process's one (the collector is process-wide)
FROZEN_GARBAGE = FrozenGarbage()


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
    timeline: dict[str, np.ndarray]  # time_s and the occupancy columns (`Recording.timeline`)
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


class Engine(Stepping, EventHandling, NodeChanges, PolicyView, Applying, Recording):
    """One policy on one trace and one cluster (module doc); `run()` once."""

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
            cluster.recount_free()
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
        self._init_held(cluster.num_gpus)  # the jobs holding GPUs (`simcore.engine_step`)
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
        self._unfinished = int(np.count_nonzero(jobs.state != UNSCHEDULABLE))
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
        # completions that call the policy only when a job is queued after them (`_run`)
        self._quiet_completions = (policy.event_driven and flags.completions_need_queue
                                   and not self._needs_oracle)
        self._completed_quietly = False  # this instant had such completions
        self.charger = CostCharger(costs, getattr(perf, "topo", None), getattr(perf, "zoo", None))
        self._init_recording(self.opt.record_decisions)  # timeline and decision rows (`engine_record`)
        self.marks = ProgressMarks(jobs, flags, self.name, goodput, self.eff)  # epoch ends, milestones
        self._init_counters(jobs, goodput)
        self._jobs_view = jobs.views(oracle=self._needs_oracle, progress_oracle=NEED_PROGRESS_ORACLE in needs,
                                     **self._counter_views())
        self._cluster_view = cluster.arrays()
        self.whatif = WhatIf(jobs, perf, self.name, goodput, self._last_type)
        self._iter_time, self._alloc_of = self.whatif.iteration_time, self._allocation_of  # bound once
        for ch in sorted(capacity_changes, key=lambda c: (c.time_s, c.node, c.online)):
            self._push(Event(ch.time_s, CAPACITY, node=ch.node, online=ch.online))
        # capacity protocol (`simcore.capacity`): demand i is Event(job=i, node=-1, version=0);
        # the nodes of its answer leaving later, Event(job=i, node=-1, version=1)
        self._plan = capacity_plan
        if capacity_plan is not None:
            from simcore.capacity import ReclaimLog

            self.reclaims = ReclaimLog()
        else:
            self.reclaims = None
        self._answers_reclaims = flags.answers_reclaims
        self._promised: set[int] = set()  # nodes answered but not yet returned
        self._answered: dict[int, tuple[tuple[int, ...], int]] = {}  # demand → (nodes, log row)
        for i, d in enumerate(capacity_plan.demands if capacity_plan is not None else ()):
            self._push(Event(d.time_s, CAPACITY, job=i, node=-1, version=0))
        self._push_next_arrival()

    # ---- the round loop -------------------------------------------------------------
    def run(self) -> EngineResult:
        # Everything built before the loop (trace, topology, caches, the policy) lives through
        # the run: frozen, the cyclic collector's full passes during the run skip it (they
        # scale with the heap, so with the trace: on the full Philly trace they were a
        # visible share of the engine's time). Unfrozen when the run ends, however it ends.
        # Freezing also hides what earlier runs of this process left as cyclic garbage (an
        # engine refers to itself), so a process running many simulations collects it first
        # now and then (`FrozenGarbage`).
        FROZEN_GARBAGE.before_run()
        gc.freeze()
        t0 = _time.perf_counter()
        try:
            return self._run()
        finally:
            gc.unfreeze()
            FROZEN_GARBAGE.after_run(_time.perf_counter() - t0)

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
            answered = False  # the instant is answered here ("keep everything"), as the policy declared
            if self._completed_quietly:
                self._completed_quietly = False
                if not call:  # completions alone, under `completions_need_queue`: a call only for a queue
                    call = self._any_queued()
                    answered = not call
            if self._round_due:
                self._round_due = False
                if not call:
                    if t < self._quiet_until and self._alloc and not self._needs_oracle:
                        self.quiet_rounds += 1  # the policy promised this round keeps everything
                        answered = True
                    else:
                        call = True
            if answered and not call:  # counted as a call that changes nothing
                self.num_calls += 1
                if self._is_stuck(False):
                    stuck = True
                    break
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
                    self.queue.push(Event(decision.wake_at, WAKE))
                if self._is_stuck(did):
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

    def _is_stuck(self, did: bool) -> bool:
        """Nothing runs, nothing outside the policy can change the state, and the policy keeps
        changing nothing: the queued jobs can never start."""
        if did or self._alloc or self._pending_outside:
            self._idle_calls = 0
            return False
        self._idle_calls += 1
        limit = self.opt.stuck_after_calls if not self._wakes else 1000
        return self._idle_calls >= limit

    def _finish_unfinished(self) -> None:
        """Jobs still active or never submitted at the end are left unfinished (end = NaN);
        queued ones are charged their waiting up to the end."""
        for j in sorted(self._alloc):
            self._release(j)
        q = np.flatnonzero(~np.isnan(self._queued_since))
        self.jobs.waiting_s[q] += self.now - self._queued_since[q]
        self._queued_since[q] = np.nan
