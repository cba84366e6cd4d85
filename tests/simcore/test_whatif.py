"""What-if queries (`simcore.whatif`): iteration time, throughput, goodput, throughput matrix."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pytest

from cosim.errors import PolicyError
from simcore.api import Allocation, ClusterView, Decision, JobState
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.goodput import AppStats, GoodputModel
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from simcore.whatif import WhatIf
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import frame

TOPO = dict(nodes=4, gpus_per_node=4, types=(0, 0, 1, 1))  # 8 GPUs of "A", 8 of "B" (slower, 8 GB)


def _setup(rows, goodput=None):
    topo = fake_topology(**TOPO)
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    return WhatIf(jobs, perf, "probe", goodput), perf, jobs


@dataclass
class Placer:
    """Runs job 0 on `gpus` at `batch`; asks the what-ifs at its start."""

    gpus: tuple
    batch: int
    name: ClassVar[str] = "placer"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = frozenset()
    asked: dict = field(default_factory=dict)

    def decide(self, view: ClusterView, now: float) -> Decision:
        if view.jobs.state[0] == JobState.QUEUED:
            self.asked = dict(it=view.iteration_time(0, np.array(self.gpus), self.batch),
                              tp=view.throughput(0, self.gpus, self.batch),
                              gp=view.goodput(0, self.gpus, self.batch),
                              it_now=view.iteration_time(0, np.array(self.gpus)))
        if view.jobs.state[0] in (JobState.QUEUED, JobState.RUNNING):
            return Decision({0: Allocation(self.gpus, self.batch)})
        return Decision({})


@pytest.mark.parametrize("gpus,batch", [((0,), 64), ((0, 1, 2, 3), 128), ((0, 4), 64), ((2, 9), 256)])
def test_whatif_equals_the_engines_iteration_time(gpus, batch):
    """A job alone, 100 iterations on the placement: it ends at exactly 100 × the what-if
    (contention solver on; across nodes and across types included)."""
    topo = fake_topology(**TOPO)
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, _ = build_jobs(frame([dict(submit_time=0.0, num_gpus=len(gpus), global_batch=batch,
                                     total_iterations=100)]), perf, FakeZoo())
    pol = Placer(gpus, batch)
    res = Engine(jobs, ClusterState.from_topology(topo), perf, pol, ChangeCosts(restart_s=0.0),
                 options=EngineOptions(check_invariants=True)).run()
    it = pol.asked["it"]
    assert math.isfinite(it) and it > 0
    assert res.jobs.end_time[0] == pytest.approx(100 * it, rel=1e-12)
    assert pol.asked["tp"] == pytest.approx(batch / it, rel=1e-15)
    assert pol.asked["gp"] == pol.asked["tp"]  # plain progress: efficiency 1
    assert pol.asked["it_now"] == it  # batch None: the job's current batch (its trace batch here)


def test_count_form_is_the_consolidated_placement():
    wi, perf, _ = _setup([dict(submit_time=0.0, num_gpus=2, global_batch=64, total_iterations=10)])
    place = perf.consolidated_gpus(6, 0)
    assert wi.iteration_time(0, 6, 128, gpu_type=0) == wi.iteration_time(0, place, 128)
    want = perf.solo_iter_s("small", perf.consolidated_gpus(4, 1), 128)
    assert wi.iteration_time(0, 4, 128, gpu_type=1) == want
    assert wi.iteration_time(0, 4, 128, gpu_type="B") == want
    assert wi.iteration_time(0, 4, 128, gpu_type=0) < want  # type A is twice as fast
    assert wi.iteration_time(0, 12, 128, gpu_type=0) == math.inf  # only 8 GPUs of type A
    assert wi.throughput(0, 12, 128, gpu_type=0) == 0.0


def test_throughput_matrix_shape_values_and_nan():
    rows = [dict(submit_time=0.0, num_gpus=2, global_batch=64, total_iterations=10),
            dict(submit_time=0.0, num_gpus=4, global_batch=256, total_iterations=10, gpu_type="B"),
            dict(submit_time=0.0, num_gpus=12, global_batch=256, total_iterations=10)]
    wi, perf, jobs = _setup(rows)
    m = wi.throughput_matrix(np.array([2, 0, 1]))
    assert m.shape == (3, 2) and m.dtype == np.float64
    assert np.isnan(m[0]).all()  # 12 GPUs of one type: none has that many
    assert m[1, 0] == pytest.approx(wi.throughput(0, 2, None, gpu_type=0), rel=1e-15)
    assert m[1, 1] == pytest.approx(wi.throughput(0, 2, None, gpu_type=1), rel=1e-15)
    assert m[1, 0] > m[1, 1] > 0
    assert np.isnan(m[2, 0]) and m[2, 1] == pytest.approx(256 / perf.solo_iter_s(
        "small", perf.consolidated_gpus(4, 1), 256), rel=1e-15)  # requires type B
    m2 = wi.throughput_matrix([0, 1], batch=128)  # cached rows and new ones mix
    assert m2[0, 0] == pytest.approx(wi.throughput(0, 2, 128, gpu_type=0), rel=1e-15)
    np.testing.assert_array_equal(wi.throughput_matrix(np.array([2, 0, 1])), m)
    assert wi.throughput_matrix(np.zeros(0, np.int64)).shape == (0, 2)


def test_goodput_uses_the_statistical_efficiency():
    rows = [dict(submit_time=0.0, num_gpus=1, global_batch=64, total_iterations=10),
            dict(submit_time=0.0, num_gpus=1, global_batch=64, total_iterations=10)]
    app = AppStats("toy", np.array([64, 256]), np.array([[1.0], [1.0]]), np.array([[20.0], [20.0]]),
                   np.array([100.0]))
    gp = GoodputModel([app], np.array([0, -1]))
    wi, _, _ = _setup(rows, goodput=gp)
    for b in (64, 128, 256):
        e = app.efficiency(b, 0)
        assert wi.goodput(0, 1, b) == pytest.approx(wi.throughput(0, 1, b) * e, rel=1e-15)
        assert wi.goodput(1, 1, b) == wi.throughput(1, 1, b)  # no profiled application: efficiency 1
    assert app.efficiency(256, 0) < 1.0 == app.efficiency(64, 0)


def test_bad_what_ifs_name_policy_job_and_time():
    wi, _, _ = _setup([dict(submit_time=0.0, num_gpus=1, global_batch=64, total_iterations=10)])
    wi.now = 12.5
    cases = [(lambda: wi.iteration_time(3, 1), r"job 3: no such job"),
             (lambda: wi.throughput(-1, 1), r"job -1: no such job"),
             (lambda: wi.iteration_time(0, (0, 16)), r"job 0: no GPU 16"),
             (lambda: wi.iteration_time(0, [0, 0]), r"GPU listed twice"),
             (lambda: wi.iteration_time(0, 1, 0), r"job 0: batch size must be positive, got 0"),
             (lambda: wi.goodput(0, 1, -64), r"batch size must be positive"),
             (lambda: wi.iteration_time(0, 0), r"GPU count must be positive"),
             (lambda: wi.iteration_time(0, 1, gpu_type="H100"), r"no GPU type 'H100'"),
             (lambda: wi.throughput_matrix([0, 7]), r"job 7: no such job"),
             (lambda: wi.throughput_matrix([0], batch=0), r"batch size must be a positive int")]
    for call, msg in cases:
        with pytest.raises(PolicyError, match=r"policy 'probe' at t=12\.500s: what-if for job ") as ei:
            call()
        assert re.search(msg, str(ei.value)), (msg, str(ei.value))
