"""Accuracy of the step/sync model (`calibration.step_model`) and of Dally Table I.

Hand-made data: the fits recover known parameters exactly. Real data (`../shared/data`): a fast
subset of `cosim validate` with the error bounds we achieve, so regressions are caught; the full
run (all platforms, leave-one-platform-out) is `slow`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calibration import step_model as sm
from calibration import validate as v
from cli.app import app

PLACEMENTS = ["2", "3", "4", "11", "12", "13", "22", "44", "111", "1111", "24", "33", "112", "222", "14", "123"]


def _frame(kappa=0.9, host_slope=0.05, overhead_s=0.01, w=None) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for pl in PLACEMENTS:
        M0 = (0.02 * len(pl) + 0.001 * sum(int(c) for c in pl)) * rng.lognormal(0.0, 0.5)  # not collinear
        for b in (16, 32, 64):
            rows.append(dict(model="resnet50", placement=pl, local_bsz=b, compute_s=0.05 + 0.002 * b, comm_model_s=M0))
    d = pd.DataFrame(rows)
    feat = sm.placement_features(d["placement"])
    X = sm.sync_design(feat, d["comm_model_s"].to_numpy(), d["compute_s"].to_numpy())
    w = np.array([0.2, 0.8, 0.1, -0.3, 0.2, 0.05, 0.1, 0.3]) if w is None else w
    d["sync_time_s"] = np.exp(X @ w)
    d["step_time_s"] = kappa * d["compute_s"] * (1 + host_slope * (feat["gmax"] - 1)) + overhead_s + d["sync_time_s"]
    return d


def test_sync_and_step_models_recover_known_parameters():
    w = np.array([0.2, 0.8, 0.1, -0.3, 0.2, 0.05, 0.1, 0.3])
    d = _frame(w=w)
    mf = sm.ModelFit.fit(d)
    np.testing.assert_allclose(mf.sync.weights, w, atol=0.03)  # the small ridge (SYNC_RIDGE) biases a little
    assert mf.step.kappa == pytest.approx(0.9, rel=0.02)
    assert mf.step.host_slope == pytest.approx(0.05, abs=0.005)
    assert mf.step.overhead_s == pytest.approx(0.01, abs=0.002)
    step, sync = mf.predict(d)
    np.testing.assert_allclose(sync, d["sync_time_s"], rtol=0.02)
    np.testing.assert_allclose(step, d["step_time_s"], rtol=0.02)
    assert set(mf.as_dict()["sync"]) == set(sm.SYNC_FEATURES)


def test_transfer_features_drop_compute_term():
    d = _frame()
    mf = sm.ModelFit.fit(d, sm.TRANSFER_FEATURES)
    assert mf.sync.weights[sm.SYNC_FEATURES.index("log_compute_s")] == 0.0


def test_fit_predict_holds_out_and_pools_unknown_models():
    d = _frame()
    test = d[d["placement"] == "44"].assign(model="yolov3")  # model absent from train → pooled fit
    step, sync = sm.fit_predict(d[d["placement"] != "44"], test)
    assert np.isfinite(step).all() and np.isfinite(sync).all()
    np.testing.assert_allclose(sync, test["sync_time_s"], rtol=0.1)


@pytest.fixture(scope="module")
def aws_subset(request):
    shared = request.getfixturevalue("shared_data")
    return v.run(shared / "profiles", ["aws"], folds=5, models=["yolov3", "bert_base"])


@pytest.mark.shared_data
def test_validate_fast_subset_error_bounds(aws_subset):
    """aws, YOLOv3 + BERT, 5-fold CV over placement shapes: measured 3.5 % / 2.6 % step and
    5.9 % / 4.7 % all-reduce median errors (noise 4.0 % / 8.9 %); bounds leave a little slack."""
    _, t = aws_subset
    allr = t[t["model"] == "ALL"].iloc[0]
    assert allr["step_med"] <= 0.04
    assert allr["sync_vs_noise"] <= 1.5
    yolo = t[t["model"] == "yolov3"].iloc[0]
    assert yolo["step_med"] <= 0.04 and yolo["sync_med"] <= 0.07


@pytest.mark.shared_data
def test_cv_holds_out_whole_placement_shapes(aws_subset):
    from calibration import fit

    rep, _ = aws_subset
    table = rep.results["aws"].table
    assert table["pred_step"].notna().all()
    folds = fit._folds(fit._shape(table["placement"]), 5)
    shape = fit._shape(table["placement"])
    assert (pd.Series(folds).groupby(shape.to_numpy()).nunique() == 1).all()  # one fold per shape


@pytest.mark.shared_data
def test_dally_layers_network_tier(shared_data):
    """The paper's method with the authors' ASTRA-sim inputs (`dally-3tier` as shipped: the
    multidim collective, ASTRA-sim's loop and per-dimension pipeline): network tier (4/4)
    within 5 % for MobileNetV3, ResNet-18, BERT, AlexNet; machine within 3 points for VGG-11,
    AlexNet, ResNet-18. Known misses pinned so a change shows up: machine MobileNetV3 24 vs 42,
    BERT 2.2 vs 8, ResNet-50 ≈0 vs 12 (machine, rack) and 2.6 vs 38 (network), hence the
    network order fails on ResNet-50 < VGG-11 (see docs/calibration.md)."""
    t = v.dally_table_layers(shared_data / "models" / "layers").set_index("model")
    for model, paper in (("mobilenet_v3", 19592), ("resnet18", 2749), ("bert_large", 715), ("alexnet", 100)):
        assert t.loc[model, "network %"] == pytest.approx(paper, rel=0.05), model
    assert (t["machine %"] <= t["rack %"]).all() and (t["rack %"] <= t["network %"]).all()
    for model, paper in (("vgg11", 1), ("alexnet", 2), ("resnet18", 7)):
        assert abs(t.loc[model, "machine %"] - paper) <= 3, model
    checks = v.dally_checks(t.reset_index())
    assert not checks["machine within 3 points"]      # MobileNetV3, BERT, ResNet-50: see docs
    assert not checks["network order as the paper"]   # ResNet-50 (2.6) below VGG-11 (7.7)
    net = t["network %"]
    assert net["mobilenet_v3"] > net["resnet18"] > net["bert_large"] > net["alexnet"] > net["vgg11"]
    pre = v.dally_table_layers(shared_data / "models" / "layers", v.dally_comm_params("preset")).set_index("model")
    assert pre.loc["mobilenet_v3", "network %"] > 10 * pre.loc["mobilenet_v3", "machine %"]


def test_dally_comm_params_kinds():
    a, p, d = v.dally_comm_params("astra"), v.dally_comm_params("preset"), v.dally_comm_params("datasheet")
    assert a.algorithm == "multidim" and a.base_latency_s == 0.0 and a.alpha_intra_s == pytest.approx(1e-8)
    assert p.algorithm == "auto" and p.base_latency_s > 0
    assert d.algorithm == "auto" and v.DALLY_COMM_KINDS["datasheet"] == "dally-3tier-datasheet"
    from cosim.errors import InputError

    with pytest.raises(InputError):
        v.dally_comm_params("nccl")


@pytest.mark.shared_data
def test_validate_cli_models_and_dally(shared_data):
    r = CliRunner().invoke(app, ["validate", "--profiles", str(shared_data / "profiles"), "--platform", "rtx",
                                 "--models", "resnet50", "--dally"])
    assert r.exit_code == 0, r.output
    assert "resnet50" in r.output and "paper's method" in r.output and "mobilenet_v3" in r.output


@pytest.mark.slow
@pytest.mark.shared_data
def test_full_validation_targets(shared_data):
    """Every platform, 5-fold CV + leave-one-platform-out (~15 s). Measured: step CV 4.8 / 3.8 /
    3.8 / 4.6 %, LOPO 15.1 / 6.9 / 7.0 / 29.6 %, all-reduce 1.0 / 1.1 / 1.0 / 1.5x noise
    (aws / dgx / dgx-ext / rtx)."""
    _, t = v.run(shared_data / "profiles", None, 5, True)
    allr = t[t["model"] == "ALL"].set_index("platform")
    assert (allr["step_med"] <= 0.05).all()
    assert allr.loc["dgx", "loo_step_med"] <= 0.10 and allr.loc["dgx-ext", "loo_step_med"] <= 0.10
    assert (allr["sync_vs_noise"] <= 1.55).all()
