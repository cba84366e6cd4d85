"""Dally's delay timers: Algorithm 2 (the auto-tuner) and the manual timers of its variants.

Sharma et al., IEEE BigData'25, Sec. IV-B3; seeds/notes/dally.md §2.4. For each network tier
(machine, rack) and GPU demand there is one list of the waiting times with which jobs of that
demand accepted a placement at that tier; the timer is mean + 2 σ of the list within an
age-limited history window. Two readings (the `mode` of `DelayTuner`):

- ``paper``: sample σ (n − 1); n = 1 gives σ = 0; an empty list falls back to the manual
  timers (the paper's defaults 12 h / 24 h); every waiting time is recorded; no clamps.
- ``artifact``: the authors' code (cluster-sim, notes §2.4 [R]), in lease units: population σ;
  only waits of at least one lease are recorded; an empty list (or one summing to 0) gives one
  lease; T_Mc = min(ceil(0.8 H), max(6, ceil(mean + 2σ))), T_Rk = min(H, max(12, ceil(…))),
  H = the history window in leases. (The artifact prunes old entries only when a new one is
  added, with an index bug that can skip entries; here the window is applied at every read.)
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

MACHINE, RACK, NETWORK = 0, 1, 2
TIER_NAMES = ("machine", "rack", "network")
MODES = ("paper", "artifact")


class DelayTuner:
    """Per-(tier, demand) waiting-time lists and the timers they give (`timers`)."""

    def __init__(self, mode: str, history_s: float, lease_s: float, manual_machine_s: float,
                 manual_rack_s: float, floors_leases: tuple[float, float] = (6.0, 12.0),
                 cap_fraction: float = 0.8) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.history_s = float(history_s)
        self.lease_s = float(lease_s)
        self.manual = (float(manual_machine_s), float(manual_rack_s))
        self.floors = floors_leases
        self.cap_fraction = cap_fraction
        self.lists: dict[tuple[int, int], deque] = {}

    def record(self, tier: int, demand: int, now: float, wait_s: float) -> bool:
        """`update_demand_delay`: a job of `demand` GPUs accepted a `tier` placement after
        waiting `wait_s`. Network acceptances are not recorded (Algorithm 1). True if kept."""
        if tier not in (MACHINE, RACK):
            return False
        if self.mode == "artifact" and wait_s < self.lease_s:
            return False
        lst = self.lists.get((tier, int(demand)))
        if lst is None:
            lst = self.lists[(tier, int(demand))] = _Window()
        lst.add(float(now), float(wait_s))
        return True

    def window(self, tier: int, demand: int, now: float) -> np.ndarray:
        """Waiting times of the list within the history window (older entries dropped)."""
        lst = self.lists.get((tier, int(demand)))
        if lst is None:
            return np.zeros(0)
        lst.prune(now - self.history_s)
        return np.fromiter((w for _, w in lst.q), np.float64, len(lst.q))

    def statistic(self, waits: np.ndarray) -> float:
        """mean + 2 σ (sample σ in paper mode, population σ in artifact mode)."""
        n = waits.shape[0]
        if n == 0:
            return math.nan
        ddof = 1 if self.mode == "paper" else 0
        sd = float(waits.std(ddof=ddof)) if n > ddof else 0.0
        return float(waits.mean()) + 2.0 * sd

    def _stat(self, tier: int, demand: int, now: float, scale: float) -> tuple[int, float, float]:
        """(n, sum, mean + 2 σ) of the windowed list in units of `scale` seconds, from the
        list's running sums (O(1) per call: Algorithm 2 runs at every offer)."""
        lst = self.lists.get((tier, int(demand)))
        if lst is None:
            return 0, 0.0, math.nan
        lst.prune(now - self.history_s)
        n = len(lst.q)
        if n == 0:
            return 0, 0.0, math.nan
        mean = lst.s1 / n
        ddof = 1 if self.mode == "paper" else 0
        var = max(0.0, (lst.s2 - n * mean * mean) / (n - ddof)) if n > ddof else 0.0
        return n, lst.s1 / scale, (mean + 2.0 * math.sqrt(var)) / scale

    def timers(self, demand: int, now: float) -> tuple[float, float]:
        """(T_Mc, T_Rk) in seconds for a job of `demand` GPUs (Algorithm 2)."""
        out = []
        for tier in (MACHINE, RACK):
            if self.mode == "paper":
                n, _, stat = self._stat(tier, demand, now, 1.0)
                out.append(self.manual[tier] if n == 0 else stat)
                continue
            lease = self.lease_s
            h = self.history_s / lease
            n, total, stat = self._stat(tier, demand, now, lease)
            val = 1.0 if n == 0 or total == 0.0 else math.ceil(stat - 1e-9)
            cap = math.ceil(self.cap_fraction * h) if tier == MACHINE else h
            val = min(cap, max(self.floors[tier], val))
            out.append(val * lease)
        return out[0], out[1]


class _Window:
    """One (tier, demand) list: (time, wait) entries in time order with running sums.

    Evicting a large wait from running sums cancels catastrophically (σ of the small waits left
    behind drowns in the rounding of the large one's square), so the sums are recomputed exactly
    from the entries once the sum of squares has fallen 1,000× below its value at the last exact
    sum, or after as many evictions as entries remain (amortised O(1) per entry)."""

    __slots__ = ("q", "s1", "s2", "peak", "popped")

    def __init__(self) -> None:
        self.q: deque = deque()
        self.s1 = 0.0
        self.s2 = 0.0
        self.peak = 0.0  # largest s2 since the last exact recomputation
        self.popped = 0  # evictions since the last exact recomputation

    def add(self, t: float, w: float) -> None:
        self.q.append((t, w))
        self.s1 += w
        self.s2 += w * w
        self.peak = max(self.peak, self.s2)

    def prune(self, horizon: float) -> None:
        q = self.q
        if not q or q[0][0] >= horizon:
            return
        while q and q[0][0] < horizon:
            _, w = q.popleft()
            self.s1 -= w
            self.s2 -= w * w
            self.popped += 1
        if self.popped >= len(q) or self.s2 < 1e-3 * self.peak:
            self.s1 = math.fsum(w for _, w in q)
            self.s2 = math.fsum(w * w for _, w in q)
            self.peak, self.popped = self.s2, 0
