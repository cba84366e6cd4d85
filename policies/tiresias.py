"""Tiresias: discretised two-dimensional least-attained-service (2D-LAS) with skew-aware placement.

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI'19.
Non-clairvoyant: it reads only attained service and executed time, never the oracle. Its per-call
arithmetic and round kernel are numba kernels in `policies._tiresias_kernels`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from cosim.nsort import argsort_stable

from policies import _round_state_kernels as RS
from policies._tiresias_kernels import _round_kernel, next_jump
from policies.base import BasePolicy, Round
from policies import placement as P
from policies.config import PlacedConfig, param
from policies.registry import POLICIES
from simcore.api import ClusterView, Decision

CONSOLIDATION = ("tier", "min-nodes")
QUEUE_ORDERS = ("running-first", "entry")
ADMISSIONS = ("placement", "gpu-count")
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

    queue_order: str = param(
        "running-first",
        "order within a queue: running-first = running jobs before waiting ones, each by arrival (a queue "
        "never preempts itself); entry = by the time the job entered the queue (queue 0: arrival; lower "
        "queues: the round it was demoted), running or not (needs admission=gpu-count)",
        choices=QUEUE_ORDERS,
        source="entry: the Pollux OSDI'21 simulator (tiresias.py appends a demoted job to _queue_1)",
    )
    admission: str = param(
        "placement",
        "placement = walk the priority order placing each job, preempting strictly lower queues (the "
        "paper); gpu-count = admit jobs in priority order while their GPU count fits the cluster's online "
        "GPUs (skipping those that do not), preempt running jobs not admitted, then place the admitted "
        "waiting jobs with `placement` (needs promote_knob=0)",
        choices=ADMISSIONS,
        source="gpu-count: the Pollux OSDI'21 simulator (tiresias.py, 'Update statuses' then 'Update allocations')",
    )

    def validate(self) -> None:
        t = self.thresholds_gpu_s
        self.check("queue_order", self.queue_order == "running-first" or self.admission == "gpu-count",
                   "running-first unless admission=gpu-count")
        self.check("promote_knob", self.admission == "placement" or self.promote_knob == 0,
                   "0 with admission=gpu-count (the Pollux simulator's Tiresias has no promotion)")
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
    - Cost (~160k calls on the full Philly trace): the per-job bookkeeping is one kernel
      (`prepare`), and the priority walk is `Round.walk`, whose kernel keeps, places
      (`consolidate` on a one-type cluster) and preempts without returning to Python except
      for skewed jobs and running jobs to check.
    - Called on events and asks to be woken (`Decision.wake_at`) exactly when a running job
      crosses a threshold or a waiting job becomes due for promotion, the only changes that
      happen between events; so periodic rounds are off by default (`interval_s`). Set
      `interval_s=60` to mimic round-based simulators (the Ares artifact's 60 s rounds).
    """

    name = "tiresias"
    single_type_placement = True  # the shared placer keeps a job on one type (`simcore.admission`)
    Config = TiresiasConfig
    #: only a waiting job preempts or is promoted: with none queued a round keeps every job
    #: (demotions matter only against waiting jobs, and wake-ups still come)
    rounds_need_queue = True
    #: a restart end frees no GPU and changes no queue (restart time counts as service)
    ignores_restart_ends = True

    def __init__(self, config: TiresiasConfig) -> None:
        super().__init__(config)
        self._thr = np.asarray(config.thresholds_gpu_s, float)
        self._pats = tuple(p.lower() for p in config.skew_models)
        self._n = -1
        self._last_now = -np.inf
        self._tier_caps: _TierCaps | None = None
        self._knob = float(config.promote_knob)
        self._flags_of = None  # the cluster `_flags` (deterministic placer, consolidate) are for
        self._flags = (False, False)
        self._by_count = config.admission == "gpu-count"
        if self._by_count:
            # it records the round each job is demoted in (queue_order=entry): every round is needed
            self.rounds_need_queue = False

    # -- per-run state ---------------------------------------------------------------
    def _reset(self, n: int) -> None:
        self._n = n
        # columns of two arrays, a job's entries side by side on one cache line (`prepare` and
        # the walk inputs read them per active job: one line each instead of one per quantity)
        self._fstate = _aligned((n, 4), np.float64)
        self._istate = _aligned((n, 8), np.int64)
        self.svc_base = self._fstate[:, 0]  # attained GPU-s at the last promotion
        self.exec_base = self._fstate[:, 1]  # executed s at the last promotion
        self.pend_base = self._fstate[:, 2]  # waited s at the first start after it (NaN: not yet)
        self.pend_base[:] = np.nan
        self._waited = self._fstate[:, 3]  # waiting seconds of each active job (this call)
        self.promotions = self._istate[:, 0]
        self._q = self._istate[:, 1]  # queue of each active job (this call)
        # columns 2, 3: per job, its shape (`shape_key` × 2 + skewed) and whether the walk kernel
        # places it (`_static`, set per JobsView); 4: the scratch of `_next_jump` (all 0)
        self._placed = self._istate[:, 4]
        self._static_of = None
        # the walk inputs of a call (its first `len(active)` entries): order, klass, keys, kernel
        self._wbuf = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.bool_))
        self._skew = np.array([], bool)
        self._entered = None

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
        n_jobs = jobs.num_jobs
        if n_jobs != self._n or now < self._last_now:
            self._reset(n_jobs)
        self._last_now = now
        if self._by_count:
            return self._decide_by_count(view, now)
        active = view.active()
        if active.dtype != np.int64:
            active = active.astype(np.int64)
        # per-job quantities live in J-sized buffers written on the active set only (never read
        # elsewhere): a call costs the active set, not the trace
        c = view.cluster
        ws = self.workspace
        w = ws.walk_state(c, n_jobs)  # the round's masks and the walk's buffers
        if self._static_of is not jobs or self._flags_of is not c:  # per-job static walk inputs
            self._static_inputs(view, w[2])
        wb = self._wbuf
        # the round's initial masks (`round_begin`), this call's bookkeeping and the priority
        # order with, per position, the walk inputs: queue (preemption class), placement shape
        # key (only for deterministic placers: a job shaped like one that just failed on the
        # same pool, with the same victims, fails too) and whether the walk kernel places it;
        # the walk's first run (`walk_run`) and, when the walk needs no Python, the wake-up
        # time, in one kernel call; the round takes its outcome (`Round(begun=)`, `walk(ran=)`)
        und = ws.take_mask(n_jobs)
        n_off, i, t = _round_kernel(
            c.gpu_owner, c.gpu_online, view.running(), active, und, float(now), jobs.submit_time, jobs.executed_s,
            jobs.attained_gpu_s, jobs.first_start, self._fstate, self._istate, self._thr, _EPS_GPU_S, self._knob,
            self._flags[0], *wb, ws.demands(view), jobs.gpu_type_req, jobs.alloc_count, ws.memo, w[3], w[4], w[5],
            ws.node_free(c), w[16])
        r = Round(view, self, begun=(und, n_off))
        n = active.shape[0]
        if i >= n:  # the kernel ran the whole walk: nothing for Python
            r.take_walk()
            return r.decision(wake_at=t if t > now and t < math.inf else None)

        def placer(jj: int, avail: np.ndarray) -> np.ndarray | None:
            return self._place(view, r, jj, avail, skew, self._caps(view))

        skew = self._skew
        # the walk hands back skewed jobs and running jobs to check
        for j in r.walk(wb[0][:n], klass=wb[1][:n], keys=wb[2][:n], num_classes=self._thr.size + 1,
                        kernel=wb[3][:n], preempt=True, ran=i):
            if und[j] and r.keep(j):
                continue
            if r.place(j, placer, victims=r.victims) is None:
                r.walk_failed()
        t = self._next_jump(view, r, self._q, self._waited, now, active)  # the wake-up from the round's outcome
        return r.decision(wake_at=t if t > now and t < math.inf else None)

    def _static_inputs(self, view: ClusterView, one_type: bool) -> None:
        """The per-job walk inputs that change only with the JobsView (one a run) or the
        cluster: shape key × 2 + skewed, and whether the walk kernel's placer takes the job
        (`consolidate`, not skewed, on a one-type cluster: `Round.walk`)."""
        jobs, c = view.jobs, view.cluster
        self._static_of, self._flags_of = jobs, c
        self._flags = (self.placement_is_deterministic(view, self.config.placement),
                       self.config.placement == "consolidate")
        skew = self._is_skewed(view)
        self._istate[:, 2] = RS.shape_key(self.workspace.demands(view), jobs.gpu_type_req.astype(np.int64)) * 2 + skew
        self._istate[:, 3] = (self._flags[1] and one_type) & ~skew

    def _decide_by_count(self, view: ClusterView, now: float) -> Decision:
        """`admission=gpu-count` (the Pollux OSDI'21 simulator's Tiresias): admit by GPU count in
        priority order, preempt running jobs left out, keep the others where they are, place the
        admitted waiting ones. Queues by attained service as in `queues` (no promotion: `validate`
        requires promote_knob=0 with this admission); with `queue_order=entry` a job demoted this
        call enters its new queue now, behind those demoted before it."""
        jobs = view.jobs
        q = self.queues(view)
        if getattr(self, "_entered", None) is None or self._entered.size != self._n:
            self._entered = np.array(jobs.submit_time, float)
            self._qseen = np.zeros(self._n, np.int64)
        active = view.active().astype(np.int64)
        qa = q[active]
        moved = active[qa != self._qseen[active]]
        self._entered[moved] = now
        self._qseen[active] = qa
        running = view.running()
        run = np.zeros(self._n, bool)
        run[running] = True
        # priority order: queue, then entry time (`entry`) or running first, then arrival, then
        # index (unique: a total order); one lexsort, its last key first
        within = self._entered[active] if self.config.queue_order == "entry" else ~run[active]
        order = active[np.lexsort((active, jobs.submit_time[active], within, qa))]
        r = Round(view, self)
        free = int(np.count_nonzero(view.cluster.gpu_online))
        admitted = []
        for j, d in zip(order.tolist(), r.dem[order].tolist()):
            if d <= free:
                free -= d
                admitted.append(j)
        ok = np.zeros(self._n, bool)
        ok[admitted] = True
        for j in running[~ok[running]].tolist():
            r.preempt(j)
        r.keep_all_undecided()  # the admitted running jobs, where they are
        skew = self._is_skewed(view)
        placed_all = True
        for j in admitted:
            if not run[j]:
                if r.place(j, lambda jj, avail: self._place(view, r, jj, avail, skew, self._caps(view))) is None:
                    placed_all = False
        return r.decision(quiet_until=self._quiet_until(view, r, q, admitted, run, now) if placed_all else None)

    def _quiet_until(self, view: ClusterView, r: Round, q: np.ndarray, admitted: list, run: np.ndarray,
                     now: float) -> float:
        """`Decision.quiet_until` of a by-count round whose admitted jobs all hold GPUs after it
        (and no other job does): until one of them crosses its queue's threshold, a round sees
        the same queues, entry times and active set, so admits the same jobs, all running: it
        keeps every job. The crossing is when the service (growing by the job's GPU count per
        second while it holds GPUs, restarts included) reaches the threshold `queues` tests
        (`svc + eps >= thr`), less 1 s: float sums of the service may land a hair early."""
        if not admitted:
            return math.inf
        a = np.asarray(admitted, np.int64)
        qa = q[a]
        live = qa < self._thr.size  # jobs in the last queue are never demoted
        if not live.any():
            return math.inf
        a, qa = a[live], qa[live]
        jobs = view.jobs
        gpus = np.where(run[a], jobs.alloc_count[a], r.dem[a]).astype(float)
        svc = jobs.attained_gpu_s[a] - self.svc_base[a]
        return float(now + ((self._thr[qa] - _EPS_GPU_S - svc) / gpus).min()) - 1.0

    def _caps(self, view: ClusterView) -> "_TierCaps":
        if self._tier_caps is None or self._tier_caps.c is not view.cluster:
            self._tier_caps = _TierCaps(view)
        return self._tier_caps

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

    def _next_jump(self, view, r, q, waited, now, active) -> float:
        """Earliest time a running job is demoted or a waiting one becomes due for promotion
        (inf if none); first the starts' waiting time before their first start (`next_jump`)."""
        jobs = view.jobs
        new, new_n, kept = r.placed_parts()
        return next_jump(new, new_n, kept, jobs.alloc_count, active, q, jobs.attained_gpu_s, self.svc_base, self._thr,
                         float(now), self._knob, jobs.executed_s, self.exec_base, self.pend_base, waited, self._placed)


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
    placement: str = param(
        "most-free", "placement strategy: GPUs from the node with the most free ones first",
        choices=P.STRATEGIES, source="Pollux simulator: free_gpus.most_common(1) per step (tiresias.py)")
    queue_order: str = param(
        "entry", "order within a queue: by the time the job entered it (arrival; demotion round)",
        choices=QUEUE_ORDERS, source="Pollux simulator: _queue_0/_queue_1 lists, demoted jobs appended")
    admission: str = param(
        "gpu-count", "admit by GPU count in priority order, then place the admitted waiting jobs",
        choices=ADMISSIONS, source="Pollux simulator: max_replicas <= num_gpus, then most_common allocation")


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


def _aligned(shape: tuple[int, int], dtype) -> np.ndarray:
    """A zeroed C array whose rows start on 64-byte boundaries when a row is 32 or 64 bytes
    (one cache line per job's entries; numpy itself aligns to 16)."""
    n, k = shape
    item = np.dtype(dtype).itemsize
    buf = np.zeros(n * k + 64 // item, dtype)
    skip = (-buf.ctypes.data % 64) // item
    return buf[skip:skip + n * k].reshape(n, k)
