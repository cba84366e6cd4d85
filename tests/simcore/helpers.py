"""Shared builders for simcore tests: a fake-backed engine and runner backends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np
import pandas as pd

from simcore.api import Allocation, ClusterView, Decision, JobState
from simcore.costs import ChangeCosts
from simcore.engine import CapacityChange, Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from experiments.runner import Backends
from simcore.state import ClusterState
from tests.simcore.fakes import FakeComm, FakeZoo, FifoTest, fake_solve, fake_topology, pack


def frame(rows: Sequence[dict]) -> pd.DataFrame:
    df = pd.DataFrame(list(rows))
    if "job_id" not in df:
        df["job_id"] = [f"j{i}" for i in range(len(df))]
    if "model" not in df:
        df["model"] = "small"
    if "global_batch" not in df:
        df["global_batch"] = 64
    return df


def simulate(rows, policy, topo=None, costs=None, capacity=(), contention=True, decisions=True, options=None):
    topo = topo or fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=contention)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad, bad
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, costs or ChangeCosts(restart_s=0.0),
                 [CapacityChange(*c) for c in capacity],
                 options=options or EngineOptions(record_decisions=decisions, check_invariants=True))
    return eng.run()


@dataclass
class Scripted:
    """Replays a script: at or after time t_k the decision is `script[k]` (job → (gpus, batch));
    asks to be woken at the next script time (the lease / delay-timer mechanism)."""

    script: list  # [(time_s, {job: (gpus, batch)})]
    name: ClassVar[str] = "scripted"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = field(default_factory=frozenset)
    calls: list = field(default_factory=list)

    def decide(self, view: ClusterView, now: float) -> Decision:
        self.calls.append(now)
        cur = {}
        nxt = None
        for t, d in self.script:
            if t <= now + 1e-12:
                cur = d
            elif nxt is None:
                nxt = t
        allocs = {}
        for j, (gpus, batch) in cur.items():
            if view.jobs.state[j] in (JobState.QUEUED, JobState.RUNNING, JobState.RESTARTING):
                allocs[j] = Allocation(tuple(gpus), batch)
        return Decision(allocs, wake_at=nxt)


@dataclass
class RandomElastic:
    """Random but valid decisions: keeps, preempts, resizes, migrates and re-batches jobs."""

    seed: int = 0
    name: ClassVar[str] = "random-elastic"
    interval_s: float | None = 50.0
    event_driven: bool = True
    needs: frozenset = field(default_factory=frozenset)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)

    def decide(self, view: ClusterView, now: float) -> Decision:
        rng = self.rng
        jobs = view.jobs
        allocs: dict[int, Allocation] = {}
        free = set(view.cluster.free_gpus().tolist())
        for j in view.running():
            j = int(j)
            cur = view.allocation_of(j)
            r = rng.random()
            if r < 0.15:  # preempt
                free |= set(cur.tolist())
            elif r < 0.3 and jobs.max_gpus[j] > jobs.min_gpus[j]:  # resize
                free |= set(cur.tolist())
                allocs[j] = None  # placed below
            else:
                allocs[j] = Allocation(tuple(cur.tolist()))
        online = view.cluster.gpu_online
        todo = [j for j, a in allocs.items() if a is None] + [int(j) for j in view.queued()]
        for j in todo:
            allocs.pop(j, None)
            if rng.random() < 0.2:
                continue
            n = int(rng.integers(jobs.min_gpus[j], jobs.max_gpus[j] + 1))
            cand = np.array(sorted(g for g in free if online[g]), dtype=np.int64)
            g = pack(view, j, cand, n) if cand.size else None
            if g is None:
                continue
            batch = int(rng.choice([64, 128])) if jobs.max_gpus[j] > jobs.min_gpus[j] else None
            allocs[j] = Allocation(tuple(int(x) for x in g), batch)
            free -= set(int(x) for x in g)
        return Decision(allocs)


def fake_backends(df: pd.DataFrame, topo=None, policies=None) -> Backends:
    topo = topo or fake_topology()
    zoo = FakeZoo()
    pols = policies or {"fifo-test": lambda **kw: FifoTest(), "random-elastic": lambda **kw: RandomElastic(**kw)}
    return Backends(
        load_trace=lambda cfg: df,
        topology=lambda cfg: topo,
        zoo=zoo,
        comm=FakeComm,
        solve=fake_solve,
        make_policy=lambda name, params: pols[name](**params),
        policy_names=lambda: sorted(pols),
        perf_source="fake",
    )


def rows_of(jobs):
    """Hypothesis job dicts → trace rows (an `elastic` flag becomes min_gpus=1, max_gpus=num_gpus)."""
    out = []
    for d in jobs:
        r = dict(d)
        if r.pop("elastic"):
            r["min_gpus"], r["max_gpus"] = 1, r["num_gpus"]
        out.append(r)
    return out
