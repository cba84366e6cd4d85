"""ONES (SC'21): online evolutionary batch-size orchestration — the policy (ONES notes §2).

Each call runs `generations` generations over a population of K schedules (genomes,
`policies.ones.genome`): G' = refresh(G) ∪ crossover children ∪ mutants, every candidate
refreshed-filled and reordered; one ρ draw per generation for every executed job from the
Beta progress predictor (`policies.ones.predictor`); score Eq. 8
Σ_j Y_processed_j · c_j / X_j · (1/ρ_j − 1) over the jobs a candidate runs (new jobs count 0);
the K lowest survive. The best is deployed: jobs whose target GPUs are all free start at once
(with `start_on_free`, a queued job whose targets are still held starts on free GPUs instead);
the whole schedule only when every job it moves has finished `update_epochs` epochs since its
last change. A job's batch is b_j · c_j (b_j its per-GPU base batch), capped at
B_max = b_j · max_lr / lr (linear LR scaling; above the cap the local batch shrinks).

Observations only: epoch ends, samples processed, executed time, the training log
(`JobsView.epoch_log`: loss, accuracy) and the throughput what-if — no progress oracle.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from cosim.errors import InputError
from cosim.paths import shared_file
from policies.base import BasePolicy, Round
from policies.ones.config import OnesConfig
from policies.ones.genome import (
    GenomeContext,
    crossover,
    drop_below_floor,
    enforce_limits,
    fill,
    mutate,
    place_new,
    reorder,
)
from policies.ones.predictor import BetaPredictor, FitOptions, features
from policies.registry import POLICIES
from simcore.api import ClusterView, Decision, JobState

_RUNNING, _RESTARTING, _QUEUED = int(JobState.RUNNING), int(JobState.RESTARTING), int(JobState.QUEUED)


@POLICIES.register("ones")
class Ones(BasePolicy):
    """ONES: evolutionary search over GPU→job genomes with elastic batch sizes (see module doc)."""

    name = "ones"
    Config = OnesConfig

    def __init__(self, config: OnesConfig) -> None:
        super().__init__(config)
        self.event_driven = True
        self.wants_epoch_events = True
        c = config
        self.predictor = BetaPredictor(FitOptions(kind=c.predictor, lr=c.predictor_lr, epochs=c.predictor_epochs,
                                                  batch=c.predictor_batch, max_points=c.predictor_max_points,
                                                  weight_decay=c.predictor_weight_decay, seed=c.seed),
                                       prior_beta=c.prior_beta)
        self.stats = {"generations": 0, "full_updates": 0, "immediate_starts": 0, "refits": 0}
        self.train_x: list[np.ndarray] = []
        self.train_y: list[float] = []
        # the warm start reads a file: done on the first decision, not here, so building the policy
        # (`cosim policies list`, parameter checks) does no I/O and needs no data folder
        self._warm_pending = c.warm_start == "history"
        self.pop: np.ndarray | None = None  # int32[K, G]
        self.limit: np.ndarray | None = None  # R_j as GPU counts
        self.last_change_epoch: np.ndarray | None = None
        self.last_scale_epoch: np.ndarray | None = None
        self.ran_before: np.ndarray | None = None
        self.finished_seen: set[int] = set()
        self.xput_cache: dict[tuple, float] = {}

    # ---- predictor data -------------------------------------------------------------------
    def _warm_start(self, path: str) -> None:
        """Fit the predictor on an ONES `job_history.csv` (id, epoch, epoch_size, num_samples,
        total_workload, initial_loss, loss, acc): `path`, or the shared data folder's
        traces/ones/job_history.csv when empty; a missing or unreadable file is an `InputError`
        naming it (a run must not quietly fall back to the prior and give another result)."""
        import pandas as pd

        what = "an ONES job_history.csv (warm_start=history; warm_start=prior needs none)"
        p = Path(path) if path else shared_file("traces/ones/job_history.csv", what)
        if not p.is_file():
            raise InputError.at(p, field="history_file", expected=what)
        try:
            h = pd.read_csv(p)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise InputError.at(p, expected=what, got=str(exc).splitlines()[0] if str(exc) else "") from None
        cols = ("epoch_size", "initial_loss", "num_samples", "loss", "acc", "total_workload")
        for c in cols:
            if c not in h.columns:
                raise InputError.at(p, field=c, expected="columns " + ", ".join(cols))
        for r in h.itertuples(index=False):
            self.train_x.append(features(r.epoch_size, r.initial_loss, r.num_samples, r.loss, r.acc))
            self.train_y.append(float(r.num_samples) / float(r.total_workload))
        self._refit()

    def _refit(self) -> None:
        if self.train_x:
            self.predictor.fit(np.array(self.train_x), np.array(self.train_y))
            self.stats["refits"] += 1

    def _x_of(self, view: ClusterView, j: int) -> np.ndarray | None:
        """Job j's features now, None before it has finished an epoch (or without a log)."""
        jv = view.jobs
        e = int(jv.epochs_done[j])
        lg = jv.epoch_log(j)
        if e < 1 or lg is None or lg.loss.size == 0:
            return None
        s = float(jv.samples_done[j])
        return features(s / e, lg.initial_loss, s, float(lg.loss[-1]), float(lg.accuracy[-1]))

    def _learn_completed(self, view: ClusterView) -> None:
        """Each newly finished job adds one point per epoch of its log (ρ = k / epochs), then refit."""
        jv = view.jobs
        done = np.flatnonzero(jv.state == int(JobState.FINISHED))
        new = [int(j) for j in done.tolist() if int(j) not in self.finished_seen]
        if not new:
            return
        for j in new:
            self.finished_seen.add(j)
            lg = jv.epoch_log(j)
            e = int(jv.epochs_done[j])
            if lg is None or e < 1:
                continue
            d = float(jv.samples_done[j]) / e
            for k in range(1, lg.loss.size + 1):
                self.train_x.append(features(d, lg.initial_loss, k * d, float(lg.loss[k - 1]),
                                             float(lg.accuracy[k - 1])))
                self.train_y.append(k / e)
        if self.config.refit == "every-completion":
            self._refit()

    # ---- throughput and batch -----------------------------------------------------------
    def batch_for(self, view: ClusterView, j: int, c: int) -> int:
        """Global batch on c GPUs: b_j·c, capped at B_max = b_j·max_lr/lr (local batch shrinks)."""
        jv = view.jobs
        b = max(1, int(jv.global_batch[j]) // max(1, int(jv.num_gpus[j])))
        bmax = math.inf
        a = jv.attrs or {}
        if self.config.lr_cap and "lr" in a and "max_lr" in a:
            lr, mlr = float(a["lr"][j]), float(a["max_lr"][j])
            if lr > 0 and mlr > 0 and np.isfinite(lr) and np.isfinite(mlr):
                bmax = int(b * mlr / lr)
        if b * c <= bmax:
            return b * c
        return max(c, (int(bmax) // c) * c)

    # ---- R_j policies -------------------------------------------------------------------
    def _arrival_rate(self, view: ClusterView, now: float) -> float:
        if self.config.sigma is not None:
            return float(self.config.sigma)
        t = view.jobs.submit_time
        t = t[t <= now]
        if t.size < 2 or t.max() <= t.min():
            return 1.0 / 30.0
        return (t.size - 1) / float(t.max() - t.min())

    def _on_epoch(self, view: ClusterView, j: int, epoch: int, now: float, cap: int) -> None:
        """Scale-up (R' = 2R when saturated) or the paper's convoy scale-down at an epoch end."""
        cfg, jv = self.config, view.jobs
        if epoch < cfg.warmup_epochs:
            return
        c = int(jv.alloc_count[j])
        if cfg.scale_down in ("paper-gated", "paper-floor"):
            sig_t = self._arrival_rate(view, now) * float(jv.executed_s[j])
            inner = math.ceil(sig_t + 1) if cfg.scale_down == "paper-gated" else math.floor(sig_t + 1)
            if (cfg.scale_down == "paper-gated" and sig_t > 1.0) or (cfg.scale_down == "paper-floor" and inner > 1):
                self.limit[j] = max(1, math.ceil(2 * int(self.limit[j]) / inner))
                return
        if epoch - int(self.last_scale_epoch[j]) >= cfg.scale_every_epochs and c >= int(self.limit[j]):
            self.limit[j] = min(cap, 2 * int(self.limit[j]))
            self.last_scale_epoch[j] = epoch

    def _artifact_scale_down(self, view: ClusterView, now: float) -> None:
        """The artifact's rule: the largest running job, if ≥ half the cluster and running longer
        than the median run time, drops to max(int(2·size/(run/median + 1)), 1), rounded up even."""
        jv = view.jobs
        run = view.running()
        if run.size == 0:
            return
        sizes = jv.alloc_count[run]
        j = int(run[np.argmax(sizes)])
        size = int(jv.alloc_count[j])
        sub = np.flatnonzero(jv.submit_time <= now)
        med = float(np.median(jv.executed_s[sub])) if sub.size else 0.0
        G = int(np.count_nonzero(view.cluster.gpu_online))
        if size >= G / 2 and med > 0 and float(jv.executed_s[j]) > med:
            m = max(int(2 * size / (float(jv.executed_s[j]) / med + 1.0)), 1)
            self.limit[j] = min(int(self.limit[j]), m + (m % 2))

    # ---- the search ---------------------------------------------------------------------
    def _context(self, view: ClusterView, slots: np.ndarray) -> GenomeContext:
        jv = view.jobs
        active = np.zeros(jv.num_jobs, bool)
        active[view.active()] = True
        ep = jv.epochs_done
        new = active & (ep < self.config.warmup_epochs)
        lo = np.maximum(np.asarray(jv.min_gpus, np.int64), 1)
        hi = np.maximum(np.asarray(jv.max_gpus, np.int64), lo)
        lim = self.limit.copy()
        lim[new] = 1
        lim = np.clip(lim, lo, hi)  # R within the job's [min_gpus, max_gpus]
        nodes = view.cluster.gpu_node[slots].astype(np.int64)
        per = int(np.bincount(nodes).max()) if nodes.size else 1
        return GenomeContext(limit=lim, active=active, new=new, executed=active & ~new,
                             t_processed=np.asarray(jv.executed_s, np.float64), slot_node=nodes, gpus_per_node=per,
                             floor=None if (lo <= 1).all() else lo)

    def _rho(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """One ρ draw per job for this generation (NaN: no prediction, contributes 0)."""
        rho = np.full(view.jobs.num_jobs, np.nan)
        xs, js = [], []
        for j in jobs.tolist():
            if int(view.jobs.epochs_done[j]) >= self.config.warmup_epochs:
                x = self._x_of(view, j)
                if x is not None:
                    xs.append(x)
                    js.append(j)
        if js:
            rho[np.array(js)] = self.predictor.sample(np.array(xs), self.rng)
        return rho

    def score(self, view: ClusterView, genome: np.ndarray, slots: np.ndarray, rho: np.ndarray) -> float:
        """Eq. 8: Σ_j Y_processed · c_j / X_j · (1/ρ_j − 1) over the jobs the genome runs (X_j on
        c_j GPUs over the nodes the genome spreads it on)."""
        sd = view.jobs.samples_done
        occ = genome >= 0
        g = genome[occ].astype(np.int64)
        if g.size == 0:
            return 0.0
        pred = np.isfinite(rho[g])
        if not pred.any():
            return 0.0
        g = g[pred]
        nodes = self._slot_node[occ][pred]
        c = np.bincount(g)
        pairs = np.unique(g * self._num_nodes + nodes)
        nn = np.bincount(pairs // self._num_nodes)
        total = 0.0
        for j in np.flatnonzero(c).tolist():
            total += float(sd[j]) * c[j] / self.xput_count(view, j, int(c[j]), int(nn[j])) * (1.0 / rho[j] - 1.0)
        return total

    def xput_count(self, view: ClusterView, j: int, c: int, nodes: int) -> float:
        """Samples/s of job j on c GPUs spread evenly over `nodes` nodes (what-if, cached)."""
        key = (j, c, nodes)
        x = self.xput_cache.get(key)
        if x is None:
            nodes = max(1, min(nodes, c))
            per = [c // nodes + (1 if i < c % nodes else 0) for i in range(nodes)]
            ids = np.concatenate([self._node_gpus[i][:k] for i, k in enumerate(per)])
            x = float(view.throughput(j, ids, self.batch_for(view, j, c)))
            x = self.xput_cache[key] = x if np.isfinite(x) and x > 0 else 1e-9
        return x

    def _fill_key(self, view: ClusterView, slots: np.ndarray, rho: np.ndarray):
        sd = view.jobs.samples_done
        sub = view.jobs.submit_time
        memo: dict[tuple[int, int, int], float] = {}  # keys are pure within a generation (one ρ draw)

        def cached(f):
            def k(j: int, c: int, c2: int) -> float:
                t = (j, c, c2)
                v = memo.get(t)
                if v is None:
                    v = memo[t] = f(j, c, c2)
                return v
            return k

        if self.config.fill == "delta-phi":
            @cached
            def key(j: int, c: int, c2: int) -> float:
                y = float(sd[j]) * (1.0 / rho[j] - 1.0) if np.isfinite(rho[j]) else 0.0
                phi2 = c2 / self.xput_count(view, j, c2, -(-c2 // self._per_node))
                phi1 = c / self.xput_count(view, j, c, -(-c // self._per_node)) if c > 0 else 0.0
                return (phi2 - phi1) * y * 1e6 + float(sub[j]) * 1e-9
            return key

        @cached
        def key_art(j: int, c: int, c2: int) -> float:  # new first, then SRPT on one GPU
            if not np.isfinite(rho[j]):
                return -1e18 + float(sub[j])
            return float(sd[j]) * (1.0 / rho[j] - 1.0) / self.xput_count(view, j, 1, 1)
        return key_art

    def _finish(self, g: np.ndarray, ctx: GenomeContext, jobs: np.ndarray, key, deployed: np.ndarray) -> np.ndarray:
        g = place_new(enforce_limits(g, ctx), ctx, jobs[ctx.new[jobs]])
        g = fill(g, ctx, jobs, key)
        if ctx.floor is not None:  # jobs that cannot reach their min_gpus give their GPUs back
            g = fill(drop_below_floor(g, ctx), ctx, jobs, key)
        return reorder(g, deployed, ctx) if self.config.reorder else g

    def evolve(self, view: ClusterView, slots: np.ndarray, deployed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One generation; returns (population, scores), best first."""
        cfg, rng = self.config, self.rng
        ctx = self._context(view, slots)
        jobs = view.active()
        jobs = jobs[np.argsort(view.jobs.submit_time[jobs], kind="stable")]
        rho = self._rho(view, jobs)
        key = self._fill_key(view, slots, rho)
        K = self.pop.shape[0]
        nkids = cfg.children or K
        nmut = cfg.mutants or K
        memo: dict[bytes, np.ndarray] = {}

        def finish(g: np.ndarray) -> np.ndarray:
            k = g.tobytes()
            out = memo.get(k)
            if out is None:
                out = memo[k] = self._finish(g, ctx, jobs, key, deployed)
            return out

        refreshed = [finish(g) for g in self.pop]
        cands = list(refreshed)
        for _ in range((nkids + 1) // 2):
            a, b = rng.integers(K, size=2)
            c1, c2 = crossover(refreshed[a], refreshed[b], ctx, rng, cfg.crossover_xi)
            cands += [finish(c1), finish(c2)]
        for i in rng.integers(K, size=nmut):
            cands.append(finish(mutate(refreshed[int(i)], ctx, rng, cfg.theta)))
        pop = np.array(cands, np.int32)
        smemo: dict[bytes, float] = {}
        scores = np.empty(pop.shape[0])
        for i, g in enumerate(pop):
            k = g.tobytes()
            v = smemo.get(k)
            if v is None:
                v = smemo[k] = self.score(view, g, slots, rho)
            scores[i] = v
        keep = np.argsort(scores, kind="stable")[:K]
        self.stats["generations"] += 1
        return pop[keep], scores[keep]

    # ---- the call ------------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        if self._warm_pending:
            self._warm_pending = False
            self._warm_start(self.config.history_file)
        cfg, jv = self.config, view.jobs
        J = jv.num_jobs
        slots = np.flatnonzero(view.cluster.gpu_online).astype(np.int64)
        G = slots.size
        if self.limit is None:
            self.limit = np.ones(J, np.int64)
            self.last_change_epoch = np.zeros(J, np.int64)
            self.last_scale_epoch = np.zeros(J, np.int64)
            self.ran_before = np.zeros(J, bool)
        if getattr(self, "_slots_key", None) != slots.tobytes():
            self._slots_key = slots.tobytes()
            gn = np.asarray(view.cluster.gpu_node, np.int64)
            self._slot_node = gn[slots]
            self._num_nodes = int(gn.max()) + 1
            self._node_gpus = [slots[self._slot_node == n] for n in range(self._num_nodes)]
            self._node_gpus = [a for a in self._node_gpus if a.size]
            self._per_node = max(a.size for a in self._node_gpus)
        cap = G if cfg.request_cap_factor <= 0 else None
        for ev in view.progress_events:
            if ev.kind == "epoch":
                jcap = cap if cap is not None else min(G, cfg.request_cap_factor * int(jv.num_gpus[ev.job]))
                self._on_epoch(view, ev.job, int(ev.value), now, jcap)
        if cfg.scale_down == "artifact":
            self._artifact_scale_down(view, now)
        self._learn_completed(view)
        owner = view.cluster.gpu_owner
        deployed = np.where(owner[slots] >= 0, owner[slots], -1).astype(np.int32)
        K = cfg.population if cfg.population > 0 else G
        if self.pop is None or self.pop.shape[1] != G:
            self.pop = np.full((K, G), -1, np.int32)
        active = view.active()
        if active.size == 0:
            return Round(view).decision()
        best = self.pop[0]
        for _ in range(cfg.generations):
            self.pop, _ = self.evolve(view, slots, deployed)
            best = self.pop[0]
        return self._deploy(view, slots, deployed, best)

    def _start_on_free(self, view: ClusterView, r: Round, blocked: list[int], want: dict) -> int:
        """Queued jobs that S* runs on GPUs held by jobs that do not move now start on free GPUs
        instead, in arrival order: as many as S* gives them, at most the free ones (refresh
        "allocates N new jobs with N available GPUs"; a waiting job resumes on idle GPUs)."""
        ep = view.jobs.epochs_done
        started = 0
        for j in sorted(blocked):
            n = min(int(want[j].size), int(r.avail().sum()))
            if n < 1:
                break
            g = r.fit(j, n, batch=self.batch_for(view, j, n))
            if g is None:
                continue
            r.claim(j, np.asarray(g), batch=self.batch_for(view, j, len(g)))
            self.last_change_epoch[j] = int(ep[j])
            self.ran_before[j] = True
            started += 1
        return started

    def _deploy(self, view: ClusterView, slots: np.ndarray, deployed: np.ndarray, best: np.ndarray) -> Decision:
        """Apply S*: jobs whose target GPUs are all free start at once; moves of running jobs
        (scale in/out, migrate, preempt) wait for the epoch gate (`OnesConfig.gate`)."""
        jv = view.jobs
        r = Round(view)
        want = {int(j): slots[best == j] for j in np.unique(best[best >= 0]).tolist()}
        ep = jv.epochs_done
        state = jv.state
        owner = view.cluster.gpu_owner
        cur: dict[int, np.ndarray] = {}
        changed: list[int] = []
        for j in view.running().tolist():
            c = np.sort(np.asarray(view.allocation_of(j), np.int64))
            cur[j] = c
            w = want.get(j)
            if w is None or w.size != c.size or not np.array_equal(np.sort(w), c):
                changed.append(j)
        ready = [j for j in changed if int(state[j]) == _RUNNING
                 and int(ep[j]) - int(self.last_change_epoch[j]) >= self.config.update_epochs]
        if self.config.gate == "all":
            movers = ready if len(ready) == len(changed) else []
        else:  # per-job: the ready movers whose targets are free or held by other ready movers (fixpoint)
            movers = list(ready)
            while True:
                mset = set(movers)
                keep = []
                for j in movers:
                    w = want.get(j)
                    if w is None or all(o < 0 or int(o) in mset for o in owner[w].tolist()):
                        keep.append(j)
                if len(keep) == len(movers):
                    break
                movers = keep
        mset = set(movers)
        for j in movers:
            r.release(j)
        started = 0
        blocked = []
        for j, w in want.items():
            running = int(state[j]) in (_RUNNING, _RESTARTING)
            if running and j not in mset:
                continue
            if not all(o < 0 or int(o) in mset for o in owner[w].tolist()):
                if int(state[j]) == _QUEUED:
                    blocked.append(j)
                continue  # its GPUs are held by a job that does not move now
            r.claim(j, w, keep=running, batch=self.batch_for(view, j, w.size))
            self.last_change_epoch[j] = int(ep[j])
            self.ran_before[j] = True
            started += not running
        if self.config.start_on_free:
            started += self._start_on_free(view, r, blocked, want)
        for j in movers:
            if j not in want:  # preempted: may resume at most at its size before
                self.limit[j] = max(1, min(int(self.limit[j]), int(jv.alloc_count[j])))
        if movers or not changed:
            for j in view.queued().tolist():  # resume: a waiting job left out halves its limit
                if self.ran_before[j] and j not in want and self.limit[j] > 1:
                    self.limit[j] //= 2
            self.stats["full_updates"] += 1
        self.stats["immediate_starts"] += started
        return r.decision()
