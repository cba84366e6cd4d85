"""Dally: network-tier delay scheduling with network-sensitive preemption and the auto-tuner.

Sharma et al., "Dally: A network-placement sensitive cluster scheduler for deep learning",
IEEE BigData'25; the reading of every ambiguity is seeds/notes/dally.md §2 (named options).

One call = one round of resource offers (Fig. 3): the free GPUs, plus those of every running
job whose lease has expired (lease-based preemption), are offered to the waiting jobs in
increasing order of `Nw_sens`; each job accepts or rejects by Algorithm 1 (`offer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy
from policies.config import PolicyConfig, param
from policies.dally.tuner import MACHINE, MODES, NETWORK, RACK, DelayTuner
from policies.registry import POLICIES
from simcore.api import ClusterView, Decision

TIMERS = ("auto", "manual")
OFFER_ORDERS = ("nw_sens", "las")
_H = 3600.0
_EPS = 1e-6


@dataclass(frozen=True)
class DallyConfig(PolicyConfig):
    """Delay scheduling over network tiers. Waiting jobs are offered the free GPUs in increasing
    order of their network sensitivity Nw_sens = W_compl / T_norm (the fraction of their run time
    that was compute: jobs slowed most by the network come first; jobs that never ran come before
    all). A job takes a placement on one machine at once; it accepts a placement within one rack
    only after waiting the machine timer T_Mc, and anywhere in the network only after the
    (cumulative) rack timer T_Rk. Every allocation is a lease: when it expires the job's GPUs are
    offered again with the waiting jobs', its waiting clock restarting from zero, so a job that
    loses the auction or rejects a worse tier is preempted. Timers are tuned per (tier, GPU
    demand) to mean + 2 standard deviations of recent waiting times (`timers=auto`) or fixed."""

    reference: ClassVar[str] = ("Sharma et al., \"Dally: A network-placement sensitive cluster scheduler for deep "
                                "learning\", IEEE BigData'25")

    lease_s: float = param(
        3600.0, "lease length: a running job's GPUs are re-offered (and it may be preempted) when it expires",
        source="not in the paper; the authors' simulator's lease_time (notes §2.6: sweep 1 h and 2 h)")
    timers: str = param("auto", "auto = Algorithm 2 auto-tuner; manual = the fixed machine_timer_s / rack_timer_s",
                        choices=TIMERS)
    machine_timer_s: float = param(
        12 * _H, "T_Mc: wait before accepting a rack placement (manual timers; the auto-tuner's cold start in "
        "paper mode); inf = never", source="the paper's default, 12 h")
    rack_timer_s: float = param(
        24 * _H, "T_Rk: cumulative wait (same clock) before accepting a network placement (manual; cold start); "
        "inf = never", source="the paper's default, another 12 h = 24 h in total")
    mode: str = param(
        "paper", "auto-tuner reading: paper = mean + 2 sample sigma, every wait recorded, no clamps, empty list -> "
        "manual timers; artifact = the authors' code: population sigma, waits >= 1 lease only, floors 6/12 "
        "leases, caps 0.8H/H leases, empty list -> 1 lease (then clamped)", choices=MODES,
        source="notes §2.4")
    history_s: float = param(
        24 * _H, "auto-tuner history window: waiting times recorded longer ago are dropped (age-based sliding "
        "window); the paper: user-defined, smaller for larger clusters",
        source="not in the paper; 24 h here (notes §2.6: sweep)")
    record_renewals: bool = param(
        False, "record the zero wait of a job re-accepting a placement at its own lease expiry (false: only "
        "jobs that were waiting feed the auto-tuner)", source="not in the paper (artifact: such waits are < 1 "
        "lease and dropped)")
    offer_order: str = param(
        "nw_sens", "order of the resource offers: nw_sens = increasing Nw_sens, the paper's (jobs that paid no "
        "communication, such as one-GPU jobs, come last); las = least attained service (GPU-seconds), "
        "Tiresias' order, with Dally's timers and leases unchanged", choices=OFFER_ORDERS,
        source="the paper: nw_sens; las isolates what the offer order does to JCT (Tiresias' order, notes §6.2)")
    fit: str = param(
        "best-fit", "machine/rack choice when several qualify: best-fit = the one left with the fewest free GPUs "
        "(ties: lowest index); network placements span the fewest racks, then machines",
        choices=("best-fit",), source="notes §2.3 item 4 [I] (the artifact: first fit in hash order)")

    def validate(self) -> None:
        self.check("lease_s", self.lease_s > 0, "a positive number of seconds")
        self.check("machine_timer_s", self.machine_timer_s >= 0, "seconds >= 0 (inf allowed)")
        self.check("rack_timer_s", self.rack_timer_s >= 0, "seconds >= 0 (inf allowed)")
        self.check("history_s", self.history_s > 0, "a positive number of seconds")


@POLICIES.register("dally")
class Dally(BasePolicy):
    """Dally (IEEE BigData'25): Nw_sens order, Algorithm 1 delay scheduling per network tier, leases, Algorithm 2.

    - Nw_sens = W_compl / T_norm = (I_done / I_total) / (T_run / (t_compute × I_total)) =
      compute time / run time = 1 − exposed_comm_s / executed_s, from the job's own counters
      (the expected iteration count cancels). Jobs that never ran have none: they come first
      (the artifact's bid 0). Ties: earlier last resource assignment, then lower index.
      `offer_order=las` replaces Nw_sens by the attained GPU-seconds (Tiresias' order), all
      else unchanged, to separate what the order does from what the timers do.
    - Algorithm 1 on the pool: fits one machine → accept there; else reject while the
      starvation time (now − last resource assignment) < T_Mc; fits one rack → accept there;
      else reject while < T_Rk; else accept anywhere. A job larger than a machine has
      T_Mc = 0, one larger than a rack both 0. A rejecting job is skipped (no head-of-line
      blocking). The last assignment is the arrival, each start, and each lease expiry (the
      starvation clock restarts on preemption).
    - Machine and rack acceptances are recorded for the auto-tuner (network ones are not).
    - Leases: a running job keeps its GPUs until `lease_s` after it got them; then they join
      the offer. If it accepts its own GPUs again it simply continues (no restart).
    - Called on arrivals and completions, and woken at each lease expiry and at each time a
      waiting job's timer runs out (where the authors' simulator has a 60-s heartbeat).
    """

    name = "dally"
    Config = DallyConfig
    ignores_restart_ends = True

    def __init__(self, config: DallyConfig) -> None:
        super().__init__(config)
        c = config
        manual = (c.machine_timer_s, c.rack_timer_s)
        self.tuner = DelayTuner(c.mode, c.history_s, c.lease_s, *manual)
        self._n = -1
        self._last_now = -math.inf

    def _reset(self, view: ClusterView) -> None:
        n = view.jobs.num_jobs
        self._n = n
        self.last_assign = np.array(view.jobs.submit_time, np.float64, copy=True)
        self.lease_start = np.full(n, np.nan)
        self.tuner.lists.clear()
        c = view.cluster
        self._node_cap = int(c.node_num_gpus.max(initial=0))
        self._rack_cap = int(np.bincount(c.node_leaf, weights=c.node_num_gpus).max(initial=0))
        #: (time, job, tier, wait) of every acceptance: the decision log tests and reports read
        self.accepts: list[tuple[float, int, int, float]] = []

    # -- timers ------------------------------------------------------------------------
    def timers(self, demand: int, now: float) -> tuple[float, float]:
        """(T_Mc, T_Rk) for a job of `demand` GPUs now, with the oversized-job rule."""
        if demand > self._rack_cap:
            return 0.0, 0.0
        if self.config.timers == "manual":
            t_mc, t_rk = self.config.machine_timer_s, self.config.rack_timer_s
        else:
            t_mc, t_rk = self.tuner.timers(demand, now)
        return (0.0 if demand > self._node_cap else t_mc), t_rk

    def job_timers(self, view: ClusterView, j: int, demand: int, now: float) -> tuple[float, float]:
        """(T_Mc, T_Rk) of job j (Dally: by its GPU demand only, never its model; cached per call)."""
        t = self._tcache.get(demand)
        if t is None:
            t = self._tcache[demand] = self.timers(demand, now)
        return t

    def priority_key(self, view: ClusterView, cand: np.ndarray) -> np.ndarray:
        """Offer order key, ascending (NaN: never ran, offered first): Nw_sens, or the attained
        service with `offer_order=las`."""
        if self.config.offer_order == "las":
            return attained_service(view, cand)
        return self.nw_sens(view)[cand]

    def nw_sens(self, view: ClusterView) -> np.ndarray:
        """Nw_sens of every job (NaN for jobs that never ran)."""
        jobs = view.jobs
        ex = np.asarray(jobs.executed_s, np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            s = 1.0 - np.asarray(jobs.exposed_comm_s, np.float64) / ex
        return np.where(ex > 0, s, np.nan)

    def order(self, view: ClusterView, cand: np.ndarray) -> np.ndarray:
        """Candidates in offer order: never-run first, then increasing Nw_sens, earlier last
        resource assignment, lower index."""
        ns = self.priority_key(view, cand)
        never = np.isnan(ns)
        return cand[np.lexsort((cand, self.last_assign[cand], np.where(never, -1.0, ns), ~never))]

    # -- the round -----------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        if view.jobs.num_jobs != self._n or now < self._last_now:
            self._reset(view)
        self._last_now = now
        self._tcache: dict[int, tuple[float, float]] = {}
        r = self.round(view)
        lease = self.config.lease_s
        running = view.running()
        ls = self.lease_start[running]
        ls = np.where(np.isnan(ls), view.jobs.last_start[running], ls)
        self.lease_start[running] = ls
        expired = running[ls + lease <= now + _EPS]
        for k in expired.tolist():
            r.release(k)
            self.last_assign[k] = now  # the job loses its GPUs: the starvation clock restarts
        r.keep_all_undecided()
        cand = np.concatenate([view.queued().astype(np.int64), expired.astype(np.int64)])
        pool = r.avail()
        self._offers(view, r, self.order(view, cand), pool, set(expired.tolist()), now)
        return r.decision(wake_at=self._wake(view, r, cand, now))

    def _offers(self, view, r, order: np.ndarray, pool: np.ndarray, renewing: set[int], now: float) -> None:
        c = view.cluster
        node_free = np.bincount(c.gpu_node[pool], minlength=c.node_num_gpus.shape[0]).astype(np.int64)
        nleaf = int(c.node_leaf.max(initial=-1)) + 1
        rack_free = np.bincount(c.node_leaf, weights=node_free, minlength=nleaf).astype(np.int64)
        total = int(node_free.sum())
        dem = r.dem
        for j in order.tolist():
            g = int(dem[j])
            if g > total:
                continue  # no placement at any tier
            wait = now - self.last_assign[j]
            t_mc, t_rk = self.job_timers(view, j, g, now)
            tier, gpus = offer(c, pool, node_free, rack_free, g, wait, t_mc, t_rk, self._node_cap)
            if gpus is None:
                continue
            if j in renewing:
                cur = r.cur[j]
                if cur.size == g and pool[cur].all() and _tier(c, cur) <= tier:
                    gpus = cur  # its own GPUs qualify: it continues without a restart
            pool[gpus] = False
            np.subtract.at(node_free, c.gpu_node[gpus], 1)
            np.subtract.at(rack_free, c.node_leaf[c.gpu_node[gpus]], 1)
            total -= g
            feeds = j not in renewing or getattr(self.config, "record_renewals", False)
            if feeds and self.tuner.record(tier, g, now, wait):
                self._tcache.pop(g, None)  # Algorithm 2 runs at every offer: the new wait counts
            self.accepts.append((now, j, tier, wait))
            r.claim(j, gpus, keep=j in renewing and gpus is r.cur[j])
            self.last_assign[j] = now
            self.lease_start[j] = now

    def _wake(self, view, r, cand: np.ndarray, now: float) -> float | None:
        """Next lease expiry of a job running after this call, or next timer expiry of a waiting job."""
        new, _, kept = r.placed_parts()
        run = np.concatenate([new, kept]).astype(np.int64)
        t = float(np.min(self.lease_start[run])) + self.config.lease_s if run.size else math.inf
        placed = np.zeros(view.jobs.num_jobs, bool)
        placed[run] = True
        for j in cand.tolist():
            if placed[j]:
                continue
            g = int(r.dem[j])
            wait = now - self.last_assign[j]
            t_mc, t_rk = self.job_timers(view, j, g, now)
            th = t_mc if wait < t_mc else t_rk if wait < t_rk else math.inf  # line 10 rejects before line 18
            if th < math.inf:
                t = min(t, self.last_assign[j] + th)
        return t if math.isfinite(t) and t > now else None


def attained_service(view: ClusterView, cand: np.ndarray) -> np.ndarray:
    """Least-attained-service key of the candidates: GPU-seconds run (NaN for jobs that never ran)."""
    jobs = view.jobs
    svc = np.asarray(jobs.attained_gpu_s, np.float64)[cand]
    return np.where(np.asarray(jobs.executed_s)[cand] > 0, svc, np.nan)


def _tier(c, gpus: np.ndarray) -> int:
    nodes = c.gpu_node[gpus]
    if nodes.min() == nodes.max():
        return MACHINE
    leaves = c.node_leaf[nodes]
    return RACK if leaves.min() == leaves.max() else NETWORK


def offer(c, pool: np.ndarray, node_free: np.ndarray, rack_free: np.ndarray, g: int, wait_s: float, t_mc: float,
          t_rk: float, node_cap: int) -> tuple[int, np.ndarray | None]:
    """Algorithm 1 on one resource offer (`pool`: free GPUs; `node_free` / `rack_free`: their
    counts per machine / rack). Returns (tier, GPUs) on accept, (-1, None) on reject."""
    if g <= node_cap:
        fits = np.flatnonzero(node_free >= g)
        if fits.size:
            n = int(fits[np.argmin(node_free[fits])])
            return MACHINE, _take_node(c, pool, n, g)
    if wait_s < t_mc:
        return -1, None
    fits = np.flatnonzero(rack_free >= g)
    if fits.size:
        lf = int(fits[np.argmin(rack_free[fits])])
        nodes = np.flatnonzero(c.node_leaf == lf)
        return RACK, _take_nodes(c, pool, nodes, node_free, g)
    if wait_s < t_rk:
        return -1, None
    if int(node_free.sum()) < g:
        return -1, None
    out, need = [], g
    for lf in np.argsort(-rack_free, kind="stable").tolist():
        if need <= 0 or rack_free[lf] <= 0:
            break
        nodes = np.flatnonzero(c.node_leaf == lf)
        take = min(need, int(rack_free[lf]))
        out.append(_take_nodes(c, pool, nodes, node_free, take))
        need -= take
    return NETWORK, np.sort(np.concatenate(out))


def _take_node(c, pool: np.ndarray, n: int, g: int) -> np.ndarray:
    first = int(c.node_first_gpu[n])
    ids = np.arange(first, first + int(c.node_num_gpus[n]))
    return ids[pool[ids]][:g]


def _take_nodes(c, pool: np.ndarray, nodes: np.ndarray, node_free: np.ndarray, g: int) -> np.ndarray:
    """`g` free GPUs from `nodes`, fullest-free machines first (fewest machines spanned)."""
    out, need = [], g
    for n in nodes[np.argsort(-node_free[nodes], kind="stable")].tolist():
        if need <= 0:
            break
        f = int(node_free[n])
        if f <= 0:
            break
        got = _take_node(c, pool, n, min(f, need))
        out.append(got)
        need -= got.size
    return np.sort(np.concatenate(out))
