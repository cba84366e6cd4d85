"""The `aryl` policy: phase 1 (SJF with skip), phase 2 (`policies.aryl.knapsack`), placement
(`policies.aryl.placement`) and reclaims (`policies.aryl.reclaim`) over incrementally kept
per-job base and flexible GPU sets (see the package doc)."""

from __future__ import annotations

import numpy as np

from policies.aryl.config import ArylConfig
from policies.aryl.knapsack import Knapsack
from policies.aryl.placement import Placement
from policies.aryl.reclaim import Reclaiming
from policies.base import BasePolicy
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, Allocation, ClusterView, Decision

_NO_GPUS = np.zeros(0, np.int64)
_NO_GPUS.flags.writeable = False


@POLICIES.register("aryl")
class Aryl(Knapsack, Placement, Reclaiming, BasePolicy):
    """Aryl (EuroSys'22): capacity loaning and elastic scaling (see the `policies.aryl` package doc)."""

    name = "aryl"
    Config = ArylConfig
    answers_reclaims = True

    def __init__(self, config: ArylConfig) -> None:
        super().__init__(config)
        self.needs = frozenset({NEED_DURATION_ORACLE})
        self.event_driven = bool(config.event_driven)
        self._n_held = np.zeros(0, np.int64)  # job -> len(self._held[job]), -1 when not held
        self._first = np.zeros(0, np.int64)  # job -> its base's first GPU (in the set's iteration order)
        self._alive = np.zeros(0, bool)  # scratch mask over jobs, all False between calls
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
        self._inf_nodes: tuple | None = None  # (node_group, its names, inference-node mask)
        self._kind_types: tuple | None = None  # (gpu_type, inference mask, (training, inference) type names)
        self.reclaim_stats: list[dict] = []

    # ---- views --------------------------------------------------------------------------
    def _inference_nodes(self, view: ClusterView) -> np.ndarray:
        """Nodes of the cluster's `inference` group (read-only), computed once per topology:
        node groups do not change during a run."""
        c = view.cluster
        hit = self._inf_nodes
        if hit is not None and hit[0] is c.node_group and hit[1] == c.node_group_names:
            return hit[2]
        names = tuple(c.node_group_names)
        if c.node_group is None or "inference" not in names:
            inf = np.zeros(c.node_first_gpu.shape[0], bool)
        else:
            inf = np.asarray(c.node_group) == names.index("inference")
        inf.flags.writeable = False
        self._inf_nodes = (c.node_group, names, inf)
        return inf

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
        self._first[j] = arr[0] if arr.size else -1

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
            more = jobs.num_jobs - self._n_held.shape[0]
            self._n_held = np.concatenate([self._n_held, np.full(more, -1)])
            self._first = np.concatenate([self._first, np.full(more, -1)])
            self._alive = np.concatenate([self._alive, np.zeros(more, bool)])
        alive = self._alive  # all False between calls: set for the running jobs here only
        alive[running] = True
        was = np.concatenate([self._prev_running, np.asarray(self._started, np.int64)])
        gone = was[~alive[was]]
        alive[running] = False
        for j in dict.fromkeys(gone.tolist()):  # each job once (the drops commute)
            self._drop(j)
        self._prev_running, self._started = running, []
        counts = jobs.alloc_count
        # unchanged jobs are skipped (only this policy grows a job, reclaims only shrink it)
        for j in running[self._n_held[running] != counts[running]].tolist():
            g = tuple(sorted(np.asarray(view.allocation_of(j)).tolist()))
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
        flex_list = [self._flex[j] for j in el_running]
        flex_all = np.concatenate(flex_list) if flex_list else _NO_GPUS  # in el_running order
        flex_n = np.fromiter((a.shape[0] for a in flex_list), np.int64, len(flex_list))
        avail[flex_all] = True
        n_nodes = inf.shape[0]
        has_base = np.zeros(n_nodes, bool)
        has_base[c.gpu_node[self._base_n > 0]] = True
        has_flex = np.zeros(n_nodes, bool)
        out: dict[int, np.ndarray] = {}  # started jobs' GPUs (phase 1), then elastic jobs' changed ones
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
        dirty = self._resize(view, elastic, extra, flex_list, flex_all, flex_n, avail, inf, has_base, has_flex, out)
        changes: dict[int, Allocation] = {}
        # running elastic jobs first (in running order), then the started ones (in start order)
        for j in [elastic[i] for i in sorted(dirty)] + started:
            g = out[j] if j in out else self._base_gpus[j]  # a running job without flexible GPUs now
            t = tuple(sorted(int(x) for x in g.tolist()))
            if self._held.get(j) != t:
                changes[j] = Allocation(t, self._tuned_batch(view, j, t))
        if view.accepts_changes:
            return Decision(changes, changes_only=True)
        alloc = view.keep_running()
        alloc.update(changes)
        return Decision(alloc)

    def _resize(self, view: ClusterView, elastic: list[int], extra: list[int], flex_list: list[np.ndarray],
                flex_all: np.ndarray, flex_n: np.ndarray, avail: np.ndarray, inf: np.ndarray, has_base: np.ndarray,
                has_flex: np.ndarray, out: dict[int, np.ndarray]) -> set[int]:
        """Give each elastic job its `extra` flexible GPUs, the most first (then by job id): keep
        what it holds while free, grow where it kept all; `out[j]` its new GPUs (base first). The
        indexes into `elastic` of the running jobs whose GPUs may have changed are returned.

        A running job that keeps exactly its flexible GPUs, all free here and not taken by an
        earlier job's growth (the only step that takes other jobs' GPUs), changes nothing (most
        jobs in most rounds): such jobs are found with array operations and only the others
        are visited, each after the unchanged jobs before it have their GPUs marked taken, so
        every job sees `avail` as a visit of all of them in order would. Jobs with no flexible GPUs
        that get none are not visited either."""
        c, jobs = view.cluster, view.jobs
        n_run = len(flex_list)
        ext = np.asarray(extra, np.int64)
        had_n = np.zeros(len(elastic), np.int64)
        had_n[:n_run] = flex_n
        intact = np.zeros(len(elastic), bool)
        if flex_all.size:
            nz = np.flatnonzero(flex_n > 0)
            starts = (np.cumsum(flex_n) - flex_n)[nz]  # each non-empty flexible set's first index
            intact[nz] = np.logical_and.reduceat(avail[flex_all], starts)
        order = np.lexsort((np.asarray(elastic, np.int64), -ext))
        rank = np.empty(len(elastic), np.int64)
        rank[order] = np.arange(len(elastic))
        same = ((ext > 0) & (ext == had_n) & intact)[order]  # by position in the visit order
        visit = ~same & ((ext > 0) | (had_n > 0))[order]  # (no GPUs and none to get: nothing to do)
        gpu_pos = np.repeat(rank[:n_run], flex_n)  # each flexible GPU's job's position
        dirty: set[int] = set()  # (indexes < n_run: the started jobs are all returned by the caller)
        done = 0  # unchanged jobs before this position have their GPUs marked taken
        by_pos = pos_of = None  # flexible GPUs sorted by position; GPU -> position (built when needed)
        todo = np.flatnonzero(visit).tolist()
        t = 0
        while t < len(todo):
            p = todo[t]
            t += 1
            i = int(order[p])
            j, w = elastic[i], int(extra[i])
            had = flex_list[i] if i < n_run else _NO_GPUS
            if w <= 0:
                dirty.add(i)  # it had flexible GPUs
                continue
            if flex_all.size and p > done:
                if by_pos is None:
                    k = np.argsort(gpu_pos, kind="stable")
                    by_pos = (flex_all[k], gpu_pos[k])
                a, b = np.searchsorted(by_pos[1], (done, p)).tolist()
                if b > a:
                    avail[by_pos[0][a:b][same[by_pos[1][a:b]]]] = False
            done = p
            base = out[j] if i >= n_run else self._base_gpus[j]
            like = int(c.gpu_type[base[0]])
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
                    # their flexible GPUs taken: those jobs (all later in the order) are visited
                    if pos_of is None:
                        pos_of = np.full(avail.shape[0], -1, np.int64)
                        pos_of[flex_all] = gpu_pos
                    lost = pos_of[more]
                    lost = lost[lost >= 0]
                    if same[lost].any():
                        same[lost] = False
                        visit[lost] = True
                        todo = (np.flatnonzero(visit[p + 1:]) + (p + 1)).tolist()
                        t = 0
            # (phase 2 places flexible gangs only, whose tiers ignore `has_flex`: not updated here)
            if g.size != had.size:  # g keeps a subset of `had` or adds to all of it: same size = same set
                out[j] = np.concatenate([base, g])
                if i < n_run:
                    dirty.add(i)
        return dirty

    def _tuned_batch(self, view: ClusterView, j: int, gpus: tuple[int, ...]) -> int | None:
        """Aryl+TunedJobs: Pollux's batch for an elastic job on its new GPUs (None: keep)."""
        if self.config.batch_tuning != "pollux" or not self._el[j]:
            return None
        from policies.pollux import best_batch

        b = int(best_batch(view, j, np.asarray(gpus, np.int64)))
        return b if b >= len(gpus) else None
