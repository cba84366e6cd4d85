"""Statistical efficiency and goodput (`simcore.goodput`), EPOCHS progress in the engine, and
work conserved in samples under batch changes in every work mode."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.goodput import AppStats, GoodputModel, assign_goodput, fill_run_epochs, load_app
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from simcore.work import WorkMode
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import Scripted, frame

# Efficiency at 2x, 3x, 4x and 8x the initial batch, in the first, middle and last epoch, from
# the public Pollux simulator itself (petuum/adaptdl, branch osdi21-artifact, simulator/):
# `Application.get_grad_stats(k * b0, epoch)` fed to `GoodputFunction(..., (sqr, var),
# b0).efficiency(k * b0)`, run on its own traces/<app>/validation-*.csv (byte-identical to
# ../shared/data/profiles/pollux-sia/<app>/), max_epochs as in its applications.py; printed
# rounded to 6 digits. 3x is between profiled batches (linear interpolation of the stats).
# app: (b0, epochs, end-of-run progress, {epoch: (E(2b0), E(3b0), E(4b0), E(8b0))})
POLLUX_REFERENCE = {
    "bert": (12, 2, 14774.0, {0: (0.989062, 0.980939, 0.975811, 0.963514),
                              1: (0.996849, 0.994968, 0.995317, 0.98765)}),
    "cifar10": (128, 100, 39062.90816659533, {0: (0.643108, 0.486216, 0.40997, 0.200065),
                                              50: (0.984362, 0.97308, 0.966552, 0.941074),
                                              99: (0.996535, 0.994202, 0.993485, 0.987311)}),
    "ncf": (256, 10, 194174.0, {0: (0.999707, 0.991032, 0.974269, 0.992872),
                                5: (0.999989, 0.999978, 0.999968, 0.999755),
                                9: (0.999994, 0.999988, 0.999982, 0.999827)}),
    "imagenet": (200, 90, 576525.594895604, {0: (0.86514, 0.71981, 0.596532, 0.483535),
                                             45: (0.989775, 0.982504, 0.977992, 0.956758),
                                             89: (0.993295, 0.989696, 0.98911, 0.984505)}),
    "deepspeech2": (20, 80, 28536.0, {0: (0.609957, 0.430826, 0.329609, 0.194773),
                                      40: (0.999799, 0.999547, 0.997439, 0.994232),
                                      79: (0.999886, 0.999741, 0.997984, 0.997182)}),
    "yolov3": (8, 50, 103443.97796253164, {0: (0.516805, 0.347239, 0.261012, 0.130419),
                                           25: (0.987249, 0.969562, 0.944413, 0.888992),
                                           49: (0.999165, 0.997878, 0.996129, 0.995307)}),
}


@pytest.mark.parametrize("app", sorted(POLLUX_REFERENCE))
def test_efficiency_matches_public_pollux_simulator(shared_data, app):
    b0, epochs, end, ref = POLLUX_REFERENCE[app]
    st_ = load_app(shared_data / "profiles" / "pollux-sia" / app, epochs)
    assert st_.init_batch == b0 and st_.epochs == epochs
    assert st_.target == pytest.approx(end, rel=1e-12)
    for epoch, effs in ref.items():
        got = [st_.efficiency(k * b0, epoch) for k in (2, 3, 4, 8)]
        np.testing.assert_allclose(got, effs, rtol=0.01)
        np.testing.assert_allclose(got, effs, rtol=1e-5)  # in fact to the printed digits
    assert st_.efficiency(b0, 0) == pytest.approx(1.0)


def _write_app(folder: Path, rows: dict[int, list[tuple[float, float, float]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for b, rr in rows.items():
        pd.DataFrame(rr, columns=["progress", "grad_sqr", "grad_var"]).assign(iteration=1, metric=0.0).to_csv(
            folder / f"validation-{b}.csv", index=False)
    return folder


def test_too_few_rows_names_the_file(tmp_path):
    d = _write_app(tmp_path / "app", {8: [(10.0, 1.0, 1.0), (20.0, 1.0, 1.0)], 16: [(10.0, 1.0, 1.0)]})
    with pytest.raises(InputError, match=r"validation-16\.csv.*at least 2 rows.*noise-scale fit.*1 rows"):
        load_app(d, epochs=2)
    with pytest.raises(InputError, match=r"validation-8\.csv.*at least 3 rows"):
        load_app(d, epochs=3)
    empty = _write_app(tmp_path / "empty", {8: []})
    with pytest.raises(InputError, match=r"validation-8\.csv"):
        load_app(empty)
    bad = _write_app(tmp_path / "bad", {8: [(10.0, -1.0, 1.0)]})
    with pytest.raises(InputError, match=r"validation-8\.csv: row 1"):
        load_app(bad)


def test_efficiency_formula_by_hand(tmp_path):
    # b0 = 8; epoch 0: sqr 1, var 3 → at b = 16 (scale 2): gain (3+1)/(3/2+1) = 1.6, E = 0.8;
    # epoch 1: sqr 1, var 0 → gain 1, E = 0.5. At b = 12 the stats are the average of 8's and 16's.
    d = _write_app(tmp_path / "app", {8: [(100.0, 1.0, 3.0), (200.0, 1.0, 0.0)],
                                      16: [(101.0, 1.0, 3.0), (201.0, 3.0, 0.0)]})
    a = load_app(d)
    assert a.epochs == 2 and a.target == 200.0 and list(a.epoch_end) == [100.0, 200.0]
    assert a.efficiency(16, 0) == pytest.approx(0.8)
    assert a.efficiency(16, 1) == pytest.approx(0.5)
    assert a.efficiency(12, 1) == pytest.approx((2.0 / (0 / 1.5 + 2.0)) / 1.5)
    assert a.goodput_samples_s(16, 0.5, 0) == pytest.approx(16 / 0.5 * 0.8)
    assert a.epoch_at(99.0) == 0 and a.epoch_at(100.0) == 1


def _two_epoch_app() -> AppStats:
    return AppStats("toy", np.array([32, 64]), grad_sqr=np.array([[1.0, 1.0], [1.0, 1.0]]),
                    grad_var=np.array([[3.0, 0.0], [3.0, 0.0]]), epoch_end=np.array([100.0, 300.0]))


def _engine(rows, policy, app: AppStats | None, mode: WorkMode = WorkMode.EPOCHS):
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    gp = None
    if app is not None:
        gp = GoodputModel([app], np.zeros(jobs.num_jobs, np.int16))
        jobs.app_id[:] = 0
        jobs.work_mode[:] = mode
        if mode == WorkMode.EPOCHS:
            jobs.work_iters[:] = app.target * app.init_batch / jobs.global_batch.astype(float)
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, ChangeCosts(restart_s=0.0, batch_change_s=0.0),
                 options=EngineOptions(record_decisions=True, check_invariants=True), goodput=gp)
    return eng, perf


def test_epochs_refresh_efficiency_at_epoch_end():
    """One job at fixed batch 64 (scale 2 over b0 = 32): epoch 0 at E = 0.8 (gain 1.6), then
    epoch 1 at E = 0.5 (gain 1): 100 / 1.6 + 200 / 1 iterations. Without the refresh at the
    epoch end it would take 300 / 1.6."""
    app = _two_epoch_app()
    eng, perf = _engine([dict(submit_time=0.0, num_gpus=1, global_batch=64, total_iterations=10)],
                        Scripted([(0.0, {0: ((0,), None)})]), app)
    res = eng.run()
    it = perf.solo_iter_s("small", np.array([0], np.int32), 64)
    assert res.jobs.end_time[0] == pytest.approx((100 / 1.6 + 200 / 1.0) * it, rel=1e-9)
    assert res.jobs.epochs_done[0] == 2 and res.jobs.stat_eff[0] == pytest.approx(0.5)
    gp = eng.goodput
    assert gp.solo_iters(0, 64) == pytest.approx(100 / 1.6 + 200)


def test_assign_goodput_switches_profiled_jobs(tmp_path):
    from traces.workload import TrainingRun

    d = _write_app(tmp_path / "toyapp", {32: [(100.0, 1.0, 3.0), (300.0, 1.0, 0.0)],
                                         64: [(100.0, 1.0, 3.0), (300.0, 1.0, 0.0)]})
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    rows = [dict(submit_time=0.0, num_gpus=1, global_batch=64, model="small", epochs=2, epoch_size=3200,
                 total_iterations=100),
            dict(submit_time=1.0, num_gpus=1, global_batch=64, model="big", total_iterations=50),
            dict(submit_time=2.0, num_gpus=1, min_gpus=1, max_gpus=2, global_batch=64, model="small", duration=99.0)]
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad
    runs = {"small": TrainingRun("small", "toy", 3200, 2, ("toyapp",))}
    assert assign_goodput(jobs, "plain", tmp_path, runs) is None and jobs.work_mode[0] == WorkMode.ITERATIONS
    gp = assign_goodput(jobs, "goodput", tmp_path, runs)
    # the elastic replayed job (SAMPLES from its duration) keeps its trace work
    assert list(jobs.work_mode) == [WorkMode.EPOCHS, WorkMode.ITERATIONS, WorkMode.SAMPLES]
    assert jobs.work_iters[0] == pytest.approx(300 * 32 / 64) and jobs.num_epochs[0] == 2
    assert list(gp.app_of) == [0, -1, -1]
    with pytest.raises(InputError, match="progress"):
        assign_goodput(jobs, "fast", tmp_path, runs)


def test_fill_run_epochs_for_fixed_epoch_fallback():
    from traces.workload import TrainingRun

    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, _ = build_jobs(frame([dict(submit_time=0.0, num_gpus=1, global_batch=64, epochs=3, epoch_size=640)]),
                         perf, FakeZoo())
    assert jobs.work_mode[0] == WorkMode.SAMPLES and jobs.num_epochs[0] == 3
    jobs.num_epochs[0] = np.nan  # as the fixed-epochs fallback leaves it
    fill_run_epochs(jobs, {"small": TrainingRun("small", "toy", 320, 6)})
    assert jobs.num_epochs[0] == 6  # 6 × 320 / 64 = 30 iterations = its work
    jobs.num_epochs[0] = np.nan
    fill_run_epochs(jobs, {"small": TrainingRun("small", "toy", 320, 5)})  # not its work
    assert np.isnan(jobs.num_epochs[0])


# ---- work conserved in samples under batch changes (property) -----------------------------

def _processed(res, perf, j: int = 0):
    """(iterations, samples, efficiency-weighted samples) job j ran, integrated from its
    decisions: alone on one GPU, its iteration time at each batch is the solo one."""
    d = res.decisions
    rows = [(t, a, b) for t, jid, a, b in zip(d["time_s"], d["job_id"], d["action"], d["batch_size"]) if jid == "j0"]
    iters = samples = 0.0
    for (t, a, b), nxt in zip(rows, rows[1:] + [(res.jobs.end_time[j], "end", 0)]):
        if a in ("start", "rebatch", "resume"):
            dt = nxt[0] - t
            it = perf.solo_iter_s("small", np.array([0], np.int32), int(b))
            iters += dt / it
            samples += dt / it * b
    return iters, samples


batches = st.lists(st.tuples(st.floats(1.0, 400.0), st.sampled_from([16, 32, 48, 64, 128, 256])), min_size=1,
                   max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=batches, mode=st.sampled_from(["samples", "iterations", "epochs", "convergence"]))
def test_work_conserved_in_samples_under_batch_changes(changes, mode):
    """Whatever batch changes a policy makes, a SAMPLES job processes exactly its samples, an
    ITERATIONS job the samples of its iterations at the trace's batch (not its iteration count
    at whatever batch the policy picks), an EPOCHS job (one epoch: E
    depends on the batch only) its efficiency-weighted samples `target × b0`, and a CONVERGENCE job its samples weighted
    by E(b) / E(b_ref), `W × b_ref`."""
    t, script = 0.0, [(0.0, {0: ((0,), 64)})]
    for dt, b in changes:
        t += dt
        script.append((t, {0: ((0,), b)}))
    row = dict(submit_time=0.0, num_gpus=1, global_batch=64)
    if mode == "iterations":
        row["total_iterations"] = 20000
    else:
        row.update(epochs=1, epoch_size=64 * 20000)
    app = None
    if mode in ("epochs", "convergence"):  # one epoch, b0 = 16: E(b) = gain / scale with sqr 1, var 4
        app = AppStats("one", np.array([16, 256]), grad_sqr=np.ones((2, 1)), grad_var=np.full((2, 1), 4.0),
                       epoch_end=np.array([80000.0]))
    if mode == "convergence":
        row["target_acc"] = 0.9
    eng, perf = _engine([row], Scripted(script), app,
                        WorkMode.CONVERGENCE if mode == "convergence" else WorkMode.EPOCHS)
    res = eng.run()
    assert res.jobs.state[0] == 4  # finished
    _, samples = _processed(res, perf)
    if mode in ("samples", "iterations"):
        assert samples == pytest.approx(64 * 20000, rel=1e-6)
    else:
        d = res.decisions
        rows = [(tt, a, b) for tt, jid, a, b in zip(d["time_s"], d["job_id"], d["action"], d["batch_size"])]
        weighted = 0.0
        for (tt, a, b), nxt in zip(rows, rows[1:] + [(res.jobs.end_time[0], "end", 0)]):
            if a in ("start", "rebatch"):
                it = perf.solo_iter_s("small", np.array([0], np.int32), int(b))
                e = app.efficiency(b, 0) / (app.efficiency(64, 0) if mode == "convergence" else 1.0)
                weighted += (nxt[0] - tt) / it * b * e
        assert weighted == pytest.approx(80000.0 * 16 if mode == "epochs" else 64 * 20000, rel=1e-6)


def test_goodput_run_records_progress_option(shared_data):
    from experiments.runner import RunConfig, run
    from tests.simcore.helpers import fake_backends
    from tests.simcore.test_runner import golden_trace

    res = run(RunConfig(trace="g", policies=("fifo-test",), progress="goodput"), None,
              backends=fake_backends(golden_trace()))
    assert res.summary["progress_model"].tolist() == ["goodput"]
    assert res.jobs["fifo-test"]["work_mode"].isin(["replay", "samples", "iterations"]).all()  # no profiled models
    with pytest.raises(InputError, match="progress"):
        run(RunConfig(trace="g", policies=("fifo-test",), progress="nope"), None,
            backends=fake_backends(golden_trace()))
    assert math.isfinite(res.summary["avg_jct_s"].iloc[0])


def test_iterations_job_trains_its_samples_when_the_batch_doubles():
    """The work unit: 20,000 iterations at the trace's batch 64 are 1,280,000 samples.
    A policy that runs the job at 128 from the start finishes after 10,000 iterations (before:
    20,000 iterations of 128, twice the samples); at 64 the gain is exactly 1 and it runs 20,000."""
    from simcore.work import ConstantEfficiency, work_gain

    assert work_gain(WorkMode.ITERATIONS, 64, 64, ConstantEfficiency(), 0, 0.0) == 1.0
    assert work_gain(WorkMode.ITERATIONS, 128, 64, ConstantEfficiency(), 0, 0.0) == 2.0
    for b, want_iters in ((128, 10000), (64, 20000)):
        row = dict(submit_time=0.0, num_gpus=1, global_batch=64, total_iterations=20000)
        eng, perf = _engine([row], Scripted([(0.0, {0: ((0,), b)})]), None)
        assert eng.jobs.work_mode[0] == WorkMode.ITERATIONS
        res = eng.run()
        iters, samples = _processed(res, perf)
        assert iters == pytest.approx(want_iters, rel=1e-9) and samples == pytest.approx(64 * 20000, rel=1e-9)
        assert res.jobs.stat_eff[0] == 1.0
