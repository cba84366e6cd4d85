"""Events a policy can ask for: epoch ends (`Policy.wants_epoch_events`) and progress
milestones (`Policy.milestones`), delivered as policy calls at exact instants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pytest

from cosim.errors import PolicyError
from simcore.api import NEED_PROGRESS_ORACLE, Allocation, ClusterView, Decision, ProgressEvent
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import frame


@dataclass
class EpochWatcher:
    """Test policy: runs job 0 on GPU 0 at batch 64, switches it to batch 128 at `switch_s`
    (a wake-up), and records every call with the progress events it was given."""

    switch_s: float = 1e9
    name: ClassVar[str] = "epoch-watcher"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = frozenset({NEED_PROGRESS_ORACLE})  # milestones are fractions of the work
    wants_epoch_events: bool = True
    milestones: tuple = (0.5, 0.9)
    calls: list = field(default_factory=list)

    def decide(self, view: ClusterView, now: float) -> Decision:
        self.calls.append((now, view.progress_events))
        if view.jobs.state[0] in (1, 2, 3):
            b = 128 if now >= self.switch_s else 64
            return Decision({0: Allocation((0,), b)}, wake_at=self.switch_s if now < self.switch_s else None)
        return Decision({})


def _run(policy, rows):
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, ChangeCosts(restart_s=0.0, batch_change_s=0.0),
                 options=EngineOptions(check_invariants=True))
    return eng.run(), perf


ROW = dict(submit_time=0.0, num_gpus=1, global_batch=64, epochs=4, epoch_size=6400)  # SAMPLES, 400 iterations


def test_epoch_ends_and_milestones_at_exact_instants():
    pol = EpochWatcher()
    res, perf = _run(pol, [ROW])
    it = perf.solo_iter_s("small", np.array([0], np.int32), 64)
    ev = [(t, e) for t, e in pol.calls if e]
    want = [(100 * it, (ProgressEvent(0, "epoch", 1.0),)),
            (200 * it, (ProgressEvent(0, "epoch", 2.0), ProgressEvent(0, "milestone", 0.5))),
            (300 * it, (ProgressEvent(0, "epoch", 3.0),)),
            (360 * it, (ProgressEvent(0, "milestone", 0.9),))]
    assert [e for _, e in ev] == [e for _, e in want]
    np.testing.assert_allclose([t for t, _ in ev], [t for t, _ in want], rtol=1e-12)
    assert res.jobs.end_time[0] == pytest.approx(400 * it, rel=1e-12)
    assert res.jobs.epochs_done[0] == 4


def test_epoch_ends_follow_samples_across_a_batch_change():
    """At 150 iterations (9,600 samples) the batch doubles: epoch 2 ends at sample 12,800,
    i.e. 25 iterations of 128 later; epoch 3 another 50 after that."""
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    i64 = perf.solo_iter_s("small", np.array([0], np.int32), 64)
    i128 = perf.solo_iter_s("small", np.array([0], np.int32), 128)
    pol = EpochWatcher(switch_s=150 * i64)
    res, _ = _run(pol, [ROW])
    epochs = [t for t, e in pol.calls for x in e if x.kind == "epoch"]
    np.testing.assert_allclose(epochs, [100 * i64, 150 * i64 + 25 * i128, 150 * i64 + 75 * i128], rtol=1e-12)
    assert res.jobs.end_time[0] == pytest.approx(150 * i64 + 125 * i128, rel=1e-12)


def test_no_events_without_asking():
    """A policy that declares nothing is called only at the start and completion (no marks)."""
    pol = EpochWatcher(wants_epoch_events=False, milestones=())
    res, _ = _run(pol, [ROW])
    assert [e for _, e in pol.calls] == [(), ()]
    assert res.jobs.epochs_done[0] == 0
    pol2 = EpochWatcher(milestones=())
    _run(pol2, [dict(ROW, epochs=np.nan, epoch_size=np.nan, total_iterations=400)])  # epochs unknown
    assert all(not e for _, e in pol2.calls)


def test_bad_milestone_is_a_policy_error():
    with pytest.raises(PolicyError, match=r"epoch-watcher.*milestone 1\.5"):
        _run(EpochWatcher(milestones=(0.5, 1.5)), [ROW])
