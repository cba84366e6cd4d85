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
    mf = sm.ModelFit.fit(d, form="loglinear")
    np.testing.assert_allclose(mf.sync.weights, w, atol=0.03)  # the small ridge (SYNC_RIDGE) biases a little
    assert mf.step.kappa == pytest.approx(0.9, rel=0.02)
    assert mf.step.host_slope == pytest.approx(0.05, abs=0.005)
    assert mf.step.overhead_s == pytest.approx(0.01, abs=0.002)
    step, sync = mf.predict(d)
    np.testing.assert_allclose(sync, d["sync_time_s"], rtol=0.02)
    np.testing.assert_allclose(step, d["step_time_s"], rtol=0.02)
    assert set(mf.as_dict()["sync"]) == set(sm.SYNC_FEATURES)
    assert sm.SYNC_FORM == "overlap"    # the default adds the hidden-fraction terms
    assert set(sm.ModelFit.fit(d).as_dict()["sync"]) == set(sm.SYNC_FEATURES) | set(sm.OVERLAP_PARAMS)


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


class _FakePlatform:
    """Stand-in for `fit.Platform` in `leave_one_platform_out`: a preset, a frame, and
    predictions that just count the rows (the grouping is what is tested here)."""

    def __init__(self, preset: str, d: pd.DataFrame):
        self.preset, self._d, self.multi = preset, d, d

    def frame(self) -> pd.DataFrame:
        return self._d

    def predict(self, section, mask):
        k = int(np.sum(mask))
        return np.full(k, 2.0), np.full(k, 0.5)


def _loo_setup(monkeypatch):
    from calibration import fit

    presets = {"aws": "t4-pcie", "dgx": "dgx-a100", "dgx-ext": "dgx-a100", "rtx": "rtx2080ti-pcie"}
    plats = {n: _FakePlatform(pr, _frame().assign(platform=n)) for n, pr in presets.items()}
    res = {n: fit.PlatformResult(n, q.frame()[["model", "placement", "step_time_s", "sync_time_s"]].copy())
           for n, q in plats.items()}
    seen: dict[str, set] = {}
    real = fit.build_section
    order = iter(list(presets) * 2)

    def spy(train, features=sm.SYNC_FEATURES):
        seen[next(order)] = set(train["platform"])
        assert features == sm.TRANSFER_FEATURES
        return real(train, features)

    monkeypatch.setattr(fit, "build_section", spy)
    return fit, plats, res, seen


def test_leave_one_out_holds_out_whole_hardware(monkeypatch):
    """`dgx` and `dgx-ext` (one preset, the same DGX-A100 nodes) are never in each other's
    training set with the default grouping; with `by="platform"` they are (the old leak)."""
    fit, plats, res, seen = _loo_setup(monkeypatch)
    fit.leave_one_platform_out(plats, res)
    assert seen == {"aws": {"dgx", "dgx-ext", "rtx"}, "dgx": {"aws", "rtx"}, "dgx-ext": {"aws", "rtx"},
                    "rtx": {"aws", "dgx", "dgx-ext"}}
    t = res["dgx"].loo
    # the diagnostic column: predicted non-sync part + measured sync
    np.testing.assert_allclose(t["pred_step_msync"], t["pred_step"] - t["pred_sync"] + t["sync_time_s"])
    fit.leave_one_platform_out(plats, res, by="platform")
    assert seen["dgx"] == {"aws", "dgx-ext", "rtx"}
    from cosim.errors import InputError

    with pytest.raises(InputError):
        fit.leave_one_platform_out(plats, res, by="gpu")


@pytest.mark.shared_data
def test_lopo_resnet50_compute_part_transfers_sync_does_not(shared_data):
    """ResNet-50 on all four platforms, hardware-grouped LOPO (~4 s). Measured: step 8.9 / 9.4 /
    11.0 / 13.1 %, all-reduce 58 / 64 / 77 / 52 %, step with the measured all-reduce 4.8 / 5.8 /
    5.4 / 4.3 % (aws / dgx / dgx-ext / rtx): the non-communicating part carries to unseen
    hardware, the exposed all-reduce does not (docs/calibration.md, "Why LOPO misses")."""
    _, t = v.run(shared_data / "profiles", None, 5, True, models=["resnet50"])
    allr = t[t["model"] == "ALL"].set_index("platform")
    assert (allr["step_med"] <= 0.05).all()
    assert (allr["loo_step_msync_med"] <= 0.065).all()
    assert (allr["loo_sync_med"] >= 0.4).all()
    assert (allr["loo_step_med"] <= 0.15).all()


@pytest.fixture(scope="module")
def aws_subset(request):
    shared = request.getfixturevalue("shared_data")
    return v.run(shared / "profiles", ["aws"], folds=5, models=["yolov3", "bert_base"])


@pytest.mark.shared_data
def test_validate_fast_subset_error_bounds(aws_subset):
    """aws, YOLOv3 + BERT, 5-fold CV over placement shapes: measured 3.5 % / 2.6 % step and
    5.9 % / 4.8 % all-reduce median errors (noise 4.0 % / 8.9 %); bounds leave a little slack."""
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
    """The paper's method with the authors' ASTRA-sim inputs (`dally-3tier` as shipped, the
    authors' simulator `collectives.layers.ASTRA_RATIO`: one pass, unscaled per-layer update
    delays, ASTRA-sim's baseline collective and link semantics, LIFO per-dimension pipeline).
    Network tier (4/4) within 5 % for MobileNetV3, ResNet-18, BERT; machine within 3 points
    for every model but MobileNetV3 (36 vs 42, the known miss); rack within a factor 2; the
    paper's network-tier order holds (ResNet-50's update delays put it above VGG-11)."""
    t = v.dally_table_layers(shared_data / "models" / "layers").set_index("model")
    for model, paper in (("mobilenet_v3", 19592), ("resnet18", 2749), ("bert_large", 715)):
        assert t.loc[model, "network %"] == pytest.approx(paper, rel=0.05), model
    assert (t["machine %"] <= t["rack %"]).all() and (t["rack %"] <= t["network %"]).all()
    for model in ("vgg11", "alexnet", "resnet18", "resnet50", "bert_large"):
        assert abs(t.loc[model, "machine %"] - t.loc[model, "paper_machine"]) <= 3, model
    assert ((t["rack %"] / t["paper_rack"]).between(0.5, 2)).all()
    checks = v.dally_checks(t.reset_index())
    assert not checks["machine within 3 points"]      # MobileNetV3 only
    assert checks["network order as the paper"] and checks["rack same order of magnitude"]
    assert checks["network same order of magnitude"]
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
    """Every platform, 5-fold CV + leave-one-hardware-out, predicted through the engine
    (`fit.Platform.predict`: the PerfModel `cosim simulate` builds). Measured: step CV 4.2 /
    3.6 / 3.6 / 4.3 %, exposed all-reduce 0.9 / 1.1 / 0.9 / 1.4x noise, LOPO step 15.3 / 32.9
    / 29.8 / 30.2 % but 3.3 / 6.2 / 5.7 / 4.5 % with the measured all-reduce (aws / dgx /
    dgx-ext / rtx): the compute/host part transfers to unseen hardware, the exposed all-reduce
    does not (see docs/calibration.md). The LOPO misses are pinned so that a change shows up."""
    _, t = v.run(shared_data / "profiles", None, 5, True)
    allr = t[t["model"] == "ALL"].set_index("platform")
    assert (allr["step_med"] <= 0.05).all()
    assert (allr["sync_vs_noise"] <= 1.5).all()
    assert (allr["loo_step_msync_med"] <= 0.07).all()
    assert (allr["loo_step_med"] > 0.10).all() and (allr["loo_step_med"] < 0.35).all()
    # grouping by data set instead lets dgx learn from dgx-ext (the same nodes): the old 6.9 / 7.0 %
    _, tp = v.run(shared_data / "profiles", ["dgx", "dgx-ext", "rtx"], 5, True, loo_by="platform")
    allp = tp[tp["model"] == "ALL"].set_index("platform")
    assert allp.loc["dgx", "loo_step_med"] <= 0.10 < allr.loc["dgx", "loo_step_med"]


def test_overlap_form_recovers_a_hidden_fraction_and_nests_the_loglinear():
    """Exposed all-reduce generated as the log-linear estimate g times DDP's exposed fraction
    f + (1 − f) / (1 + e^{b(log C − g − c)}) with f = 0.2, b = 3, c = 0 over a wide batch range
    (C from 0.05 to 2 s against e^g ≈ 0.02–0.2 s): the overlap form recovers the predictions
    (2 %) and the floor f; the log-linear form cannot follow the kink (> 10 % somewhere). On
    log-linear data the overlap form keeps f near 1 and predicts as well as the log-linear one."""
    rng = np.random.default_rng(1)
    rows = []
    for pl in PLACEMENTS:
        M0 = (0.02 * len(pl) + 0.001 * sum(int(c) for c in pl)) * rng.lognormal(0.0, 0.5)
        for b in (8, 16, 32, 64, 128, 256, 512, 1024):
            rows.append(dict(model="resnet18", placement=pl, local_bsz=b, compute_s=0.04 + 0.002 * b,
                             comm_model_s=M0))
    d = pd.DataFrame(rows)
    feat = sm.placement_features(d["placement"])
    X = sm.sync_design(feat, d["comm_model_s"].to_numpy(), d["compute_s"].to_numpy())
    w = np.array([0.2, 0.9, 0.1, -0.3, 0.2, 0.05, 0.1, 0.0])
    truth = np.array([np.log(0.2 / 0.8), np.log(3.0), 0.0])
    g = X @ w
    d["sync_time_s"] = np.exp(g + sm._hidden_factor_log(g, X[:, 7], truth))
    d["step_time_s"] = d["compute_s"] + d["sync_time_s"]
    over = sm.ModelFit.fit(d, form="overlap")
    _, s_over = over.predict(d)
    np.testing.assert_allclose(s_over, d["sync_time_s"], rtol=0.02)
    assert over.as_dict()["sync"]["tail_logit"] == pytest.approx(truth[0], abs=0.3)
    _, s_lin = sm.ModelFit.fit(d, form="loglinear").predict(d)
    assert np.max(np.abs(s_lin / d["sync_time_s"] - 1)) > 0.10
    # log-linear data: the overlap form nests it
    d2 = _frame()
    m2 = sm.ModelFit.fit(d2, form="overlap")
    np.testing.assert_allclose(m2.predict(d2)[1], d2["sync_time_s"], rtol=0.02)
    # LOPO terms (no log C): always log-linear
    assert sm.ModelFit.fit(d2, sm.TRANSFER_FEATURES, form="overlap").sync.overlap is None
    from cosim.errors import InputError

    with pytest.raises(InputError, match="sync form"):
        sm.ModelFit.fit(d2, form="spline")


def test_overlap_jacobian_matches_finite_differences():
    rng = np.random.default_rng(3)
    X = np.c_[np.ones(40), rng.normal(size=(40, 7))]
    y = rng.normal(size=40)
    w_lin = rng.normal(size=8)
    t = np.r_[w_lin + 0.1, 0.4, 0.3, -0.2]
    r, J = sm._overlap_residuals(t, X, X[:, 7], y, 0.5, w_lin)
    num = np.empty_like(J)
    for j in range(len(t)):
        e = np.zeros(len(t))
        e[j] = 1e-6
        num[:, j] = (sm._overlap_residuals(t + e, X, X[:, 7], y, 0.5, w_lin)[0]
                     - sm._overlap_residuals(t - e, X, X[:, 7], y, 0.5, w_lin)[0]) / 2e-6
    np.testing.assert_allclose(J, num, atol=1e-6)
    # the residuals are g + log(exposed fraction) − y
    g = X @ t[:8]
    np.testing.assert_allclose(r[:40], g + sm._hidden_factor_log(g, X[:, 7], t[8:]) - y)
