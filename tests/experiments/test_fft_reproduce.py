"""`cosim reproduce fft --size small` (what CI runs): Trace 2 (100 jobs) with FFT, Gavel SJF-like and
Tiresias-typed, Trace 1 (60 jobs) with FFT and AlloX, on fft-hetero; the placement ablation (Trace 2,
40 jobs, on fft-a10). Checks the cells ran, the
FFT-specific columns are there and sane, and the REPORT.md rows are the cells' numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.experiments.test_reproduce import _hours, _table

GAVEL = "gavel(objective='sjf_like')"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    from experiments import reproduce

    out = tmp_path_factory.mktemp("fft") / "small"
    return reproduce("fft", "small", out, workers=1)


def test_small_cells_and_fft_columns(small):
    cells = pd.read_parquet(small.out_dir / "cells.parquet")
    assert len(cells) == 58 and (cells["status"] == "ok").all(), cells.get("error")
    assert (cells["unfinished"] == 0).all()
    f = cells[(cells["policy"] == "fft") & (cells["grid"] == "testbed")].iloc[0]
    assert f["fft_rounds"] > 10 and "fft_solver_s_mean" not in cells.columns  # the clock's: timing.parquet
    timing = pd.read_parquet(small.out_dir / "timing.parquet").set_index("cell_id")
    assert 0 < timing.loc[f["cell_id"], "fft_solver_s_mean"] < 5 and timing.loc[f["cell_id"], "wall_s"] > 0
    assert 0 <= f["ftf_hetero_share_below_1"] <= 1 and f["ftf_hetero_max"] >= f["ftf_hetero_mean"] > 0
    assert f["fft_never_fit"] == 0 and f["type_switches"] == f["fft_type_switches"]  # two counts of one thing
    t = cells[cells["policy"] == "tiresias-typed"].iloc[0]
    assert t["type_switches"] == 0  # no cross-type migration
    pl = cells[cells["grid"] == "placement"].set_index("policy_label")["placement_speed"]
    assert ((pl > 0) & (pl <= 1.05)).all()
    # FFT's packing and stickiness keep jobs faster than with both switched off (§6.2.4)
    assert pl["fft(pack_hosts=true,sticky=true)"] > pl["fft(pack_hosts=false,sticky=false)"]


def test_small_report_rows_are_the_cells(small):
    cells = pd.read_parquet(small.out_dir / "cells.parquet")
    tb = cells[cells["grid"] == "testbed"].groupby("policy_label")[["avg_jct_s", "max_starvation_s"]].mean()
    assert set(cells.loc[cells["grid"] == "testbed", "seed"]) == {0, 1, 2}
    report = (small.out_dir / "REPORT.md").read_text()
    rows = _table(report, "avg-jct", f"| row | fft | {GAVEL} | tiresias-typed |")
    assert len(rows) == 1
    row, fft, gavel, tir = rows[0][:4]
    assert row == "synth:fft-trace2:100"
    for text, pol in ((fft, "fft"), (gavel, GAVEL), (tir, "tiresias-typed")):
        assert _hours(text) == pytest.approx(tb.loc[pol, "avg_jct_s"] / 3600, rel=5e-3)
    assert np.isfinite(tb["max_starvation_s"]).all()


def test_small_checks_every_claim_and_reports_the_load_margins(small):
    claims = pd.read_csv(small.out_dir / "claims.csv")
    for fig in small.experiment.figures_at("small"):
        for c in fig.all_claims():  # every claim is checked, or its row is one the catalog says small cannot run
            got = claims[(claims["figure"] == fig.name) & (claims["better"] == c.better) & (claims["worse"] == c.worse)]
            assert len(got), (fig.name, c)
            if "small" in c.not_at:
                assert (got["verdict"] == "not checked").all() and (got["why"] == c.not_at["small"]).all()
            else:
                assert (got["verdict"] != "not checked").all(), (fig.name, c)
    testbed = claims[claims["figure"] == "avg-jct"]
    assert (testbed["seeds"] == 3).all()  # seeds 0-2 on the testbed grid
    load = claims[claims["figure"] == "load-avg-jct"]
    per_row = load[~load["row"].str.startswith("largest over rows (")]
    assert sorted(set(per_row["row"])) == ["load 1.2", "load 2.0", "load 3.0"]
    # "up to 3.15×" vs Tiresias-typed: each load by direction, the margin once on the largest load
    (largest,) = load[load["row"].str.startswith("largest over rows (")].itertuples()
    tir = per_row[per_row["worse"] == "tiresias-typed"]
    assert largest.cosim_factor == tir["cosim_factor"].max() and (tir["check"] == "direction").all()
    report = (small.out_dir / "REPORT.md").read_text()
    rows = _table(report, "load-margins", "| offered load |")
    assert [r[0] for r in rows] == ["1.2", "2.0", "3.0"]
    cells = small.cells[small.cells["grid"] == "load"]
    for row in rows:  # Gavel/FFT: the mean over seeds of the per-seed ratios
        sub = cells[cells["group"] == f"load {row[0]}"].pivot_table(index="seed", columns="policy_label",
                                                                     values="avg_jct_s")
        assert float(row[1].split("×")[0]) == pytest.approx((sub[GAVEL] / sub["fft"]).mean(), abs=0.006)
    assert "## solver-limit:" in report
