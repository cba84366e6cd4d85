"""Small fakes of the topology, model zoo, comm model and contention solver, plus tiny test
policies, so engine tests do not depend on calibration data or the real network model.

Fake numbers are chosen so hand-derived results are easy: compute time on type "A" is
`0.01 + 0.001 * local_batch` s (type "B" twice that), memory `1 + 0.1 * local_batch` GB,
intra-node all-reduce at 100 GB/s bus bandwidth, inter-node at 10 GB/s per node uplink.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from cosim.errors import UnknownNameError
from simcore.api import Allocation, ClusterView, Decision


@dataclass
class FakeTopology:
    gpu_node: np.ndarray
    gpu_type: np.ndarray
    node_leaf: np.ndarray
    leaf_pod: np.ndarray
    node_first_gpu: np.ndarray
    node_num_gpus: np.ndarray
    gpu_type_names: tuple
    gpu_type_mem_gb: np.ndarray
    link_capacity_Bps: np.ndarray


def fake_topology(nodes: int = 4, gpus_per_node: int = 4, types: tuple[int, ...] | None = None,
                  mem_gb: tuple[float, float] = (16.0, 8.0)) -> FakeTopology:
    """`nodes` × `gpus_per_node`; `types[n]` = type index of node n (0 = "A", 1 = "B")."""
    types = types or (0,) * nodes
    return FakeTopology(
        gpu_node=np.repeat(np.arange(nodes, dtype=np.int32), gpus_per_node),
        gpu_type=np.repeat(np.asarray(types, np.int16), gpus_per_node),
        node_leaf=(np.arange(nodes, dtype=np.int32) // 2),
        leaf_pod=np.zeros((nodes + 1) // 2, np.int32),
        node_first_gpu=(np.arange(nodes, dtype=np.int32) * gpus_per_node),
        node_num_gpus=np.full(nodes, gpus_per_node, np.int32),
        gpu_type_names=("A", "B"),
        gpu_type_mem_gb=np.asarray(mem_gb, np.float64),
        link_capacity_Bps=np.full(nodes, 10e9),
    )


@dataclass
class FakeSpec:
    name: str
    grad_bytes: float
    overlap_start_frac: float = 0.5
    default_global_batch: int = 64
    bucket_bytes: np.ndarray | None = None

    def memory_gb(self, local_batch: int) -> float:
        return 1.0 + 0.1 * local_batch


class FakeZoo:
    MODELS: ClassVar[dict[str, FakeSpec]] = {
        "small": FakeSpec("small", 1e8),
        "big": FakeSpec("big", 1e9, overlap_start_frac=1.0),
    }
    ALIASES: ClassVar[dict[str, str]] = {"tiny": "small"}

    def resolve(self, name: str) -> str:
        n = self.ALIASES.get(name, name)
        if n not in self.MODELS:
            raise UnknownNameError("model", name, list(self.MODELS))
        return n

    def get(self, name: str) -> FakeSpec:
        return self.MODELS[self.resolve(name)]

    def compute_time_s(self, model: str, gpu_type: str, local_batch: int) -> float:
        base = 0.01 + 0.001 * local_batch
        return base * (2.0 if gpu_type == "B" else 1.0)


@dataclass
class FakeCost:
    seconds: float
    algorithm: str
    link_ids: np.ndarray
    link_bytes: np.ndarray
    bus_bandwidth_Bps: float


class FakeComm:
    def __init__(self, topo: FakeTopology):
        self.topo = topo
        self.calls = 0

    def allreduce(self, gpus, nbytes, bucket_bytes=None, algorithm="auto"):
        self.calls += 1
        gpus = np.asarray(gpus)
        n = gpus.shape[0]
        nodes = np.unique(self.topo.gpu_node[gpus])
        if n <= 1:
            return FakeCost(0.0, "none", np.zeros(0, np.int32), np.zeros(0), 0.0)
        if nodes.shape[0] == 1:
            sec = 2 * (n - 1) / n * nbytes / 100e9
            return FakeCost(sec, "ring", np.zeros(0, np.int32), np.zeros(0), 100e9)
        k = nodes.shape[0]
        per_link = 2 * (k - 1) / k * nbytes
        return FakeCost(per_link / 10e9, "ring", nodes.astype(np.int32), np.full(k, per_link), 10e9)


def fake_solve(compute_s, comm_start_s, comm_s, ptr, link_ids, link_demand_Bps, link_capacity_Bps):
    """Pessimistic fake contention: a job's communication slows by the worst overload factor
    (total demand / capacity) among its links, as if all flows always overlapped."""
    load = np.zeros(link_capacity_Bps.shape[0])
    np.add.at(load, link_ids, link_demand_Bps)
    k = compute_s.shape[0]
    m = comm_s.copy()
    for i in range(k):
        ids = link_ids[ptr[i]:ptr[i + 1]]
        if ids.shape[0]:
            f = max(1.0, float(np.max(load[ids] / link_capacity_Bps[ids])))
            m[i] = comm_s[i] * f
    it = np.maximum(compute_s, comm_start_s + m)
    return it, it - compute_s


# ---- test policies -----------------------------------------------------------------------

def pack(view: ClusterView, j: int, free: np.ndarray, n: int) -> np.ndarray | None:
    """First-fit consolidated GPUs for job j among `free` (its type only), or None."""
    req = int(view.jobs.gpu_type_req[j])
    cand = free if req < 0 else free[view.cluster.gpu_type[free] == req]
    if cand.shape[0] < n:
        return None
    nodes = view.cluster.gpu_node[cand]
    counts = np.bincount(nodes, minlength=view.cluster.node_first_gpu.shape[0])
    order = np.argsort(-counts, kind="stable")
    out: list[int] = []
    for node in order:
        if counts[node] == 0:
            break
        out.extend(cand[nodes == node][: n - len(out)].tolist())
        if len(out) == n:
            return np.asarray(out)
    return None


@dataclass
class FifoTest:
    """Strict-order FIFO with consolidated first fit; keeps running jobs where they are."""

    name: ClassVar[str] = "fifo-test"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = field(default_factory=frozenset)

    def decide(self, view: ClusterView, now: float) -> Decision:
        keep = view.keep_running()
        free = view.cluster.free_gpus()
        for j in view.queued():
            g = pack(view, int(j), free, int(view.jobs.num_gpus[j]))
            if g is None:
                break
            keep[int(j)] = Allocation(tuple(g))
            free = np.setdiff1d(free, g)
        return Decision(keep)
