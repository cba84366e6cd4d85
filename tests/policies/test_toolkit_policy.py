"""A policy that resizes jobs and changes their batch sizes needs its own file and the registry
only: `DoubleOldest` below is written against the round toolkit alone
(`BasePolicy.round`, `Round.resize`, `Round.place`, `Round.decision`), registered with one
decorator line, and run through the real engine (`experiments.runner.run`).

Each round it doubles the GPUs and the global batch of the oldest running job that may grow
(at most its `max_gpus`), keeps every other running job, and starts queued jobs in arrival
order while they fit. The test checks in the engine's own records (`decisions`, `jobs`) that
jobs were really resized with their batch doubled, on GPUs the engine accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from policies.base import BasePolicy
from policies.config import PlacedConfig
from policies.registry import POLICIES
from simcore.api import ClusterView, Decision

NAME = "test-double-oldest"


@dataclass(frozen=True)
class DoubleOldestConfig(PlacedConfig):
    """Test policy: the oldest running job that may grow doubles its GPUs and batch each round."""


class DoubleOldest(BasePolicy):
    """Test policy: double the GPUs and global batch of the oldest growable running job each round."""

    name = NAME
    Config = DoubleOldestConfig
    rounds_need_queue = False

    def decide(self, view: ClusterView, now: float) -> Decision:
        jobs = view.jobs
        r = self.round(view)
        run = view.running()
        for j in run[np.lexsort((run, jobs.submit_time[run]))].tolist():  # oldest first
            n = int(jobs.alloc_count[j])
            if 2 * n <= int(jobs.max_gpus[j]):
                if r.resize(j, 2 * n, batch=2 * int(jobs.batch_size[j])) is not None:
                    break
        r.keep_all_undecided()
        queued = view.queued()
        for j in queued[np.lexsort((queued, jobs.submit_time[queued]))].tolist():
            if r.place(j) is None:
                break
        return r.decision()


@pytest.fixture
def registered():
    POLICIES.register(NAME)(DoubleOldest)  # the one line a new policy adds to the registry
    yield NAME
    POLICIES._items.pop(NAME, None)  # (test hygiene: the registry has no removal)
    POLICIES._help.pop(NAME, None)


def test_resizing_policy_runs_through_the_engine(registered):
    from experiments.runner import RunConfig, run

    res = run(RunConfig(trace="synth:philly-sia:40:1h", cluster="dgx-a100", cluster_nodes=4, policies=(NAME,),
                        write_decisions=True), None)
    s = res.summary.iloc[0]
    assert s["finished"] == 40 and s["unfinished"] == 0
    d = res.decisions[NAME].sort_values(["time_s"], kind="stable")
    start = d[d.action == "start"].groupby("job_id").first()
    grown = d[(d.action != "start") & (d.action != "finish") & (d.num_gpus > 0)]
    grown = grown.merge(start[["num_gpus", "batch_size"]].add_suffix("_0"), left_on="job_id", right_index=True)
    doubled = grown[(grown.num_gpus == 2 * grown.num_gpus_0) & (grown.batch_size == 2 * grown.batch_size_0)]
    assert len(doubled) >= 3, d.action.value_counts().to_dict()
    jobs = res.jobs[NAME].set_index("job_id")
    # the engine ran them at the new batch: their final batch is a doubling of the first one
    for jid, row in doubled.groupby("job_id").last().iterrows():
        assert jobs.loc[jid, "final_batch"] >= row["batch_size"]
