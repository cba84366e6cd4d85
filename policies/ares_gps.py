"""Ares's GPS reference systems: the priority order of Elastic Fair Queuing.

EFQ (Ares, TACO'25, §3; `../shared/seeds/notes/ares.md` §2.3) serves jobs in the order they
would finish under GPS, the idealised instantaneous fair sharing of the M GPUs. Two ways to
get that order, one per mode of the policy:

- `VirtualClock` (paper, Eq. 2–3, `gps_mode="linear_vclock"`): the WFQ virtual clock
  `dV/dt = M / N_t`, `N_t` the jobs still active in GPS (`F_k > V`), frozen while GPS is idle;
  a job's virtual finish time `F_j = V(a_j) + L_j` is computed once, at arrival, and the jobs
  active in GPS sit in a min-heap, so an event costs O(log N). With GPU-time invariant to the
  GPU count (linear scaling) job j finishes in GPS exactly when V reaches `F_j`;
  `finish_time(F)` gives that wall-clock instant for a job still active in GPS.
- `FluidGps` (artifact, `gps_mode="fluid_nonlinear"`): the Ares artifact's `GPSSystem`, a
  fluid simulation of the active jobs, each at the fractional share `min(M / N, cap_j)`
  with its measured (here: what-if) step time interpolated between integer GPU counts
  (`step(1) / s` below one GPU), re-run forward at every arrival (no future arrivals) to
  give the GPS completion order. The artifact's 30 s added per event and 60-s rounding are
  left out: they shift times, not the order.

Both are plain Python over small per-job state: a policy call touches the jobs that arrived
since the last call and the heap's top.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np


class VirtualClock:
    """The GPS virtual clock of Eq. 2: V(t) in GPU-seconds per job, `dV/dt = M / N_t`.

    `capacity` M may change between calls (`set_capacity`; nodes leaving); `idle="freeze"`
    keeps V while no job is active in GPS (WFQ's convention), `"reset"` sets it to 0 then.
    """

    def __init__(self, capacity: float, idle: str = "freeze") -> None:
        self.m = float(capacity)
        self.idle = idle
        self.v = 0.0
        self.t = 0.0
        self.heap: list[tuple[float, int]] = []  # (F_k, k) of jobs active in GPS
        self.gps_done: dict[int, float] = {}  # job → wall-clock time it finished in GPS

    def set_capacity(self, capacity: float) -> None:
        self.m = float(capacity)

    @property
    def active(self) -> int:
        """N_t: jobs active in GPS now."""
        return len(self.heap)

    def advance(self, t: float) -> None:
        """Move the clock to wall time `t`, popping every job whose F the clock reaches."""
        h = self.heap
        while self.t < t:
            n = len(h)
            if n == 0 or self.m <= 0:
                if n == 0 and self.idle == "reset":
                    self.v = 0.0
                self.t = t
                break
            f_min = h[0][0]
            dt = (f_min - self.v) * n / self.m  # wall time until the next GPS departure
            if self.t + dt <= t:
                self.t += dt
                self.v = f_min
                while h and h[0][0] <= self.v:  # ties leave together
                    _, k = heapq.heappop(h)
                    self.gps_done[k] = self.t
            else:
                self.v += (t - self.t) * self.m / n
                self.t = t

    def arrive(self, j: int, t: float, gpu_s: float) -> float:
        """Job j arrives at `t` with `gpu_s` GPU-seconds of work (L_j): advance to `t`, return
        and record `F_j = V(t) + L_j`."""
        self.advance(max(t, self.t))
        f = self.v + float(gpu_s)
        if f > self.v:
            heapq.heappush(self.heap, (f, j))
        else:
            self.gps_done[j] = self.t
        return f

    def finish_time(self, f: float) -> float:
        """Wall-clock time V reaches `f` if no job arrives from now on (the GPS finish of a
        job with virtual finish time `f` still active in GPS); `t` if V is already past it."""
        if f <= self.v:
            return self.t
        t, v = self.t, self.v
        for i, (fk, _) in enumerate(sorted(self.heap)):
            n = len(self.heap) - i
            if fk <= v:
                continue
            stop = min(fk, f)
            t += (stop - v) * n / self.m
            v = stop
            if v >= f:
                break
        return t


class FluidGps:
    """The Ares artifact's non-linear fluid GPS (module doc): remaining fraction of each job
    active in GPS, advanced at share `min(M / N, cap_j)`; `order()` re-simulates to the end.

    `time_at(j, share)` = seconds job j needs for its whole work at that (fractional) share;
    the policy supplies it from the what-if step times (`interp_time`).
    """

    def __init__(self, capacity: float, time_at: Callable[[int, float], float]) -> None:
        self.m = float(capacity)
        self.time_at = time_at
        self.t = 0.0
        self.left: dict[int, float] = {}  # job → fraction of its work left in GPS
        self.cap: dict[int, float] = {}
        self.rank: dict[int, float] = {}  # job → predicted GPS finish (the priority key)
        self._rate: dict[tuple[int, int], float] = {}  # (job, N) → fraction per second

    def set_capacity(self, capacity: float) -> None:
        if float(capacity) != self.m:
            self._rate.clear()
        self.m = float(capacity)

    def _rates(self, jobs: list[int]) -> np.ndarray:
        n = len(jobs)
        out = np.empty(n)
        memo = self._rate
        for i, j in enumerate(jobs):
            r = memo.get((j, n))
            if r is None:
                s = min(self.m / n, self.cap[j])
                tt = self.time_at(j, s)
                r = memo[(j, n)] = 1.0 / tt if s > 0 and math.isfinite(tt) and tt > 0 else 0.0
            out[i] = r
        return out

    def _run(self, left: dict[int, float], t0: float, t_end: float, done: dict[int, float] | None) -> float:
        """Advance `left` (in place) from t0 to t_end (inf: until every job finishes)."""
        t = t0
        while left and t < t_end:
            jobs = list(left)
            rate = self._rates(jobs)
            if not (rate > 0).any():
                break
            rem = np.array([left[j] for j in jobs])
            with np.errstate(divide="ignore"):
                need = np.where(rate > 0, rem / np.where(rate > 0, rate, 1.0), np.inf)
            dt = float(need.min())
            if t + dt > t_end:
                dt = t_end - t
                for i, j in enumerate(jobs):
                    left[j] = rem[i] - rate[i] * dt
                t = t_end
                break
            t += dt
            for i, j in enumerate(jobs):
                r = rem[i] - rate[i] * dt
                if r <= 1e-12 * max(1.0, rem[i]) or need[i] <= dt:
                    del left[j]
                    if done is not None:
                        done[j] = t
                else:
                    left[j] = r
        return t

    def advance(self, t: float) -> None:
        if t > self.t:
            self._run(self.left, self.t, t, None)
            self.t = t

    def arrive(self, j: int, t: float, cap: float) -> None:
        """Job j enters GPS at `t` with its whole work; the priorities are recomputed."""
        self.advance(t)
        self.left[j] = 1.0
        self.cap[j] = float(cap)
        self.reorder()

    def reorder(self) -> None:
        """Predicted GPS finish of every job active in GPS (no future arrivals) → `rank`."""
        done: dict[int, float] = {}
        self._run(dict(self.left), self.t, math.inf, done)
        self.rank.update(done)


def interp_time(step_s: Callable[[int], float], work_iters: float, share: float) -> float:
    """Seconds for `work_iters` iterations at a fractional GPU `share`: the step time
    interpolated linearly between the integer counts around it, `step(1) / share` below one
    GPU (the Ares artifact's `GPSSystem`)."""
    if share <= 0:
        return math.inf
    if share < 1.0:
        return work_iters * step_s(1) / share
    lo = math.floor(share)
    hi = lo + 1 if share > lo else lo
    s_lo = step_s(lo)
    if hi == lo:
        return work_iters * s_lo
    s_hi = step_s(hi)
    if not math.isfinite(s_hi):
        return work_iters * s_lo
    w = share - lo
    return work_iters * ((1.0 - w) * s_lo + w * s_hi)
