"""Aryl: capacity loaning from an inference cluster plus elastic scaling by multiple-choice knapsack.

Li et al., "Aryl: An Elastic Cluster Scheduler for Deep Learning", EuroSys'22
(`../shared/seeds/notes/aryl.md`). The inference side decides when servers are lent and how many
come back (`--load-series`, `simcore.capacity`); this policy decides *which* return
(`answer_reclaim`, Algorithm 1 in `policies.aryl_core`) and schedules the training jobs:

- Phase 1, SJF with skip over inelastic jobs and elastic jobs' base demand (w_min GPUs): each
  queued job in order of its running-time estimate is placed if it fits, skipped otherwise.
  The pool is the idle GPUs plus every flexible worker's GPUs (a queued job may take them: the
  elastic job scales in, no preemption).
- Phase 2, the GPUs left go to elastic jobs' flexible workers by the MCKP (DP), value
  T^max·w/(w + w_min), T^max the *remaining* running time at w_min; re-decided every round.
  Capacity and weights count an inference GPU as a fraction of a training GPU ("normalized
  relative to training GPUs", §5.2): `worker_value=engine` (default) takes that fraction and
  T^max from the speeds the run's perf backend gives the job's model, and values a
  heterogeneous-capable job's training base plus inference workers at the backend's mixed-gang
  efficiency; `worker_value=paper` counts every inference GPU as `t4_ratio` (App. A's 1/4) and
  every worker at the same value.
- BFD placement: inelastic jobs to training servers, elastic jobs' base workers to on-loan
  servers without flexible workers, flexible workers to on-loan servers without base workers
  (the flexible group, returned first without preemption), then the rest; best fit on one
  server when one holds the gang, else the emptiest servers first.

Baselines and ablations are options of the same policy (`loaning`, `scaling`, `order`,
`special_placement`, `reclaim`), so every comparison runs one code path: FIFO (no loaning, no
elasticity) is `order=fifo scaling=none loaning=false`; Aryl+TunedJobs is
`batch_tuning=pollux` (Pollux's batch agent, `policies.pollux.best_batch`, per elastic job).
With `mix_types` (Advanced/Ideal) heterogeneous-capable jobs come last in each round
(`hetero_last`); their gangs' speed is the `linear` backend's (0.7 of summed capacity). Under
the backend's imperfect scaling (`--perf linear:imperfect_loss=0.1`, Fig. 10) the MCKP values
follow that curve (the notes' generalised T(w_min) − T(w_min + w)).

Round cost (`python -m benchmarks.bench_aryl` times a paper-size cell): the MCKP is one numba
kernel, phase 1 skips by free GPUs per type without placing, flexible/base GPU arrays are
cached per job, and only jobs whose GPUs changed are rebuilt into the decision; with
`event_driven=false` rounds run only at the tick and at capacity changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies import aryl_core as core
from policies.base import BasePolicy
from policies.config import PolicyConfig, param
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, Allocation, ClusterView, Decision, ReclaimAnswer, ReclaimDemand

RECLAIMS = ("aryl", "random", "scf", "static")
_NO_GPUS = np.zeros(0, np.int64)
_NO_GPUS.flags.writeable = False
SCALINGS = ("mckp", "gandiva", "none")
ORDERS = ("sjf", "fifo", "fifo-strict")
HETERO_JOBS = ("agnostic", "vc")
WORKER_VALUES = ("engine", "paper")
HETERO_VC = "hetero"  # the virtual cluster of heterogeneous-capable jobs (hetero_jobs = vc)


@dataclass(frozen=True)
class ArylConfig(PolicyConfig):
    """Aryl (EuroSys'22): SJF-with-skip for inelastic and base demand, MCKP for flexible
    workers, BFD placement with on-loan server groups, and Algorithm 1 for reclaims. Needs the
    duration oracle (the paper's profiler). Options reproduce its baselines and ablations:
    FIFO = `order=fifo scaling=none loaning=false`; loaning-only = `scaling=none`; scaling-only
    = `loaning=false`; Gandiva = `scaling=gandiva`; Table 6 = `special_placement=false`;
    Random/SCF/Static reclaim = `reclaim=...`."""

    reference: ClassVar[str] = ("Li et al., \"Aryl: An Elastic Cluster Scheduler for Deep Learning\", EuroSys'22 "
                                "(../shared/seeds/notes/aryl.md)")

    interval_s: float | None = param(60.0, "scheduler tick (also runs on arrivals and completions)",
                                     source="aryl.md §2.0 [I]: not given in the paper")
    event_driven: bool = param(True, "also run a round at every arrival and completion (false: rounds only at "
                                     "the tick and at capacity changes, the paper's 'runs periodically'; the "
                                     "paper-size run uses false: ~20k rounds instead of ~700k)",
                               source="aryl.md §2.0 [I]")
    loaning: bool = param(True, "use on-loan inference servers (false: FIFO baseline and scaling-only ablation)")
    scaling: str = param("mckp", "flexible workers: mckp = Aryl's phase 2; gandiva = scale every elastic job to "
                                 "w_max while no job is pending (opportunistic, Aryl §6); none = elastic jobs run "
                                 "at their requested size", choices=SCALINGS)
    order: str = param("sjf", "phase-1 order: sjf (running time, skip what does not fit: Aryl); fifo (arrival, "
                              "skip); fifo-strict (arrival, stop at the first that does not fit)", choices=ORDERS,
                       source="fifo skip vs strict: aryl.md §6 [I], the paper does not say")
    special_placement: bool = param(True, "elastic jobs to on-loan servers with base and flexible workers in "
                                          "separate server groups (false: plain BFD, training servers first; Table 6)")
    reclaim: str = param("aryl", "which on-loan servers go back: aryl = idle and flexible-only servers first, then "
                                 "Algorithm 1; random; scf = fewest jobs first (static); static = Algorithm 1 "
                                 "without cost updates", choices=RECLAIMS,
                         source="Table 5 rows 5-7, Table 12 ('Static' is undefined in the paper: [I])")
    tie_break: str = param("gpu_fraction", "Algorithm 1 ties: gpu_fraction = lower Σ GPU fraction, then server id; "
                                           "server_id; random (seeded)", choices=core.TIE_BREAKS,
                           source="aryl.md §2.2 ambiguity 2 [I]")
    literal_weights: bool = param(False, "MCKP item weight (w + w_min)·D_j as Algorithm 2 line 17 prints it "
                                         "(false: the incremental w·D_j of the notes, capacity = remaining GPUs)",
                                  source="aryl.md §2.4 ambiguity 1")
    t4_ratio: float = param(0.25, "compute of an inference GPU relative to a training GPU when counting the "
                                  "knapsack capacity under worker_value=paper (1/3 is the testbed remark)",
                            source="Aryl App. A")
    worker_value: str = param("engine", "the MCKP's weight and value of a flexible worker: engine = at the speeds the "
                                        "run's perf backend gives (an inference GPU weighs its one-GPU speed relative "
                                        "to the training GPU for the job's model, a job's T^max is at its base's GPU "
                                        "type, and a heterogeneous-capable job's V100 base plus T4 workers is valued at "
                                        "the backend's mixed-gang efficiency); paper = every worker the same value, an "
                                        "inference GPU weighing t4_ratio (App. A's 1/4)", choices=WORKER_VALUES,
                              source="Aryl §5.2 'on-loan inference GPUs are normalized relative to training GPUs' "
                                     "(App. A: T4 = 1/4 V100); the engine's own speed ratio is [I]")
    estimate_error_frac: float = param(0.0, "fraction of jobs whose running-time estimate is wrong (Table 9: 0-0.6)")
    estimate_error_margin: float = param(0.25, "a wrong estimate is off by a factor U[1-m, 1+m] (Table 9 caption)")
    mix_types: bool = param(False, "type-agnostic jobs may span training and inference GPUs in one gang "
                                   "(heterogeneous training, Advanced/Ideal); under --perf linear such a gang runs "
                                   "at 0.7 of its summed GPU speeds (the backend's hetero_efficiency, App. A)")
    hetero_jobs: str = param("agnostic", "with mix_types: which jobs may span GPU types: agnostic = every "
                                         "type-agnostic job; vc = only the type-agnostic jobs of the trace's virtual "
                                         "cluster 'hetero' (traces/aryl.py marks the Advanced scenario's extra 10 % "
                                         "there, so the other type-agnostic and the elastic jobs keep single-type "
                                         "gangs as in Basic)", choices=HETERO_JOBS,
                             source="Aryl §7.1 'Advanced: Basic plus 10 % of jobs able to run on heterogeneous GPUs'")
    hetero_last: bool = param(True, "with mix_types: heterogeneous-capable (type-agnostic) jobs are placed after "
                                    "the others in each round ('lastly on the remaining resources')",
                              source="Aryl §5.3/§6; aryl.md §2.5 item 5")
    hetero_base_training: bool = param(True, "with mix_types: a heterogeneous-capable elastic job's base workers go "
                                             "to training servers first, its flexible ones to inference servers "
                                             "(false: base to on-loan servers like other elastic jobs). A gang "
                                             "over both kinds runs at 0.7 of its summed speed (the mixed-gang "
                                             "rule), on the physical and the normalized clusters alike",
                                       source="Aryl §6; aryl.md §2.5 item 5")
    batch_tuning: str = param("none", "elastic jobs' global batch: none = the trace's; pollux = Pollux's agent "
                                      "picks it for the job's allocation each time it changes "
                                      "(policies.pollux.best_batch: highest goodput; Aryl+TunedJobs, Table 5 row 11)",
                              choices=("none", "pollux"), source="Aryl §7.4 'Aryl+TunedJobs'")

    def validate(self) -> None:
        self.check("t4_ratio", 0.0 < self.t4_ratio <= 1.0, "a ratio in (0, 1]")
        self.check("estimate_error_frac", 0.0 <= self.estimate_error_frac <= 1.0, "a fraction in [0, 1]")
        self.check("estimate_error_margin", 0.0 <= self.estimate_error_margin < 1.0, "a margin in [0, 1)")


@POLICIES.register("aryl")
class Aryl(BasePolicy):
    """Aryl (EuroSys'22): capacity loaning and elastic scaling (see the module doc)."""

    name = "aryl"
    Config = ArylConfig
    answers_reclaims = True

    def __init__(self, config: ArylConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE})
        self.event_driven = bool(config.event_driven)
        self._n_held = np.zeros(0, np.int64)  # job -> len(self._held[job]), -1 when not held
        self._flex: dict[int, np.ndarray] = {}  # running job -> its flexible GPUs (held, not base; read-only)
        self._base_gpus: dict[int, np.ndarray] = {}  # job -> self.base[job] as an array (read-only)
        self.base: dict[int, frozenset[int]] = {}  # job -> GPUs of its base (or whole inelastic) gang
        self._held: dict[int, tuple[int, ...]] = {}  # job -> its GPUs as last seen (sorted)
        self._el = np.zeros(0, bool)  # elastic jobs of this round
        self._el_of: tuple | None = None  # (max_gpus, min_gpus) arrays `_el` was computed from
        self._base_n = np.zeros(0, np.int32)  # GPU -> how many base sets hold it (has_base without a scan)
        self._prev_running = np.zeros(0, np.int64)  # running jobs at the last sync
        self._started: list[int] = []  # jobs given a base since the last sync
        self._mix = np.zeros(0, bool)  # jobs that may span GPU types (mix_types, hetero_jobs)
        self._speed: dict[tuple[str, int], float] = {}  # (model, GPUs) -> inference/training speed
        self._err: np.ndarray | None = None
        self._type_masks: dict[int, tuple] = {}  # GPU type -> (gpu_type array, its mask)
        self.reclaim_stats: list[dict] = []

    # ---- views --------------------------------------------------------------------------
    def _inference_nodes(self, view: ClusterView) -> np.ndarray:
        c = view.cluster
        names = tuple(c.node_group_names)
        if c.node_group is None or "inference" not in names:
            return np.zeros(c.node_first_gpu.shape[0], bool)
        return np.asarray(c.node_group) == names.index("inference")

    def _estimate(self, view: ClusterView, j: int, at_gpus: int) -> float:
        """Running time of job j at `at_gpus` GPUs: the oracle's remaining time at its requested
        size, scaled linearly, times its injected estimate error (Table 9)."""
        jobs = view.jobs
        if self._err is None or self._err.shape[0] < jobs.num_jobs:
            rng = np.random.default_rng(self.config.seed + 7)
            n = jobs.num_jobs
            wrong = rng.random(n) < self.config.estimate_error_frac
            m = self.config.estimate_error_margin
            self._err = np.where(wrong, rng.uniform(1 - m, 1 + m, n), 1.0)
        r = float(jobs.remaining_s[j])
        if not np.isfinite(r):
            r = float(jobs.duration[j]) if np.isfinite(jobs.duration[j]) else 3600.0
        return r * int(jobs.num_gpus[j]) / max(1, at_gpus) * float(self._err[j])

    def _estimates(self, view: ClusterView, js: np.ndarray, at_gpus: np.ndarray) -> np.ndarray:
        """`_estimate` for many jobs at once (the phase-1 sort key)."""
        if js.size == 0:
            return np.zeros(0)
        self._estimate(view, int(js[0]), int(at_gpus[0]))  # draws the error table if needed
        jobs = view.jobs
        r = jobs.remaining_s[js].astype(float)
        d = np.where(np.isfinite(jobs.duration[js]), jobs.duration[js], 3600.0)
        r = np.where(np.isfinite(r), r, d)
        return r * jobs.num_gpus[js] / np.maximum(1, at_gpus) * self._err[js]

    def _set_base(self, j: int, base: frozenset[int]) -> None:
        """Job j's base gang is `base` (also kept as an array, in the set's iteration order);
        `_base_n` counts, per GPU, the base sets holding it."""
        old = self._base_gpus.get(j)
        if old is not None:
            self._base_n[old] -= 1
        arr = np.fromiter(base, np.int64, len(base))
        arr.flags.writeable = False
        self.base[j], self._base_gpus[j] = base, arr
        self._base_n[arr] += 1

    def _drop(self, j: int) -> None:
        """Forget job j (no longer running)."""
        arr = self._base_gpus.pop(j, None)
        if arr is not None:
            self._base_n[arr] -= 1
            del self.base[j]
        self._flex.pop(j, None)
        if self._held.pop(j, None) is not None:
            self._n_held[j] = -1

    def _sync_base(self, view: ClusterView, running: np.ndarray) -> None:
        """Keep each running job's base gang within its GPUs (a reclaim may have scaled it in).

        Incremental: the jobs that left are those running at the last sync, or started since,
        that are not running now (the base and held maps hold no others), and only jobs whose
        GPU count changed are revisited (only this policy grows a job, reclaims only shrink it)."""
        jobs = view.jobs
        if self._el_of is None or self._el_of[0] is not jobs.max_gpus or self._el_of[1] is not jobs.min_gpus:
            self._el = (jobs.max_gpus > jobs.min_gpus) & (self.config.scaling != "none")
            self._el_of = (jobs.max_gpus, jobs.min_gpus)
        n_gpus = view.cluster.gpu_owner.shape[0]
        if self._base_n.shape[0] != n_gpus:
            self._base_n = np.zeros(n_gpus, np.int32)
        if self._n_held.shape[0] < jobs.num_jobs:
            self._n_held = np.concatenate([self._n_held, np.full(jobs.num_jobs - self._n_held.shape[0], -1)])
        alive = np.zeros(max(jobs.num_jobs, self._n_held.shape[0]), bool)
        alive[running] = True
        was = np.concatenate([self._prev_running, np.asarray(self._started, np.int64)])
        for j in dict.fromkeys(was[~alive[was]].tolist()):  # each job once (the drops commute)
            self._drop(j)
        self._prev_running, self._started = running, []
        counts = jobs.alloc_count
        # unchanged jobs are skipped (only this policy grows a job, reclaims only shrink it)
        for j in running[self._n_held[running] != counts[running]].tolist():
            g = tuple(sorted(int(x) for x in view.allocation_of(j)))
            self._held[j] = g
            self._n_held[j] = len(g)
            el = bool(self._el[j])
            want = int(jobs.min_gpus[j]) if el else len(g)
            old = self.base.get(j, frozenset())
            b = [x for x in g if x in old]
            if len(b) < min(want, len(g)):
                b += [x for x in g if x not in b][:want - len(b)]
            base = frozenset(b[:max(want, 0)] if el else g)
            self._set_base(j, base)
            flex = np.array([x for x in g if x not in base], np.int64)
            flex.flags.writeable = False
            self._flex[j] = flex

    def _sync_mix(self, view: ClusterView) -> None:
        """`_mix[j]`: job j may run a heterogeneous gang (mix_types; hetero_jobs picks which);
        recomputed only when the job table grows (the vc strings are compared once per job)."""
        jobs = view.jobs
        if self._mix.shape[0] == jobs.num_jobs:
            return
        mix = (jobs.gpu_type_req < 0) & bool(self.config.mix_types)
        if self.config.hetero_jobs == "vc":
            vc = jobs.vc if jobs.vc is not None else np.full(jobs.num_jobs, "", object)
            mix &= np.asarray(vc, object) == HETERO_VC
        self._mix = mix

    # ---- placement ----------------------------------------------------------------------
    def _type_mask(self, c, t: int) -> np.ndarray:
        """`c.gpu_type == t`, computed once per type (GPU types do not change during a run)."""
        hit = self._type_masks.get(t)
        if hit is None or hit[0] is not c.gpu_type:
            hit = self._type_masks[t] = (c.gpu_type, c.gpu_type == t)
        return hit[1]

    def _place(self, view: ClusterView, j: int, k: int, role: str, avail: np.ndarray, inf: np.ndarray,
               has_base: np.ndarray, has_flex: np.ndarray, like: int = -1) -> np.ndarray | None:
        """k GPUs from `avail` for job j's `role` (inelastic|base|flex) by the tiered BFD rule;
        `like`: the GPU type the gang must keep (flexible workers of a running job)."""
        c = view.cluster
        req = int(view.jobs.gpu_type_req[j])
        mix = bool(self._mix[j])
        ok = avail
        if req >= 0:
            ok = ok & self._type_mask(c, req)
        if like >= 0 and not mix:
            ok = ok & self._type_mask(c, like)
        idx = np.flatnonzero(ok)
        if idx.size < k:
            return None
        nodes_of = c.gpu_node[idx]
        free = np.bincount(nodes_of, minlength=inf.shape[0])
        nodes = np.flatnonzero(free)
        if self.config.special_placement and role != "inelastic":
            other = has_flex if role == "base" else has_base
            on_inf = inf[nodes]
            if role == "base" and mix and self.config.hetero_base_training:
                on_inf = ~on_inf  # a heterogeneous-capable job's base goes to training servers first (§6)
            tier = np.where(on_inf, 0, 2) + other[nodes].astype(int)
        else:
            tier = inf[nodes].astype(int)
        types = [None] if mix or req >= 0 or like >= 0 else list(np.unique(c.gpu_type[idx]))
        if len(types) > 1:  # single-type gang: the type of the best tier first
            best_t = [int(tier[c.gpu_type[c.node_first_gpu[nodes]] == t].min()) for t in types]
            types = [t for _, t in sorted(zip(best_t, types), key=lambda x: (x[0], x[1]))]
        for t in types:
            sel = nodes if t is None else nodes[c.gpu_type[c.node_first_gpu[nodes]] == t]
            st = tier if t is None else tier[c.gpu_type[c.node_first_gpu[nodes]] == t]
            f = free[sel]
            if f.sum() < k:
                continue
            fits = f >= k
            if fits.any():  # best fit: best tier, then the fewest free GPUs that still hold k
                o = np.lexsort((sel[fits], f[fits], st[fits]))
                node = int(sel[fits][o[0]])
                return idx[nodes_of == node][:k]
            o = np.lexsort((sel, -f, st))
            take, left = [], k
            for node in sel[o].tolist():
                g = idx[nodes_of == node][:left]
                take.append(g)
                left -= g.size
                if left == 0:
                    return np.concatenate(take)
        return None

    # ---- decide ---------------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        c, jobs, cfg = view.cluster, view.jobs, self.config
        inf = self._inference_nodes(view)
        running = view.running()
        self._sync_base(view, running)
        self._sync_mix(view)
        allowed = c.gpu_online.copy()
        if not cfg.loaning:
            allowed &= ~inf[c.gpu_node]
        avail = allowed & (c.gpu_owner < 0)
        el_running = running[self._el[running]].tolist()
        prev_flex = {j: self._flex[j] for j in el_running}
        flex_list = list(prev_flex.values())
        flex_all = np.concatenate(flex_list) if flex_list else _NO_GPUS  # in el_running order
        flex_n = np.fromiter((a.shape[0] for a in flex_list), np.int64, len(flex_list))
        avail[flex_all] = True
        n_nodes = inf.shape[0]
        has_base = np.zeros(n_nodes, bool)
        has_base[c.gpu_node[self._base_n > 0]] = True
        has_flex = np.zeros(n_nodes, bool)
        out: dict[int, np.ndarray] = {j: self._base_gpus[j] for j in el_running}
        # phase 1: inelastic jobs and elastic base demand
        queued = view.queued()
        if cfg.order == "sjf":
            at = np.where(self._el[queued], jobs.min_gpus[queued], jobs.num_gpus[queued])
            key = self._estimates(view, queued, at)
            queued = queued[np.lexsort((queued, jobs.submit_time[queued], key))]
        else:
            queued = queued[np.lexsort((queued, jobs.submit_time[queued]))]
        if cfg.mix_types and cfg.hetero_last:  # heterogeneous-capable jobs last, each part in its order
            het = self._mix[queued]
            queued = np.concatenate([queued[~het], queued[het]])
        started: list[int] = []
        n_free = int(avail.sum())
        n_queued = queued.size
        need_a = np.where(self._el[queued], jobs.min_gpus[queued], jobs.num_gpus[queued])
        # free GPUs per type: `_place` fails exactly when the gang's allowed type(s) hold fewer
        # than k free GPUs (it may span servers), so that count decides without placing; the
        # counts only fall within a round, so a job that cannot fit now is dropped up front
        n_types = max(len(c.gpu_type_names), int(c.gpu_type.max()) + 1 if c.gpu_type.size else 1)
        ft = np.bincount(c.gpu_type[avail], minlength=n_types)
        req_a = jobs.gpu_type_req[queued]
        if cfg.order != "fifo-strict":
            cap0 = np.where(req_a >= 0, ft[np.maximum(req_a, 0)], np.where(self._mix[queued], n_free, ft.max()))
            fits0 = need_a <= cap0
            queued, need_a, req_a = queued[fits0], need_a[fits0], req_a[fits0]
        for j, k, r in zip(queued.tolist(), need_a.tolist(), req_a.tolist()):
            if n_free == 0 and cfg.order != "fifo-strict":
                break
            el = bool(self._el[j])
            fit = int(ft[r]) if r >= 0 else n_free if self._mix[j] else int(ft.max())
            if k > fit:
                if cfg.order == "fifo-strict":
                    break
                continue
            g = self._place(view, j, k, "base" if el else "inelastic", avail, inf, has_base, has_flex)
            if g is None:
                if cfg.order == "fifo-strict":
                    break
                continue
            avail[g] = False
            n_free -= g.size
            ft -= np.bincount(c.gpu_type[g], minlength=n_types)
            has_base[c.gpu_node[g]] = True
            out[j] = g
            self._set_base(j, frozenset(g.tolist()))
            self._started.append(j)
            started.append(j)
        # phase 2: flexible workers
        elastic = el_running + [j for j in started if self._el[j]]
        extra = self._flexible(view, elastic, avail, inf, pending=len(started) < n_queued)
        dirty = set(started)  # jobs whose GPUs may differ from what they hold
        # a job that keeps exactly its flexible GPUs, all still free here and not taken by an
        # earlier job's growth (the only step below that takes other jobs' GPUs), changes
        # nothing: its GPUs are marked taken in one step before the next `avail` read
        intact: set[int] = set()
        if flex_all.size:
            nz = flex_n > 0
            starts = (np.cumsum(flex_n) - flex_n)[nz]  # each non-empty flexible set's first index
            free_all = np.logical_and.reduceat(avail[flex_all], starts)
            intact = set(np.asarray(el_running, np.int64)[nz][free_all].tolist())
        pending: list[np.ndarray] = []  # kept GPUs not yet marked taken in `avail`
        for j, w in sorted(zip(elastic, extra), key=lambda x: (-x[1], x[0])):
            had = prev_flex.get(j, _NO_GPUS)
            if w <= 0:
                if had.size:
                    dirty.add(j)
                continue
            if w == had.size and j in intact:
                pending.append(had)
                continue
            if pending:
                avail[np.concatenate(pending)] = False
                pending = []
            like = int(c.gpu_type[out[j][0]])
            keep = had[avail[had]][:w]
            avail[keep] = False
            g = keep
            # grow only when no flexible GPU was taken: a set that both loses and gains GPUs is a
            # migration (a restart) for the engine, a monotone one a free resize
            if keep.size < w and keep.size == had.size:
                # as many as fit: a flexible gang keeps one GPU type and may span servers, so
                # `_place` finds k GPUs exactly when that many of the type are free
                ok = avail & self._type_mask(c, like) if not self._mix[j] else avail
                req = int(jobs.gpu_type_req[j])
                if req >= 0:
                    ok = ok & self._type_mask(c, req)
                k = min(w - keep.size, int(np.count_nonzero(ok)))
                more = self._place(view, j, k, "flex", avail, inf, has_base, has_flex, like) if k > 0 else None
                if more is not None:
                    avail[more] = False
                    g = np.concatenate([keep, more])
                    intact.difference_update(c.gpu_owner[more].tolist())  # their flexible GPUs taken
            # (phase 2 places flexible gangs only, whose tiers ignore `has_flex`: not updated here)
            out[j] = np.concatenate([out[j], g])
            if g.size != had.size:  # g keeps a subset of `had` or adds to all of it: same size = same set
                dirty.add(j)
        changes: dict[int, Allocation] = {}
        for j, g in out.items():
            if j not in dirty:  # base + every flexible GPU it had: what it holds
                continue
            t = tuple(sorted(int(x) for x in g.tolist()))
            if self._held.get(j) != t:
                changes[j] = Allocation(t, self._tuned_batch(view, j, t))
        if view.accepts_changes:
            return Decision(changes, changes_only=True)
        alloc = view.keep_running()
        alloc.update(changes)
        return Decision(alloc)

    def _tuned_batch(self, view: ClusterView, j: int, gpus: tuple[int, ...]) -> int | None:
        """Aryl+TunedJobs: Pollux's batch for an elastic job on its new GPUs (None: keep)."""
        if self.config.batch_tuning != "pollux" or not self._el[j]:
            return None
        from policies.pollux import best_batch

        b = int(best_batch(view, j, np.asarray(gpus, np.int64)))
        return b if b >= len(gpus) else None

    def _scaling_loss(self, view: ClusterView):
        """The run's per-job scaling factor (`WhatIf.scaling_factor`), if its perf backend has
        an imperfect-scaling loss (Fig. 10), else None."""
        w = view.whatif
        return w.scaling_factor if w is not None and w.per_job_scaling else None

    def _flexible(self, view: ClusterView, elastic: list[int], avail: np.ndarray, inf: np.ndarray,
                  pending: bool) -> list[int]:
        """Extra workers per elastic job (1 GPU per worker): Aryl's MCKP or Gandiva's rule."""
        cfg, jobs, c = self.config, view.jobs, view.cluster
        if not elastic or cfg.scaling == "none":
            return [0] * len(elastic)
        el = np.asarray(elastic, np.int64)
        spans = jobs.max_gpus[el].astype(np.int64) - jobs.min_gpus[el].astype(np.int64)
        span = spans.tolist()
        if cfg.scaling == "gandiva":  # under-utilised = free GPUs and no pending job
            if pending:
                return [0] * len(elastic)
            left, out = int(avail.sum()), []
            for s in span:
                out.append(min(s, left))
                left -= out[-1]
            return out
        on_inf = inf[c.gpu_node]
        loss = self._scaling_loss(view)
        wmins = jobs.min_gpus[el].astype(np.int64)
        t_maxs = self._estimates(view, el, wmins)
        first = np.fromiter((next(iter(self.base[j])) for j in elastic), np.int64, len(elastic))
        n_tr, n_inf = int((avail & ~on_inf).sum()), int((avail & on_inf).sum())
        if cfg.worker_value == "engine":
            units, r, mixed, eff = 20, *self._engine_speeds(view, el, wmins, first, on_inf)
            cap = int(units * (n_tr + float(np.median(r)) * n_inf))
            t_maxs = t_maxs / np.where(on_inf[first], r, 1.0)  # T^max at the base's GPU type
            scales = np.maximum(1, np.rint(units * np.where(on_inf[first] | mixed, r, 1.0))).astype(np.int64)
        else:
            units, r, mixed, eff = 4, None, np.zeros(len(elastic), bool), 1.0  # capacity in quarter training-GPUs
            cap = int(units * (n_tr + cfg.t4_ratio * n_inf))
            inf_scale = max(1, int(round(units * cfg.t4_ratio)))
            scales = np.where(on_inf[first], inf_scale, units).astype(np.int64)  # a base's first GPU's kind
        if cap <= 0:
            return [0] * len(elastic)
        if loss is None and not mixed.any():  # every group's items at once: core.mckp_items, flattened
            w, v, offs = core.mckp_items_flat(t_maxs, wmins, spans, cfg.literal_weights)
            return core.allocate_flexible_flat(offs, w * np.repeat(scales, spans), v, cap)
        groups = []
        for k, (s, wmin, t_max, scale) in enumerate(zip(span, wmins.tolist(), t_maxs.tolist(), scales.tolist())):
            # the notes' generalised value T(w_min) − T(w_min + w) on the run's scaling curve
            wmax = wmin + s
            f = (lambda n: loss(n, wmin, wmax)) if loss is not None else (lambda n: 1.0)
            t_at = core.running_times(t_max, wmin, wmax, f, *((r[k], eff) if mixed[k] else (1.0, 1.0)))
            w, v = core.generalised_items(t_at, wmin, 1, cfg.literal_weights)
            groups.append(([x * scale for x in w], [max(0.0, x) for x in v]))
        return core.allocate_flexible(groups, cap)

    def _engine_speeds(self, view: ClusterView, el: np.ndarray, wmins: np.ndarray, first: np.ndarray,
                       on_inf: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(`core.inference_speeds` per job, jobs whose flexible workers join a training base on
        inference GPUs (heterogeneous-capable with a training base), the backend's mixed-gang
        efficiency) from the run's perf backend."""
        c, w = view.cluster, view.whatif
        inf = self._inference_nodes(view)
        names = [c.gpu_type_names[int(c.gpu_type[c.node_first_gpu[np.flatnonzero(m)[0]]])] if m.any() else None
                 for m in (~inf, inf)]
        r = core.inference_speeds(w, view.jobs.model, el, wmins, names[0], names[1], self._speed)
        mixed = self._mix[el] & ~on_inf[first] if self.config.mix_types else np.zeros(el.shape[0], bool)
        return r, mixed, float(getattr(getattr(w, "perf", None), "hetero_efficiency", 1.0))

    # ---- reclaims ---------------------------------------------------------------------------
    def hosting(self, view: ClusterView, candidates: np.ndarray) -> tuple[dict[int, dict[int, int]], list[int]]:
        """(job → {candidate node: its preemptible GPUs there}, nodes holding only flexible GPUs)."""
        c = view.cluster
        host: dict[int, dict[int, int]] = {}
        flex_only: list[int] = []
        for n in candidates.tolist():
            f = int(c.node_first_gpu[n])
            owners = c.gpu_owner[f:f + int(c.node_num_gpus[n])]
            pre = 0
            for g, o in enumerate(owners.tolist()):
                if o < 0:
                    continue
                b = self.base.get(o)
                if b is None or (f + g) in b:  # a base or inelastic worker: losing it preempts
                    host.setdefault(o, {}).setdefault(n, 0)
                    host[o][n] += 1
                    pre += 1
            if pre == 0 and (owners >= 0).any():
                flex_only.append(n)
        return host, flex_only

    def answer_reclaim(self, view: ClusterView, demand: ReclaimDemand) -> ReclaimAnswer:
        """Which on-loan servers go back (see `reclaim`); solver time kept in `reclaim_stats`."""
        cfg, c = self.config, view.cluster
        cand = np.asarray(demand.candidates, np.int64)
        t0 = time.perf_counter()
        self._sync_base(view, view.running())
        host, flex_only = self.hosting(view, cand)
        if cfg.reclaim == "random":
            chosen = core.random_reclaim(cand, demand.count, int(self.rng.integers(1 << 31)))
        elif cfg.reclaim == "scf":
            chosen = core.scf_reclaim(host, cand, demand.count)
        else:
            chosen = reclaim_servers(host, cand, flex_only, c, demand.count, cfg.tie_break, cfg.seed,
                                     update=cfg.reclaim == "aryl")
        self.reclaim_stats.append(dict(t=view.now, n_r=demand.count, solver_s=time.perf_counter() - t0,
                                       preempted=len(core.preempted_jobs(host, chosen))))
        return ReclaimAnswer(tuple(sorted(int(n) for n in chosen)), None)


def reclaim_servers(host: core.Hosting, cand: np.ndarray, flex_only: list[int], cluster, n_r: int,
                    tie_break: str = "gpu_fraction", seed: int = 0, update: bool = True) -> list[int]:
    """Aryl's full reclaim: idle servers first, then flexible-only ones (fewest busy GPUs
    first; a scale-in, no preemption), then Algorithm 1 on the rest."""
    busy = {int(n): int((cluster.gpu_owner[cluster.node_first_gpu[n]:cluster.node_first_gpu[n]
                                           + cluster.node_num_gpus[n]] >= 0).sum()) for n in cand.tolist()}
    hosted = {n for w in host.values() for n in w}
    free = sorted((n for n in cand.tolist() if n not in hosted), key=lambda n: (busy[n], n))
    chosen = free[:n_r]
    rest = n_r - len(chosen)
    if rest > 0:
        others = [n for n in cand.tolist() if n in hosted]
        chosen += core.greedy_reclaim(host, others, rest, tie_break, seed, update)
    return chosen
