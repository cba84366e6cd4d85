"""Applying a checked decision: preemptions, then starts, resumes, moves, resizes and rebatches.

Each change arrives validated and planned once (`simcore.validate.Plan`: GPUs, batch,
phases). Releases come first, so GPUs can move between jobs in one decision; each placement
is charged its cost (`simcore.costs.CostCharger`: the job is RESTARTING while it pays), closes
the job's samples-counter segment and marks its contention group for a re-solve
(`simcore.rates.RateBook`). A mixin of `simcore.engine.Engine` (it shares the engine's state).
"""

from __future__ import annotations

import math

import numpy as np

from simcore.api import Allocation
from simcore.engine_constants import NO_GPUS, QUEUED, RESTART_END, RESTARTING, RUNNING
from simcore.events import Event
from simcore.validate import Checked, Plan
from simcore.work import UNIT_GAIN_MODES, work_gain

_UNIT_GAIN = frozenset(int(m) for m in UNIT_GAIN_MODES)  # modes whose `work_gain` is 1 (`simcore.work`)


class Applying:
    """GPU holding, releasing, placing and preempting (see module doc)."""

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
        if jobs.state.item(j) == QUEUED:  # .item(): plain Python scalars, same values
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
            jobs.state[j] = RESTARTING
            self._restarting.add(j)
            self._push(Event(t + cost, RESTART_END, job=j, version=version))
        else:
            jobs.state[j] = RUNNING
        jobs.rate[j] = 0.0
        self.rates.dirty.add(j)
        if self.decisions is not None:
            self._record(t, j, action, gpus, batch, cost)

    def _hold(self, j: int, gpus: np.ndarray, a: Allocation | None = None) -> None:
        """Job j takes `gpus` (ascending, read-only). `a`: the policy's Allocation for it,
        kept as the engine's own object when it says exactly that (GPUs ascending, batch
        None), so the policy can hand back the very object next time."""
        g = tuple(gpus.tolist())
        self.cluster.hold(j, g)
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
        self.cluster.release(self._alloc_t.pop(j))
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
        jobs.state[j] = QUEUED
        self._queued_since[j] = t
        jobs.rate[j] = 0.0
        jobs.version[j] += 1
        if self.decisions is not None:
            self._record(t, j, action, NO_GPUS, int(jobs.batch_size[j]), 0.0)

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
        if not np.array_equal(self.cluster.node_free, self.cluster.free_recount()):
            raise AssertionError(f"per-node usable GPU counts out of sync at t={self.now}")
