"""`cosim reproduce ares --size small` (its Fig. 7 part): Philly workload-1 of the Ares set on the
64-GPU `ares-sim` cluster, Ares in both readings against Themis (as the artifact runs it: Gavel's
FTF LP), Tiresias and SRJF. The REPORT.md rows are checked against cells.parquet, the setting the
catalog promises against the cells, and the directions the paper reports (EFQ lowest average JCT,
fewer unfair jobs than Themis) as regression guards."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest

from experiments.catalog_traces import resolve_traces
from experiments.spec import load_experiment
from tests.conftest import SHARED_DATA as _CHECKOUT_SHARED
from tests.experiments.test_reproduce import _table

SHARED_DATA = Path(os.environ.get("COSIM_SHARED_DATA", "").strip() or _CHECKOUT_SHARED)
WORKLOAD_1 = SHARED_DATA / "traces" / "philly" / "workloads" / "workload-1.csv"
POLICIES = ("ares", "ares-artifact", "gavel", "themis-ftf-lp", "themis", "tiresias-pollux", "optimus", "allox",
            "srjf")


def test_catalog_grids_resolve_with_every_shared_workload():
    exp = load_experiment("ares")
    assert {f.name for f in exp.figures} >= {"fig6-avg-jct", "fig7-avg-jct", "fig7-unfair-fraction",
                                            "fig7-worst-ftf", "fig10-alpha", "fig12-preemptions"}
    full = exp.grid("main", "full")
    assert {"ares", "ares-artifact", "themis-ftf-lp", "themis"} <= set(full["policies"])
    assert {"themis-ftf-lp", "themis"} <= set(exp.grid("testbed", "full")["policies"])
    vs = exp.grid("vs-pollux", "full")
    assert {"ares", "ares-artifact", "pollux", "themis-ftf-lp"} <= set(vs["policies"])
    assert {k: vs[k] for k in ("clusters", "costs", "contention", "seeds")} == \
        {k: full[k] for k in ("clusters", "costs", "contention", "seeds")}  # so its cells are the main grid's
    assert full["costs"] == ["ares-paper"] and full["clusters"] == ["ares-sim"]
    alphas = exp.grid("alpha", "full")["policies"]["ares"]["alpha"]
    assert alphas[0] == 0.55 and alphas[-1] == 0.95 and len(alphas) == 9
    if WORKLOAD_1.is_file():
        groups = [t.group for t in resolve_traces(exp, "main", "full", SHARED_DATA)]
        assert (groups.count("philly"), groups.count("helios"), groups.count("newtrace")) == (5, 6, 6)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    if not WORKLOAD_1.is_file():
        pytest.skip(f"Ares workloads not found at {WORKLOAD_1.parent} (clone with ../shared beside the repo)")
    from experiments import reproduce

    out = tmp_path_factory.mktemp("ares") / "small"
    return reproduce("ares", "small", out, workers=1, shared_data=SHARED_DATA,
                     figures=["fig7-avg-jct", "fig7-unfair-fraction"])


def test_small_fig7_rows_match_the_cells(small):
    cells = pd.read_parquet(small.out_dir / "cells.parquet")
    assert len(cells) == len(POLICIES) and (cells["status"] == "ok").all(), cells.get("error")
    assert set(cells["policy"]) == set(POLICIES) and not cells["fallback"].any()
    assert (cells["costs"] == "ares-paper").all() and (cells["finished"] == 160).all()
    jct_h = dict(zip(cells["policy"], cells["avg_jct_s"] / 3600))
    report = (small.out_dir / "REPORT.md").read_text()
    rows = _table(report, "fig7-avg-jct", "| row | " + " | ".join(POLICIES) + " |")
    assert len(rows) == 1 and rows[0][0] == "philly"
    for pol, text in zip(POLICIES, rows[0][1:]):
        assert float(re.match(r"([0-9.]+) h", text).group(1)) == pytest.approx(jct_h[pol], rel=5e-3)
    # the paper's direction (Fig. 7a): EFQ has the lowest average JCT (regression guard)
    assert jct_h["ares-artifact"] < min(jct_h["themis-ftf-lp"], jct_h["tiresias-pollux"], jct_h["srjf"])
    assert jct_h["ares"] < min(jct_h["themis-ftf-lp"], jct_h["tiresias-pollux"], jct_h["srjf"])
    # Fig. 7c: fewer jobs with FTF > 1 under EFQ than under Themis (the paper: -41 % vs the next best on Philly)
    unfair = dict(zip(cells["policy"], cells["unfair_fraction"]))
    assert max(unfair["ares"], unfair["ares-artifact"]) < 0.59 * unfair["themis-ftf-lp"]


@pytest.fixture(scope="module")
def small_pollux(tmp_path_factory):
    from experiments import reproduce

    out = tmp_path_factory.mktemp("ares-pollux") / "small"
    return reproduce("ares", "small", out, workers=1, shared_data=SHARED_DATA,
                     figures=["fixed-pollux-avg-jct", "fixed-pollux-unfair-fraction-paper", "fig7-pollux-avg-jct"])


def test_small_pollux_claims_are_checked(small_pollux):
    """At the CI size every Pollux claim whose cells exist gets a verdict (no n/a), and the paper's
    direction holds against the fixed-batch Pollux it ran (regression guard)."""
    cells = pd.read_parquet(small_pollux.out_dir / "cells.parquet")
    assert (cells["status"] == "ok").all(), cells.get("error")
    have = {(p, g) for p, g in zip(cells["policy_label"], cells["group"])}
    checked = 0
    def cell(name: str, row: str) -> tuple[str, str]:  # "x@r" names policy x on row r
        pol, at, r = name.rpartition("@")
        return (pol, r) if at else (name, row)

    for fig, found in small_pollux.verdicts.items():
        for v in found:
            if all(cell(n, v.row) in have for n in (v.claim.better, v.claim.worse)):
                assert v.result != "n/a", (fig, v)
                checked += 1
    assert checked >= 8
    fixed = cells[cells["grid"] == "vs-fixed-pollux"].set_index("policy_label")
    assert fixed.loc["ares-artifact", "avg_jct_s"] < fixed.loc["pollux-fixed", "avg_jct_s"]
    assert fixed.loc["ares-artifact", "unfair_fraction_paper"] < fixed.loc["pollux-fixed", "unfair_fraction_paper"]
