"""The engine's event handling: everything that happens at one instant, before the policy call.

`_accept` takes the jobs completing at the instant and every queued event due then —
restart ends, arrivals, capacity changes (`simcore.engine_capacity`), the policy's wake-ups
and periodic rounds — and says whether the policy must be called; all events of one instant
give one call. Arrivals are queued one at a time in submit order (`_push_next_arrival`).
A mixin of `simcore.engine.Engine` (it shares the engine's state).
"""

from __future__ import annotations

import math

import numpy as np

from simcore.engine_constants import (
    ARRIVAL,
    CAPACITY,
    FINISHED,
    NO_GPUS,
    QUEUED,
    RESTART_END,
    RESTARTING,
    ROUND,
    RUNNING,
    UNSCHEDULABLE,
    WAKE,
)
from simcore.events import Event


class EventHandling:
    """Accepting one instant's events (see module doc)."""

    def _push(self, ev: Event) -> None:
        if RESTART_END <= ev.priority <= CAPACITY:  # from outside the policy
            self._pending_outside += 1
        self.queue.push(ev)

    def _push_next_arrival(self) -> None:
        st = self.jobs.state
        while self._next_arrival < self._order.shape[0]:
            j = int(self._order[self._next_arrival])
            self._next_arrival += 1
            if st[j] != UNSCHEDULABLE:
                self._push(Event(float(self.jobs.submit_time[j]), ARRIVAL, job=j))
                return

    def _accept(self, t: float, done: np.ndarray) -> bool:
        """Handle everything that happens at instant `t` (`done`: jobs completing now, ascending);
        True if the policy must be called."""
        call = False
        j = self.jobs
        if done.shape[0]:
            for k in done.tolist():
                self._complete(k, t)
            if self._quiet_completions:
                self._completed_quietly = True  # a call only if a job is queued (`Engine._run`)
            else:
                call = bool(self.policy.event_driven)
        while self.queue.peek_time() <= t:
            ev = self.queue.pop()
            self.num_events += 1
            p = ev.priority
            if RESTART_END <= p <= CAPACITY:  # from outside the policy (int compares: no enum hashing)
                self._pending_outside -= 1
            if p == ARRIVAL:
                self._arrive(ev.job)
                call = call or self.policy.event_driven
            elif p == RESTART_END:
                if ev.version == j.version[ev.job] and j.state[ev.job] == RESTARTING:
                    j.state[ev.job] = RUNNING
                    self._restarting.discard(ev.job)
                    self._changed = True
                    self._mark_rates(ev.job)
                    call = call or self._call_on_restart_end
                    if not self.flags.ignores_restart_ends:
                        self._quiet_until = -math.inf
            elif p == CAPACITY:
                self._quiet_until = -math.inf
                if ev.node >= 0:
                    self._capacity(ev.node, ev.online, t)
                elif ev.version == 0:  # a join or reclaim demand (`simcore.capacity`)
                    self._capacity_demand(ev.job, t)
                else:  # the nodes of an answer given earlier leave now
                    self._reclaim_due(ev.job, t)
                call = True  # a node leaving or joining always gets a policy call
            elif p == WAKE:
                self._wakes.discard(ev.time)
                self._quiet_until = -math.inf
                call = call or self._active_n > 0
            elif p == ROUND:
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
        self.queue.push(Event((math.floor(base / iv) + 1) * iv, ROUND))
        self._round_pending = True

    def _arrive(self, j: int) -> None:
        self._quiet_until = -math.inf
        self.jobs.state[j] = QUEUED
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
        self._last_alloc.pop(j, None)  # a finished job changes no placement again: keep nothing per finished job
        jobs.state[j] = FINISHED
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
            self._record(t, j, "finish", NO_GPUS, int(jobs.batch_size[j]), 0.0)

    def _mark_rates(self, j: int) -> None:
        self.rates.mark(j)
