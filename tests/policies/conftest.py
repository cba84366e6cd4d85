"""Hand-built `ClusterView`s for policy tests (no engine needed).

`build_view` makes a cluster of `nodes` × `gpus_per_node` GPUs, nodes split evenly over
`leaves` leaves (and leaves over `pods` pods), and jobs from short specs:

    Job(gpus=2, submit=0.0, alloc=(0, 1))          # running on GPUs 0 and 1
    Job(gpus=4, submit=5.0)                        # queued
    Job(gpus=1, model="vgg16", type_req=1, duration=100, remaining=40, attained=3600)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import strategies as st

from simcore.api import ClusterArrays, ClusterView, JobState, JobsView


@dataclass
class Job:
    gpus: int = 1
    submit: float = 0.0
    alloc: tuple[int, ...] = ()
    state: JobState | None = None  # default: RUNNING if alloc else QUEUED
    model: str = "resnet50"
    type_req: int = -1
    duration: float = np.nan
    remaining: float = np.nan
    attained: float = 0.0
    executed: float = 0.0
    first_start: float = np.nan
    min_gpus: int | None = None
    max_gpus: int | None = None
    extra: dict = field(default_factory=dict)


def build_arrays(nodes=4, gpus_per_node=4, leaves=2, pods=1, gpu_types=None, online=None,
                 owner=None, type_names=None) -> ClusterArrays:
    g = nodes * gpus_per_node
    gpu_node = np.repeat(np.arange(nodes), gpus_per_node).astype(np.int32)
    gpu_type = np.zeros(g, np.int16) if gpu_types is None else np.asarray(gpu_types, np.int16)
    n_types = int(gpu_type.max()) + 1
    names = tuple(type_names or [f"t{i}" for i in range(n_types)])
    return ClusterArrays(
        gpu_node=gpu_node,
        gpu_type=gpu_type,
        node_leaf=(np.arange(nodes) * leaves // nodes).astype(np.int32),
        leaf_pod=(np.arange(leaves) * pods // leaves).astype(np.int32),
        node_first_gpu=(np.arange(nodes) * gpus_per_node).astype(np.int32),
        node_num_gpus=np.full(nodes, gpus_per_node, np.int32),
        gpu_type_names=names,
        gpu_type_mem_gb=np.full(len(names), 80.0),
        gpu_online=np.ones(g, bool) if online is None else np.asarray(online, bool),
        gpu_owner=np.full(g, -1, np.int32) if owner is None else np.asarray(owner, np.int32),
    )


def build_view(jobs: list[Job], now: float = 100.0, *, nodes=4, gpus_per_node=4, leaves=2, pods=1,
               gpu_types=None, online=None, type_names=None, iteration_time=None) -> ClusterView:
    g = nodes * gpus_per_node
    owner = np.full(g, -1, np.int32)
    for i, jb in enumerate(jobs):
        for x in jb.alloc:
            assert owner[x] < 0, f"GPU {x} given twice in the fixture"
            owner[x] = i
    c = build_arrays(nodes, gpus_per_node, leaves, pods, gpu_types, online, owner, type_names)
    n = len(jobs)

    def arr(attr, dtype):
        return np.array([getattr(j, attr) for j in jobs], dtype=dtype) if n else np.zeros(0, dtype)

    states = np.array([
        int(j.state if j.state is not None else (JobState.RUNNING if j.alloc else JobState.QUEUED)) for j in jobs
    ], np.int8)
    req = arr("gpus", np.int32)
    jv = JobsView(
        job_id=np.array([f"j{i}" for i in range(n)], object),
        submit_time=arr("submit", float),
        num_gpus=req,
        min_gpus=np.array([j.min_gpus or j.gpus for j in jobs], np.int32),
        max_gpus=np.array([j.max_gpus or j.gpus for j in jobs], np.int32),
        model=np.array([j.model for j in jobs], object),
        global_batch=np.full(n, 256, np.int32),
        gpu_type_req=arr("type_req", np.int16),
        state=states,
        progress=np.zeros(n),
        alloc_count=np.array([len(j.alloc) for j in jobs], np.int32),
        batch_size=np.full(n, 256, np.int32),
        attained_gpu_s=arr("attained", float),
        executed_s=arr("executed", float),
        first_start=np.array([j.first_start if not (np.isnan(j.first_start) and j.alloc) else 0.0
                              for j in jobs], float),
        last_start=np.full(n, np.nan),
        num_restarts=np.zeros(n, np.int32),
        duration=arr("duration", float),
        remaining_s=arr("remaining", float),
    )
    allocs = [np.array(sorted(j.alloc), np.int32) for j in jobs]
    it = iteration_time or (lambda j, gpus, batch: 1.0)
    return ClusterView(now=now, jobs=jv, cluster=c, iteration_time=it, allocation_of=lambda j: allocs[j])


def gpus_of(decision, j) -> tuple[int, ...]:
    a = decision.allocations.get(j)
    return () if a is None else a.gpus


@pytest.fixture
def view_builder():
    return build_view


def draw_fabric(draw) -> tuple[int, int, int, int]:
    """(nodes, GPUs per node, leaves, pods) of a small random fabric, for hypothesis
    strategies (`draw` of an `st.composite`)."""
    nodes = draw(st.integers(1, 6))
    gpn = draw(st.sampled_from([1, 2, 4, 8]))
    leaves = draw(st.integers(1, nodes))
    pods = draw(st.integers(1, leaves))
    return nodes, gpn, leaves, pods


class FixedThroughput:
    """A what-if stand-in answering `throughput_matrix` from a fixed job × GPU-type table."""

    def __init__(self, tput):
        self.tput = np.asarray(tput, float)

    def throughput_matrix(self, jobs, batch=None):
        return self.tput[np.asarray(jobs)]


def typed_view(tput, jobs: list[Job], now: float = 0.0, gpu_types=(0, 0, 0, 0, 1, 1, 1, 1)) -> ClusterView:
    """Two 4-GPU nodes (types per GPU as given) whose what-if throughputs are `tput`."""
    import dataclasses

    v = build_view(jobs, now=now, nodes=2, gpus_per_node=4, leaves=1, gpu_types=list(gpu_types),
                   iteration_time=lambda j, g, b: 1.0)
    return dataclasses.replace(v, whatif=FixedThroughput(tput))
