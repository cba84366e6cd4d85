"""What `cosim validate` scores is what `cosim simulate` runs: the fitted form in the
engine's phases, the profile round trip, the platforms file, bad input, collectives over sizes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calibration import collectives_fit, fit
from cli.app import app
from cosim.errors import InputError
from calibration import stepform
from tests.calibration.test_fit_validate import _synthetic_rows


@pytest.mark.parametrize("M", [0.001, 0.05, 0.3, 5.0])  # S > M, M within, M > C' + S
def test_phases_reproduce_the_fitted_step_alone(M):
    form = stepform.StepForm(0.9, 0.05, -0.01, sync=(-1.0, 0.5, 0.1, 0.0, 0.2, 0.1, 0.0, 0.3),
                             overlap=(-1.0, 1.0, 0.0))
    C, G, gmax, nodes = 0.2, 8, 4, 2
    c, start, m, scale = form.phases(C, M, G, gmax, nodes)
    X = stepform.sync_design(np.array([G]), np.array([gmax]), np.array([nodes]), np.array([M]), np.array([C]))
    S = float(stepform.exposed_s(np.array(form.sync), np.array(form.overlap), X)[0])
    want = 0.9 * C * (1 + 0.05 * 3) - 0.01 + S
    assert max(c, start + m) == pytest.approx(want, rel=1e-12)
    assert 0.0 <= start <= c and m >= min(M, c + S) - 1e-15
    assert scale == pytest.approx(m / M if M > c + S else 1.0)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    rows = _synthetic_rows()
    rep = fit.fit_rows(rows, folds=3)
    out = tmp_path_factory.mktemp("p") / "profile.toml"
    fit.write_profile(rep, out)
    return rows, rep, out


def test_profile_round_trip_engine_equals_validate(fitted):
    """fit → profile file → the runner's PerfModel (`build_perf` via `profile_for`) gives the
    same solo iteration time as `fit.Platform.predict` with the fitted section, row by row."""
    import netmodel
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, perf_backends

    rows, rep, out = fitted
    p = fit.Platform(rows, "t4-pcie", "aws")
    want_step, want_sync = p.predict(rep.sections["t4-pcie"], np.ones(len(p.multi), bool))
    cfg = RunConfig(cluster="t4-pcie", calibration=str(out))
    topo = netmodel.build_topology(netmodel.load_cluster("t4-pcie"))
    perf = build_perf(topo, perf_backends(cfg), cfg)
    got = np.array([perf.solo_iter_s(m, g, b) for m, g, b in zip(p.multi["model"], p.gpus, p.batch)])
    np.testing.assert_allclose(got, want_step, rtol=1e-9)
    assert (want_sync > 0).all()
    # the profile's [compute] table is what the engine's compute phase uses
    assert perf.compute_s("resnet50", 0, 64) == pytest.approx(0.05 + 0.002 * 64, rel=1e-9)


def test_every_written_table_is_read(fitted):
    import tomllib

    _, rep, out = fitted
    doc = tomllib.loads(out.read_text())
    prof = fit.read_profile(out)
    assert set(doc) <= set(stepform.PROFILE_TABLES)
    assert set(prof.step) == set(doc["step"]) and set(prof.compute) == set(doc["compute"])
    f = prof.step_for("t4-pcie").form("resnet50")
    t = doc["step"]["t4-pcie"]["model"]["resnet50"]
    assert f.sync == tuple(t["sync"][k] for k in stepform.SYNC_FEATURES)
    assert prof.step_for("t4-pcie").form("bert_large") == prof.step_for("t4-pcie").default
    d = prof.step_for("t4-pcie").default
    assert (d.kappa, d.host_slope, d.overhead_s) == (1.0, 0.0, 0.0)


@pytest.mark.parametrize("edit,field", [
    (lambda d: d["step"]["t4-pcie"]["model"]["resnet50"].__setitem__("kappa", float("nan")), "kappa"),
    (lambda d: d["step"]["t4-pcie"]["model"]["resnet50"].__setitem__("kappa", "fast"), "kappa"),
    (lambda d: d["step"]["t4-pcie"]["default"]["sync"].pop("log_gpus"), "default.sync"),
    (lambda d: d.__setitem__("overlap", {"overlap_start_frac": 0.5}), "overlap"),
    (lambda d: d["compute"]["resnet50"]["t4"].__setitem__("times_s", [0.1]), "batches"),
])
def test_bad_profile_is_one_line_naming_field(fitted, edit, field):
    import tomllib

    _, _, out = fitted
    doc = tomllib.loads(out.read_text())
    edit(doc)
    with pytest.raises(InputError, match=field):
        stepform.profile_from_data(doc, "p.toml")


def test_simulate_with_bad_profile_exits_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[step."dgx-a100".default]\nkappa = "x"\n')
    r = CliRunner().invoke(app, ["simulate", "--trace", "synth:philly-sia:5:1h", "--calibration", str(bad),
                                 "--policy", "fifo", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "bad.toml" in r.output and "Traceback" not in r.output


def _write_platform_set(root, name, rows):
    d = root / "pollux-sia" / "imagenet"
    d.mkdir(parents=True, exist_ok=True)
    out = rows.rename(columns={"step_time_s": "step_time", "sync_time_s": "sync_time"})
    out[["placement", "local_bsz", "step_time", "sync_time"]].to_csv(d / f"placements-{name}.csv", index=False)


def test_platforms_file_opens_validation_to_any_measured_set(tmp_path):
    _write_platform_set(tmp_path, "myrig", _synthetic_rows(platform="myrig"))
    r = CliRunner().invoke(app, ["validate", "--profiles", str(tmp_path), "--folds", "3"])
    assert r.exit_code == 2 and "myrig" in r.output and "--platforms" in r.output  # not in the shipped file
    plats = tmp_path / "platforms.toml"
    plats.write_text('[myrig]\npreset = "t4-pcie"\ngpu_type = "t4"\nnotes = "a lab box"\n')
    r = CliRunner().invoke(app, ["validate", "--profiles", str(tmp_path), "--folds", "3", "--platforms", str(plats)])
    assert r.exit_code == 0, r.output
    assert "myrig (t4-pcie, t4)" in r.output
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(tmp_path), "--platforms", str(plats), "-o", str(out),
                                 "--folds", "3"])
    assert r.exit_code == 0, r.output
    assert fit.read_profile(out).step_for("t4-pcie").models["resnet50"].kappa > 0


@pytest.mark.parametrize("text,field", [
    ('[myrig]\npreset = "no-such-preset"\ngpu_type = "t4"\n', "myrig.preset"),
    ('[myrig]\npreset = "t4-pcie"\ngpu_type = "tpu9"\n', "myrig.gpu_type"),
    ('[myrig]\npreset = "t4-pcie"\n', "myrig.gpu_type"),
    ('[myrig]\npreset = "t4-pcie"\ngpu_type = "t4"\ncolour = "red"\n', "myrig.colour"),
])
def test_bad_platforms_file(tmp_path, text, field):
    _write_platform_set(tmp_path, "myrig", _synthetic_rows(platform="myrig").head(4))
    plats = tmp_path / "platforms.toml"
    plats.write_text(text)
    out = tmp_path / "p.toml"
    for args in (["validate", "--profiles", str(tmp_path)], ["calibrate", "fit", str(tmp_path), "-o", str(out)]):
        r = CliRunner().invoke(app, args + ["--platforms", str(plats)])
        assert r.exit_code == 2 and field in r.output and "platforms.toml" in r.output, r.output
        assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1 and not out.exists()


def test_compute_table_goes_into_the_profile_not_the_package(tmp_path):
    from calibration import zoo

    before = (zoo.DATA / "compute_curves.json").read_bytes()
    comp = pd.DataFrame(dict(model="resnet50", gpu_type="h100", local_bsz=[8, 16, 32, 64],
                             step_time_s=[0.02, 0.035, 0.06, 0.11], status="ok", num_gpus=1))
    path = tmp_path / "compute.parquet"
    comp.to_parquet(path)
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    prof = fit.read_profile(out)
    assert prof.compute["resnet50"]["h100"]["times_s"] == [0.02, 0.035, 0.06, 0.11]
    assert (zoo.DATA / "compute_curves.json").read_bytes() == before
    from calibration import compute_fit

    js = tmp_path / "curves.json"
    compute_fit.main([str(path), "-o", str(js)])
    assert "resnet50" in js.read_text() and (zoo.DATA / "compute_curves.json").read_bytes() == before


@pytest.mark.parametrize("content,field", [
    (pd.DataFrame(dict(model=["resnet50"], local_bsz=[8], step_time_s=[0.1])), "gpu_type"),
    (pd.DataFrame(dict(op=["all_reduce"], nbytes=[8], time_s=[0.1], busbw_GBps=[1.0])), "group_size"),
    (None, "Parquet"),
    (b"", "Parquet"),
])
def test_bad_measurement_files(tmp_path, content, field):
    path = tmp_path / "m.parquet"
    if isinstance(content, pd.DataFrame):
        content.to_parquet(path)
    else:
        path.write_bytes(b"PAR1 corrupt" if content is None else content)
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(path), "-o", str(out)])
    assert r.exit_code == 2 and field in r.output and "m.parquet" in r.output and not out.exists(), r.output
    assert "Traceback" not in r.output


def test_nan_fit_error_refuses_to_write(tmp_path, monkeypatch):
    rows = _synthetic_rows()
    _write_platform_set(tmp_path, "aws", rows)
    monkeypatch.setattr(fit.FitReport, "cv_median_abs_err", property(lambda self: float("nan")))
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(tmp_path), "-o", str(out), "--folds", "3"])
    assert r.exit_code == 2 and "nan" in r.output and not out.exists()
    assert not math.isnan(0.0)


def _ring_sweep(sizes, alpha=20e-6, busbw=5e9):
    from calibration.measure import BUS_FACTOR

    rows = []
    for n in sizes:
        for b in (1e3, 1e5, 1e6, 1e7, 1e8):
            rows.append(dict(source="s", op="all_reduce", group_size=n, nbytes=b,
                             time_s=2 * (n - 1) * alpha + BUS_FACTOR["all_reduce"](n) * b / busbw))
    return pd.DataFrame(rows)


def test_alpha_beta_over_group_sizes_predicts_16_from_2_to_8():
    sweep = _ring_sweep(range(2, 9))
    c = collectives_fit.fit_across_sizes(sweep).iloc[0]
    t16 = _ring_sweep([16])
    pred = collectives_fit.predict("all_reduce", t16["group_size"], t16["nbytes"], c["alpha_step_s"],
                                   c["busbw_GBps"] * 1e9)
    np.testing.assert_allclose(pred, t16["time_s"], rtol=1e-3)
    assert c["loso_median_abs_err"] < 1e-3
    # a per-size α–β (the nccl-tests view) has nothing to say about 16; the old fit's
    # α at 8 ranks would miss it: α(8) + B/algbw(8) vs the 16-rank truth
    per = fit.fit_collectives(sweep.assign(busbw_GBps=0.0))
    r8 = per[per["group_size"] == 8].iloc[0]
    old = r8["alpha_s"] + t16["nbytes"] / (r8["algbw_GBps"] * 1e9)
    assert np.max(np.abs(old / t16["time_s"] - 1)) > 0.05


def test_preset_fits_comm_params_the_engine_reads(tmp_path):
    """A sweep made by the engine's CommModel on t4-pcie with known efficiencies over 2–8 ranks
    (two nodes): `calibrate fit --preset t4-pcie` recovers [comm] and simulate reads it."""
    import netmodel
    from collectives import CommModel, CommParams

    topo = netmodel.build_topology(netmodel.load_cluster("t4-pcie"))
    true = CommParams.for_cluster(topo.spec).replace(beta_efficiency_intra=0.4, beta_efficiency_net=0.3)
    cm = CommModel(topo, true)
    rows = [dict(source="s", op="all_reduce", group_size=n, nbytes=b,
                 time_s=cm.allreduce(np.arange(n), b, np.array([b])).seconds, busbw_GBps=0.0)
            for n in range(2, 9) for b in (1e4, 1e6, 1e7, 1e8)]
    path = tmp_path / "c.parquet"
    pd.DataFrame(rows).to_parquet(path)
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(path), "--preset", "t4-pcie", "-o", str(out)])
    assert r.exit_code == 0, r.output
    comm = fit.read_profile(out).comm
    assert comm["beta_efficiency_intra"] == pytest.approx(0.4, rel=0.05)
    assert comm["beta_efficiency_net"] == pytest.approx(0.3, rel=0.05)
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, perf_backends

    cfg = RunConfig(cluster="t4-pcie", calibration=str(out))
    perf = build_perf(topo, perf_backends(cfg), cfg)
    g16 = np.arange(16)
    assert perf.comm.allreduce(g16, 1e8, np.array([1e8])).seconds == pytest.approx(
        cm.allreduce(g16, 1e8, np.array([1e8])).seconds, rel=0.05)
    r = CliRunner().invoke(app, ["calibrate", "fit", str(path), "--preset", "nope", "-o", str(out)])
    assert r.exit_code == 2 and "--preset" in r.output
