"""Policy configuration: the shared base config, `--set` on `cosim simulate`, sweep-file
parameters, and `cosim policies show` (user-facing docs, no implementation notes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

import policies
from cli.app import app
from cli.simulate_cmd import policy_overrides
from cosim.errors import InputError, UnknownNameError
from policies.config import COMMON_FIELDS, PlacedConfig, PolicyConfig, user_doc

ALL = policies.POLICIES.names()


@pytest.mark.parametrize("name", ALL)
def test_every_config_derives_from_the_base_and_declares_no_shared_field_twice(name):
    cfg_cls = policies.POLICIES.get(name).Config
    assert issubclass(cfg_cls, PolicyConfig)
    names = [f.name for f in dataclasses.fields(cfg_cls)]
    assert len(names) == len(set(names))
    assert {"interval_s", "seed"} <= set(names)
    assert ("placement" in names) == issubclass(cfg_cls, PlacedConfig)
    # the shared fields are listed last, in one order, for every policy
    listed = [p.name for p in policies.params_of(name)]
    shared = [n for n in listed if n in COMMON_FIELDS]
    assert listed[-len(shared):] == shared == [n for n in COMMON_FIELDS if n in names]


@pytest.mark.parametrize("name", ALL)
def test_shared_interval_check_names_the_policy(name):
    with pytest.raises(InputError, match=f"^policy '{name}': field 'interval_s': expected a positive number"):
        policies.make(name, interval_s="-5")
    assert policies.make(name, interval_s="90", seed="3").interval_s == 90.0


@pytest.mark.parametrize("name", ALL)
def test_every_policy_documents_itself(name):
    """`policies show` text: a reference, a description and a help text for every parameter."""
    cfg_cls = policies.POLICIES.get(name).Config
    assert cfg_cls.reference
    assert len(user_doc(cfg_cls)) > 80
    for p in policies.params_of(name):
        assert p.help, p.name
        if p.name.endswith("_s"):
            assert p.unit in ("s", "GPU-s")


def test_policy_overrides_parse_and_type_values():
    out = policy_overrides(["tiresias.thresholds_gpu_s=1h,10h", "tiresias.promote_knob=4",
                            "fifo-backfill.reservation=none", "tiresias.promote_knob=2"])
    assert out == {"tiresias": {"thresholds_gpu_s": (3600.0, 36000.0), "promote_knob": 2.0},
                   "fifo-backfill": {"reservation": "none"}}  # a later --set wins
    assert policy_overrides([]) == {}


@pytest.mark.parametrize("item,pattern", [
    ("tiresias.knob=3", r"policy 'tiresias': field 'knob': unknown parameter; valid parameters: thresholds_gpu_s, "
                        r"promote_knob, skew_models, consolidation, queue_order, admission, placement, interval_s, seed"),
    ("tiresias.promote_knob=abc", r"policy 'tiresias': field 'promote_knob': expected a number, got 'abc'"),
    ("sjf.by=size", r"policy 'sjf': field 'by': expected one of duration, gpu_time, got 'size'"),
    ("gandiva.migrate=maybe", r"policy 'gandiva': field 'migrate': expected true or false"),
    ("tiresias.promote_knob", r"field '--set': expected POLICY.KEY=VALUE"),
    ("promote_knob=3", r"field '--set': expected POLICY.KEY=VALUE"),
])
def test_policy_overrides_reject_bad_input(item, pattern):
    with pytest.raises(InputError, match=pattern):
        policy_overrides([item])


def test_policy_overrides_unknown_policy_lists_names():
    with pytest.raises(UnknownNameError, match="unknown policy 'lottery'; valid: afs, (.*, )?fifo, fifo-backfill"):
        policy_overrides(["lottery.x=1"])


def _fail_if_run(monkeypatch):
    """Make any trace loading fail loudly: errors must come before the run."""
    import experiments.runner as R

    def boom(*a, **k):
        raise AssertionError("the run started")

    monkeypatch.setattr(R, "load_trace", boom)


@pytest.mark.parametrize("args,expect", [
    (["--set", "tiresias.knob=3"], "error: policy 'tiresias': field 'knob': unknown parameter; valid parameters: "),
    (["--set", "fifo.placement=scatter"], "expected one of consolidate, topo, spread, random, most-free, got 'scatter'"),
    (["--policy", "fifo", "--set", "tiresias.promote_knob=2"],
     "parameters given for policy 'tiresias', which this run does not simulate (policies: fifo)"),
    (["--set", "nope"], "expected POLICY.KEY=VALUE"),
])
def test_simulate_set_errors_exit_2_in_one_line_before_running(monkeypatch, args, expect):
    _fail_if_run(monkeypatch)
    res = CliRunner().invoke(app, ["simulate", *args])
    assert res.exit_code == 2, res.output
    assert expect in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip() and not ln.startswith("cosim [")]  # progress lines
    assert "Traceback" not in res.output and len(lines) == 1, res.output


def test_simulate_set_reaches_the_policy(monkeypatch):
    """The typed values go into the run's config and into the policy the engine runs."""
    import experiments.runner as R  # what the CLI calls

    seen = {}

    def fake_run(cfg, out, progress=False, backends=None, claim=None):
        seen["params"] = dict(cfg.policy_params)
        seen["policy"] = policies.make("tiresias", **cfg.policy_params["tiresias"])
        raise SystemExit(0)

    monkeypatch.setattr(R, "run", fake_run)
    res = CliRunner().invoke(app, ["simulate", "--policy", "tiresias", "--set", "tiresias.interval_s=2m",
                                   "--set", "tiresias.skew_models=bert*"])
    assert res.exit_code == 0, res.output
    assert seen["params"] == {"tiresias": {"interval_s": 120.0, "skew_models": ("bert*",)}}
    assert seen["policy"].interval_s == 120.0 and seen["policy"].config.skew_models == ("bert*",)


def test_runner_rejects_bad_parameters_before_loading_the_trace(monkeypatch):
    from experiments.runner import RunConfig, run

    _fail_if_run(monkeypatch)
    with pytest.raises(InputError, match="policy 'sjf': field 'blocking'"):
        run(RunConfig(trace="synth:philly:4", policies=("sjf",), policy_params={"sjf": {"blocking": "maybe"}}), None)


def _sweep(tmp_path: Path, table: str) -> Path:
    p = tmp_path / "grid.toml"
    p.write_text('traces = ["synth:philly:8"]\n' + table)
    return p


@pytest.mark.parametrize("table,expect", [
    ("[policies.tiresias]\npromote_knob = [4, \"x\"]\n",
     "[policies.tiresias]: policy 'tiresias': field 'promote_knob': expected a number, got 'x'"),
    ("[policies.fifo]\nknob = 1\n",
     "[policies.fifo]: policy 'fifo': field 'knob': unknown parameter; valid parameters: placement, interval_s, seed"),
    ("[policies.sjf]\nby = \"size\"\n", "expected one of duration, gpu_time"),
])
def test_sweep_file_parameters_validated_before_any_cell(tmp_path, table, expect):
    toml = _sweep(tmp_path, table)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["sweep", str(toml), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert expect in res.output and str(toml) in res.output
    assert "Traceback" not in res.output and not out.exists()


def test_sweep_file_good_parameters_pass_the_check(tmp_path):
    from policies.registry import make
    from experiments.sweep import load_sweep
    from experiments.sweep.config import check_policy_params

    cfg = load_sweep(_sweep(tmp_path, "[policies.tiresias]\nthresholds_gpu_s = [[3600.0], [3600, 57600]]\n"
                                      "interval_s = [\"1m\", 60]\n"))
    check_policy_params(cfg, make)  # no error
    assert len(cfg.policies) == 4


@pytest.mark.parametrize("name", ALL)
def test_show_prints_user_docs_not_implementation_notes(name):
    res = CliRunner().invoke(app, ["policies", "show", name])
    assert res.exit_code == 0, res.output
    out = res.output
    cfg_cls = policies.POLICIES.get(name).Config
    assert "reference: " + cfg_cls.reference[:40] in out
    assert user_doc(cfg_cls).splitlines()[0] in out
    for p in policies.params_of(name):
        assert f"  {p.name}: {p.type} = " in out
        if p.source:
            assert p.source[:40] in out
    for internal in ("fused", "kernel", "Round", "issue", "_flush", "use_fused", "Cost ("):
        assert internal not in out, internal
    assert f"--set {name}.KEY=VALUE" in out


def test_show_units_and_sources():
    out = CliRunner().invoke(app, ["policies", "show", "tiresias"]).output
    assert "thresholds_gpu_s: tuple[float, ...] = 57600 GPU-s" in out
    assert "default from: 2 queues split at 16 GPU-hours" in out
    assert "interval_s: float | None = none" in out and "[s]" in out
    assert "reads: no oracle" in out
    assert "reads: the duration oracle" in CliRunner().invoke(app, ["policies", "show", "srtf"]).output
