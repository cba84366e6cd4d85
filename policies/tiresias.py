"""Tiresias: discretised two-dimensional least-attained-service (2D-LAS) with skew-aware placement.

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI'19.
Non-clairvoyant: it reads only attained service and executed time, never the oracle.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies.base import _STOP, BasePolicy, Round, demands_cached
from policies import _tiresias_kernels as TK
from policies import placement as P
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from simcore.api import Allocation, ClusterView, Decision

CONSOLIDATION = ("tier", "min-nodes")
_EPS_GPU_S = 1e-6  # service within this of a threshold counts as reached (float round-off at wake-ups)


@dataclass(frozen=True)
class TiresiasConfig(PlacedConfig):
    """Non-clairvoyant: jobs are ranked by the GPU-time they have already received, never by
    their duration. Jobs start in the top queue and move down a queue each time their attained
    GPU-seconds cross a threshold; lower queues run only on GPUs the higher ones leave, and a
    waiting job preempts running jobs of strictly lower queues. Within a queue jobs run in
    arrival order. A job that has waited `promote_knob` times as long as it has run returns to
    the top queue (starvation guard). Jobs of high-skew models (`skew_models`) are placed
    consolidated and wait for such a placement; other jobs take any placement."""

    reference: ClassVar[str] = ("Gu et al., \"Tiresias: A GPU Cluster Manager for Distributed Deep Learning\", "
                                "NSDI'19")

    thresholds_gpu_s: tuple[float, ...] = param(
        (57600.0,),
        "attained-service thresholds between queues (ascending); K = len + 1 queues",
        source="2 queues split at 16 GPU-hours, as the Ares artifact's Tiresias baseline",
    )
    promote_knob: float = param(
        8.0,
        "starvation guard: a waiting job is promoted to the top queue once its waiting time "
        "exceeds promote_knob × its executed time (0 disables)",
        unit="× executed time",
        source="the paper's PROMOTEKNOB, a tunable knob; 8 is cosim's default",
    )
    skew_models: tuple[str, ...] = param(
        ("vgg*", "alexnet*"),
        "model-name patterns (fnmatch, case-insensitive) whose jobs need consolidated placement "
        "(large-tensor, high-skew models)",
        source="the paper's skewed models (VGG, AlexNet)",
    )
    consolidation: str = param(
        "tier",
        "constraint for skewed jobs: tier = within the smallest tier (node, leaf, pod) that can ever hold "
        "the job; min-nodes = on the fewest nodes that can ever hold it",
        choices=CONSOLIDATION,
        source="tier: the Dally paper's reading of Tiresias",
    )
    placement: str = param("consolidate", "placement strategy for other (non-skewed) jobs", choices=P.STRATEGIES)
    interval_s: float | None = param(
        None,
        "time between periodic rounds, besides events and the exact times a job crosses a threshold or "
        "becomes due for promotion; none = no periodic rounds (same decisions, far fewer calls); 60 = the "
        "round of round-based simulators (the Ares artifact's)",
    )

    def validate(self) -> None:
        t = self.thresholds_gpu_s
        self.check("thresholds_gpu_s", all(x > 0 for x in t) and all(a < b for a, b in zip(t, t[1:])),
                   "positive, strictly ascending GPU-seconds")
        self.check("promote_knob", self.promote_knob >= 0, "a non-negative number")


@POLICIES.register("tiresias")
class Tiresias(BasePolicy):
    """Tiresias (NSDI'19): discretised 2D-LAS queues by attained GPU-seconds, starvation guard, skew-aware placement.

    - Attained service = GPUs × time held (`JobsView.attained_gpu_s`, restarts included).
      Queue q of a job = number of thresholds its service (since its last promotion) has
      reached: every job enters queue 0 and is demoted when it crosses a threshold.
    - Priority: lower queue first; within a queue, first come first served by arrival, with
      jobs already running ahead of waiting ones, so a queue never preempts itself.
      Preemptive across queues: a waiting job preempts running jobs of strictly lower
      queues (the fewest, lowest-priority ones whose GPUs let it be placed). A job that
      cannot be placed is skipped; lower-priority jobs may use the GPUs.
    - Starvation guard (the paper's PROMOTEKNOB): a waiting job in a lower queue whose
      waiting time since it last ran reaches `promote_knob` × its executed time goes back to
      queue 0, its service and executed-time counters restarting from zero (as in the
      authors' simulator: waiting counts from the first start after the last promotion).
    - Placement: the paper profiles tensor-size skew and consolidates only skewed models
      (VGG, AlexNet: large tensors), relaxing consolidation for the rest to cut queueing.
      Skew is model metadata here: jobs whose model matches `skew_models` must be placed
      within the smallest tier that could ever hold them (`consolidation=tier`, the
      "intended" condition in seeds/notes/dally.md §6: one node if the job fits a node,
      else one leaf, else one pod) or on the fewest nodes (`min-nodes`), and otherwise
      wait; other jobs take `placement` (best effort).
    - Cost (issue 4: ~160k calls on the full Philly trace): in the common case (every GPU
      online, `consolidate` placement on a one-type cluster, the engine's `current`, no skewed
      job active) a call is one numba kernel (`_tiresias_kernels.fused_round`) taking exactly
      the steps of the `Round` walk in `decide`; elsewhere the walk itself runs (`use_fused` False
      forces it; the tests compare both).
    - Called on events and asks to be woken (`Decision.wake_at`) exactly when a running job
      crosses a threshold or a waiting job becomes due for promotion, the only changes that
      happen between events; so periodic rounds are off by default (`interval_s`). Set
      `interval_s=60` to mimic round-based simulators (the Ares artifact's 60 s rounds).
    """

    name = "tiresias"
    Config = TiresiasConfig
    #: only a waiting job preempts or is promoted: with none queued a round keeps every job
    #: (demotions matter only against waiting jobs, and wake-ups still come)
    rounds_need_queue = True
    #: a restart end frees no GPU and changes no queue (restart time counts as service)
    ignores_restart_ends = True
    #: run the common call as one kernel (`_decide_fused`); False: always through `Round`
    #: (the reference the fused path is tested against)
    use_fused = True

    def __init__(self, config: TiresiasConfig) -> None:
        super().__init__(config)
        self._thr = np.asarray(config.thresholds_gpu_s, float)
        self._pats = tuple(p.lower() for p in config.skew_models)
        self._n = -1
        self._last_now = -np.inf
        # the fused round's constant arguments: thresholds, topology, per-job static inputs
        self._params = np.concatenate([[_EPS_GPU_S, float(config.promote_knob)], self._thr]).astype(float)
        self._topo_of = self._topo = self._jobs_of = None
        self._out = np.zeros(0, np.int64)
        self._any_skewed = True
        self._fusable = config.placement == "consolidate"

    # -- per-run state ---------------------------------------------------------------
    def _reset(self, n: int) -> None:
        self._n = n
        # columns of two arrays (a job's entries side by side: see `fused_round`)
        self._fstate = _aligned((n, 4), np.float64)
        self._istate = _aligned((n, 8), np.int64)
        self._istate[:, 7] = -1  # the fused round's scratch column `rank`
        self.svc_base = self._fstate[:, 0]  # attained GPU-s at the last promotion
        self.exec_base = self._fstate[:, 1]  # executed s at the last promotion
        self.pend_base = self._fstate[:, 2]  # waited s at the first start after it (NaN: not yet)
        self.pend_base[:] = np.nan
        self._waited = self._fstate[:, 3]  # waiting seconds of each active job (this call)
        self.promotions = self._istate[:, 0]
        self._q = self._istate[:, 1]  # queue of each active job (this call)
        self._placed = np.zeros(n, bool)  # scratch of `_next_jump`
        self._skew = np.array([], bool)
        self._jobs_of = None

    def queues(self, view: ClusterView) -> np.ndarray:
        """Queue index of every job (0 = highest priority)."""
        if view.jobs.num_jobs != self._n:
            self._reset(view.jobs.num_jobs)
        svc = view.jobs.attained_gpu_s - self.svc_base
        return np.searchsorted(self._thr, svc + _EPS_GPU_S, side="right")

    def _is_skewed(self, view: ClusterView) -> np.ndarray:
        if self._skew.size != self._n:
            names = [str(m).lower() for m in view.jobs.model]
            self._skew = np.array([any(fnmatch.fnmatchcase(m, p) for p in self._pats) for m in names], bool)
        return self._skew

    # -- the decision ------------------------------------------------------------------
    def decide(self, view: ClusterView, now: float) -> Decision:
        jobs = view.jobs
        if jobs.num_jobs != self._n or now < self._last_now:
            self._reset(jobs.num_jobs)
        self._last_now = now
        cur = view.current  # (the engine's, listing every running job: `Round` keeps them in bulk then)
        if self._fusable and self.use_fused and cur is not None and (cur or not view.running().size) \
                and len(view.cluster.gpu_type_names) <= 1:
            d = self._decide_fused(view, now)
            if d is not None:
                return d
        r = Round(view)
        active = np.ascontiguousarray(view.active(), np.int64)
        # per-job quantities live in J-sized buffers written on the active set only (never read
        # elsewhere): a call costs the active set, not the trace
        q, waited = self._q, self._waited
        order = TK.prepare(active, r.undecided, float(now), jobs.submit_time, jobs.executed_s, jobs.attained_gpu_s,
                           jobs.first_start, self.svc_base, self.exec_base, self.pend_base, self.promotions,
                           self._thr, _EPS_GPU_S, float(self.config.promote_knob), q, waited)
        und = r.undecided
        skew = self._is_skewed(view)
        tier_cap = _TierCaps(view)
        # per position: queue (preemption class), placement shape key, and the running jobs
        # lowest priority first. Shape keys only for deterministic placers: a job shaped like
        # one that just failed on the same pool, with the same victims, fails too
        klass, keys, running_rev, q_rev = TK.walk_inputs(
            order, und, q, r.dem, jobs.gpu_type_req, skew, self._thr.size + 1,
            self.placement_is_deterministic(view, self.config.placement))
        # the common placement (not skewed, `consolidate`, one GPU type) calls the kernel directly
        fast = P.consolidate_fast(view.cluster) if self.config.placement == "consolidate" else None
        req, dem = jobs.gpu_type_req, r.dem

        def placer(jj: int, avail: np.ndarray) -> np.ndarray | None:
            if fast is not None and not skew[jj]:
                return None if req[jj] > 0 else fast(avail, int(dem[jj]))
            return self._place(view, r, jj, avail, skew, tier_cap)

        for j in r.walk(order, klass=klass, keys=keys, num_classes=self._thr.size + 1):  # only jobs a placement could change
            if und[j] and r.keep(j):
                continue
            gpus = r.place(j, placer, victims=lambda qj=q[j]: running_rev[q_rev > qj])
            if gpus is None:
                r.walk_failed()
        started = np.asarray(r.started, np.int64)
        if started.size:
            s = started[np.isnan(self.pend_base[started])]
            self.pend_base[s] = waited[s]
        return r.decision(wake_at=self._next_jump(view, r, q, waited, now, active))

    def _decide_fused(self, view: ClusterView, now: float) -> Decision | None:
        """The whole call as one kernel (`_tiresias_kernels.fused_round`) where it applies
        (every GPU online, no skewed job active); None, with nothing changed, elsewhere."""
        jobs, c = view.jobs, view.cluster
        if self._topo_of is not c.gpu_node:
            self._topo_of = c.gpu_node
            self._topo = (c.gpu_node, c.gpu_type, c.node_first_gpu, c.node_num_gpus, c.node_leaf, c.leaf_pod,
                          P._num_leaves(c), P._num_pods(c))
            self._num_gpus = c.num_gpus
            self._out = np.zeros(5 * c.num_gpus + 2, np.int64)
        if jobs is not self._jobs_of:  # per-job static inputs (the engine keeps one JobsView a run)
            dem = demands_cached(view)
            skew = self._is_skewed(view)
            key = (dem * 65_537 + jobs.gpu_type_req.astype(np.int64) + 1) * 2 + skew
            self._istate[:, 2:6] = np.stack([dem, jobs.gpu_type_req, skew, key], axis=1)
            self._any_skewed = bool(skew.any())
            self._jobs_of = jobs
        out = self._out
        st, n_out, n_stop, n_kept, t = TK.fused_round(
            view.active(), view.running(), float(now), jobs.submit_time, jobs.executed_s, jobs.attained_gpu_s,
            jobs.first_start, self._fstate, self._istate, self._params, self._any_skewed, jobs.alloc_count,
            c.gpu_owner, c.gpu_online, *self._topo, out)
        if st < 0:
            return None
        t = float(t)
        wake = t if math.isfinite(t) and t > now else None
        cur = view.current
        g = self._num_gpus
        if view.accepts_changes:  # only the changes: moved or started jobs, then stopped ones
            allocs: dict[int, Allocation] = {}
            for j, gt in _records(out[:n_out].tolist()):
                a = cur.get(j)
                if a is None or a.gpus != gt:
                    allocs[j] = Allocation(gt)
            if n_stop:
                for j in out[3 * g:3 * g + n_stop].tolist():
                    allocs[j] = _STOP
            return Decision(allocations=allocs, wake_at=wake, changes_only=True)
        alloc = {}
        for j, gt in _records(out[:n_out].tolist()):
            a = cur.get(j)
            alloc[j] = a if a is not None and a.gpus == gt else Allocation(gt)  # same GPUs: engine's object
        kept = out[4 * g:4 * g + n_kept].tolist()
        alloc.update(zip(kept, map(cur.__getitem__, kept)))
        return Decision(allocations=alloc, wake_at=wake)

    def _place(self, view, r, j, avail, skew, caps) -> np.ndarray | None:
        dem = int(r.dem[j])
        req = int(view.jobs.gpu_type_req[j])
        accept = self.accept_for(view, j)
        if not skew[j]:
            return P.place(view.cluster, avail, dem, gpu_type=req, strategy=self.config.placement,
                           rng=self.rng, accept=accept)
        if self.config.consolidation == "tier":
            return P.place(view.cluster, avail, dem, gpu_type=req, strategy="topo", accept=accept,
                           max_tier=caps.tier(dem, req))
        max_nodes = caps.min_nodes(dem, req)

        def few_nodes(g: np.ndarray) -> bool:
            return P.span(view.cluster, g)[0] <= max_nodes and (accept is None or accept(g))

        return P.place(view.cluster, avail, dem, gpu_type=req, strategy="consolidate", accept=few_nodes)

    def _next_jump(self, view, r, q, waited, now, active) -> float | None:
        """Earliest time a running job is demoted or a waiting one becomes due for promotion."""
        jobs = view.jobs
        idx, n = r.placed()
        t = TK.next_jump(idx, n, active, q, jobs.attained_gpu_s, self.svc_base, self._thr, float(now),
                         float(self.config.promote_knob), jobs.executed_s, self.exec_base, self.pend_base, waited,
                         self._placed)
        return float(t) if np.isfinite(t) and t > now else None


@dataclass(frozen=True)
class TiresiasPolluxConfig(TiresiasConfig):
    """Tiresias with the parameters of the Pollux OSDI'21 simulator (also the Ares artifact's):
    two queues split at 16 GPU-hours of attained service, no starvation promotion, no
    skew-aware consolidation, and decisions only at 60-s rounds (arrivals, completions and
    demotions wait for the next round)."""

    reference: ClassVar[str] = ("Gu et al., \"Tiresias\", NSDI'19, as run by the Pollux OSDI'21 simulator "
                                "(petuum/adaptdl osdi21-artifact, simulator/tiresias.py)")

    thresholds_gpu_s: tuple[float, ...] = param(
        (57600.0,), "attained-service thresholds between queues (ascending); K = len + 1 queues",
        source="Pollux simulator: _queue_threshold = 3600 * 16 (tiresias.py:8)")
    promote_knob: float = param(
        0.0, "starvation guard (0 disables)", unit="× executed time",
        source="Pollux simulator: _solve_starvation = 0 (tiresias.py:9)")
    skew_models: tuple[str, ...] = param(
        (), "model-name patterns whose jobs need consolidated placement",
        source="the Pollux simulator has no skew-aware placement")
    interval_s: float | None = param(
        60.0, "time between rounds, the only decision points", source="Pollux simulator --interval default 60")


@POLICIES.register("tiresias-pollux")
class TiresiasPollux(Tiresias):
    """Tiresias as the Pollux OSDI'21 simulator runs it: 2 queues, 16 GPU-h threshold, no promotion, 60-s rounds only.

    A preset of `tiresias` (same mechanism, different defaults): thresholds (57600 GPU-s),
    `promote_knob=0`, no skewed models, and decisions only at the 60-s rounds — arrivals,
    completions and demotions wait for the next round as in the peer, so the exact demotion
    wake-ups are dropped.
    """

    name = "tiresias-pollux"
    Config = TiresiasPolluxConfig

    def __init__(self, config: TiresiasPolluxConfig) -> None:
        super().__init__(config)
        self.event_driven = False

    def decide(self, view: ClusterView, now: float) -> Decision:
        d = super().decide(view, now)
        return dataclasses.replace(d, wake_at=None) if d.wake_at is not None else d


def _aligned(shape: tuple[int, int], dtype) -> np.ndarray:
    """A zeroed C array whose rows start on 64-byte boundaries when a row is 32 or 64 bytes
    (one cache line per job's entries; numpy itself aligns to 16)."""
    n, k = shape
    item = np.dtype(dtype).itemsize
    buf = np.zeros(n * k + 64 // item, dtype)
    skip = (-buf.ctypes.data % 64) // item
    return buf[skip:skip + n * k].reshape(n, k)


def _records(rec: list[int]):
    """(job, GPU ids) of the placement records `fused_round` writes: job, count, ids..."""
    x = 0
    while x < len(rec):
        e = x + 2 + rec[x + 1]
        yield rec[x], tuple(rec[x + 2:e])
        x = e


class _TierCaps:
    """Largest node / leaf / pod of the cluster in GPUs (of one type), for the consolidation rule."""

    def __init__(self, view: ClusterView) -> None:
        self.c = view.cluster
        self._cache: dict[int, tuple[np.ndarray, ...]] = {}

    def _caps(self, req: int) -> tuple[int, int, int]:
        if req not in self._cache:
            c = self.c
            ok = np.ones(c.num_gpus, bool) if req < 0 else c.gpu_type == req
            node = np.bincount(c.gpu_node[ok], minlength=c.node_num_gpus.shape[0])
            leaf = np.bincount(c.node_leaf, weights=node, minlength=c.leaf_pod.shape[0])
            pod = np.bincount(c.leaf_pod, weights=leaf)
            self._cache[req] = (node, int(node.max(initial=0)), int(leaf.max(initial=0)), int(pod.max(initial=0)))
        return self._cache[req]

    def tier(self, dem: int, req: int) -> int:
        _, node, leaf, pod = self._caps(req)
        return 0 if dem <= node else 1 if dem <= leaf else 2 if dem <= pod else 3

    def min_nodes(self, dem: int, req: int) -> int:
        node = np.sort(self._caps(req)[0])[::-1]
        k = int(np.searchsorted(np.cumsum(node), dem) + 1)
        return k
