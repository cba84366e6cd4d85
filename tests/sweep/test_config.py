"""Sweep TOML → cells: grid sizes, parameter grids, stable cell ids, and errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from experiments.sweep import load_sweep, parse_sweep

REPO = Path(__file__).resolve().parents[2]


def test_grid_is_the_cartesian_product():
    cfg = parse_sweep({"traces": ["synth:philly:8", "synth:helios:8", "synth:sensetime:8"],
                       "policies": ["fifo", "sjf", "srtf", "tiresias"], "seeds": [0, 1]})
    cells = cfg.cells()
    assert len(cells) == 3 * 4 * 2
    assert len({c.cell_id for c in cells}) == 24
    assert [c.index for c in cells] == list(range(24))
    assert cfg.swept_axes() == ["trace", "seed"]


def test_policy_parameter_grid_labels_and_params():
    cfg = parse_sweep({"traces": "synth:philly:8",
                       "policies": {"fifo": {}, "ares": {"alpha": [0.55, 0.75, 0.95], "mode": "fast"}}})
    labels = [p.label for p in cfg.policies]
    assert labels == ["fifo", "ares(alpha=0.55,mode='fast')", "ares(alpha=0.75,mode='fast')",
                      "ares(alpha=0.95,mode='fast')"]
    ares = [c for c in cfg.cells() if c.policy.name == "ares"]
    assert [dict(c.policy.params) for c in ares] == [{"alpha": a, "mode": "fast"} for a in (0.55, 0.75, 0.95)]


def test_tuple_valued_parameters():
    cfg = parse_sweep({"traces": "synth:philly:8",
                       "policies": {"tiresias": {"thresholds_gpu_s": [[3600.0], [3600.0, 57600.0]]}}})
    assert [p.label for p in cfg.policies] == ["tiresias(thresholds_gpu_s=[3600])",
                                               "tiresias(thresholds_gpu_s=[3600,57600])"]
    assert dict(cfg.policies[1].params) == {"thresholds_gpu_s": (3600.0, 57600.0)}
    assert len({c.cell_id for c in cfg.cells()}) == 2


def test_clusters_node_counts_contention_calibration_axes():
    cfg = parse_sweep({"traces": ["synth:philly:8"], "policies": ["fifo"],
                       "clusters": ["dgx-a100", {"preset": "t4-pcie", "nodes": [4, 8]}],
                       "contention": [True, False], "calibration": ["default", "none"]})
    assert [c.label for c in cfg.clusters] == ["dgx-a100", "t4-pcie:4", "t4-pcie:8"]
    assert cfg.calibration == (None, "none")  # the preset's shipped profile; no profile
    assert len(cfg.cells()) == 3 * 2 * 2
    assert cfg.swept_axes() == ["cluster", "contention", "calibration"]


def test_missing_files_and_impossible_clusters_are_refused_before_any_cell(tmp_path):
    base = {"traces": ["synth:philly:8"], "policies": ["fifo"]}
    for extra, field in (({"calibration": ["missing.toml"]}, "calibration[0]"),
                         ({"clusters": ["missing-cluster.toml"]}, "clusters[0]"),
                         ({"clusters": [{"preset": "philly", "nodes": [4]}]}, "clusters[0]")):
        with pytest.raises(InputError) as err:
            parse_sweep({**base, **extra}, source=tmp_path / "s.toml", base_dir=tmp_path)
        assert f"field '{field}'" in err.value.message and "s.toml" in err.value.message
    prof = tmp_path / "fitted.toml"
    prof.write_text("")
    cfg = parse_sweep({**base, "calibration": ["fitted.toml"]}, base_dir=tmp_path)
    assert cfg.calibration == (str(prof),)  # resolved against the sweep file's folder


def test_cell_id_depends_on_coordinates_not_on_order():
    a = parse_sweep({"traces": ["synth:philly:8", "synth:helios:8"], "policies": ["fifo", "sjf"], "seeds": [0, 1]})
    b = parse_sweep({"traces": ["synth:helios:8", "synth:philly:8"], "policies": ["sjf", "fifo"], "seeds": [1, 0]})
    ida = {c.cell_id: c.coordinates() for c in a.cells()}
    idb = {c.cell_id: c.coordinates() for c in b.cells()}
    assert ida == idb
    # one coordinate changed -> a different id
    c = parse_sweep({"traces": ["synth:philly:8"], "policies": ["fifo"], "seeds": [0], "contention": False})
    d = parse_sweep({"traces": ["synth:philly:8"], "policies": ["fifo"], "seeds": [0], "contention": True})
    assert c.cells()[0].cell_id != d.cells()[0].cell_id


@settings(max_examples=40, deadline=None)
@given(n_traces=st.integers(1, 4), seeds=st.lists(st.integers(0, 50), min_size=1, max_size=4, unique=True),
       alphas=st.lists(st.floats(0.05, 1.0, allow_nan=False), min_size=1, max_size=4, unique=True))
def test_ids_unique_and_deterministic(n_traces, seeds, alphas):
    data = {"traces": [f"synth:philly:{10 + i}" for i in range(n_traces)], "seeds": seeds,
            "policies": {"fifo": {}, "ares": {"alpha": alphas}}}
    cells = parse_sweep(data).cells()
    assert len(cells) == n_traces * len(seeds) * (1 + len(alphas))
    ids = [c.cell_id for c in cells]
    assert len(set(ids)) == len(ids)
    assert ids == [c.cell_id for c in parse_sweep(data).cells()]


def test_trace_files_resolve_against_the_toml_folder(tmp_path):
    (tmp_path / "t.parquet").write_bytes(b"x")
    toml = tmp_path / "s.toml"
    toml.write_text('traces = ["t.parquet", { path = "t.parquet", jobs = 5, window = "2h", seed = 3 }]\n'
                    'policies = ["fifo"]\n')
    cfg = load_sweep(toml)
    assert cfg.traces[0].path == tmp_path / "t.parquet" and cfg.traces[0].label == "t.parquet"
    assert cfg.traces[1].sample_jobs == 5 and cfg.traces[1].sample_window_s == 7200.0
    assert cfg.traces[1].label == "[t.parquet,jobs=5,window=7200s,seed=3]"


@pytest.mark.parametrize("body, field", [
    ('traces = ["synth:philly:8"]\npolicies = ["fifo"]\nseedz = [1]\n', "seedz"),
    ('policies = ["fifo"]\n', "traces"),
    ('traces = ["synth:philly:8"]\n', "policies"),
    ('traces = ["synth:philly"]\npolicies = ["fifo"]\n', "traces[0]"),
    ('traces = ["missing.parquet"]\npolicies = ["fifo"]\n', "traces[0]"),
    ('traces = ["synth:philly:8"]\npolicies = ["fifo"]\nseeds = [-1]\n', "seeds[0]"),
    ('traces = ["synth:philly:8"]\npolicies = ["fifo"]\nseeds = [1, 1]\n', "seeds"),
    ('traces = ["synth:philly:8"]\npolicies = ["fifo"]\ncontention = ["yes"]\n', "contention[0]"),
    ('traces = ["synth:philly:8"]\npolicies = ["fifo"]\nclusters = [{ preset = "x", nodes = 0 }]\n', "clusters[0].nodes"),
    ('traces = ["synth:philly:8"]\n[policies.ares]\nalpha = [[[1]]]\n', "policies.ares.alpha"),
    ('traces = [{ path = "x.parquet", jobz = 3 }]\npolicies = ["fifo"]\n', "traces[0].jobz"),
])
def test_bad_files_name_file_and_field(tmp_path, body, field):
    toml = tmp_path / "bad.toml"
    toml.write_text(body)
    with pytest.raises(InputError) as e:
        load_sweep(toml)
    msg = e.value.format_message()
    assert str(toml) in msg and f"field '{field}'" in msg


def test_invalid_toml_and_missing_file(tmp_path):
    toml = tmp_path / "x.toml"
    toml.write_text("traces = [\n")
    with pytest.raises(InputError, match="expected valid TOML"):
        load_sweep(toml)
    with pytest.raises(InputError, match="expected an existing sweep file"):
        load_sweep(tmp_path / "nope.toml")


def test_non_utf8_sweep_file_is_one_input_error(tmp_path):
    """load_sweep called directly (not through the CLI) used to raise UnicodeDecodeError."""
    toml = tmp_path / "latin1.toml"
    toml.write_bytes('name = "caf\u00e9"\ntraces = ["synth:philly:8"]\npolicies = ["fifo"]\n'.encode("latin-1"))
    with pytest.raises(InputError) as e:
        load_sweep(toml)
    msg = e.value.format_message()
    assert str(toml) in msg and "UTF-8" in msg


def test_synth_spec_with_window_as_simulate_takes_it(tmp_path):
    """The spec `cosim simulate --synth` accepts (and the README shows) is a sweep trace too, and
    the runner's synthesiser reads the kept spec as 24 jobs arriving over exactly one hour."""
    from traces import synth

    toml = tmp_path / "s.toml"
    toml.write_text('traces = ["synth:philly-sia:24:1h", "synth:philly:8:90m", "synth:philly:8"]\npolicies = ["fifo"]\n')
    cfg = load_sweep(toml)
    assert [t.spec for t in cfg.traces] == ["synth:philly-sia:24:1h", "synth:philly:8:90m", "synth:philly:8"]
    assert len({c.cell_id for c in cfg.cells()}) == 3
    df = synth.from_spec(cfg.traces[0].spec, 0)
    t = df["submit_time"].to_numpy()
    assert len(df) == 24 and t.min() == 0.0 and t.max() == pytest.approx(3600.0)


@pytest.mark.parametrize("spec", ["synth:philly-sia:24:0h", "synth:philly-sia:24:soon", "synth:philly-sia:24:1h:x",
                                  "synth:philly-sia:0:1h", "synth::24:1h", "synth:philly-sia:24:"])
def test_bad_synth_specs_name_the_field(tmp_path, spec):
    toml = tmp_path / "bad.toml"
    toml.write_text(f'traces = ["{spec}"]\npolicies = ["fifo"]\n')
    with pytest.raises(InputError) as e:
        load_sweep(toml)
    msg = e.value.format_message()
    assert str(toml) in msg and "field 'traces[0]'" in msg and spec in msg


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "examples").glob("sweep_*.toml")))
def test_examples_load(name):
    cfg = load_sweep(REPO / "examples" / name)
    assert len(cfg.cells()) > 0


def test_load_series_key_reaches_the_run_config_and_the_cell_id(tmp_path):
    """`load_series` (Aryl's inference load) is passed to RunConfig; only a sweep that sets it has
    it in the cell ids, and a CSV resolves against the sweep file's folder."""
    from experiments.sweep.cell import default_runner, run_config_for

    R = default_runner()

    base = {"traces": ["synth:philly:4"], "policies": ["fifo"]}
    plain = parse_sweep(dict(base)).cells()[0]
    diurnal = parse_sweep(dict(base, load_series="diurnal:0.05")).cells()[0]
    assert "load_series" not in plain.coordinates() and plain.cell_id != diurnal.cell_id
    assert run_config_for(R, diurnal, "synth:philly:4", False).load_series == "diurnal:0.05"
    assert run_config_for(R, plain, "synth:philly:4", False).load_series is None
    (tmp_path / "load.csv").write_text("time_s,pool,nodes_needed\n0,inference,1\n")
    cfg = parse_sweep(dict(base, load_series="load.csv"), base_dir=tmp_path)
    assert cfg.cells()[0].load_series == str(tmp_path / "load.csv")
    for bad in ("missing.csv", 3, ""):
        with pytest.raises(InputError, match="load_series"):
            parse_sweep(dict(base, load_series=bad), base_dir=tmp_path)


def test_max_gpus_axis_reaches_the_run_config_and_the_cell_id():
    """`max_gpus` (the per-job GPU cap) is an axis: only non-default values enter the cell ids."""
    from experiments.sweep.cell import default_runner, run_config_for

    R = default_runner()
    base = {"traces": ["synth:philly:4"], "policies": ["fifo"]}
    plain = parse_sweep(dict(base)).cells()[0]
    assert plain.cell_id == parse_sweep(dict(base, max_gpus=["2x"])).cells()[0].cell_id
    cfg = parse_sweep(dict(base, max_gpus=["2x", "artifact", "8x"]))
    cells = cfg.cells()
    assert [c.max_gpus for c in cells] == ["2x", "artifact", "8x"] and cfg.swept_axes() == ["max_gpus"]
    assert "max_gpus" not in cells[0].coordinates() and cells[1].coordinates()["max_gpus"] == "artifact"
    assert run_config_for(R, cells[1], "synth:philly:4", False).max_gpus == "artifact"
    assert run_config_for(R, cells[0], "synth:philly:4", False).max_gpus == "2x"
    for bad in ("double", "0.5x", 2):
        with pytest.raises(InputError, match="max_gpus"):
            parse_sweep(dict(base, max_gpus=[bad]))


def test_perf_axis_takes_a_perf_spec_with_options():
    """A sweep's `perf` accepts what `--perf` does (`linear:hetero_efficiency=1.0`, the aryl catalog's
    Ideal grid); a bad option or backend is one InputError naming the field."""
    cfg = parse_sweep({"traces": "synth:philly:8", "policies": ["fifo"], "perf": ["linear", "linear:hetero_efficiency=1.0"]})
    assert cfg.perf == ("linear", "linear:hetero_efficiency=1.0")
    assert len({c.cell_id for c in cfg.cells()}) == 2
    for bad in ("linear:hetero_efficiency=2", "linear:nope=1", "linearish"):
        with pytest.raises(InputError, match=r"perf\[0\]"):
            parse_sweep({"traces": "synth:philly:8", "policies": ["fifo"], "perf": [bad]}, source="s.toml")


def test_calibration_takes_a_shipped_profile_name_and_refuses_an_unknown_one(tmp_path):
    """`calibration = ["ones-artifact"]` names a shipped profile, as `simulate --calibration NAME`;
    a name that is neither a file nor a shipped profile is refused when the sweep is read."""
    from cosim.errors import InputError

    base = {"traces": ["synth:philly:4"], "policies": ["fifo"]}
    assert parse_sweep(dict(base, calibration=["ones-artifact"])).calibration == ("ones-artifact",)
    with pytest.raises(InputError, match="calibration"):
        parse_sweep(dict(base, calibration=["no-such-profile"]))
