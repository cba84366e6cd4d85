"""Pollux (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
Learning", OSDI'21): per-job goodput agents (`policies.pollux.agent`) and a cluster-wide genetic
algorithm (`policies.pollux.ga`) that together choose each job's GPUs, nodes and batch size.

`best_batch(view, j, gpus)` is Pollux's batch-size agent as a stand-alone function (the batch
with the highest what-if goodput on an allocation), for other policies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy, Round
from policies.config import PolicyConfig, param
from policies.pollux.agent import (
    POLLUX_APPS,
    GoodputModel,
    JobAgent,
    best_batch,
    limits_of,
    micro_batching,
    noise_ratio_from,
)
from policies.pollux.ga import Problem, evolve, pinned_minimum
from policies.registry import POLICIES
from simcore.api import ClusterView, Decision, JobState

__all__ = ["POLLUX_APPS", "Pollux", "PolluxConfig", "best_batch"]


@dataclass(frozen=True)
class PolluxConfig(PolicyConfig):
    """Every round, each job's goodput model (fitted throughput × statistical efficiency) gives
    its speedup on any number of nodes and GPUs with its best batch size there; a genetic
    algorithm then picks the allocation matrix (GPUs of each job on each node) that maximises
    the power mean of the speedups, with a penalty on restarts. Jobs run with the batch size
    that maximises their modelled goodput on their allocation, re-chosen at every epoch end."""

    reference: ClassVar[str] = ("Qiao et al., \"Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized "
                                "Deep Learning\", OSDI'21 (and its artifact simulator, petuum/adaptdl "
                                "osdi21-artifact, simulator/pollux.py)")

    p: float = param(-1.0, "fairness exponent of the power mean of speedups (1: utilitarian, 0: geometric, "
                           "−1: the paper's choice, more negative: fairer)",
                     source="Pollux §4.2: p = −1 in all experiments; artifact pollux.py")
    restart_penalty_s: float = param(
        30.0, "δ of the restart penalty max(age − restarts·δ, 0)/(age + δ) applied to a job whose allocation changes",
        source="Pollux §4.2; artifact: delay = 30 (the simulator's re-scale time)")
    population: int = param(100, "individuals of the genetic algorithm's population",
                            source="artifact: NSGA2(pop_size=100)")
    generations: int = param(100, "generations per round", source="artifact: ('n_gen', 100)")
    crossover_prob: float = param(0.9, "probability that a parent pair is crossed (else copied)",
                                  source="artifact: pymoo's default crossover probability")
    interference_avoidance: bool = param(
        True, "at most one distributed (multi-node) job per node", source="Pollux §4.2; artifact Problem._repair")
    max_nodes_per_job: int = param(16, "most nodes one job may span", source="artifact: max_nodes = 16 in _repair")
    replica_growth: float = param(
        2.0, "a job may use at most this × the most GPUs it has run on so far (at least 1): it grows by "
             "exploring, as its throughput model is fitted from what it has seen",
        source="artifact simulator.py: max_replicas = max(2 × max profiled replicas, 1)")
    max_replicas: int = param(64, "most GPUs of any job", source="artifact simulator.py ('simulator can't handle more')")
    single_gpu_models: tuple[str, ...] = param(("neumf",), "models pinned to one GPU",
                                               source="artifact simulator.py: ncf max_replicas = 1")
    fixed_batch: tuple[str, ...] = param(
        ("neumf=32768",), "'model=batch' pairs whose global batch is fixed (no batch-size choice)",
        source="artifact simulator.py: ncf target_batch_size = 32768")
    interval_s: float | None = param(60.0, "time between allocation rounds, the only allocation decisions",
                                     source="Pollux §5: 60-s scheduling interval; artifact --interval 60")
    batch: str = param(
        "adaptive", "adaptive: each job runs at the batch its goodput model finds best on its allocation, "
                    "re-chosen at every epoch end (Pollux's co-adaptation); fixed: every job keeps its own "
                    "global batch (the trace's) and Pollux chooses GPU counts only, at most batch / smallest "
                    "local batch GPUs per job; the allocator still ranks allocations by its best-batch speedups",
        choices=("adaptive", "fixed"),
        source="adaptive: Pollux §3-4 and petuum/adaptdl osdi21-artifact simulator.py (target_batch_size None); "
               "fixed: the Ares artifact, sysdomlab/Ares simulator/simulator.py, Job.update_local_bsz "
               "(l. 78-98: the goodput optimiser runs only when target_batch_size is None, l. 85-89) with every "
               "job given a target_batch_size in Cluster.__init__, get_speedup_fn unchanged")
    suspend_rigid: bool = param(
        True, "whether a started job without elasticity (min_gpus = max_gpus) may be suspended or moved; "
              "false: it keeps its GPUs until it ends and the others share the rest",
        source="true: the Pollux artifact (min_replicas = 0 for every job); false: for workloads with "
               "inelastic jobs, as in the Aryl evaluation's Pollux baseline (Aryl serves inelastic demand whole, "
               "seeds/notes/aryl.md §2; the paper does not say whether its Pollux suspends such jobs)")
    keep_started_min: bool = param(
        False, "whether a started elastic job (min_gpus < max_gpus) keeps at least its minimum GPUs: true: it is "
               "never suspended, and its minimum stays on the nodes where it holds most GPUs, served before the "
               "others' GPUs are searched; above its minimum the search grows, shrinks or moves it as any job "
               "(a changed allocation restarts it). A job whose minimum does not fit where it runs is not held. "
               "Started rigid jobs follow suspend_rigid",
        source="false: the Pollux artifact (min_replicas = 0 for every job); true: the Aryl evaluation's Pollux "
               "(Aryl §7.4: \"Pollux considers job's minimum demand\" and \"tends to prolong the large-and-long "
               "jobs by shrinking their resources towards the end of training to yield for newly-started jobs\")")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None, "a positive number of seconds (Pollux is round-based)")
        self.check("p", math.isfinite(self.p) and self.p <= 1, "a finite exponent ≤ 1")
        self.check("restart_penalty_s", self.restart_penalty_s >= 0, "seconds ≥ 0")
        self.check("population", self.population >= 2, "an int ≥ 2")
        self.check("generations", self.generations >= 0, "an int ≥ 0")
        self.check("crossover_prob", 0 <= self.crossover_prob <= 1, "a probability")
        self.check("max_nodes_per_job", self.max_nodes_per_job >= 1, "an int ≥ 1")
        self.check("replica_growth", self.replica_growth >= 1, "a factor ≥ 1")
        self.check("max_replicas", self.max_replicas >= 1, "an int ≥ 1")
        self.check("batch", self.batch in ("adaptive", "fixed"), "adaptive or fixed")
        for s in self.fixed_batch:
            m, _, b = str(s).partition("=")
            self.check("fixed_batch", bool(m) and b.isdigit() and int(b) > 0, "'model=batch' pairs, batch > 0")

    def fixed_batches(self) -> dict[str, int]:
        return {m: int(b) for m, _, b in (str(s).partition("=") for s in self.fixed_batch)}


@POLICIES.register("pollux")
class Pollux(BasePolicy):
    """Pollux (OSDI'21): goodput-optimised co-adaptive allocation and batch sizes by a genetic algorithm.

    Every `interval_s` (rounds only; arrivals wait for the next round):

    1. each running job's agent records the step times of its configuration (nodes, GPUs,
       micro-batch) and refits its throughput model on a new one; its gradient noise is read
       from its statistical efficiency at its current batch in its current epoch;
    2. jobs are ordered by attained GPU-seconds, then arrival (the repair's priority);
    3. each job's speedup on (n nodes, r GPUs) = its best modelled goodput there / at a fair
       share (one node, ⌈G / J⌉ GPUs); a job that never ran counts r / ⌈G / J⌉;
    4. NSGA-II (`policies.pollux.ga`) from last round's population picks the allocation matrix
       (started rigid jobs outside it when `suspend_rigid` is false; started elastic jobs held at
       their minimum where they run when `keep_started_min` is true);
    5. jobs whose matrix row is unchanged keep their GPUs; the others are re-placed on the
       nodes the matrix names (lowest free GPU ids) at the batch their model finds best
       (paying the engine's restart cost).

    Between rounds, at each epoch end a running job re-chooses its batch for its allocation.
    Most GPUs of a job: `replica_growth` × the most it has run on, `max_replicas`, its
    application's largest batch / smallest micro-batch, and the engine's `max_gpus`.
    """

    name = "pollux"
    Config = PolluxConfig
    wants_epoch_events = True

    def __init__(self, config: PolluxConfig) -> None:
        super().__init__(config)
        self.event_driven = False
        self.wants_epoch_events = config.batch == "adaptive"  # fixed batches need no epoch-end re-choice
        self.agents: dict[int, JobAgent] = {}
        self._fixed = config.fixed_batches()
        self._pop: np.ndarray | None = None
        self._pop_jobs: np.ndarray | None = None
        self._tables: dict[int, tuple] = {}
        self.last_problem: Problem | None = None

    # ---- agents ---------------------------------------------------------------------------
    def agent(self, view: ClusterView, j: int) -> JobAgent:
        a = self.agents.get(j)
        if a is None:
            a = self.agents[j] = JobAgent(limits_of(view.jobs.model[j], int(view.jobs.global_batch[j])))
        return a

    def observe(self, view: ClusterView, j: int) -> None:
        """Record job j's current configuration: the synchronised step of one micro-batch per GPU
        on its GPUs, and one micro-step's compute (the what-if time of one GPU at the micro-batch)."""
        gpus = view.allocation_of(j)
        if gpus.size == 0:
            return
        a = self.agent(view, j)
        reps = int(gpus.size)
        nodes = int(np.unique(view.cluster.gpu_node[gpus]).size)
        micro, _ = micro_batching(np.array([float(view.jobs.batch_size[j])]), np.array([reps]), a.lim)
        m = int(micro[0])
        if (nodes, reps, m) in a.profile or m < 1:
            return
        a.observe(nodes, reps, m, view.iteration_time(j, gpus[:1], m), view.iteration_time(j, gpus, m * reps))

    def noise_ratio(self, view: ClusterView, j: int) -> float:
        """Gradient variance / squared norm now, from the efficiency at the job's current batch."""
        lim = self.agent(view, j).lim
        b = int(view.jobs.batch_size[j])
        if b <= lim.init_batch:
            b = lim.init_batch + 1
        wi = view.whatif
        eff = wi.efficiency(j, b) if wi is not None else 1.0
        return noise_ratio_from(eff, b, lim.init_batch)

    def model(self, view: ClusterView, j: int) -> GoodputModel | None:
        a = self.agent(view, j)
        return None if a.params is None else GoodputModel(a.params, self.noise_ratio(view, j), a.lim)

    def batch_for(self, view: ClusterView, j: int, nodes: int, reps: int) -> int:
        """The global batch job j runs with on `reps` GPUs over `nodes` nodes."""
        if self.config.batch == "fixed":
            return int(view.jobs.global_batch[j])
        fixed = self._fixed.get(str(view.jobs.model[j]))
        if fixed is not None:
            return max(fixed, reps)
        a = self.agent(view, j)
        lim = a.lim
        if lim.init_batch == lim.max_batch:
            return max(int(view.jobs.global_batch[j]), reps)
        gm = self.model(view, j)
        if gm is None:
            return max(lim.init_batch, lim.min_local * reps)
        _, b, micro, accum = gm.optimize(nodes, reps)
        b, micro, accum = int(b[0]), int(micro[0]), int(accum[0])
        if b > lim.max_batch:  # the agent never asks for more than the largest batch
            b = reps * max(1, lim.max_batch // (reps * (accum + 1))) * (accum + 1)
        return max(b, reps)

    # ---- the allocation problem ----------------------------------------------------------------
    def cap_of(self, view: ClusterView, j: int) -> int:
        jv = view.jobs
        a = self.agent(view, j)
        c = self.config
        cap = min(max(int(c.replica_growth * a.max_profiled_replicas), 1), c.max_replicas,
                  max(1, a.lim.max_batch // max(a.lim.min_local, 1)), int(jv.max_gpus[j]))
        if str(jv.model[j]) in c.single_gpu_models:
            cap = 1
        if c.batch == "fixed":  # a GPU below the smallest local batch would change the batch
            cap = min(cap, max(1, int(jv.global_batch[j]) // max(a.lim.min_local, 1)))
        return max(cap, int(jv.min_gpus[j]))

    def speedup_table(self, view: ClusterView, j: int, max_n: int, max_r: int, fair_r: int) -> np.ndarray:
        """float64[max_n + 1, max_r + 1]: SPEEDUP_j(n, r), 0 where r = 0 or n > r."""
        S = np.zeros((max_n + 1, max_r + 1))
        n_idx, r_idx = np.meshgrid(np.arange(1, max_n + 1), np.arange(1, max_r + 1), indexing="ij")
        ok = n_idx <= r_idx
        n, r = n_idx[ok], r_idx[ok]
        gm = self.model(view, j)
        if gm is None:
            S[n, r] = r / fair_r
            return S
        # the goodput table depends only on the model and the node count; it is kept across
        # rounds (sliced when fewer GPUs are asked), the fair-share goodput per fair share
        key = (gm.params, round(gm.noise_ratio, 12), max_n)
        hit = self._tables.get(j)
        if hit is None or hit[0] != key or hit[1].shape[1] <= max_r:
            good = np.zeros((max_n + 1, max_r + 1))
            good[n, r] = gm.optimize(n, r)[0]
            hit = self._tables[j] = (key, good, {})
        base = hit[2].get(fair_r)
        if base is None:
            base = hit[2][fair_r] = float(gm.optimize(1, fair_r)[0][0])
        good = hit[1][:, :max_r + 1]
        S[n, r] = good[n, r] / base if base > 0 else 0.0
        return S

    def problem(self, view: ClusterView, jobs: np.ndarray, now: float, taken: np.ndarray | None = None) -> Problem:
        """The round's allocation problem over `jobs`; `taken`: GPUs outside it (pinned jobs')."""
        c = view.cluster
        jv = view.jobs
        N = int(c.node_first_gpu.shape[0])
        online = c.gpu_online if taken is None else c.gpu_online & ~taken
        node_cap = np.bincount(c.gpu_node[online], minlength=N).astype(np.int64)
        G = max(int(node_cap.sum()), 1)
        J = jobs.size
        node_type = c.gpu_type[c.node_first_gpu]
        req = jv.gpu_type_req[jobs].astype(np.int64)
        type_ok = (req[:, None] < 0) | (node_type[None, :] == req[:, None])
        job_node_cap = np.where(type_ok, node_cap[None, :], 0).astype(np.int64)
        caps = np.array([self.cap_of(view, j) for j in jobs.tolist()], np.int64)
        fair_r = max(1, math.ceil(G / max(J, 1)))
        max_n = min(N, self.config.max_nodes_per_job)
        max_r = int(caps.max()) if J else 1
        S = np.stack([self.speedup_table(view, j, max_n, max_r, fair_r) for j in jobs.tolist()]) if J else \
            np.zeros((0, max_n + 1, max_r + 1))
        base = np.zeros((J, N), np.int64)
        for i, j in enumerate(jobs.tolist()):
            g = view.allocation_of(j)
            if g.size:
                base[i] = np.bincount(c.gpu_node[g], minlength=N)
        delta = self.config.restart_penalty_s
        age = now - jv.submit_time[jobs]
        restarts = jv.num_restarts[jobs].astype(np.float64)
        penalty = np.maximum(age - restarts * delta, 0.0) / (age + delta) if delta > 0 else np.ones(J)
        min_gpus = jv.min_gpus[jobs].astype(np.int64)
        floor = None
        if self.config.keep_started_min:  # started elastic jobs keep their minimum where they run
            floor = pinned_minimum(base, min_gpus, (base.sum(axis=1) > 0) & (min_gpus < jv.max_gpus[jobs]),
                                   node_cap, job_node_cap, self.config.max_nodes_per_job)
        return Problem(S, base, node_cap, job_node_cap, caps, min_gpus, penalty,
                       scale=N / G, p=self.config.p, max_nodes=self.config.max_nodes_per_job,
                       interference=self.config.interference_avoidance, floor=floor)

    def initial_population(self, jobs: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Last round's population, its rows moved to this round's job order (new jobs: none)."""
        if self._pop is None:
            return base[None]
        K = self._pop.shape[0]
        init = np.zeros((K, *base.shape), np.int16)
        pos = {int(j): i for i, j in enumerate(self._pop_jobs.tolist())}
        src = [pos.get(int(j), -1) for j in jobs.tolist()]
        for i, s in enumerate(src):
            if s >= 0:
                init[:, i] = self._pop[:, s]
        return init

    # ---- the policy call ---------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        iv = float(self.config.interval_s)
        if view.progress_events and abs(now / iv - round(now / iv)) > 1e-9:
            return self.rebatch(view)
        jv = view.jobs
        for j in view.running().tolist():
            if int(jv.state[j]) == JobState.RUNNING:
                self.observe(view, j)
        active = view.active()
        jobs = active[np.lexsort((active, jv.submit_time[active], jv.attained_gpu_s[active]))].astype(np.int64)
        r = Round(view, self)
        taken = None
        if not self.config.suspend_rigid:  # started rigid jobs keep their GPUs, outside the search
            held = np.array([view.allocation_of(j).size > 0 for j in jobs.tolist()], bool)
            pinned = held & (jv.min_gpus[jobs] >= jv.max_gpus[jobs])
            if pinned.any():
                taken = np.zeros(view.cluster.gpu_online.shape[0], bool)
                for j in jobs[pinned].tolist():
                    taken[view.allocation_of(j)] = True
                    r.keep(j)
                jobs = jobs[~pinned]
        if jobs.size == 0:
            r.keep_all_undecided()
            return r.decision()
        prob = self.problem(view, jobs, now, taken)
        self.last_problem = prob
        best, pop = evolve(prob, self.initial_population(jobs, prob.base), self.rng, self.config.population,
                           self.config.generations, self.config.crossover_prob)
        self._pop, self._pop_jobs = pop, jobs
        return self.apply(view, r, jobs, best, prob.base)

    def apply(self, view: ClusterView, r: Round, jobs: np.ndarray, A: np.ndarray, base: np.ndarray) -> Decision:
        """Keep unchanged rows, re-place the others on the nodes their row names."""
        c = view.cluster
        epoch_jobs = {ev.job for ev in view.progress_events if ev.kind == "epoch"}
        moved = []
        for i, j in enumerate(jobs.tolist()):
            if np.array_equal(A[i], base[i]):
                if base[i].any():
                    nb = None
                    if j in epoch_jobs:
                        self.observe(view, j)
                        nb = self.batch_for(view, j, int(np.count_nonzero(base[i])), int(base[i].sum()))
                    r.keep(j, None if nb == int(view.jobs.batch_size[j]) else nb)
                continue
            if base[i].any():
                r.release(j)
            if A[i].any():
                moved.append(i)
        r.keep_all_undecided()  # running jobs outside the problem (none expected)
        free = c.gpu_online & ~r.claimed & ~r.held
        for i in moved:
            j = int(jobs[i])
            gpus = []
            for n in np.flatnonzero(A[i]).tolist():
                lo = int(c.node_first_gpu[n])
                ids = lo + np.flatnonzero(free[lo:lo + int(c.node_num_gpus[n])])
                take = ids[:int(A[i, n])]
                free[take] = False
                gpus.extend(take.tolist())
            if len(gpus) < int(A[i].sum()):
                continue  # cannot happen after repair (node capacity); never run it short
            b = self.batch_for(view, j, int(np.count_nonzero(A[i])), len(gpus))
            r.claim(j, np.array(sorted(gpus), np.int64), batch=b)
        return r.decision()

    def rebatch(self, view: ClusterView) -> Decision:
        """An epoch-end call between rounds: the jobs whose epoch ended re-choose their batch."""
        r = Round(view, self)
        c = view.cluster
        for ev in view.progress_events:
            j = ev.job
            if ev.kind != "epoch" or int(view.jobs.state[j]) != JobState.RUNNING or not r.undecided[j]:
                continue
            self.observe(view, j)
            g = view.allocation_of(j)
            nb = self.batch_for(view, j, int(np.unique(c.gpu_node[g]).size), int(g.size))
            if nb != int(view.jobs.batch_size[j]):
                r.keep(j, nb)
        r.keep_all_undecided()
        return r.decision()
