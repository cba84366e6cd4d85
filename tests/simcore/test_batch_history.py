"""ONES' convergence model in the engine (`--progress batch-history`, `simcore.convergence.BatchHistory`)
and its fit to the artifact's run history (`simcore.convergence_fit`): a job at its reference batch
trains exactly the trace's epochs; a job whose batch changes trains exactly the epochs the model
gives for its history of placements."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from experiments.runner import RunConfig, run
from simcore.convergence import PHI, BatchHistory, ConvergenceModel, assign_batch_history
from simcore.convergence_fit import fit_history, history_path, read_runs
from simcore.costs import ChangeCosts
from simcore.engine import Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from simcore.state import ClusterState
from simcore.work import WorkMode
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve, fake_topology
from tests.simcore.helpers import RandomElastic, Scripted, fake_backends, frame


def _rows(n: int, elastic: bool, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        g = int(rng.choice([1, 2]))
        out.append({"submit_time": float(i * 20), "num_gpus": g, "min_gpus": 1 if elastic else g,
                    "max_gpus": 4 if elastic else g, "epochs": float(rng.integers(12, 30)), "epoch_size": 2000.0,
                    "target_acc": 0.7, "patience": 10, "global_batch": 64})
    return out


def _engine(rows, policy, costs=None):
    topo = fake_topology()
    perf = PerfModel(topo, FakeZoo(), FakeComm(topo), fake_solve, contention=True)
    jobs, bad = build_jobs(frame(rows), perf, FakeZoo())
    assert not bad, bad
    assert assign_batch_history(jobs) == len(rows)
    eff = BatchHistory(jobs)
    eng = Engine(jobs, ClusterState.from_topology(topo), perf, policy, costs or ChangeCosts(restart_s=0.0),
                 efficiency=eff, options=EngineOptions(record_decisions=True, check_invariants=True))
    return eng, eng.run(), eff


def _history(dec: dict, j: int) -> list[int]:
    """Job j's batch at each placement (decisions that hold GPUs: not preempt or finish)."""
    return [int(b) for i, n, b in zip(dec["job_id"], dec["num_gpus"], dec["batch_size"]) if i == f"j{j}" and n > 0]


def _trained_epochs(eng, j: int) -> float:
    return float(eng._v_samples[j]) / 2000.0  # the view's samples counter, closed at completion


def _model_epochs(eff: BatchHistory, j: int, batches: list[int]) -> float:
    """The model's total epochs for job j's history, from the module's definitions alone."""
    m = ConvergenceModel()
    e_t = eff.to_target[j]
    e_int = m.intrinsic(e_t, eff.base[j], 64.0)
    return float(eff.e_ref[j] - e_t + m.epochs_to_target(e_int, eff.base[j], batches))


@pytest.mark.parametrize("policy", ["fifo-test", "random-elastic"])
def test_reference_batch_trains_exactly_the_traces_epochs(policy):
    """Fixed-batch runs (with preemptions, resumes and moves under random-elastic on rigid jobs)
    give bit-identical results under plain and batch-history progress."""
    df = frame(_rows(10, elastic=False))
    out = {}
    for prog in ("plain", "batch-history"):
        res = run(RunConfig(trace="t", policies=(policy,), progress=prog, costs="20"), None,
                  backends=fake_backends(df))
        out[prog] = res.jobs[policy]
        assert res.summary["progress_model"].tolist() == [prog]
    assert out["plain"]["work_mode"].eq("convergence").all()
    assert out["batch-history"]["work_mode"].eq("epochs-to-target").all()
    assert out["plain"]["finished"].all()
    for c in ("jct_s", "end_time_s", "executed_s", "waiting_s", "epochs_done"):
        np.testing.assert_array_equal(out["plain"][c].to_numpy(), out["batch-history"][c].to_numpy(), err_msg=c)
    assert (out["batch-history"]["stat_efficiency"] == 1.0).all()


def test_a_scripted_history_pays_exactly_the_model():
    """One GPU at the base batch 32, then 8x at once (256: two excess doublings), then back to 64."""
    rows = [{"submit_time": 0.0, "num_gpus": 2, "min_gpus": 1, "max_gpus": 4, "epochs": 20.0,
             "epoch_size": 2000.0, "target_acc": 0.7, "patience": 10, "global_batch": 64}]
    script = [(0.0, {0: ((0,), 32)}), (4.0, {0: ((0, 1, 2, 3), 256)}), (8.0, {0: ((0, 1), 64)})]
    eng, res, eff = _engine(rows, Scripted(script))
    assert res.jobs.end_time[0] > 8.0
    hist = _history(res.decisions, 0)
    assert hist == [32, 256, 64]
    # E_T,ref = 11 at J_ref = 0 (64 = 2 x 32); J = log2(8/2) = 2: E_T = 11 (1 + 2 phi), patience 9 more
    want = 11.0 * (1.0 + 2.0 * PHI) + 9.0
    assert _model_epochs(eff, 0, hist) == pytest.approx(want)
    assert _trained_epochs(eng, 0) == pytest.approx(want, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.sampled_from([32, 64, 128, 256, 512]), min_size=1, max_size=6),
       gpus=st.lists(st.sampled_from([(0,), (0, 1), (2, 3), (0, 1, 2, 3)]), min_size=6, max_size=6))
def test_any_scripted_history_pays_exactly_the_model(batches, gpus):
    """Jumps mid-run, shrinks and regrowth, moves at one batch: trained epochs = the model's."""
    rows = [{"submit_time": 0.0, "num_gpus": 2, "min_gpus": 1, "max_gpus": 4, "epochs": 20.0,
             "epoch_size": 2000.0, "target_acc": 0.7, "patience": 10, "global_batch": 64}]
    script = [(1.5 * k, {0: (gpus[k], b)}) for k, b in enumerate(batches)]
    eng, res, eff = _engine(rows, Scripted(script))
    hist = _history(res.decisions, 0)
    assert np.isfinite(res.jobs.end_time[0]) and res.jobs.end_time[0] > script[-1][0]
    assert len(hist) >= len([1 for k in range(len(batches)) if k == 0 or batches[k] != batches[k - 1]
                             or gpus[k] != gpus[k - 1]])
    assert _trained_epochs(eng, 0) == pytest.approx(_model_epochs(eff, 0, hist), rel=1e-6)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_any_history_pays_exactly_the_model(seed):
    rows = _rows(6, elastic=True, seed=seed)
    eng, res, eff = _engine(rows, RandomElastic(seed=seed), ChangeCosts(restart_s=5.0))
    dec = res.decisions
    for j in range(len(rows)):
        if not np.isfinite(res.jobs.end_time[j]):
            continue
        hist = _history(dec, j)
        assert _trained_epochs(eng, j) == pytest.approx(_model_epochs(eff, j, hist), rel=1e-6)


def test_fit_reproduces_the_run_history():
    """φ is the least-squares fit of the artifact's history; the stated errors are what it gives."""
    try:
        path = history_path()
    except InputError:
        pytest.skip("the shared data folder (COSIM_SHARED_DATA or ../shared/data) is not here")
    f = fit_history(path)
    assert len(f.runs) == 21
    assert f.phi == pytest.approx(PHI, abs=5e-4)
    # the identifying group: grown 512 -> 1024 gradually (12 epochs) vs started at 1024 (15, 13)
    grp = [r for r in f.runs if r.group == "cifar-resnet/40000"]
    assert [r.doublings for r in grp] == [0.0, 1.0, 1.0]
    level = np.exp(np.mean([np.log(r.epochs_to_target / (1 + f.phi * r.doublings)) for r in grp]))
    for r in grp:
        assert abs(level * (1 + f.phi * r.doublings) - r.epochs_to_target) <= 1.05
    # held out: 12 runs predicted from their siblings (the ramped run cannot be: phi needs it)
    assert len(f.held_out) == 12 and f.unidentified == 1
    assert f.held_out_mae == pytest.approx(8.53, abs=0.01)
    assert np.median([abs(p - r.epochs_to_target) / r.epochs_to_target for r, p in f.held_out]) <= 0.16


def test_a_bad_history_is_a_one_line_error(tmp_path):
    with pytest.raises(InputError, match="missing.csv"):
        read_runs(tmp_path / "missing.csv")
    p = tmp_path / "h.csv"
    p.write_text("id,epoch,epoch_size,batch_size,lr,acc\n0,1,40000,512,0.01,0.3\n0,2,40000,512,-1,0.4\n")
    with pytest.raises(InputError, match=r"h\.csv.*row 2.*lr"):
        read_runs(p)
    assert WorkMode.EPOCHS_TO_TARGET == 5
