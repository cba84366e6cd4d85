"""The contract between the engine and scheduling policies.

A policy sees a read-only `ClusterView` (numpy arrays, no DataFrames, no copies) and returns
a frozen `Decision`: the complete set of jobs that should run after this call, each with
its GPU ids and global batch size. Jobs absent from the decision do not run (a running job
left out is preempted). The engine diffs the decision against the current state to find
starts, preemptions, migrations, resizes and batch changes, validates it (no GPU twice,
GPU online, type and memory fit) and charges the configured costs of change.

Policies never import `netmodel` or the engine; everything they may know is here.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, Callable, ClassVar, Mapping, Protocol, runtime_checkable

import numpy as np


class JobState(enum.IntEnum):
    """Life cycle of a job; stored as int8 in `JobsView.state`."""

    PENDING = 0  # not yet submitted (submit_time > now); policies never see these as schedulable
    QUEUED = 1  # submitted, holds no GPUs
    RUNNING = 2  # holds GPUs and makes progress
    RESTARTING = 3  # holds GPUs, paying a start/restart/resize cost, no progress yet
    FINISHED = 4
    UNSCHEDULABLE = 5  # rejected before the run (reported as unfinished)


# plain ints for array comparisons (an IntEnum member costs a Python-level lookup per use)
_QUEUED, _RUNNING, _RESTARTING = int(JobState.QUEUED), int(JobState.RUNNING), int(JobState.RESTARTING)

#: Names a policy may put in `Policy.needs` to be shown oracle information. Without the
#: declaration those arrays are NaN in the view, so a non-clairvoyant policy cannot cheat.
NEED_DURATION_ORACLE = "duration_oracle"  # JobsView.duration and .remaining_s
#: JobsView.progress (true fraction of the job's work done) and the right to declare
#: `Policy.milestones` (fractions of that work): a non-clairvoyant policy sees epochs and
#: samples done, never how much is left.
NEED_PROGRESS_ORACLE = "progress_oracle"
#: every oracle name the engine knows (an unknown name in `needs` is a policy error)
ORACLE_NEEDS = frozenset({NEED_DURATION_ORACLE, NEED_PROGRESS_ORACLE})


@dataclass(frozen=True)
class ClusterArrays:
    """Static topology facts plus current GPU occupancy (all read-only arrays).

    Index spaces: GPUs 0..G-1, nodes 0..N-1, leaves (racks/ToRs) 0..L-1, pods 0..P-1,
    GPU types 0..T-1 (names in `gpu_type_names`).
    """

    gpu_node: np.ndarray  # int32[G]
    gpu_type: np.ndarray  # int16[G]
    node_leaf: np.ndarray  # int32[N]
    leaf_pod: np.ndarray  # int32[L]
    node_first_gpu: np.ndarray  # int32[N]; GPUs of node n are node_first_gpu[n] .. +node_num_gpus[n]
    node_num_gpus: np.ndarray  # int32[N]
    gpu_type_names: tuple[str, ...]
    gpu_type_mem_gb: np.ndarray  # float64[T]
    gpu_online: np.ndarray  # bool[G]; False while a node is out of the cluster (capacity change)
    gpu_owner: np.ndarray  # int32[G]; job index holding the GPU, -1 if free
    #: (additive) node pool of each node: the preset's `[[groups]]` index (int16[N]), whose
    #: names are `node_group_names` (e.g. Aryl's training vs loaned inference servers)
    node_group: np.ndarray | None = None
    node_group_names: tuple[str, ...] = ()
    #: (additive) usable GPUs per node (online, no owner; int32[N]), kept by the engine at each
    #: hold, release and capacity change; None in a view built without them (the round
    #: toolkit then counts them from `gpu_online` and `gpu_owner`)
    node_free: np.ndarray | None = None

    @property
    def num_gpus(self) -> int:
        return int(self.gpu_node.shape[0])

    @cached_property
    def num_pods(self) -> int:
        """Pods of the topology (`leaf_pod` holds 0..P-1), computed on first use: placements
        ask it at every call."""
        return int(self.leaf_pod.max()) + 1 if self.leaf_pod.size else 1

    def free_gpus(self) -> np.ndarray:
        """Ids of GPUs that are online and unallocated, ascending."""
        return np.flatnonzero(self.gpu_online & (self.gpu_owner < 0)).astype(np.int32)


@dataclass(frozen=True)
class JobsView:
    """All jobs of the run as read-only arrays indexed by job index 0..J-1.

    Observable counters — what a job's own logs would tell a real scheduler — are always
    present in engine views: service (`attained_gpu_s`, `executed_s`), `epochs_done`,
    `samples_done`, `iters_per_s` now, `waiting_s` so far, `exposed_comm_s`, `num_restarts`,
    `last_gpu_type`, `vc`, `user`. Oracle facts are NaN unless the policy declares the need:
    `progress` (NEED_PROGRESS_ORACLE), `duration` and `remaining_s` (NEED_DURATION_ORACLE).
    Counters marked "(lazy)" are brought up to date on first read in each policy call
    (policies that never read them pay nothing). Every field is filled: the engine gives all
    of them; a view built by hand without some of the observable counters gets them as a job
    that never ran has them (zeros, type -1, "" for vc and user, replay work, no attrs), so
    no policy needs a branch for a missing one.
    """

    job_id: np.ndarray  # object[J] (str)
    submit_time: np.ndarray  # float64[J], s
    num_gpus: np.ndarray  # int32[J], requested
    min_gpus: np.ndarray  # int32[J] (== num_gpus for rigid jobs)
    max_gpus: np.ndarray  # int32[J]
    model: np.ndarray  # object[J] (str, canonical zoo name)
    global_batch: np.ndarray  # int32[J], reference global batch from the trace
    gpu_type_req: np.ndarray  # int16[J], required GPU type index, -1 = any
    state: np.ndarray  # int8[J], JobState
    progress: np.ndarray  # float64[J] in [0, 1]; oracle (NaN unless NEED_PROGRESS_ORACLE)
    alloc_count: np.ndarray  # int32[J], GPUs held now
    batch_size: np.ndarray  # int32[J], global batch now (reference batch while queued)
    attained_gpu_s: np.ndarray  # float64[J], GPU-seconds of service received (incl. restarts)
    executed_s: np.ndarray  # float64[J], wall seconds held GPUs
    first_start: np.ndarray  # float64[J], NaN until first start
    last_start: np.ndarray  # float64[J], time of the latest (re)start, NaN if never
    num_restarts: np.ndarray  # int32[J]
    duration: np.ndarray  # float64[J], trace duration (NaN unless the policy needs the oracle)
    remaining_s: np.ndarray  # float64[J], est. remaining s at requested size, consolidated (oracle)
    # ---- observable counters (additive; always set by the engine) ----
    # (given by the engine; `__post_init__` fills those a hand-built view leaves out)
    exposed_comm_s: np.ndarray = None  # float64[J], communication s not hidden by compute
    last_gpu_type: np.ndarray = None  # int16[J], type of the latest allocation; -1 never ran, -2 mixed
    vc: np.ndarray = None  # object[J] (str), the trace's virtual cluster ("" if none)
    user: np.ndarray = None  # object[J] (str), the trace's user ("" if none)
    #: int8[J], how the job's work is counted (`simcore.work.WorkMode`: 0 replay, 1 iterations, 2 samples,
    #: 3 convergence, 4 epochs) — what a job's own launcher knows, so always visible
    work_mode: np.ndarray = None
    #: the job's submitted training configuration beyond the request (trace columns such as ONES'
    #: task, epoch_size, lr, max_lr, target_acc, patience, num_classes): what its user wrote in the
    #: job script, so always visible; {} when the trace has none
    attrs: Mapping[str, np.ndarray] = None
    _epoch_log: Callable[[int, int], Any] | None = field(default=None, repr=False, compare=False)
    _samples_done: np.ndarray = field(default=None, repr=False)
    _iters_per_s: np.ndarray = field(default=None, repr=False)
    _waiting_s: np.ndarray = field(default=None, repr=False)
    _epochs_done: np.ndarray = field(default=None, repr=False)
    #: the engine's refresh of the lazy counters (no-op when already current for this call)
    _sync: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = self.submit_time.shape[0]
        fill = {"exposed_comm_s": lambda: np.zeros(n), "last_gpu_type": lambda: np.full(n, -1, np.int16),
                "vc": lambda: np.full(n, "", object), "user": lambda: np.full(n, "", object),
                "work_mode": lambda: np.zeros(n, np.int8), "attrs": dict,
                "_samples_done": lambda: np.zeros(n), "_iters_per_s": lambda: np.zeros(n),
                "_waiting_s": lambda: np.zeros(n), "_epochs_done": lambda: np.zeros(n, np.int32)}
        for name, make in fill.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, make())

    @property
    def num_jobs(self) -> int:
        return int(self.submit_time.shape[0])

    def _lazy(self, a: np.ndarray) -> np.ndarray:
        if self._sync is not None:
            self._sync()
        return a

    @property
    def samples_done(self) -> np.ndarray:
        """float64[J], training samples processed so far (iterations × global batch; lazy)."""
        return self._lazy(self._samples_done)

    @property
    def iters_per_s(self) -> np.ndarray:
        """float64[J], iterations per second now (0 unless RUNNING; contention included; lazy)."""
        return self._lazy(self._iters_per_s)

    @property
    def epochs_done(self) -> np.ndarray:
        """int32[J], epochs finished (jobs whose epochs are known, else 0; lazy)."""
        return self._lazy(self._epochs_done)

    def epoch_log(self, j: int) -> Any:
        """Job j's training log up to its finished epochs (`simcore.convergence.EpochLog`: initial
        loss, per-epoch loss and validation accuracy), None for jobs without a convergence curve.
        Observations only: nothing past `epochs_done[j]`."""
        if self._epoch_log is None:
            return None
        return self._epoch_log(int(j), int(self.epochs_done[j]))

    @property
    def waiting_s(self) -> np.ndarray:
        """float64[J], seconds spent queued so far (since submission, all queue stays; lazy)."""
        return self._lazy(self._waiting_s)


@dataclass(frozen=True)
class Allocation:
    """Where one job runs: its GPUs (ids) and the global batch size to use (None = keep)."""

    gpus: tuple[int, ...]
    batch_size: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", tuple(map(int, self.gpus)))  # C-level loop: one per new allocation


@dataclass(frozen=True)
class ProgressEvent:
    """A job reached a point of its training the policy asked to hear about (see `Policy`).

    `kind` is `"epoch"` (job `job` finished epoch number `value`, 1-based) or `"milestone"`
    (its progress reached the declared fraction `value`). Delivered in
    `ClusterView.progress_events` of the policy call at that instant.
    """

    job: int
    kind: str
    value: float


@dataclass(frozen=True)
class ReclaimDemand:
    """"Return `count` nodes of pool `pool` by `deadline_s`" (an inference cluster taking back
    servers it loaned to training: Aryl §4). `candidates` are the pool's nodes the training
    cluster holds now and has not already promised back, ascending; an answer names `count`
    of them (`simcore.capacity`)."""

    pool: str
    count: int
    deadline_s: float
    candidates: np.ndarray  # int32 node ids, read-only


@dataclass(frozen=True)
class ReclaimAnswer:
    """A policy's answer to a `ReclaimDemand`: exactly `count` distinct candidate nodes, and
    when they go (`at_s`; None = now, at most the demand's deadline). Jobs on them are scaled
    in to their GPUs elsewhere where they can run there (elastic jobs, `min_gpus`), evicted
    otherwise; a policy that wants another outcome moves jobs in its next decision before `at_s`."""

    nodes: tuple[int, ...]
    at_s: float | None = None


@dataclass(frozen=True)
class Decision:
    """The complete desired running set after a policy call.

    `allocations` maps job index → Allocation. A job that runs now and is absent is
    preempted. `wake_at` asks the engine to call the policy again at that simulated time
    (delay-scheduling timers, leases), in addition to its interval and events.

    `changes_only` (only where `ClusterView.accepts_changes`): `allocations` lists just the
    jobs whose allocation changes — a start, move, resize or batch change, or an empty
    `Allocation(())` for a job that stops — and every other running job keeps its
    allocation. It means the same desired set as the complete form, written so that a call
    costs what it changes, not the size of the running set (20,000-GPU clusters).

    `quiet_until` (additive; None: no promise): the policy's promise that every periodic round
    before that simulated time would keep every allocation and ask for no wake-up, as long as
    nothing happens from outside it (an arrival, a completion, a capacity change, a wake-up, a
    progress event it asked for, a restart end unless it `ignores_restart_ends`). The engine
    answers those rounds itself, counting each as a policy call (the decision sequence is the
    same); the first round at or after it, or after such an event, calls the policy.
    """

    allocations: Mapping[int, Allocation] = field(default_factory=dict)
    wake_at: float | None = None
    changes_only: bool = False
    quiet_until: float | None = None


@dataclass(frozen=True)
class ClusterView:
    """What a policy may read. Built by the engine once per call; never mutated by policies."""

    now: float
    jobs: JobsView
    cluster: ClusterArrays
    #: what-if: seconds per iteration of job j on these GPUs (ids, or a GPU count with an
    #: optional 4th argument `gpu_type`) at this global batch (None: current), alone on the
    #: network (no contention). Returns inf if the job cannot run there (memory, type).
    iteration_time: Callable[..., float]
    #: current allocation of job j (GPU ids, ascending; empty if not holding GPUs)
    allocation_of: Callable[[int], np.ndarray]
    #: indices of active jobs, ascending, maintained by the engine so `active()`/`queued()`/
    #: `running()` cost the active set, not the whole trace (a hand-built view: derived from
    #: `jobs.state` by `__post_init__`, like the next two)
    active_jobs: np.ndarray = None
    #: read-only mapping job → the `Allocation` object it runs under now (every running job).
    #: Returning these same objects for unchanged jobs lets the engine skip re-validating them.
    current: Mapping[int, Allocation] = None
    #: indices of the jobs holding GPUs (running or restarting), ascending, maintained by the
    #: engine so `running()` costs nothing
    running_jobs: np.ndarray = None
    #: (additive) `Decision(changes_only=True)` is accepted: always True in engine views (the
    #: engine accepts both forms); False only in views built by hand without an engine, whose
    #: readers (`policies.round.Round.decision`) then build the complete form
    accepts_changes: bool = False
    #: (additive) the epoch ends and milestones reached at this instant, in job order, when
    #: the policy declared `wants_epoch_events` / `milestones`; empty otherwise
    progress_events: tuple[ProgressEvent, ...] = ()
    #: (additive) the engine's what-if queries (`simcore.whatif.WhatIf`); the methods below
    #: delegate to it
    whatif: Any = None

    def throughput(self, j: int, placement: Any, batch: int | None = None, gpu_type: Any = None) -> float:
        """Samples/s of job j on `placement` (a GPU count, consolidated on `gpu_type`, or GPU
        ids) at global `batch` (None: current), alone on the network; 0 if it cannot run."""
        return self.whatif.throughput(j, placement, batch, gpu_type)

    def goodput(self, j: int, placement: Any, batch: int | None = None, gpu_type: Any = None) -> float:
        """Throughput × statistical efficiency of the batch (Pollux; efficiency 1 unless the
        run's progress is goodput and the job has a profiled application)."""
        return self.whatif.goodput(j, placement, batch, gpu_type)

    def throughput_matrix(self, jobs: Any, batch: Any = None) -> np.ndarray:
        """float64[len(jobs), T]: samples/s of each job at its requested GPU count consolidated
        on each GPU type (NaN where it cannot run); cached per (model, count, type, batch)."""
        return self.whatif.throughput_matrix(jobs, batch)

    def __post_init__(self) -> None:
        """A view built by hand gets the engine's derived fields from `jobs.state` and
        `allocation_of` (the engine builds its views with every field given, not through here)."""
        s = self.jobs.state
        if self.active_jobs is None:
            object.__setattr__(self, "active_jobs", np.flatnonzero((s == _QUEUED) | (s == _RUNNING) | (s == _RESTARTING)))
        if self.running_jobs is None:
            object.__setattr__(self, "running_jobs", np.flatnonzero((s == _RUNNING) | (s == _RESTARTING)))
        if self.current is None:
            object.__setattr__(self, "current", {int(j): Allocation(tuple(self.allocation_of(int(j))))
                                                 for j in self.running_jobs})
            # a running job's type, as the engine keeps it (-2: a mixed allocation), where the
            # hand-built jobs left it as never run
            last = self.jobs.last_gpu_type
            fix = [j for j in self.running_jobs.tolist() if last[j] == -1 and len(self.current[j].gpus)]
            if fix:
                last = last.copy()
                for j in fix:
                    types = np.unique(np.asarray(self.cluster.gpu_type)[list(self.current[j].gpus)])
                    last[j] = types[0] if types.size == 1 else -2
                object.__setattr__(self, "jobs", dataclasses.replace(self.jobs, last_gpu_type=last))

    def active(self) -> np.ndarray:
        """Indices of submitted, unfinished jobs (queued, running or restarting), ascending."""
        return self.active_jobs

    def queued(self) -> np.ndarray:
        a = self.active_jobs
        return a[self.jobs.state[a] == _QUEUED]

    def running(self) -> np.ndarray:
        return self.running_jobs

    def keep_running(self) -> dict[int, Allocation]:
        """The current allocations as a dict, for policies that only add to them."""
        return dict(self.current)


@dataclass(frozen=True)
class PolicyFlags:
    """The optional behaviour flags of `Policy` with their defaults: the one place they are
    declared and read (`PolicyFlags.of`, once when a run starts; a policy declares the ones
    that hold for it as class or instance attributes, set before the run)."""

    rounds_need_queue: bool = False
    completions_need_queue: bool = False
    ignores_restart_ends: bool = False
    wants_epoch_events: bool = False
    milestones: tuple = ()
    answers_reclaims: bool = False
    #: the policy keeps each job on one GPU type (Gavel, AlloX, PAL, FFT, per-type Tiresias): a job
    #: asking for more GPUs than any one type has is rejected at admission (`simcore.admission`)
    single_type_placement: bool = False
    #: oracle information the policy uses (`ORACLE_NEEDS`; required of a `Policy`, empty if absent)
    needs: frozenset = frozenset()

    @classmethod
    def of(cls, policy: object) -> PolicyFlags:
        """The flags `policy` declares, the defaults for the others (milestones as given:
        the engine checks them)."""
        d = {f.name: getattr(policy, f.name, f.default) for f in fields(cls)}
        return cls(rounds_need_queue=bool(d["rounds_need_queue"]),
                   completions_need_queue=bool(d["completions_need_queue"]),
                   ignores_restart_ends=bool(d["ignores_restart_ends"]),
                   wants_epoch_events=bool(d["wants_epoch_events"]), milestones=tuple(d["milestones"] or ()),
                   answers_reclaims=bool(d["answers_reclaims"]), needs=frozenset(d["needs"] or ()),
                   single_type_placement=bool(d["single_type_placement"]))


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy. One signature for all (no name-based dispatch in the engine).

    - `name`: registry name.
    - `interval_s`: seconds between scheduling rounds, or None for event-driven only.
    - `event_driven`: also call on arrivals, completions, capacity changes, restart ends.
    - `needs`: oracle information the policy uses (`NEED_DURATION_ORACLE`,
      `NEED_PROGRESS_ORACLE`); anything it reads that is not declared is NaN.

    Optional behaviour flags (declared with their defaults in `PolicyFlags`, which the engine
    reads once at the start of a run):
    - `rounds_need_queue`: the policy declares that a periodic round can change nothing
      while no job is queued (it reacts to service thresholds through `Decision.wake_at`),
      so the engine skips rounds at instants with an empty queue. Events and wake-ups
      still call it.
    - `completions_need_queue`: the policy declares that a job completing can change nothing
      while no job is queued (non-preemptive, never grows a running job: FIFO, SJF), so an
      instant whose only news is completions, with an empty queue after them, is answered by
      the engine ("keep everything") without calling it, counted as a policy call like a
      quiet round (the decision sequence is the same). Honoured only for policies without
      oracle needs (their view refreshes remaining times at every call).
    - `ignores_restart_ends`: the policy declares that a job finishing its restart (RESTARTING
      → RUNNING; it held its GPUs throughout) can change none of its decisions, so that event
      alone does not call it. True for policies that treat restarting jobs as running and
      read no progress-dependent quantity (FIFO, SJF, Tiresias); not for those that do
      (EASY backfilling's shadow time, SRTF's remaining time, Gandiva's migrations).
      Decisions stay the same, but the run has fewer event instants; progress is integrated
      piecewise between instants, so completion times move by float round-off (~1e-9 s, seen
      on 3,000 Philly jobs with identical decisions), and over a long run such a difference
      can tip a tie and the runs diverge the way two seeds do (full Philly, Tiresias: mean
      JCT +0.07 %, p99 −0.08 %, worst FTF −11 %, 32 % fewer policy calls).
    - `wants_epoch_events` (default False): call the policy when a job finishes an epoch of
      its training run (jobs whose epochs are known: `epochs` in the trace, a training run, or
      a pollux-sia application under `--progress goodput`) — Pollux's agents re-fit at epoch
      ends. The instant is computed exactly from the job's rate, never stepped.
    - `milestones` (default empty): fractions in (0, 1) of a job's work at which to call the
      policy (ONES's deployment gate). Like epoch ends, each is one `ProgressEvent`. They
      reveal progress, so they require `NEED_PROGRESS_ORACLE` in `needs` (PolicyError
      otherwise); epoch ends are the observable alternative.
    - `answers_reclaims` (default False): the policy chooses which nodes to give back when a
      pool reclaims capacity, through `answer_reclaim(view, demand: ReclaimDemand) ->
      ReclaimAnswer` (Aryl's reclaim). The engine checks the answer (exactly `count` distinct
      nodes, each a candidate of the demand, `at_s` not past the deadline) and stops the run
      with an error naming the policy, the node and the time otherwise. Without it the engine
      answers (`simcore.capacity.default_answer`: idle nodes first, then the nodes whose loss
      preempts fewest jobs, node id breaking ties).
    - `single_type_placement` (default False): the policy places every job on GPUs of one type,
      so on a heterogeneous cluster a job asking for more GPUs than the largest type has can
      never run under it; such jobs are rejected when the run starts, reported unfinished with
      their reason (`jobs.parquet` `unfinished_reason`) and counted (`never_fit_one_type`).
    """

    name: ClassVar[str]
    interval_s: float | None
    event_driven: bool
    needs: frozenset[str]

    def decide(self, view: ClusterView, now: float) -> Decision: ...
