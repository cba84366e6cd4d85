"""What the policy sees: the `ClusterView` of one call and the counters it exposes.

The active and held sets are rebuilt once per call, in one kernel (`kernels.view_sets`),
and replaced, never mutated, so arrays a policy keeps stay valid. The observable counters
the step kernel does not integrate (samples done, iterations/s, waiting so far, epochs done,
last GPU type) are kept per segment of constant batch and gain and refreshed over the active
set on the first read in a call (`_sync_counters`): policies that never read them pay
nothing. A mixin of `simcore.engine.Engine` (it shares the engine's state).
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

import numpy as np

from simcore import kernels
from simcore.api import ClusterView
from simcore.convergence import ConvergenceLog
from simcore.engine_constants import NO_GPUS, RESTARTING, RUNNING
from simcore.state import JobTable, read_only
from simcore.work import WorkMode

_new = object.__new__
_VIEW_FIELDS = {f.name: None for f in fields(ClusterView)}.keys()  # `Engine._view` fills every one


class PolicyView:
    """The view's sets and counters (see module doc)."""

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
            want = np.flatnonzero((s == RUNNING) | (s == RESTARTING))
            if not np.array_equal(view.running_jobs, want):
                raise AssertionError(f"running_jobs out of sync with job states at t={t}")
        return view

    def _allocation_of(self, j: int) -> np.ndarray:
        return self._alloc.get(int(j), NO_GPUS)

    def _view_sets(self) -> tuple[np.ndarray, np.ndarray]:
        """(active jobs, jobs holding GPUs), each ascending and read-only, for the policy view.
        Arrivals and completions since the last call are merged into the active set, and the
        starts since the last call into the held set (stops dropped), in one kernel call
        (`kernels.view_sets`); the arrays are replaced, never mutated (a policy may keep them)."""
        want_a = self._add_n > 0 or self._drop_n > 0
        want_r = self._running_stale
        if want_a or want_r:
            # the kernel gets the writable bases (numba types read-only arrays on a slow path)
            base = self._active_arr.base if self._active_arr.base is not None else self._active_arr
            a, r = kernels.view_sets(base, self._add_buf, self._add_n, self._drop_buf, self._drop_n,
                                     self._running_base, self._started, self._started_n, self.jobs.alloc_count,
                                     want_a, want_r)
            if want_a:
                self._active_arr = read_only(a)
                self._add_n = self._drop_n = 0
            if want_r:
                self._running_base = r
                self._running_arr = read_only(r)
                self._started_n = 0
                self._running_stale = False
        return self._active_arr, self._running_arr

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
        # epochs to target that depend on the batch history (`simcore.convergence.BatchHistory`):
        # progress is in reference epochs, the epochs trained are the samples over the epoch size
        es = np.asarray(jobs.attrs.get("epoch_size", np.full(n, np.nan)), np.float64)
        smp = est & (jobs.work_mode == WorkMode.EPOCHS_TO_TARGET) & np.isfinite(es) & (es > 0)
        est &= ~smp
        self._ep_smp, self._epoch_size = smp, np.where(smp, es, 1.0)
        self._conv_log: ConvergenceLog | None = None
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
        ro = read_only
        return dict(_samples_done=ro(self._v_samples), _iters_per_s=ro(self._v_ips), _waiting_s=ro(self._v_wait),
                    _epochs_done=ro(self._v_epochs), last_gpu_type=ro(self._last_type),
                    exposed_comm_s=ro(self.jobs.exposed_comm_s), _sync=self._sync_counters,
                    _epoch_log=self._epoch_log)

    def _epoch_log(self, j: int, epochs_done: int) -> Any:
        """Job j's training log (`JobsView.epoch_log`): its curve at the epochs it trained, in
        reference epochs (progress × the trace's epochs) where its history changes the epochs."""
        if self._conv_log is None:
            self._conv_log = ConvergenceLog(self.jobs.num_epochs, self.jobs.attrs, self.jobs.job_id)
        scale = 1.0
        if self._ep_smp.item(j):
            trained = self._v_samples.item(j) / self._epoch_size.item(j)
            if trained > 0:
                scale = self.jobs.progress.item(j) * self.jobs.num_epochs.item(j) / trained
        return self._conv_log.log(j, epochs_done, scale)

    def _finish_counters(self, j: int) -> None:
        jobs = self.jobs
        p = jobs.progress.item(j)  # the segment closes (as at a mark, once per completion)
        b = self._s_base.item(j) + (p - self._p_base.item(j)) * self._spp.item(j)
        self._s_base[j] = b
        self._p_base[j] = p
        self._v_samples[j] = b
        self._v_ips[j] = 0.0
        self._v_wait[j] = jobs.waiting_s.item(j)
        if self._ep_smp.item(j):
            self._v_epochs[j] = math.floor(b / self._epoch_size.item(j) + 1e-9)
        else:
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
        run = (j.state[a] == RUNNING) & (g > 0)
        self._v_ips[a] = np.where(run, j.rate[a] * j.work_iters[a] / np.where(run, g, 1.0), 0.0)
        qs = self._queued_since[a]
        self._v_wait[a] = j.waiting_s[a] + np.where(np.isnan(qs), 0.0, self.now - np.nan_to_num(qs))
        est = self._ep_est[a]
        ep = j.epochs_done[a].copy()
        if est.any():
            ep[est] = np.minimum(np.floor(p[est] * j.num_epochs[a][est] + 1e-9), self._ep_max[a][est])
        smp = self._ep_smp[a]
        if smp.any():
            ep[smp] = np.floor(self._v_samples[a][smp] / self._epoch_size[a][smp] + 1e-9)
        self._v_epochs[a] = ep
