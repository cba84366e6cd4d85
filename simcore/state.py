"""Job state and cluster state, each a struct of numpy arrays (no per-job objects).

`JobTable` is built once from the canonical job table (a DataFrame) before the loop; the
loop and the numba kernels then only touch arrays. Policies see read-only views of the
same memory (`views()`), so building a `ClusterView` copies nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from simcore.api import ClusterArrays, JobState, JobsView
from simcore.work import WorkMode


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of `a` (what policies are handed: they may keep it, never write it)."""
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass
class JobTable:
    """Per-job arrays, indexed by job index 0..J-1 (jobs sorted by submit time, then id)."""

    job_id: np.ndarray  # object[J]
    submit_time: np.ndarray  # float64
    num_gpus: np.ndarray  # int32, requested
    min_gpus: np.ndarray  # int32
    max_gpus: np.ndarray  # int32
    model: np.ndarray  # object, canonical zoo name
    global_batch: np.ndarray  # int32, reference batch
    gpu_type_req: np.ndarray  # int16, -1 any
    duration: np.ndarray  # float64, trace duration (NaN if none)
    work_mode: np.ndarray  # int8, WorkMode
    work_iters: np.ndarray  # float64, total work W_j in reference iterations
    ref_iter_s: np.ndarray  # float64, solo iteration s at requested count, consolidated
    trace_iter_s: np.ndarray  # float64, the trace's own s per iteration at its placement (NaN: none)
    num_epochs: np.ndarray  # float64, epochs of the job's training run (NaN: unknown)
    app_id: np.ndarray  # int16, pollux-sia application (`simcore.goodput.GoodputModel`), -1 none
    vc: np.ndarray  # object, the trace's virtual cluster ("" none)
    user: np.ndarray  # object, the trace's user ("" none)
    # dynamic
    state: np.ndarray  # int8, JobState
    progress: np.ndarray  # float64 in [0, 1]
    alloc_count: np.ndarray  # int32
    batch_size: np.ndarray  # int32
    rate: np.ndarray  # float64, progress fraction per second while RUNNING
    gain: np.ndarray  # float64, reference iterations per iteration at the current batch
    exposed_frac: np.ndarray  # float64, exposed comm seconds per wall second while RUNNING
    attained_gpu_s: np.ndarray
    executed_s: np.ndarray
    waiting_s: np.ndarray
    restart_s: np.ndarray
    exposed_comm_s: np.ndarray
    first_start: np.ndarray
    last_start: np.ndarray
    end_time: np.ndarray
    num_restarts: np.ndarray  # int32
    version: np.ndarray  # int64, bumped on every allocation change (stale restart events)
    remaining_s: np.ndarray  # float64, oracle: (1 - progress) * W * ref_iter_s
    mark: np.ndarray  # float64, next progress at which the engine stops (epoch end, milestone; 1 = done)
    epochs_done: np.ndarray  # int32, epoch boundaries crossed (jobs whose epochs are tracked)
    stat_eff: np.ndarray  # float64, statistical efficiency now (1 unless EPOCHS/CONVERGENCE)
    #: the trace's training-configuration columns (`ATTR_COLUMNS`), visible to policies
    attrs: dict = field(default_factory=dict)

    @property
    def num_jobs(self) -> int:
        return int(self.submit_time.shape[0])

    @classmethod
    def build(cls, static: dict[str, np.ndarray]) -> "JobTable":
        n = static["submit_time"].shape[0]
        f8 = lambda v=0.0: np.full(n, v, np.float64)  # noqa: E731
        return cls(
            **static,
            state=np.full(n, JobState.PENDING, np.int8),
            progress=f8(),
            alloc_count=np.zeros(n, np.int32),
            batch_size=static["global_batch"].astype(np.int32).copy(),
            rate=f8(),
            gain=f8(1.0),
            exposed_frac=f8(),
            attained_gpu_s=f8(),
            executed_s=f8(),
            waiting_s=f8(),
            restart_s=f8(),
            exposed_comm_s=f8(),
            first_start=f8(np.nan),
            last_start=f8(np.nan),
            end_time=f8(np.nan),
            num_restarts=np.zeros(n, np.int32),
            version=np.zeros(n, np.int64),
            remaining_s=f8(np.nan),
            mark=f8(1.0),
            epochs_done=np.zeros(n, np.int32),
            stat_eff=f8(1.0),
        )

    def for_run(self, last: bool = False) -> "JobTable":
        """The table one policy's run works on. The trace's columns (`STATIC_COLUMNS`: set before
        any run, read by every run, written by none) are shared with this table; the run's state
        columns are copied, so each policy starts from the same state. `last`: the caller runs no
        policy after this one and reads only the trace's columns afterwards, so the state columns
        are handed over instead of copied (a run of a million jobs keeps one table, not two)."""
        kw = {k: v if k in STATIC_COLUMNS or last else v.copy() for k, v in vars(self).items() if k != "attrs"}
        return JobTable(**kw, attrs={k: v.copy() for k, v in self.attrs.items()})

    def views(self, oracle: bool, progress_oracle: bool = False, **extra: Any) -> JobsView:
        """Read-only views for policies; oracle arrays are NaN unless declared: `oracle` →
        `duration`, `remaining_s`; `progress_oracle` → `progress`. `extra`: the engine's own
        view arrays (lazy counters, last GPU type)."""
        nan = np.full(self.num_jobs, np.nan)
        nan.flags.writeable = False
        hidden = ("duration", "remaining_s", "progress", "attrs")
        names = {f.name for f in fields(JobsView)} & set(vars(self))
        kw = {k: read_only(getattr(self, k)) for k in names if k not in hidden}
        kw["attrs"] = {k: read_only(v) for k, v in self.attrs.items()}
        kw["duration"] = read_only(self.duration) if oracle else nan
        kw["remaining_s"] = read_only(self.remaining_s) if oracle else nan
        kw["progress"] = read_only(self.progress) if progress_oracle else nan
        kw.update(extra)
        return JobsView(**kw)


#: the trace's columns: filled in by `simcore.prepare` (and the progress models' set-up) before
#: any policy runs; the engine, the policies and the outputs only read them
STATIC_COLUMNS = frozenset(("job_id", "submit_time", "num_gpus", "min_gpus", "max_gpus", "model", "global_batch",
                            "gpu_type_req", "duration", "work_mode", "work_iters", "ref_iter_s", "trace_iter_s",
                            "num_epochs", "app_id", "vc", "user"))


@dataclass
class ClusterState:
    """Static topology arrays plus occupancy (`gpu_owner`) and availability (`gpu_online`).

    `node_free[n]` counts node n's usable GPUs (online and without an owner). A node has one
    GPU type, so this is also the node's usable count of its type. The engine changes owners
    and online flags only through `hold`, `release` and `set_online`, which keep the counts
    in step at a cost of the GPUs they touch, so nothing has to pass over all GPUs to learn
    how many each node has free; `recount_free` recomputes them from the GPU arrays (after
    the GPU arrays were written directly, e.g. nodes taken offline before the run)."""

    topology: Any
    gpu_owner: np.ndarray  # int32[G], -1 free
    gpu_online: np.ndarray  # bool[G]
    node_free: np.ndarray | None = None  # int32[N], usable GPUs per node; computed when not given
    #: each GPU's node as Python ints (a list lookup per GPU is cheaper than a numpy scalar)
    _node_of: list = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._node_of = np.asarray(self.topology.gpu_node).tolist()
        if self.node_free is None:
            self.node_free = np.zeros(np.asarray(self.topology.node_num_gpus).shape[0], np.int32)
            self.recount_free()

    @classmethod
    def from_topology(cls, topology: Any) -> "ClusterState":
        g = int(np.asarray(topology.gpu_node).shape[0])
        return cls(topology, np.full(g, -1, np.int32), np.ones(g, bool))

    def free_recount(self) -> np.ndarray:
        """Usable GPUs per node counted from `gpu_owner` and `gpu_online` (one pass over all GPUs)."""
        usable = self.gpu_online & (self.gpu_owner < 0)
        n = self.node_free.shape[0]
        return np.bincount(np.asarray(self.topology.gpu_node)[usable], minlength=n).astype(np.int32)

    def recount_free(self) -> None:
        """Set `node_free` from the GPU arrays."""
        self.node_free[:] = self.free_recount()

    def hold(self, j: int, gpus: tuple[int, ...]) -> None:
        """Job j takes `gpus` (free, online)."""
        owner, node, free = self.gpu_owner, self._node_of, self.node_free
        for x in gpus:  # a few scalar stores beat one fancy-index store on short arrays
            owner[x] = j
            free[node[x]] -= 1

    def release(self, gpus: tuple[int, ...]) -> None:
        """The owner of `gpus` lets them go; those online become usable again."""
        owner, online, node, free = self.gpu_owner, self.gpu_online, self._node_of, self.node_free
        for x in gpus:
            owner[x] = -1
            if online[x]:
                free[node[x]] += 1

    def set_online(self, gpus: np.ndarray, online: bool) -> None:
        """Bring `gpus` into the cluster (`online`) or take them out; owners are unchanged."""
        usable = self.gpu_online[gpus] & (self.gpu_owner[gpus] < 0)
        self.gpu_online[gpus] = online
        now = self.gpu_online[gpus] & (self.gpu_owner[gpus] < 0)
        np.add.at(self.node_free, np.asarray(self.topology.gpu_node)[gpus],
                  now.astype(np.int32) - usable.astype(np.int32))

    @property
    def num_gpus(self) -> int:
        return int(self.gpu_owner.shape[0])

    def node_gpus(self, node: int) -> np.ndarray:
        t = self.topology
        first = int(t.node_first_gpu[node])
        return np.arange(first, first + int(t.node_num_gpus[node]), dtype=np.int32)

    def arrays(self) -> ClusterArrays:
        t = self.topology
        return ClusterArrays(
            gpu_node=read_only(np.asarray(t.gpu_node, np.int32)),
            gpu_type=read_only(np.asarray(t.gpu_type, np.int16)),
            node_leaf=read_only(np.asarray(t.node_leaf, np.int32)),
            leaf_pod=read_only(np.asarray(t.leaf_pod, np.int32)),
            node_first_gpu=read_only(np.asarray(t.node_first_gpu, np.int32)),
            node_num_gpus=read_only(np.asarray(t.node_num_gpus, np.int32)),
            gpu_type_names=tuple(t.gpu_type_names),
            gpu_type_mem_gb=read_only(np.asarray(t.gpu_type_mem_gb, np.float64)),
            gpu_online=read_only(self.gpu_online),
            gpu_owner=read_only(self.gpu_owner),
            node_free=read_only(self.node_free),
            **_node_groups(t),
        )


def _node_groups(t: Any) -> dict:
    """Each node's pool (the preset's `[[groups]]` index) and the pools' names; a topology
    without groups is one pool."""
    n = int(np.asarray(t.node_num_gpus).shape[0])
    g = getattr(t, "node_group", None)
    groups = getattr(getattr(t, "spec", None), "groups", None)
    names = tuple(str(getattr(x, "name", i)) for i, x in enumerate(groups)) if groups else ("all",)
    arr = np.zeros(n, np.int16) if g is None else np.asarray(g, np.int16)
    return dict(node_group=read_only(arr), node_group_names=names)


def static_columns(df: Mapping[str, np.ndarray], type_names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The per-job static arrays from a canonical job table with canonical model names, as columns
    (name → numpy array, `traces.cache.columns`: missing numbers NaN, missing strings NaN/None).

    Work columns (`work_mode`, `work_iters`, `ref_iter_s`) are filled later by the runner's
    work assignment (`simcore.workload_prep.assign_work`), which needs the perf model.
    """
    n = len(df["job_id"])

    def missing(a: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "f":
            return np.isnan(a)
        if a.dtype.kind == "O":
            return np.array([v is None or (isinstance(v, float) and v != v) for v in a], dtype=bool)
        return np.zeros(a.shape, bool)

    def col(name: str, default: Any, dtype: Any) -> np.ndarray:
        if name in df:
            a = np.asarray(df[name])
            miss = missing(a)
            if miss.any():
                a = a.astype(object) if np.dtype(dtype) == object else a.copy()
                a[miss] = default
            return a.astype(dtype)
        return np.full(n, default, dtype=dtype)

    num = np.asarray(df["num_gpus"]).astype(np.int32)
    min_g = col("min_gpus", -1, np.int64).astype(np.int32)
    max_g = col("max_gpus", -1, np.int64).astype(np.int32)
    min_g = np.where(min_g < 0, num, min_g).astype(np.int32)
    max_g = np.where(max_g < 0, num, max_g).astype(np.int32)
    type_index = {name: i for i, name in enumerate(type_names)}
    if "gpu_type" in df:
        req = np.array([type_index.get(t, -2) if isinstance(t, str) and t else -1 for t in df["gpu_type"]],
                       np.int16)
    else:
        req = np.full(n, -1, np.int16)
    return dict(
        job_id=np.array([str(x) for x in df["job_id"]], dtype=object),
        submit_time=np.asarray(df["submit_time"]).astype(np.float64),
        num_gpus=num,
        min_gpus=min_g,
        max_gpus=max_g,
        model=np.array([str(x) for x in df["model"]], dtype=object),
        global_batch=col("global_batch", 0, np.int64).astype(np.int32),
        gpu_type_req=req,
        duration=col("duration", np.nan, np.float64),
        work_mode=np.zeros(n, np.int8),
        work_iters=np.full(n, np.nan),
        ref_iter_s=np.full(n, np.nan),
        trace_iter_s=col("time_per_iteration", np.nan, np.float64),
        num_epochs=np.array(col("epochs", np.nan, np.float64), np.float64),  # own copy: goodput writes it
        app_id=np.full(n, -1, np.int16),
        vc=col("vc", "", object),
        user=col("user", "", object),
        attrs={c: np.asarray(df[c]) for c in ATTR_COLUMNS if c in df and not missing(np.asarray(df[c])).all()},
    )


#: trace columns of a job's training configuration that policies may read (`JobsView.attrs`)
ATTR_COLUMNS = ("task", "dataset", "epoch_size", "lr", "max_lr", "target_acc", "patience")


__all__ = ["JobTable", "ClusterState", "static_columns", "WorkMode"]
