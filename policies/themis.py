"""Themis: finish-time-fairness auctions over GPU leases (NSDI'20), and the FTF LP that Ares runs.

Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI'20. A job's
finish-time fairness is ρ = T_sh / T_id: its finish time in the shared cluster over its
finish time on an isolated 1/N share. GPUs are leased; when leases expire the Arbiter
offers the GPUs to the ⌈(1 − f)·N⌉ jobs with the worst (largest) ρ (f: the fairness knob);
each job's Agent bids the ρ it would reach with each bundle; the Arbiter picks the bundles
that maximise the product of the participants' 1/ρ (proportional fairness, a
partial-allocation auction), charges each winner a *hidden payment* — it keeps only the
fraction c_i = ∏_{j≠i} 1/ρ_j(R) / ∏_{j≠i} 1/ρ_j(R without i) of its bundle — and hands the
leftover GPUs to the other jobs, worst ρ first, so no GPU idles.

Here (`Themis`, registered `themis`): every lease expires at a round boundary (`interval_s`,
360 s as in Ares); a job's bundle is its requested GPU count on one GPU type (Themis is
non-elastic in Ares' classification; a gang on one type, as every cosim placement); the
auction is a small MILP on the solver kit (`pf_auction`); a hidden payment c_i < 1 is
realised, since a gang cannot run on a fraction of its GPUs, by keeping the bundle with
probability c_i (`payment`). T_id is Gavel's isolated-share clock (`gavel.IsolatedClock`).

`ThemisFtfLp` (registered `themis-ftf-lp`): what the Ares artifact actually runs for
"Themis" (ares.md §6): Gavel's `finish_time_fairness_perf` LP realised by Gavel's rounds,
i.e. `gavel` with `objective=finish_time_fairness` fixed — the same code path as `gavel`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy
from policies.config import PlacedConfig, param
from policies.gavel import Gavel, GavelConfig, IsolatedClock, OracleWork, apply_types, isolated_throughput, job_matrix
from policies.registry import POLICIES
from policies.solvers import Model
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

PAYMENTS = ("probabilistic", "none")


def rho_table(elapsed_s: np.ndarray, rem: np.ndarray, tput: np.ndarray, iso_time_s: np.ndarray,
              lease_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(ρ[j, t], ρ0[j]): finish-time fairness if job j runs on type t (its requested count)
    from now on, and if it gets nothing this lease (it waits the lease, then runs on its
    fastest type). ρ = (time since arrival + remaining time) / isolated finish time; inf where
    the job cannot run on t."""
    tput = np.asarray(tput, float)
    iso = np.where(np.asarray(iso_time_s, float) > 0, iso_time_s, 1.0)
    el = np.asarray(elapsed_s, float)
    rem = np.asarray(rem, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(tput > 0, (el[:, None] + rem[:, None] / np.where(tput > 0, tput, 1.0)) / iso[:, None], np.inf)
    best = tput.max(axis=1) if tput.shape[0] else np.zeros(0)
    rho0 = np.where(best > 0, (el + lease_s + rem / np.where(best > 0, best, 1.0)) / iso, np.inf)
    return rho, rho0


def pf_auction(rho: np.ndarray, rho0: np.ndarray, sf: np.ndarray, free: np.ndarray,
               exclude: int | None = None) -> tuple[np.ndarray, float]:
    """Themis' proportional-fair choice: the type (or -1: nothing) for each participant that
    minimises Σ_j log ρ_j (= maximises ∏ 1/ρ_j), each winner taking sf_j GPUs of its type,
    at most free[t] per type. `exclude`: solve as if that participant were absent (its ρ
    term dropped). Returns (choice, Σ log ρ over the participants present)."""
    n, nt = rho.shape
    keep = np.ones(n, bool)
    if exclude is not None:
        keep[exclude] = False
    lr0, gain, ok, own, need = _own_best(rho, rho0, sf, free, keep)
    choice = np.full(n, -1, np.int64)
    base = float(lr0[keep].sum())
    if not ok.any():
        return choice, base
    if (need <= free).all():  # everyone gets its own best type: no contention, no program
        rows = np.flatnonzero(ok.any(axis=1))
        choice[rows] = own[rows]
        return choice, base + float(gain[rows, own[rows]].sum())
    m = Model()
    y = m.binary("y", (n, nt), ub=ok)
    m.add(y.sum(axis=1) <= 1.0)
    m.add(y.sum(axis=0, coef=np.asarray(sf, float)[:, None]) <= np.asarray(free, float))
    m.minimize(y.sum(coef=np.where(ok, gain, 0.0)))
    sol = m.solve()
    pick = sol["y"] > 0.5
    rows = np.flatnonzero(pick.any(axis=1))
    choice[rows] = pick[rows].argmax(axis=1)
    return choice, base + float(gain[rows, choice[rows]].sum())


def _own_best(rho: np.ndarray, rho0: np.ndarray, sf: np.ndarray, free: np.ndarray, keep: np.ndarray):
    """(log ρ0, gain = log ρ − log ρ0, usable bids, each participant's own best type, the GPUs
    per type if everyone took it): `pf_auction`'s preliminaries."""
    lr0 = np.log(np.where(np.isfinite(rho0), rho0, 1e300))
    gain = np.where(np.isfinite(rho), np.log(np.where(np.isfinite(rho), rho, 1.0)) - lr0[:, None], 0.0)
    ok = np.isfinite(rho) & (gain < 0) & keep[:, None] & (sf[:, None] <= free[None, :])
    own = np.where(ok, gain, np.inf).argmin(axis=1)
    bids = ok.any(axis=1)
    need = np.bincount(own[bids], weights=sf[bids], minlength=rho.shape[1])
    return lr0, gain, ok, own, need


def uncontended(rho: np.ndarray, rho0: np.ndarray, sf: np.ndarray, free: np.ndarray) -> bool:
    """Whether every participant's own best type fits at once (`pf_auction` needs no program)."""
    *_, need = _own_best(rho, rho0, sf, free, np.ones(rho.shape[0], bool))
    return bool((need <= free).all())


def hidden_payments(rho: np.ndarray, rho0: np.ndarray, sf: np.ndarray, free: np.ndarray,
                    choice: np.ndarray, total: float) -> np.ndarray:
    """c_i per participant (1 for those that won nothing): the fraction of its bundle winner i
    keeps, ∏_{j≠i} 1/ρ_j(R) / ∏_{j≠i} 1/ρ_j(R_{−i}) with R_{−i} the auction without i
    (Cole et al.'s partial allocation, as Themis uses it). In logs: exp(W_{−i} − (W − log ρ_i(R_i)))
    with W the minimised Σ log ρ.

    When the auction is uncontended (every participant gets its own best type, `uncontended`),
    so is every auction without one of them (removing a bidder only frees GPUs), hence
    R_{−i} gives every j ≠ i the same bundle as R and c_i = 1 for all: no re-auctions (the
    per-winner loop computed the same 1 up to float rounding, ~1e-16)."""
    c = np.ones(rho.shape[0])
    if uncontended(rho, rho0, sf, free):  # c_i = 1 exactly (below): no re-auction needed
        return c
    lr = np.where(np.isfinite(rho), np.log(np.where(np.isfinite(rho), rho, 1.0)), np.inf)
    for i in np.flatnonzero(choice >= 0).tolist():
        others = total - float(lr[i, choice[i]])
        _, w_minus = pf_auction(rho, rho0, sf, free, exclude=i)
        c[i] = math.exp(min(0.0, w_minus - others))
    return c


def leftover(order: np.ndarray, rho: np.ndarray, sf: np.ndarray, left: np.ndarray,
             chosen: np.ndarray) -> None:
    """Work-conserving hand-out of the GPUs nobody won: jobs in `order` (worst ρ first) that
    have no type yet take the type with their lowest ρ among those with sf_j GPUs left."""
    for j in order.tolist():
        if chosen[j] >= 0:
            continue
        fits = np.isfinite(rho[j]) & (left >= sf[j])
        if fits.any():
            t = int(np.where(fits, rho[j], np.inf).argmin())
            chosen[j] = t
            left[t] -= sf[j]


@dataclass(frozen=True)
class ThemisConfig(PlacedConfig):
    """Themis: every round the GPU leases expire and the GPUs are auctioned. The jobs furthest
    from their fair finish time (largest ρ = finish time in the shared cluster / on an isolated
    1/N share) — the worst ⌈(1 − f)·N⌉ of the N active jobs — bid the ρ each GPU type would
    give them at their requested count; the winners are the bundles maximising the product of
    1/ρ; each winner keeps its bundle with probability equal to its hidden payment fraction;
    GPUs nobody won go to the other jobs, worst ρ first. Reads the duration oracle (remaining
    work) as Themis' agents estimate it."""

    reference: ClassVar[str] = ("Mahajan et al., \"Themis: Fair and Efficient GPU Cluster Scheduling\", NSDI'20; "
                                "as configured in the Ares comparison (seeds/notes/ares.md §6)")

    fairness_knob: float = param(
        0.8,
        "f in [0, 1): the auction is offered to the ⌈(1 − f)·N⌉ active jobs with the largest ρ (at least one); "
        "f = 0 auctions among all jobs (most efficient), f → 1 only the worst job (fairest)",
        unit="fraction", source="Themis §3/§5 (f = 0.8 in its evaluation; background knowledge, not in ares.md)")
    payment: str = param(
        "probabilistic",
        "hidden payment: probabilistic = a winner keeps its bundle this lease with probability c_i (its "
        "partial-allocation fraction; a gang cannot run on a fraction of its GPUs), else the bundle joins the "
        "leftover; none = winners keep their whole bundle (a plain proportional-fair auction)",
        choices=PAYMENTS, source="Themis §4 partial allocation (Cole et al.); realisation for gangs: cosim")
    interval_s: float | None = param(360.0, "lease length = round length: every lease expires at each round",
                                     source="ares.md §6 (Themis round 360 s)")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None, "a positive number of seconds (Themis is lease-based)")
        self.check("fairness_knob", 0.0 <= self.fairness_knob < 1.0, "a fraction in [0, 1)")


@POLICIES.register("themis")
class Themis(BasePolicy):
    """Themis (NSDI'20): finish-time-fairness auctions of GPU leases among the worst-off jobs, hidden payments, leftover to the rest.

    - ρ per job and type (`rho_table`): (time since arrival + remaining samples / throughput
      on that type) / isolated finish time (`gavel.IsolatedClock` on Gavel's 1/N share).
    - Participants: the ⌈(1 − f)·N⌉ jobs with the largest ρ of their current state (running:
      ρ on its type; waiting: ρ0, the lease spent waiting).
    - Winners: `pf_auction` over every online GPU (all leases expire each round); payments
      `hidden_payments`; leftover GPUs `leftover`; placement `gavel.apply_types`.
    """

    name = "themis"
    Config = ThemisConfig

    def __init__(self, config: ThemisConfig) -> None:
        super().__init__(config)
        self.event_driven = False
        self.needs = frozenset({NEED_DURATION_ORACLE})
        self.work = OracleWork()
        self.iso_clock = IsolatedClock()
        #: the last round's outcome, for tests and reports: participants, choice, payments
        self.last: dict[str, np.ndarray] = {}

    def decide(self, view: ClusterView, now: float) -> Decision:
        jobs = np.asarray(view.active(), np.int64)
        tput, sf, num = job_matrix(view, jobs)
        rem = self.work.samples(view, jobs)
        iso_time = self.iso_clock.update(jobs, rem, isolated_throughput(tput, sf, num))
        rho, rho0 = rho_table(now - view.jobs.submit_time[jobs], rem, tput, iso_time, float(self.config.interval_s))
        cur = self._current_type(view, jobs)
        rho_now = np.where(cur >= 0, rho[np.arange(jobs.size), np.maximum(cur, 0)], rho0)
        order = np.lexsort((jobs, -np.where(np.isfinite(rho_now), rho_now, 1e300)))  # worst ρ first
        k = max(1, math.ceil((1.0 - self.config.fairness_knob) * jobs.size)) if jobs.size else 0
        part = order[:k]
        free = num.astype(np.int64)
        choice, total = pf_auction(rho[part], rho0[part], sf[part], free)
        pay = np.ones(part.size)
        if self.config.payment == "probabilistic":
            pay = hidden_payments(rho[part], rho0[part], sf[part], free, choice, total)
            lost = (choice >= 0) & (self.rng.random(part.size) >= pay)
            forfeit = part[lost]
            choice = np.where(lost, -1, choice)
        else:
            forfeit = part[:0]
        chosen = np.full(jobs.size, -1, np.int64)
        chosen[part] = choice
        left = free - np.bincount(chosen[chosen >= 0], weights=sf[chosen >= 0], minlength=free.size).astype(np.int64)
        rest = order[~np.isin(order, forfeit)]
        leftover(rest, rho, sf, left, chosen)
        self.last = {"jobs": jobs, "participants": jobs[part], "choice": choice, "payment": pay, "chosen": chosen,
                     "rho": rho_now}
        d, _ = apply_types(self, view, jobs, chosen, sf)
        return d

    @staticmethod
    def _current_type(view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """The GPU type each job runs on now, -1 if it is not running."""
        out = np.full(jobs.size, -1, np.int64)
        last = view.jobs.last_gpu_type
        if last is not None:  # the engine's column: one gather
            run = np.isin(jobs, view.running())
            out[run] = np.asarray(last)[jobs[run]]
            return out
        running = set(view.running().tolist())
        for i, j in enumerate(jobs.tolist()):
            if j in running:
                g = view.allocation_of(j)
                out[i] = int(view.cluster.gpu_type[g[0]]) if len(g) else -1
        return out


@dataclass(frozen=True)
class ThemisFtfLpConfig(GavelConfig):
    """Themis as the Ares artifact runs it: Gavel's finish-time-fairness LP (minimise the largest
    ρ over the time fractions X[job, type], heterogeneity-aware) realised by Gavel's 360-s
    priority rounds. Every parameter is Gavel's; the objective is fixed to finish_time_fairness."""

    reference: ClassVar[str] = ("Themis (NSDI'20) as implemented by Gavel's finish_time_fairness_perf policy, the "
                                "form the Ares artifact runs (seeds/notes/ares.md §6)")

    objective: str = param("finish_time_fairness", "fixed: Gavel's finish_time_fairness_perf (use `gavel` for others)",
                           choices=("finish_time_fairness",), source="ares.md §6 [A]")


@POLICIES.register("themis-ftf-lp")
class ThemisFtfLp(Gavel):
    """Themis as Ares runs it: Gavel's finish-time-fairness LP (the `gavel` policy with objective=finish_time_fairness)."""

    name = "themis-ftf-lp"
    Config = ThemisFtfLpConfig
