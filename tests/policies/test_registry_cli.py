"""`policies.make` validation and the `cosim policies` commands."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import policies
from cli.app import app
from cosim.errors import InputError, UnknownNameError

ALL = ["afs", "allox", "ares", "ares-artifact", "aryl", "dally", "dally-fullyconsolidated", "dally-manual",
       "dally-nowait", "drl", "fft", "fifo", "fifo-backfill", "gandiva", "gavel", "mechanisms-demo", "ones",
       "optimus", "pal", "pollux", "sjf", "srjf", "srtf", "themis", "themis-ftf-lp", "tiresias", "tiresias-dally",
       "tiresias-dally-2das", "tiresias-pollux", "tiresias-typed"]


def test_all_builtins_registered_on_import():
    assert policies.POLICIES.names() == ALL


def test_unknown_parameter_lists_valid_ones():
    with pytest.raises(InputError, match=r"policy 'tiresias': field 'knob'.*valid parameters: thresholds_gpu_s, "
                                         r"promote_knob, skew_models"):
        policies.make("tiresias", knob=3)


def test_unknown_policy_lists_names():
    with pytest.raises(UnknownNameError, match="valid: " + ", ".join(ALL[:8])):
        policies.make("lottery")


@pytest.mark.parametrize("name,params,field", [
    ("tiresias", {"thresholds_gpu_s": "100,50"}, "thresholds_gpu_s"),
    ("tiresias", {"thresholds_gpu_s": "-5"}, "thresholds_gpu_s"),
    ("tiresias", {"promote_knob": "-1"}, "promote_knob"),
    ("tiresias", {"promote_knob": "abc"}, "promote_knob"),
    ("fifo", {"placement": "scatter"}, "placement"),
    ("sjf", {"by": "size"}, "by"),
    ("sjf", {"blocking": "maybe"}, "blocking"),
    ("fifo", {"seed": "1.5"}, "seed"),
    ("srtf", {"interval_s": "0"}, "interval_s"),
])
def test_bad_values_name_policy_and_field(name, params, field):
    with pytest.raises(InputError, match=f"policy '{name}'.*field '{field}'"):
        policies.make(name, **params)


def test_text_values_are_converted():
    p = policies.make("tiresias", thresholds_gpu_s="1h,10h", promote_knob="4", skew_models="vgg*, bert",
                      interval_s="2m", consolidation="min-nodes")
    assert p.config.thresholds_gpu_s == (3600.0, 36000.0)
    assert p.config.skew_models == ("vgg*", "bert") and p.interval_s == 120.0
    assert policies.make("gandiva", migrate="false").config.migrate is False
    assert policies.make("fifo", interval_s="none").interval_s is None


def test_fresh_instance_per_make():
    assert policies.make("tiresias") is not policies.make("tiresias")


def test_cli_list_shows_every_user_policy_with_defaults():
    res = CliRunner().invoke(app, ["policies", "list"])
    assert res.exit_code == 0, res.output
    for name in ALL:  # every policy but the test and demo ones (policies.HIDDEN)
        assert (f"\n{name}" in "\n" + res.output) == (name not in policies.HIDDEN), name
    assert "thresholds_gpu_s=57600" in res.output and "promote_knob=8" in res.output
    assert "sjf [oracle]" in res.output


def test_cli_show_and_unknown_name():
    res = CliRunner().invoke(app, ["policies", "show", "gandiva"])
    assert res.exit_code == 0 and "large_placement: str = random (one of: random, consolidate)" in res.output
    res = CliRunner().invoke(app, ["policies", "show", "nope"])
    assert res.exit_code == 2
    assert "unknown policy 'nope'; valid: " + ", ".join(ALL[:6]) in res.output
