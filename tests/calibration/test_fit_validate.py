"""Fitting recovers known parameters; validate/fit CLIs report errors and refuse bad fits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calibration import fit, importers
from cli.app import app

PLACEMENTS = ["2", "3", "4", "11", "12", "13", "22", "44", "111", "1111", "24", "33"]


#: the engine form the synthetic rows come from (calibration.stepform): κ, h, c₀ and an exposed
#: all-reduce S = e^0.3 · M^0.9 · G^0.1 · C^0.2 (no overlap factor)
KNOWN = dict(kappa=0.9, host_slope=0.05, overhead_s=0.004,
             sync=(0.3, 0.9, 0.1, 0.0, 0.0, 0.0, 0.0, 0.2))


def _synthetic_rows(model="resnet50", platform="aws") -> pd.DataFrame:
    """Pollux-like rows whose step and sync times come from the engine's form with `KNOWN`
    parameters, on the engine's own C and M (a Platform built once with placeholder times)."""
    from calibration.stepform import StepForm

    rows = []
    for pl in ["1"] + PLACEMENTS:
        for b in (32, 64, 96):
            c = importers.placement_counts(pl)
            rows.append(dict(source="pollux-placements", file="synthetic", row=len(rows), model=model, app="imagenet",
                             platform=platform, preset="t4-pcie", gpu_type="t4", placement=pl, num_nodes=len(c),
                             num_gpus=int(c.sum()), local_bsz=b, step_time_s=0.05 + 0.002 * b, sync_time_s=1.0))
    df = pd.DataFrame(rows)
    p = fit.Platform(df, "t4-pcie", platform)
    form = StepForm(**KNOWN)
    multi = (df["num_gpus"] > 1).to_numpy()
    step, sync = [], []
    for C, M, (_, r) in zip(p.compute_s, p.comm_model_s, p.multi.iterrows()):
        cnt = importers.placement_counts(r["placement"])
        c2, start, m, _ = form.phases(C, M, int(cnt.sum()), int(cnt.max()), len(cnt))
        step.append(max(c2, start + m))
        sync.append(max(c2, start + m) - c2)
    df.loc[multi, "sync_time_s"] = sync
    df.loc[multi, "step_time_s"] = step
    return df


def test_fit_platform_cross_validated_errors_small_on_model_data():
    rep = fit.fit_rows(_synthetic_rows(), folds=3)
    # data from the engine's own form: the engine's cross-validated predictions are close
    assert rep.cv_median_abs_err < 0.01
    r = rep.results["aws"]
    assert {"pred_step", "pred_sync"} <= set(r.table.columns)
    m = r.section["model"]["resnet50"]
    assert m["kappa"] == pytest.approx(0.9, rel=0.03) and m["host_slope"] == pytest.approx(0.05, abs=0.01)


def test_noise_floor_equivalent_placements():
    df = pd.DataFrame(dict(model="neumf", platform="aws", preset="t4-pcie", num_gpus=3, local_bsz=[32, 32, 64, 64],
                           placement=["12", "21", "12", "21"], step_time_s=[1.0, 1.2, 2.0, 2.0],
                           sync_time_s=[0.1, 0.1, 0.1, 0.3]))
    n = fit.noise_floor(df).iloc[0]
    # step groups (b=32: 1.0 vs 1.2 around 1.1; b=64 equal) → deviations 1/11, 1/11, 0, 0 → median 1/22
    assert n["noise_step"] == pytest.approx(1 / 22)
    # sync across batches per placement: '12' equal (0, 0); '21' 0.1 vs 0.3 around 0.2 → 0.5, 0.5
    assert n["noise_sync"] == pytest.approx(0.25)


def test_too_few_rows_is_an_error():
    df = _synthetic_rows()
    df = df[df["placement"].isin(["1", "2", "4"])]
    with pytest.raises(Exception, match="at least"):
        fit.fit_rows(df, folds=2)


@pytest.fixture()
def small_profiles(tmp_path):
    """A tiny Pollux-format folder (self-made from the synthetic model rows)."""
    df = _synthetic_rows()
    d = tmp_path / "pollux-sia" / "imagenet"
    d.mkdir(parents=True)
    out = df.rename(columns={"step_time_s": "step_time", "sync_time_s": "sync_time"})
    out[["placement", "local_bsz", "step_time", "sync_time"]].to_csv(d / "placements-aws.csv", index=False)
    return tmp_path


def test_validate_cli(small_profiles, tmp_path):
    r = CliRunner().invoke(app, ["validate", "--profiles", str(small_profiles), "--folds", "3",
                                 "--plot", str(tmp_path / "v.png")])
    assert r.exit_code == 0, r.output
    assert "resnet50" in r.output and "step CV" in r.output and (tmp_path / "v.png").stat().st_size > 1000
    r = CliRunner().invoke(app, ["validate", "--profiles", str(small_profiles), "--folds", "3", "--json"])
    assert r.exit_code == 0 and '"step_med"' in r.output


def test_validate_cli_rejects_unknown_loo_grouping(small_profiles):
    r = CliRunner().invoke(app, ["validate", "--profiles", str(small_profiles), "--folds", "3",
                                 "--leave-one-platform-out", "--loo-by", "nope"])
    assert r.exit_code == 2 and "hardware | platform" in r.output and "Traceback" not in r.output


def test_fit_cli_writes_profile_and_refuses_over_bound(small_profiles, tmp_path):
    out = tmp_path / "p.toml"
    runner = CliRunner()
    r = runner.invoke(app, ["calibrate", "fit", str(small_profiles), "-o", str(out), "--folds", "3"])
    assert r.exit_code == 0, r.output
    import tomllib

    prof = tomllib.loads(out.read_text())
    assert set(prof) == {"step", "compute"} and "resnet50" in prof["step"]["t4-pcie"]["model"]
    read = fit.read_profile(out)
    assert read.step_for("t4-pcie").form("resnet50").kappa == pytest.approx(
        prof["step"]["t4-pcie"]["model"]["resnet50"]["kappa"])
    assert read.compute["resnet50"]["t4"]["batches"] == [32.0, 64.0, 96.0]
    bad = tmp_path / "bad.toml"
    r = runner.invoke(app, ["calibrate", "fit", str(small_profiles), "-o", str(bad), "--folds", "3",
                            "--max-error", "0"])
    assert r.exit_code == 2 and "exceeds the bound" in r.output and not bad.exists()
    r = runner.invoke(app, ["calibrate", "fit", str(small_profiles), "-o", str(bad), "--folds", "3",
                            "--max-error", "0", "--force"])
    assert r.exit_code == 0 and bad.exists()


def test_import_profiles_cli_bad_file(tmp_path):
    d = tmp_path / "cifar10"
    d.mkdir()
    (d / "placements-aws.csv").write_text("placement,local_bsz\n1,32\n")
    r = CliRunner().invoke(app, ["calibrate", "import-profiles", str(d / "placements-aws.csv"), "-o",
                                 str(tmp_path / "o.parquet")])
    assert r.exit_code == 2 and "missing step_time, sync_time" in r.output and "Traceback" not in r.output


def test_dally_table_zoo_machine_tier_calibrated():
    from calibration import validate

    t = validate.dally_table()
    np.testing.assert_allclose(t["machine %"], t["paper_machine"], rtol=1e-6)
    # a more spread placement never costs less than the machine tier
    assert (t["network 8x1 %"] >= t["rack 8x1 %"]).all() and (t["rack 8x1 %"] >= t["machine %"]).all()


def test_fit_collectives_recovers_alpha_beta(tmp_path):
    """t = 50 us + bytes / 2 GB/s exactly → α = 50 us, algbw 2 GB/s, busbw 2·2(n−1)/n."""
    sizes = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
    df = pd.DataFrame(dict(source="synthetic", op="all_reduce", group_size=4, nbytes=sizes,
                           time_s=50e-6 + sizes / 2e9, busbw_GBps=0.0))
    c = fit.fit_collectives(df).iloc[0]
    assert c["alpha_s"] == pytest.approx(50e-6, rel=1e-4) and c["algbw_GBps"] == pytest.approx(2.0, rel=1e-4)
    assert c["busbw_GBps"] == pytest.approx(3.0, rel=1e-4) and c["cv_median_abs_err"] < 1e-6
    path = tmp_path / "c.parquet"
    df.to_parquet(path)
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    import tomllib

    # without --preset a sweep has no engine parameters to give: the profile holds no table
    # (nothing simulate would not read), the α–β line is a comment
    assert tomllib.loads(out.read_text()) == {} and "alpha_step_s=" in out.read_text()
    with pytest.raises(Exception, match="at least 3 message sizes"):
        fit.fit_collectives(df.head(2))
