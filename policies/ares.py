"""Ares: Elastic Fair Queuing (EFQ) of endo-elastic data-parallel jobs.

Liu et al., "Ares: Fair and Efficient Scheduling of Deep Learning Jobs with Elastic Fair
Queuing", ACM TACO 22(4), 2025 (`../shared/seeds/notes/ares.md` §2). What a call does:

1. **GPS priority** (`policies.ares_gps`): every job that arrived since the last call gets
   its virtual finish time `F_j = V(a_j) + L_j` once, from the virtual clock `dV/dt = M/N_t`
   (paper), or the artifact's fluid GPS re-simulated at each arrival (`gps_mode`).
   `L_j` = GPU-seconds of the whole job at its demanded count `d_j` (`d_j · T_j(d_j)`,
   Table 1), or at one GPU (`work_baseline=one_gpu`, the artifact's linear variant).
2. **Only when the job set changed** (an arrival or a completion; or GPUs went offline)
   does it decide; otherwise every job keeps its GPUs (`decide_on`).
3. **α-doubling in F-order** (ascending `F_j`, ties by arrival then index): each job's
   target starts at its demand (`alpha_start`) and doubles while the normalised per-GPU
   efficiency `eff(g) = (X(g)/g) / (X(base)/base)` stays ≥ `alpha` (throughput `X` at the
   job's fixed global batch, from the what-if query on a consolidated placement; `base` =
   the demand, or one GPU in artifact mode) and the job's `max_gpus` allows; a job gets
   `min(target, GPUs left)` — the leftover may be below its demand and not a power of two
   (Fig. 4) — so a later job with a smaller F takes GPUs from larger-F jobs (preemption).
   The artifact's extra pass (`topup_leftover`) then grows jobs, in the same order, to the
   largest power of two with a positive marginal speedup that the free GPUs allow.
4. **Placement**: jobs whose count is unchanged keep their GPUs; the others are placed
   smallest count first with `placement` (default `consolidate`: fewest nodes, then leaves).
   The engine charges the real placement's speed and the restart cost of every change.

Jobs are endo-elastic: the engine runs them at their fixed global batch, local batch
`ceil(B/g)` with gradient accumulation past the model's memory limit, and their work is a
fixed number of iterations at that batch (epochs × dataset samples), so no goodput bonus.

Ares assumes job sizes are known (users give epochs; throughput is profiled per power-of-two
DoP), so it reads the engine's remaining-time oracle at arrival to compute `L_j`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.ares_gps import FluidGps, VirtualClock, interp_time
from policies.base import BasePolicy
from policies.config import PlacedConfig, param
from policies.optimus import apply_counts
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

MODES = ("paper", "artifact")
#: what each "auto" option resolves to, per mode (notes §2.10)
MODE_DEFAULTS = {
    "paper": {"gps_mode": "linear_vclock", "work_baseline": "demand", "alpha_baseline": "demand",
              "alpha_start": "demand", "topup_leftover": "off", "gps_cap": "none"},
    "artifact": {"gps_mode": "fluid_nonlinear", "work_baseline": "one_gpu", "alpha_baseline": "one_gpu",
                 "alpha_start": "one", "topup_leftover": "on", "gps_cap": "max_gpus"},
}


@dataclass(frozen=True)
class AresConfig(PlacedConfig):
    """Elastic Fair Queuing: jobs are served in the order they would finish under ideal fair
    sharing (GPS), each given up to double, quadruple … its requested GPUs while its per-GPU
    efficiency stays at least `alpha`; a newly arrived job that would finish earlier in GPS
    takes GPUs from jobs that would finish later. Decisions change only when a job arrives or
    completes. `mode` picks the paper's or the authors' artifact's reading of every detail the
    paper leaves open; each detail is also its own option (`auto` = as `mode` says)."""

    reference: ClassVar[str] = ("Liu et al., \"Ares: Fair and Efficient Scheduling of Deep Learning Jobs with "
                                "Elastic Fair Queuing\", ACM TACO 22(4), 2025")

    mode: str = param("paper", "paper: the paper's algorithm (virtual clock, doubling from the demand, no top-up); "
                      "artifact: the authors' simulator (fluid non-linear GPS, efficiency vs 1 GPU, doubling from "
                      "1 GPU, leftover top-up, GPS capped at max_gpus)", choices=MODES,
                      source="ares.md §2.3-2.5, §2.10")
    alpha: float = param(0.75, "scaling-control threshold: a job's GPUs double only while its normalised per-GPU "
                         "efficiency stays >= alpha (0 < alpha <= 1)", source="ares.md §2.4 (paper default 0.75)")
    gps_mode: str = param("auto", "GPS priority: linear_vclock = the paper's virtual clock dV/dt = M/N_t, "
                          "F = V(arrival) + L, O(log N); fluid_nonlinear = the artifact's fluid GPS with "
                          "non-linear step times, re-simulated at each arrival",
                          choices=("auto", "linear_vclock", "fluid_nonlinear"), source="ares.md §2.3 (item 2)")
    gps_cap: str = param("auto", "fluid GPS only: a job's share is min(M/N, cap): none = uncapped (the paper: "
                         "'arbitrarily divisible'), max_gpus = the job's max_gpus (artifact's max_replicas)",
                         choices=("auto", "none", "max_gpus"), source="ares.md §2.10 item 2")
    work_baseline: str = param("auto", "L_j, the job's GPU-seconds: demand = d·T(d) at its requested count "
                               "(Table 1), one_gpu = T(1) (the artifact's linear variant)",
                               choices=("auto", "demand", "one_gpu"), source="ares.md §2.10 item 1")
    alpha_baseline: str = param("auto", "per-GPU efficiency relative to: demand = the requested count (the paper's "
                                "proof), one_gpu = one GPU (artifact)", choices=("auto", "demand", "one_gpu"),
                                source="ares.md §2.4, §2.10 item 4")
    alpha_start: str = param("auto", "doubling starts at: demand = the requested count (paper), one = 1 GPU "
                             "(artifact, which ignores the request)", choices=("auto", "demand", "one"),
                             source="ares.md §2.4, §2.10 item 5")
    topup_leftover: str = param("auto", "on: after the alpha pass, free GPUs go in priority order, each job "
                                "growing to the largest power of two with a positive marginal speedup "
                                "(artifact); off: they stay idle (paper)", choices=("auto", "on", "off"),
                                source="ares.md §2.5, §2.10 item 6")
    idle_clock: str = param("freeze", "virtual clock while no job is active in GPS: freeze (WFQ convention) or "
                            "reset to 0", choices=("freeze", "reset"), source="ares.md §2.10 item 3 [I]")
    tie_break: str = param("arrival", "order of jobs with equal F: arrival = earlier arrival first, then trace order; "
                           "work = smaller L_j first, then arrival", choices=("arrival", "work"),
                           source="ares.md §2.10 item 7 (unspecified; arrival recommended)")
    decide_on: str = param("job_set_change", "job_set_change: decide only when a job arrived or completed (or "
                           "GPUs went offline), else keep every allocation (artifact); every_call: re-run the "
                           "allocation at every call", choices=("job_set_change", "every_call"),
                           source="ares.md §2.10 item 12")

    def validate(self) -> None:
        self.check("alpha", 0.0 < self.alpha <= 1.0, "a number in (0, 1]")

    def resolved(self, key: str) -> str:
        """The option's value with `auto` replaced by what `mode` says."""
        v = getattr(self, key)
        return MODE_DEFAULTS[self.mode][key] if v == "auto" else v


@POLICIES.register("ares")
class Ares(BasePolicy):
    """Ares (TACO'25): Elastic Fair Queuing — GPS-finish order, α-capped doubling, preemption of larger-F jobs.

    - Priority: `F_j = V(a_j) + L_j` once at arrival from the GPS virtual clock (min-heap,
      O(log N)), or the artifact's fluid GPS order (`gps_mode`).
    - Allocation, in ascending F: the doubling target (`alpha`, `alpha_baseline`,
      `alpha_start`, capped by `max_gpus`), or what is left; optional artifact top-up.
    - Decides only when the job set changes (`decide_on`); unchanged jobs keep their GPUs;
      changed ones are placed smallest first with `placement`.
    - Reads the remaining-time oracle once per job, at arrival, for `L_j` (Ares assumes
      known epochs and profiled throughput).
    """

    name = "ares"
    Config = AresConfig
    ignores_restart_ends = True  # nothing Ares reads moves when a restart ends

    def __init__(self, config: AresConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE})
        r = config.resolved
        self.gps_mode, self.work_baseline = r("gps_mode"), r("work_baseline")
        self.alpha_baseline, self.alpha_start = r("alpha_baseline"), r("alpha_start")
        self.topup, self.gps_cap = r("topup_leftover") == "on", r("gps_cap")
        self.clock: VirtualClock | None = None
        self.fluid: FluidGps | None = None
        self.F: dict[int, float] = {}  # virtual finish time (linear) / predicted GPS finish (fluid)
        self.L: dict[int, float] = {}  # GPU-seconds at the baseline count (linear mode)
        self.work_s: dict[int, float] = {}  # job → seconds of its whole run at its demand (consolidated)
        self.target: dict[int, int] = {}  # job → α-doubling GPU count
        self._step: dict[tuple[int, int], float] = {}  # (job, g) → s per iteration, consolidated
        self._last_active: np.ndarray | None = None
        self._last_online = -1
        self.decisions = 0  # calls that re-ran the allocation (for metrics and tests)

    # ---- what-if helpers ----------------------------------------------------------------
    def step_s(self, view: ClusterView, j: int, g: int) -> float:
        """Seconds per iteration of job j on g GPUs consolidated, at its fixed global batch."""
        key = (j, g)
        s = self._step.get(key)
        if s is None:
            b = int(view.jobs.global_batch[j])
            s = float(view.iteration_time(j, g, b)) if 0 < g <= view.cluster.num_gpus and g <= b else math.inf
            self._step[key] = s
        return s

    def efficiency(self, view: ClusterView, j: int, g: int) -> float:
        """Normalised per-GPU efficiency of job j at g GPUs (notes §2.4): (X(g)/g)/(X(b)/b),
        b the demand or one GPU (`alpha_baseline`); X ∝ 1/step at the fixed global batch."""
        base = self._demand(view, j) if self.alpha_baseline == "demand" else 1
        s_g, s_b = self.step_s(view, j, g), self.step_s(view, j, base)
        if not (math.isfinite(s_g) and math.isfinite(s_b)):
            return 0.0
        return (base * s_b) / (g * s_g)

    def doubling_target(self, view: ClusterView, j: int) -> int:
        """The α-capped GPU count of job j: from its demand (or 1), doubled while the next
        count's efficiency is ≥ alpha and within max_gpus and the cluster."""
        cap = min(int(view.jobs.max_gpus[j]), view.cluster.num_gpus)
        g = self._demand(view, j) if self.alpha_start == "demand" else 1
        g = max(min(g, cap), 1)
        while 2 * g <= cap and self.efficiency(view, j, 2 * g) >= self.config.alpha:
            g *= 2
        return g

    @staticmethod
    def _demand(view: ClusterView, j: int) -> int:
        jb = view.jobs
        return int(min(max(int(jb.num_gpus[j]), int(jb.min_gpus[j]), 1), max(int(jb.max_gpus[j]), 1)))

    # ---- GPS bookkeeping ----------------------------------------------------------------
    def _gps(self, view: ClusterView) -> VirtualClock | FluidGps:
        """The policy's GPS reference, built on the first call with the GPUs online then."""
        self._view = view
        if self.clock is None and self.fluid is None:
            online = int(np.count_nonzero(view.cluster.gpu_online))
            if self.gps_mode == "linear_vclock":
                self.clock = VirtualClock(online, self.config.idle_clock)
            else:
                self.fluid = FluidGps(online, self._fluid_time)
        return self.clock if self.clock is not None else self.fluid

    def _arrive(self, view: ClusterView, jobs: list[int]) -> None:
        self._gps(view)
        jb = view.jobs
        for j in sorted(jobs, key=lambda k: (float(jb.submit_time[k]), k)):
            d = self._demand(view, j)
            rem = float(jb.remaining_s[j])
            self.target[j] = self.doubling_target(view, j)
            if not (math.isfinite(rem) and rem > 0):
                # unknown work: served after every job with a GPS finish time, kept out of the
                # GPS reference (the paper puts jobs of unknown demand in a separate pool, §2.8)
                self.work_s[j] = self.L[j] = self.F[j] = math.inf
                continue
            self.work_s[j] = rem
            a = float(jb.submit_time[j])
            if self.gps_mode == "linear_vclock":
                g0 = d if self.work_baseline == "demand" else 1
                t0 = rem if g0 == d else rem * self.step_s(view, j, 1) / self.step_s(view, j, d)
                self.L[j] = g0 * t0
                self.F[j] = self.clock.arrive(j, a, self.L[j])
            else:
                cap = float(jb.max_gpus[j]) if self.gps_cap == "max_gpus" else math.inf
                self.fluid.arrive(j, a, cap)
        if self.fluid is not None and jobs:
            self.F.update(self.fluid.rank)

    def _fluid_time(self, j: int, share: float) -> float:
        view = self._view
        d = self._demand(view, j)
        iters = self.work_s[j] / self.step_s(view, j, d)
        return interp_time(lambda g: self.step_s(view, j, g), iters, share)

    # ---- the decision -------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        online = int(np.count_nonzero(view.cluster.gpu_online))
        gps = self._gps(view)
        active = view.active()
        new = [int(j) for j in active.tolist() if int(j) not in self.F]
        self._arrive(view, new)
        gps.advance(now)  # at the capacity the GPS had since the last call
        gps.set_capacity(online)  # a capacity change calls the policy at its instant
        changed = (self._last_active is None or not np.array_equal(active, self._last_active)
                   or online != self._last_online or self._lost_gpus(view))
        self._last_active, self._last_online = active.copy(), online
        if not changed and self.config.decide_on == "job_set_change":
            return self._keep(view)
        self.decisions += 1
        order = self.priority_order(view, active)
        counts = self.allocate(view, order, online)
        return apply_counts(self, view, order, counts, self.config.placement)

    def priority_order(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        """Active jobs by ascending F, ties by arrival then index, or by L first (`tie_break`)."""
        jl = active.tolist()
        sub = view.jobs.submit_time
        F, inf = self.F, math.inf
        if self.config.tie_break == "work":
            w = self.L if self.L else self.work_s
            return np.asarray(sorted(jl, key=lambda k: (F.get(k, inf), w.get(k, inf), float(sub[k]), k)), np.int64)
        return np.asarray(sorted(jl, key=lambda k: (F.get(k, inf), float(sub[k]), k)), np.int64)

    def allocate(self, view: ClusterView, order: np.ndarray, total: int) -> np.ndarray:
        """GPU counts of `order` (priority order): α-target or the leftover, then the top-up."""
        jb = view.jobs
        free = total
        counts = np.zeros(order.size, np.int64)
        for i, j in enumerate(order.tolist()):
            if free <= 0:
                break
            g = min(self.target[j], free)
            while g >= max(int(jb.min_gpus[j]), 1) and not math.isfinite(self.step_s(view, j, g)):
                g -= 1  # cannot run there (memory): the largest count below that can
            if g < max(int(jb.min_gpus[j]), 1):
                continue
            counts[i] = g
            free -= g
        if self.topup and free > 0:
            for i, j in enumerate(order.tolist()):
                if free <= 0:
                    break
                x = int(counts[i])
                if x == 0:
                    continue
                cap = min(int(jb.max_gpus[j]), x + free)
                y = 1 << x.bit_length()  # the next power of two above x
                while y <= cap and self.step_s(view, j, y) < self.step_s(view, j, x):
                    x = y
                    y <<= 1
                free -= x - int(counts[i])
                counts[i] = x
        return counts

    def _keep(self, view: ClusterView) -> Decision:
        if view.accepts_changes:
            return Decision({}, changes_only=True)
        return Decision(view.keep_running())

    @staticmethod
    def _lost_gpus(view: ClusterView) -> bool:
        """A running job holds a GPU that went offline (capacity change): re-decide."""
        c = view.cluster
        off = ~c.gpu_online
        return bool(off.any() and (c.gpu_owner[off] >= 0).any())

    # ---- for tests and metrics ----------------------------------------------------------
    def gps_finish_time(self, j: int) -> float:
        """Wall-clock time job j finished (or, with no further arrival, will finish) in GPS."""
        if self.clock is not None:
            done = self.clock.gps_done.get(j)
            return done if done is not None else self.clock.finish_time(self.F[j])
        return self.F[j]


@dataclass(frozen=True)
class AresArtifactConfig(AresConfig):
    """Ares as the authors' artifact simulator runs it (`mode=artifact`): the fluid non-linear
    GPS order re-simulated at each arrival, per-GPU efficiency relative to one GPU, doubling
    from one GPU whatever the request, leftover GPUs topped up to the largest power of two
    that still speeds a job up. Every option of `ares` applies."""

    mode: str = param("artifact", "paper or artifact (see `ares`)", choices=MODES, source="ares.md §2.3-2.5")


@POLICIES.register("ares-artifact")
class AresArtifact(Ares):
    """Ares as its artifact simulator runs it: fluid non-linear GPS order, efficiency vs 1 GPU, doubling from 1 GPU, leftover top-up."""

    name = "ares-artifact"
    Config = AresArtifactConfig
