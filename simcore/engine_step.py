"""The engine's clock: the jobs holding GPUs, and the step to the next instant.

Between two instants every job holding GPUs advances at a constant rate, so the next
instant (first completion, progress mark or queued event) is computed, never stepped: one
numba call (`kernels.step`, or `kernels.step_through` when goodput epoch ends or quiet
rounds can pass inside it) finds it and advances every held job to it. The held jobs sit in
an unordered array, `_held[:_held_n]`, updated in O(1) per start and stop: it is all the
kernels walk. The policy view's ascending copy of that set is updated from the starts since
the last view (`kernels.held_update`), not sorted anew. A mixin of `simcore.engine.Engine` (it shares the engine's state).
"""

from __future__ import annotations

import math

import numpy as np

from simcore import kernels
from simcore.engine_constants import NO_JOBS, ROUND
from simcore.events import Event
from simcore.state import read_only


class Stepping:
    """Held-set bookkeeping and `_step` (see module doc)."""

    def _init_held(self, num_gpus: int) -> None:
        # jobs holding GPUs, unordered, in `_held[:_held_n]` (the kernels' input), with each
        # one's position: O(1) per start/stop instead of a sorted rebuild per change
        self._held = np.zeros(max(num_gpus, 1), np.int64)
        self._done_buf = np.empty_like(self._held)  # `kernels.step`'s outputs (as long as `_held`)
        self._hit_buf = np.empty_like(self._held)
        self._held_n = 0
        self._held_pos: dict[int, int] = {}
        # the same set ascending for the policy view: `_running_base` as it was at the last view
        # (writable; the view gets a read-only view of it, `_running_arr`), and the jobs that took
        # GPUs since, `_started[:_started_n]`; stale while `_running_stale` (`PolicyView._view_sets`)
        self._running_base = np.zeros(0, np.int64)
        self._running_arr = read_only(self._running_base)
        self._started = np.zeros(max(num_gpus, 1), np.int64)
        self._started_n = 0
        self._running_stale = False

    def _held_add(self, j: int) -> None:
        n = self._held_n
        if n == self._held.shape[0]:
            self._held = np.concatenate([self._held, np.zeros(n, np.int64)])
            self._done_buf = np.empty_like(self._held)
            self._hit_buf = np.empty_like(self._held)
        self._held[n] = j
        self._held_pos[j] = n
        self._held_n = n + 1
        k = self._started_n
        if k == self._started.shape[0]:
            self._started = np.concatenate([self._started, np.zeros(k, np.int64)])
        self._started[k] = j
        self._started_n = k + 1
        self._running_stale = True

    def _held_remove(self, j: int) -> None:
        i = self._held_pos.pop(j)
        n = self._held_n - 1
        if i != n:
            last = int(self._held[n])
            self._held[i] = last
            self._held_pos[last] = i
        self._held_n = n
        self._running_stale = True

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
            if head is not None and head.priority == ROUND:
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
            done = self._done_buf[:m] if m else NO_JOBS
            hit = self._hit_buf[:h] if h else NO_JOBS
            if t < now:
                raise AssertionError(f"time went backwards: {now} → {t}")
            if rounds:  # each answered as `_run` answers a quiet round; the next one queued instead
                queue.pop()
                queue.push(Event(t_round, ROUND))
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
        done = self._done_buf[:m] if m else NO_JOBS
        hit = self._hit_buf[:h] if h else NO_JOBS
        if t < now:
            raise AssertionError(f"time went backwards: {now} → {t}")
        if math.isfinite(t):
            dt = t - now
            if dt > 0:
                self._online_gpu_s += self._online * dt
                self._busy_gpu_s += self._busy * dt
            self.now = t
        return t, done, hit
