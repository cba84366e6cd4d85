"""Ares' fairness under the paper's and the artifact's FTF references: the summary columns
(`experiments.ares_metrics`) equal a run's own columns when that run uses the reference."""

from __future__ import annotations

import pytest

from experiments.ares_deepdive import deep_dive
from experiments.runner import RunConfig, run

TRACE = "synth:philly-sia:24:2h"


def _summary(ref: str):
    return run(RunConfig(trace=TRACE, cluster="ares-sim", cluster_nodes=4, policies=("ares", "srjf"),
                         costs="ares-paper", ftf_reference=ref), None).summary.set_index("policy")


def test_summary_columns_match_a_run_under_that_reference():
    base = _summary("gps")
    for ref, tag in (("gps-uncapped", "paper"), ("gps-artifact", "artifact")):
        own = _summary(ref)
        for p in ("ares", "srjf"):
            assert base.loc[p, f"unfair_fraction_{tag}"] == pytest.approx(own.loc[p, "unfair_fraction"], abs=1e-12)
            assert base.loc[p, f"worst_ftf_{tag}"] == pytest.approx(own.loc[p, "worst_ftf"], rel=1e-12)
            assert own.loc[p, "ftf_reference"] == ref
    # on 16 GPUs a short job may take the whole cluster under the paper's GPS: the references differ
    assert (base["worst_ftf_paper"] != base["worst_ftf"]).any()


def test_deep_dive_takes_the_reference(tmp_path):
    table = deep_dive(TRACE, tmp_path, ("ares",), ftf_reference="gps-uncapped").set_index("policy")
    own = run(RunConfig(trace=TRACE, cluster="ares-sim", policies=("ares",), costs="ares-paper",
                        ftf_reference="gps-uncapped"), None)
    ftf = own.jobs["ares"]["ftf"].dropna()
    assert table.loc["ares", "faster_than_gps"] == pytest.approx(float((ftf < 1.0).mean()))
    assert (tmp_path / "deepdive.csv").is_file()
