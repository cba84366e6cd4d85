"""Help states every default a run uses; test and demo policies are runnable but not listed."""

from typer.testing import CliRunner

from cli.app import app
from experiments.defaults import DEFAULT_CLUSTER, DEFAULT_TRACE, PREFERRED_POLICIES
from policies import HIDDEN, POLICIES
from traces.likes import LIKES

runner = CliRunner()


def _help(*args: str) -> str:
    return " ".join(runner.invoke(app, [*args, "--help"], terminal_width=200).output.split())


def test_simulate_help_names_the_default_trace_cluster_policies_and_contention():
    text = _help("simulate")
    assert DEFAULT_TRACE in text and DEFAULT_CLUSTER in text
    assert ", ".join(PREFERRED_POLICIES) in text
    assert "[default: contention]" in text


def test_traces_synth_help_lists_every_like():
    text = _help("traces", "synth")
    assert "philly-sia" in LIKES.names()
    for like in LIKES.names():
        assert like in text, like


def test_hidden_policies_are_left_out_of_the_list_but_run_by_name():
    assert "mechanisms-demo" in HIDDEN
    assert "mechanisms-demo" not in POLICIES.listed() and "fifo" in POLICIES.listed()
    listed = runner.invoke(app, ["policies", "list"])
    assert listed.exit_code == 0 and "mechanisms-demo" not in listed.output and "fifo:" in listed.output
    shown = runner.invoke(app, ["policies", "show", "mechanisms-demo"])
    assert shown.exit_code == 0 and "mechanisms-demo" in shown.output
    assert POLICIES.get("mechanisms-demo") is not None
