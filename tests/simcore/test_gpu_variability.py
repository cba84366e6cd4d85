"""Per-GPU performance variability in the perf model (`PerfModel.gpu_slowdown`,
`RunConfig.gpu_variability`): a synchronous job computes at its slowest GPU's pace, through
`phases_of` (the engine's path); off by default, and with it off every output is unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cosim.errors import InputError
from simcore.perf import PerfModel, gpu_variability
from experiments.runner import RunConfig, run
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import Scripted, fake_backends


def _perf(slow=None):
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=False)
    perf.gpu_slowdown = slow
    return topo, perf


def test_compute_runs_at_the_slowest_gpu_of_the_placement():
    topo, nominal = _perf()
    slow = np.ones(topo.gpu_type.shape[0])
    slow[2] = 1.25
    _, varied = _perf(slow)
    fast = np.array([0, 1], np.int32)
    mixed = np.array([1, 2], np.int32)
    for gpus, m in ((fast, 1.0), (mixed, 1.25)):
        p0 = nominal.phases_of("small", tuple(gpus.tolist()), gpus, 64)
        p1 = varied.phases_of("small", tuple(gpus.tolist()), gpus, 64)
        assert p1.compute_s == pytest.approx(p0.compute_s * m)
        assert p1.comm_start_s == pytest.approx(p0.comm_start_s * m)
        assert p1.comm_s == p0.comm_s  # the collective is not slowed
    # what-if queries stay nominal: policies learn variability only from their own model
    assert varied.solo_iter_s("small", mixed, 64) == nominal.solo_iter_s("small", mixed, 64)


def test_a_job_placed_on_a_slow_gpu_finishes_later_in_the_engine():
    rows = [{"submit_time": 0.0, "num_gpus": 1, "duration": 100.0}]
    topo = fake_topology()

    def run_on(gpu: int, slow):
        pol = Scripted([(0.0, {0: ((gpu,), 64)})])
        from simcore.costs import ChangeCosts
        from simcore.engine import Engine, EngineOptions
        from simcore.prepare import build_jobs
        from simcore.state import ClusterState
        from tests.simcore.helpers import frame

        perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=False)
        perf.gpu_slowdown = slow
        jobs, _ = build_jobs(frame(rows), perf, FakeZoo())
        res = Engine(jobs, ClusterState.from_topology(topo), perf, pol, ChangeCosts(restart_s=0.0), [],
                     options=EngineOptions(check_invariants=True)).run()
        return float(res.jobs.end_time[0])

    slow = np.ones(topo.gpu_type.shape[0])
    slow[5] = 1.2
    t_fast, t_slow, t_off = run_on(0, slow), run_on(5, slow), run_on(5, None)
    assert t_fast == t_off  # a nominal GPU: as without variability
    assert t_slow == pytest.approx(t_off * 1.2, rel=1e-9)


def test_seeded_model_range_and_determinism():
    m = gpu_variability(4096, 0.22, seed=3)
    assert m.min() >= 1.0 and m.max() < 1.22 and m.max() > 1.2
    assert np.array_equal(m, gpu_variability(4096, 0.22, seed=3))
    assert not np.array_equal(m, gpu_variability(4096, 0.22, seed=4))
    assert np.all(gpu_variability(8, 0.0, seed=0) == 1.0)


def test_pal_profile_equals_the_engine_model_for_the_same_seed_and_spread():
    from policies.pal import variability_multipliers

    pm = variability_multipliers(512, (0.22, 0.14), seed=7)
    assert np.array_equal(pm[0], gpu_variability(512, 0.22, seed=7))


def _golden():
    from tests.simcore.test_runner import golden_trace

    return golden_trace()


def test_outputs_identical_when_off():
    be = fake_backends(_golden())
    cfg = {"trace": "golden", "cluster": "fake", "policies": ("fifo-test", "random-elastic"), "seed": 0,
           "costs": "flat30"}
    a = run(RunConfig(**cfg), None, backends=be)
    b = run(RunConfig(**cfg, gpu_variability=0.0, gpu_variability_seed=5), None, backends=fake_backends(_golden()))
    for p in ("fifo-test", "random-elastic"):
        pd.testing.assert_frame_equal(a.jobs[p], b.jobs[p])
    assert "gpu_variability" not in RunConfig(**cfg).to_dict()  # configs of runs without it stay identical
    c = run(RunConfig(**cfg, gpu_variability=0.5, gpu_variability_seed=1), None, backends=fake_backends(_golden()))
    assert not a.jobs["fifo-test"]["end_time_s"].equals(c.jobs["fifo-test"]["end_time_s"])


def test_bad_spread_is_one_line_input_error():
    with pytest.raises(InputError, match="gpu_variability"):
        run(RunConfig(trace="golden", cluster="fake", policies=("fifo-test",), gpu_variability=-0.1), None,
            backends=fake_backends(_golden()))
