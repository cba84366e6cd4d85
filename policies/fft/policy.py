"""FFT (Mo, Xu, Lau, ICS'25): fast and fair training on heterogeneous GPUs — the policy.

Every `interval_s` (5 min) round FFT solves the per-round ILP of `policies.fft.core` over the
active jobs × GPU types and hands each selected job's type to a host placer (`place_type`):
within a type, multi-GPU jobs are packed on the fewest hosts (best fit), a job that stays on
its type keeps its hosts (so the optimistic s = 0 of same-type continuation holds), and at a
churn round (arrivals, completions, capacity change) jobs spread over several hosts move onto
one host where one has room, cheapest migration first. Optional dataset locality breaks ties
towards hosts that hold the job's dataset (LRU slots per host).

Units (notes A1): time in rounds; a job's work W_j in "epochs" of `work_unit_s` seconds of
its reference run (the engine's consolidated run at the requested count, i.e. the Philly
duration on the trace's reference type: W_j = D_j / work_unit_s); θ_j^i = W units per round
on d_j GPUs of type i from the what-if throughput matrix, relative to the reference run. The
switching penalty is (state bytes / inter-host bandwidth + fixed restart overhead) / round.
Reads the duration oracle (FFT's users state their epochs; `work_error` perturbs them).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy, Round
from policies.config import PolicyConfig, param
from policies.fft import core
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FFTConfig(PolicyConfig):
    """FFT: every round (5 min) an integer program gives each active job one GPU type or none:
    it minimises, over the jobs it runs, an SRSF-like completion-time cost, a switching penalty
    (state-transfer time when the job changes type) and a fairness reward ρ_j·θ that grows while
    a job falls behind its progress on a 1/N share of the cluster; at least K(t) GPUs stay busy.
    A placer then packs each type's jobs on the fewest 4-GPU hosts and keeps continuing jobs on
    their hosts. Reads the duration oracle (users state their epochs).

    Ambiguities of the paper (seeds/notes/fft.md §2.10) without a parameter: A8 negative costs may
    run more than K(t) GPUs (kept: K is a lower bound); A9 μ_j = (t − a_j)/(τ_j − a_j) as written
    (0 at arrival, unbounded); A14 a job larger than every type's online GPUs gets θ = 0 there and
    is logged once ("can never run") and counted (`fft_never_fit`); A15 the ILP sees the nominal θ
    of a consolidated placement, the engine applies the placement's real speed; A12/A13 are metrics
    (`makespan_s` and `max_jct_s`; FTF against 1/N of every type, `ftf_hetero_*`)."""

    reference: ClassVar[str] = ("Mo, Xu, Lau, \"Fast and Fair Training for Deep Learning in Heterogeneous GPU "
                                "Clusters\", ICS'25 (doi 10.1145/3721145.3728488) §4; seeds/notes/fft.md")

    interval_s: float | None = param(300.0, "round length: FFT decides only at round boundaries",
                                     source="FFT §6.4.1: 5 minutes by default")
    w_jct: float = param(1.0, "A1: weight of the JCT term φ (Eq. 3); 1 = the paper's literal sum", unit="×",
                         source="notes A1 (the paper gives no weights)")
    w_switch: float = param(1.0, "A1: weight of the switching penalty s (in rounds); 0 = overhead-agnostic",
                            unit="×", source="notes A1")
    w_fair: float = param(1.0, "A1: weight of the fairness reward ρ·θ; 0 = SRSF-only (ρ ≡ 0)", unit="×",
                          source="notes A1")
    work_unit_s: float = param(
        300.0, "A1: seconds of the job's reference run per work unit ('epoch'); sets the scale of ρ·θ "
        "(epochs²/round) against the other terms. Default: one round of reference work per epoch", unit="s",
        source="notes §5.2 recipe W = D·θ_ref/round with θ_ref = 1 epoch/round")
    remaining_work: bool = param(
        False, "A2: false = φ's d·W/θ uses the total epochs W_j (literal Eq. 3); true = the remaining epochs (SRSF)",
        source="notes A2")
    k_rule: str = param(
        "packing_ilp", "A3: K(t), the least number of busy GPUs: packing_ilp = the packing ILP's optimum (never "
        "infeasible); big_m = one ILP rewarding each busy GPU above any cost; literal_relaxed = min(ΣY, Σd) relaxed "
        "to the packing optimum when infeasible; none = no lower bound", choices=core.K_RULES, source="notes A3")
    tau_rule: str = param(
        "fair_rate", "A4: τ_j, the finish time on a 1/|A(t)| share without preemption: fair_rate = a_j + W_j/r_j "
        "recomputed when |A(t)| changes; virtual = now + (W_j − fair progress so far)/r_j, fair progress accrued "
        "at r_j per round", choices=("fair_rate", "virtual"), source="notes A4 (paper footnote 2)")
    switch_from: str = param(
        "last_type", "A5: s_j^i is charged against the type holding the job's state (last_type; 0 if it never "
        "ran), or only against the type of round t−1 (previous_round; 0 for a job that did not run then)",
        choices=("last_type", "previous_round"), source="notes A5")
    state_bytes_per_param: float = param(16.0, "A5: training state per parameter (fp32 weights + Adam m, v + "
                                         "accumulated gradients)", unit="B",
                                         source="FFT Fig. 1b: OPT-6.7B state 107 GB = 16 B × 6.7e9")
    bandwidth_gbps: float = param(10.0, "A5: inter-host bandwidth of a state transfer",
                                  source="FFT §6.1.1 10 Gbps LAN")
    restart_overhead_s: float = param(
        34.0, "A5: checkpoint save/load + container restart + NCCL init added to each transfer",
        source="calibrated: OPT-6.7B 107 GB at 10 Gb/s = 86 s + 34 s = 2 min (FFT Fig. 2)")
    rho_progress: str = param(
        "nominal", "A6: the progress that updates ρ: nominal Σθx (Eq. 5) or realised (net of switching overhead, "
        "from the duration oracle)", choices=("nominal", "realised"), source="notes A6")
    backfill: bool = param(
        False, "A7: false = jobs arriving mid-round wait for the next round (the paper); true = GPUs freed "
        "mid-round go to waiting jobs in cost order without re-solving", source="notes A7")
    work_error: float = param(
        0.0, "§6.4.2: users' epoch estimates are off by up to this fraction: W_est = W·(1+U[−e, e]) per job "
        "(θ is profiled, exact; the remaining epochs are W_est − epochs done)",
        unit="fraction", source="FFT Fig. 13(b): up to 30 %")
    consolidate_at_churn: bool = param(
        True, "§4.3: at a churn round, move jobs spread over several hosts onto one host of their type, "
        "cheapest migration first", source="FFT §4.3, Fig. 6")
    sticky: bool = param(
        True, "§4.3 stickiness (placement ablation, §6.2.4): true = a job that stays on its GPU type keeps its "
        "hosts; false = every running job is placed anew each round by the packing rule (it may move within its "
        "type and pay the engine's migration cost)", source="FFT §4.3 (s = 0 on the same type rests on it)")
    pack_hosts: bool = param(
        True, "§4.3 host packing (placement ablation, §6.2.4): true = a job goes on one host if any has room "
        "(best fit), else on the hosts with the most free GPUs (fewest hosts); false = the type's free GPUs in id "
        "order, hosts ignored (FFT: Gavel and AlloX give placement no special consideration)",
        source="FFT §4.3, §6.2.4")
    dataset_locality: bool = param(
        True, "§4.3/4.4.2: among equal placements prefer hosts that cached the job's dataset (LRU, "
        "`host_dataset_slots` per host); the engine charges no dataset transfer", source="FFT §4.4.2")
    host_dataset_slots: int = param(4, "datasets a host keeps before evicting the least recently used", unit="",
                                    source="cosim (FFT: 'proactive eviction' when host storage is full)")
    ilp_formulation: str = param(
        "counts", "how the round ILP is handed to HiGHS (same optimum): counts = integer counts of jobs per "
        "(GPU count, type) with continuous x (exact: for fixed counts x is a transportation problem), binary = "
        "x_j^i binary as written in Eq. 6", choices=("counts", "binary"), source="cosim (speed; notes §2.6)")
    ilp_method: str = param(
        "exact", "exact = HiGHS branch-and-bound to its default gap (1e-4); lp_round = the LP relaxation's counts "
        "rounded and the assignment re-solved as an LP (integral), kept when within `lp_round_gap` of the LP bound, "
        "else branch-and-bound (counts formulation only)", choices=("exact", "lp_round"),
        source="cosim (the paper's 1.53 s at 4,000 jobs: benchmarks/bench_fft.py)")
    lp_round_gap: float = param(5e-3, "lp_round: largest accepted relative gap to the LP bound", unit="fraction",
                                source="cosim")
    time_limit_s: float = param(30.0, "HiGHS time limit per ILP (the incumbent is used at the limit)",
                                source="cosim (the paper reports 1.53 s at 4,000 jobs)")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None, "a positive number of seconds (FFT is round-based)")
        for f in ("w_jct", "w_switch", "w_fair"):
            self.check(f, getattr(self, f) >= 0, "a weight ≥ 0")
        self.check("work_unit_s", self.work_unit_s > 0, "seconds > 0")
        self.check("bandwidth_gbps", self.bandwidth_gbps > 0, "Gbit/s > 0")
        self.check("restart_overhead_s", self.restart_overhead_s >= 0, "seconds ≥ 0")
        self.check("state_bytes_per_param", self.state_bytes_per_param >= 0, "bytes ≥ 0")
        self.check("work_error", 0 <= self.work_error < 1, "a fraction in [0, 1)")
        self.check("host_dataset_slots", self.host_dataset_slots >= 1, "an integer ≥ 1")
        self.check("time_limit_s", self.time_limit_s > 0, "seconds > 0")
        self.check("lp_round_gap", 0 <= self.lp_round_gap < 1, "a fraction in [0, 1)")


@POLICIES.register("fft")
class FFT(BasePolicy):
    """FFT (ICS'25): per-round ILP over job × GPU type with switching cost and fairness compensation.

    State per job: arrival round a_j, epochs W_j (estimated), τ_j, ρ_j, the type holding its
    state, the type it ran on last round. `round_log` keeps per round (time, jobs, K, busy
    GPUs, solve seconds, solver status, optimality gap); `switches` every type change (time, job, from, to, upward);
    `never_fit` the jobs no type can ever hold (d_j > Y_i on every type, or memory)."""

    name = "fft"
    Config = FFTConfig
    single_type_placement = True  # Eq. 1: one type per job (x_j^i binary, Σ_i x_j^i ≤ 1) (`simcore.admission`)

    def __init__(self, config: FFTConfig) -> None:
        super().__init__(config)
        self.event_driven = bool(config.backfill)
        self.needs = frozenset({NEED_DURATION_ORACLE})
        self.a: dict[int, float] = {}
        self.W: dict[int, float] = {}  # epochs as the user states them (work_error)
        self.W_true: dict[int, float] = {}
        self.err: dict[int, float] = {}
        self.rho: dict[int, float] = {}
        self.tau: dict[int, float] = {}
        self.fair_done: dict[int, float] = {}
        self.last_type: dict[int, int] = {}
        self.prev_round: dict[int, int] = {}
        self.ref_tput: dict[int, float] = {}
        self.state_s: dict[int, float] = {}
        self.never_fit: set[int] = set()
        self.round_log: list[tuple[float, int, int, int, float, str, float]] = []
        self.switches: list[tuple[float, int, int, int, bool]] = []
        self._jobset: frozenset = frozenset()
        self._online = None
        self._last_round_t: float | None = None
        self._pending_rho: tuple | None = None
        self._rem_at_round: dict[int, float] = {}
        self._cache: dict[int, list[str]] = {}  # node → datasets, most recent last

    # ---- per-job quantities ----------------------------------------------------------
    def _ref_tput(self, view: ClusterView, j: int) -> float:
        """Samples/s of the job's reference run (the placement its work was defined on)."""
        v = self.ref_tput.get(j)
        if v is None:
            from policies.gavel import reference_gpus

            jv = view.jobs
            ids = reference_gpus(view, int(jv.num_gpus[j]), int(jv.gpu_type_req[j]))
            b = int(jv.global_batch[j])
            s = np.inf if ids is None else float(view.iteration_time(j, ids, b))
            v = self.ref_tput[j] = b / s if 0 < s < np.inf else 0.0
        return v

    def _state_s(self, view: ClusterView, j: int) -> float:
        """Seconds a type switch of job j costs (notes A5): state bytes over the bandwidth + restart."""
        v = self.state_s.get(j)
        if v is None:
            params, _ = view.whatif.model_facts(j)
            params = 0.0 if math.isnan(params) else params  # unknown to the zoo: only the restart overhead
            cfg = self.config
            v = self.state_s[j] = (params * cfg.state_bytes_per_param / (cfg.bandwidth_gbps * 1e9 / 8.0)
                                   + cfg.restart_overhead_s)
        return v

    def _dataset(self, view: ClusterView, j: int) -> str:
        return view.whatif.model_facts(j)[1]

    # ---- the round -------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        cfg = self.config
        R = float(cfg.interval_s)
        at_round = self._last_round_t is None or now >= self._last_round_t + R - 1e-6
        jobs = np.asarray(view.active(), np.int64)
        if not at_round:
            return self._backfill(view, now, jobs) if cfg.backfill else Round(view, self).decision()
        self._last_round_t = now
        t = now / R
        jv = view.jobs
        c = view.cluster
        ntypes = len(c.gpu_type_names)
        online = np.asarray(c.gpu_online, bool)
        cap = np.bincount(np.asarray(c.gpu_type, np.int64)[online], minlength=ntypes).astype(float)
        rem_s = np.asarray(jv.remaining_s[jobs], float)
        for q, j in enumerate(jobs.tolist()):
            if j not in self.a:
                self.a[j] = float(jv.submit_time[j]) / R
                e = cfg.work_error
                self.err[j] = 1.0 + (float(self.rng.uniform(-e, e)) if e > 0 else 0.0)
                self.W_true[j] = max(rem_s[q], 0.0) / cfg.work_unit_s
                self.W[j] = self.W_true[j] * self.err[j]  # what the user states
                self.rho[j] = 0.0
        self._finish_rho(view, jobs, rem_s)
        d = np.clip(jv.num_gpus[jobs], jv.min_gpus[jobs], np.maximum(jv.min_gpus[jobs], jv.max_gpus[jobs])).astype(
            np.int64)
        theta = self._theta(view, jobs, d, cap, R)
        fits = theta.max(axis=1) > 0 if jobs.size else np.zeros(0, bool)
        for j in jobs[~fits].tolist():
            if j not in self.never_fit:
                self.never_fit.add(j)
                log.warning("fft: job %s can never run: no GPU type has %d GPUs online with the memory it needs "
                            "(d_j > Y_i on every type, notes A14)", jv.job_id[j], int(jv.num_gpus[j]))
        jl = jobs.tolist()
        a = np.array([self.a[j] for j in jl])
        W = np.array([self.W[j] for j in jl])
        done = np.array([self.W_true[j] for j in jl]) - rem_s / cfg.work_unit_s  # epochs done (profiled progress)
        W_rem = np.maximum(W - np.maximum(done, 0.0), 1e-9)
        arrivals_or_completions = frozenset(jl) != self._jobset
        churn = arrivals_or_completions or self._online is None or not np.array_equal(online, self._online)
        self._jobset, self._online = frozenset(jl), online.copy()
        if arrivals_or_completions or cfg.tau_rule == "virtual":  # τ re-estimated at arrivals/completions
            r = core.fair_rate(theta, d, cap, len(jl))
            for q, j in enumerate(jl):
                if r[q] <= 0:
                    self.tau[j] = np.inf
                elif cfg.tau_rule == "fair_rate":
                    self.tau[j] = a[q] + W[q] / r[q]
                else:
                    self.tau[j] = t + max(W[q] - self.fair_done.get(j, 0.0), 0.0) / r[q]
                    self.fair_done[j] = self.fair_done.get(j, 0.0) + r[q]
        rho = np.array([self.rho[j] for j in jl])
        src = self.last_type if cfg.switch_from == "last_type" else self.prev_round
        cur = np.array([src.get(j, -1) for j in jl], np.int64)
        sw_r = np.array([self._state_s(view, j) for j in jl]) / R if jl else np.zeros(0)
        switch = np.where((cur[:, None] >= 0) & (np.arange(ntypes)[None, :] != cur[:, None]), sw_r[:, None], 0.0)
        cost = core.round_costs(t, a, W, W_rem if cfg.remaining_work else W, theta, d, rho, switch,
                                cfg.w_jct, cfg.w_switch, cfg.w_fair)
        choice, st = core.solve_round(cost, d, cap, k_rule=cfg.k_rule, time_limit_s=cfg.time_limit_s,
                                      formulation=cfg.ilp_formulation, method=cfg.ilp_method,
                                      lp_round_gap=cfg.lp_round_gap)
        got = np.where(choice >= 0, theta[np.arange(len(jl)), np.maximum(choice, 0)], 0.0) if jl else np.zeros(0)
        tau = np.array([self.tau[j] for j in jl])
        self._pending_rho = (jl, t, a, tau, W, got, {j: rem_s[q] for q, j in enumerate(jl)})
        busy = int(d[choice >= 0].sum())
        self.round_log.append((now, len(jl), int(st["k"]), busy, float(st["solve_s"]), str(st["status"]),
                               float(st.get("mip_gap", float("nan")))))
        self.prev_round = {}
        for q, j in enumerate(jl):
            i = int(choice[q])
            if i < 0:
                continue
            old = self.last_type.get(j, -1)
            if old >= 0 and old != i:
                self.switches.append((now, j, old, i, bool(theta[q, i] > theta[q, old])))
            self.last_type[j] = self.prev_round[j] = i
        return self._place(view, jobs, choice, d, theta, churn, now)

    def _theta(self, view: ClusterView, jobs: np.ndarray, d: np.ndarray, cap: np.ndarray, R: float) -> np.ndarray:
        """θ_j^i: work units per round on d_j GPUs of type i (0 where it cannot run: memory,
        required type, or d_j > Y_i(t) — notes A14)."""
        ntypes = cap.shape[0]
        if jobs.size == 0:
            return np.zeros((0, ntypes))
        tp = np.asarray(view.throughput_matrix(jobs, batch=view.jobs.global_batch[jobs].astype(np.int64)), float)
        tp = np.where(np.isfinite(tp) & (d[:, None] <= cap[None, :]), tp, 0.0)
        ref = np.array([self._ref_tput(view, j) for j in jobs.tolist()])
        scale = np.where(ref > 0, R / self.config.work_unit_s / np.where(ref > 0, ref, 1.0), 0.0)  # profiled: exact
        return tp * scale[:, None]

    def _finish_rho(self, view: ClusterView, jobs: np.ndarray, rem_s: np.ndarray) -> None:
        """Eq. 5 for the round that just ended (nominal Σθx, or the realised work: A6)."""
        if self._pending_rho is None:
            return
        jl, t, a, tau, W, got, rem0 = self._pending_rho
        self._pending_rho = None
        if self.config.rho_progress == "realised":
            now_rem = dict(zip(jobs.tolist(), rem_s.tolist()))
            got = np.array([max(rem0[j] - now_rem.get(j, 0.0), 0.0) / self.config.work_unit_s for j in jl])
        new = core.rho_update(np.array([self.rho[j] for j in jl]), t, a, tau, W, got)
        for q, j in enumerate(jl):
            self.rho[j] = float(new[q])

    # ---- placement within a type (§4.3) ------------------------------------------------
    def _place(self, view: ClusterView, jobs, choice, d, theta, churn: bool, now: float) -> Decision:
        r = Round(view, self)
        c = view.cluster
        want = dict(zip(jobs.tolist(), choice.tolist()))
        size = dict(zip(jobs.tolist(), d.tolist()))
        gtype = np.asarray(c.gpu_type)
        spread: list[int] = []
        node_of = np.asarray(c.gpu_node)
        consolidate = churn and self.config.consolidate_at_churn
        for k in view.running().tolist():
            g = r.cur[k]
            cur = int(gtype[g[0]]) if len(g) else -1
            if want.get(k, -1) == cur and len(g) == size.get(k):
                if consolidate and len(np.unique(node_of[g])) > 1 and np.asarray(c.gpu_online)[g].all():
                    spread.append(k)  # stays on its type, over several hosts: a consolidation candidate
                    continue
                if self.config.sticky and r.keep(k):  # stickiness: same type, same hosts, no switching cost
                    continue
            r.release(k)
        # churn-time consolidation (§4.3): ascending migration cost; a job with no single host
        # free for it goes back to its own GPUs
        spread.sort(key=lambda k: (self._state_s(view, k), k))
        own = {k: r.cur[k] for k in spread}
        for k in spread:
            r.release(k)
        for k in spread:
            g = self._one_host(view, r, k, size[k], want[k], None)
            if g is None:
                g = own[k]
                if not r.avail()[g].all():
                    g = self.place_type(view, r, k, size[k], want[k])
            if g is not None:
                r.claim(k, g, keep=True)
                self._touch(view, k, g)
        placed = set(r.alloc) | set(r.kept_jobs().tolist())
        todo = [j for j, i in want.items() if i >= 0 and j not in placed]
        todo.sort(key=lambda j: (-size[j], j))  # multi-GPU (DP/TP) jobs first, largest first
        for j in todo:
            g = self.place_type(view, r, j, size[j], want[j])
            if g is not None:
                r.claim(j, g)
                self._touch(view, j, g)
        return r.decision()

    def _free_by_node(self, view: ClusterView, r: Round, i: int, own: np.ndarray | None = None):
        c = view.cluster
        avail = r.avail().copy()
        if own is not None:
            avail[own] = True
        g = np.flatnonzero(avail & (np.asarray(c.gpu_type) == i))
        nodes = np.asarray(c.gpu_node)[g]
        return g, nodes

    def _one_host(self, view, r, j, n, i, own):
        """GPUs of one host of type i for job j (its own GPUs count as free), best fit."""
        g, nodes = self._free_by_node(view, r, i, own)
        if g.size < n:
            return None
        per = np.bincount(nodes)  # free GPUs per host (this type's hosts only are nonzero)
        fit = per >= n
        if not fit.any():
            return None
        best = per[fit].min()  # best fit: the fullest host that still has room ...
        cand = np.flatnonzero(per == best)  # ... ties by host id, a host caching the dataset first
        node = int(cand[0])
        if self.config.dataset_locality and cand.size > 1:
            ds = self._dataset(view, j)
            node = next((h for h in cand.tolist() if ds in self._cache.get(h, ())), node)
        return g[nodes == node][:n]

    def place_type(self, view: ClusterView, r: Round, j: int, n: int, i: int) -> np.ndarray | None:
        """n GPUs of type i for job j: one host if any has room (best fit, dataset-holding hosts
        first on ties), else the hosts with the most free GPUs first (fewest hosts)."""
        if not self.config.pack_hosts:  # ablation: hosts ignored
            g, _nodes = self._free_by_node(view, r, i)
            return g[:n] if g.size >= n else None
        g = self._one_host(view, r, j, n, i, None)
        if g is not None:
            return g
        g, nodes = self._free_by_node(view, r, i)
        if g.size < n:
            return None
        u, cnt = np.unique(nodes, return_counts=True)
        out = []
        for node in u[np.argsort(-cnt, kind="stable")].tolist():
            out.extend(g[nodes == node].tolist())
            if len(out) >= n:
                break
        return np.asarray(out[:n], np.int64)

    def _touch(self, view: ClusterView, j: int, g: np.ndarray) -> None:
        if not self.config.dataset_locality:
            return
        ds = self._dataset(view, j)
        for node in np.unique(np.asarray(view.cluster.gpu_node)[g]).tolist():
            lst = self._cache.setdefault(node, [])
            if ds in lst:
                lst.remove(ds)
            lst.append(ds)
            del lst[:-self.config.host_dataset_slots]

    def _backfill(self, view: ClusterView, now: float, jobs: np.ndarray) -> Decision:
        """A7 option: between rounds, waiting jobs take free GPUs of their cheapest type (no re-solve)."""
        r = Round(view, self)
        jv = view.jobs
        c = view.cluster
        ntypes = len(c.gpu_type_names)
        online = np.asarray(c.gpu_online, bool)
        cap = np.bincount(np.asarray(c.gpu_type, np.int64)[online], minlength=ntypes).astype(float)
        q = np.asarray(view.queued(), np.int64)
        q = q[np.isin(q, jobs)] if q.size else q
        if q.size == 0:
            return r.decision()
        for j in q.tolist():
            if j not in self.a:
                return r.decision()  # arrived since the round: waits for the next one (its W is unknown yet)
        d = np.asarray(jv.num_gpus[q], np.int64)
        theta = self._theta(view, q, d, cap, float(self.config.interval_s))
        order = np.argsort(-theta.max(axis=1) / np.maximum(d, 1), kind="stable")
        for k in order.tolist():
            j = int(q[k])
            for i in np.argsort(-theta[k], kind="stable").tolist():
                if theta[k, i] <= 0:
                    break
                g = self.place_type(view, r, j, int(d[k]), i)
                if g is not None:
                    r.claim(j, g)
                    self.last_type[j] = i
                    break
        return r.decision()

    def summary_metrics(self) -> dict:
        """Per-run numbers the FFT metrics add to the summary (`experiments.fft_metrics`): counts
        that identical runs reproduce exactly (solver times are in `timing_metrics`)."""
        up = [s[4] for s in self.switches]
        return {"fft_rounds": len(self.round_log),
                "fft_type_switches": len(self.switches),
                "fft_upward_share": float(np.mean(up)) if up else float("nan"),
                "fft_never_fit": len(self.never_fit)}

    def timing_metrics(self) -> dict:
        """Clock-dependent per-run numbers (the runner's timing.parquet, never the summary): solver
        seconds per round, and the rounds the time limit stopped with their optimality gaps."""
        solve = np.array([x[4] for x in self.round_log]) if self.round_log else np.zeros(0)
        gaps = np.array([x[6] for x in self.round_log if x[5] == "limit"], float)
        return {"fft_solver_s_mean": float(solve.mean()) if solve.size else float("nan"),
                "fft_solver_s_max": float(solve.max()) if solve.size else float("nan"),
                "fft_limit_rounds": int(gaps.size),
                "fft_limit_gap_max": float(np.nanmax(gaps)) if gaps.size and np.isfinite(gaps).any() else float("nan")}

    def solver_log(self):
        """Every round's solve (time_s, jobs, k, busy_gpus, solve_s, status, mip_gap) as a DataFrame:
        the runner writes it to `<policy>/solver.parquet` beside timing.parquet (clock-dependent)."""
        import pandas as pd

        return pd.DataFrame(self.round_log, columns=["time_s", "jobs", "k", "busy_gpus", "solve_s", "status",
                                                     "mip_gap"])
