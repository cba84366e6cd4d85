"""The reproduction table is generated from the committed reports' claims.csv, and the committed
CI-size reports check every claim of every figure they show."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app
from experiments.reproduction_summary import BEGIN, DOCS, END, README, collect, fill_block, render, write
from experiments.spec import load_experiment


def test_committed_table_is_the_generated_one():
    tables = render(DOCS)
    assert (DOCS / "README.md").read_text() == tables.docs, "rerun `cosim reproduce --summary`"
    text = README.read_text()
    if BEGIN in text:  # the top-level README carries the block: it must be current too
        assert fill_block(text, tables.block) == text, "rerun `cosim reproduce --summary`"


def test_ci_size_reports_check_every_claim_they_show():
    claims, _ = collect(DOCS)
    small = claims[claims["size"] == "small"]
    assert len(small), "no committed CI-size claims.csv under docs/reproductions"
    for name, got in small.groupby("experiment"):
        exp = load_experiment(name)
        for fig in exp.figures_at("small"):
            rows = got[got["figure"] == fig.name]
            for c in fig.all_claims():
                mine = rows[(rows["better"] == c.better) & (rows["worse"] == c.worse)]
                assert len(mine), f"{name}/{fig.name}: claim {c.better} > {c.worse} missing from claims.csv"
        unchecked = got[got["verdict"] == "not checked"]
        assert (unchecked["direction"] == "n/a").all() and unchecked["why"].notna().all()
        checked = got[got["verdict"] != "not checked"]  # cells on both sides: a direction (the factor is
        assert checked["direction"].isin(["yes", "tie", "no"]).all()  # undefined where a side is 0)


def _claims_csv(path, verdicts):
    rows = [{"experiment": "fft", "size": "small", "figure": "avg-jct", "metric": "avg_jct_s", "row": f"r{i}",
             "better": "fft", "worse": "gavel", "qualifier": "", "paper_factor": 1.5, "cosim_factor": 1.4,
             "margin_ratio": 0.8, "margin_tolerance": 2.0, "check": "margin", "direction": "yes", "seeds": 3,
             "seeds_held": 3, "seed_factor_min": 1.3, "seed_factor_max": 1.5, "verdict": v, "why": ""}
            for i, v in enumerate(verdicts)]
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path, index=False)


def test_summary_counts_verdicts_and_fills_only_an_existing_block(tmp_path):
    root = tmp_path / "docs"
    _claims_csv(root / "fft" / "small" / "claims.csv", ["reproduces", "reproduces", "direction only"])
    (root / "ares").mkdir()
    (root / "ares" / "REPORT.md").write_text("# older report\n")
    tables = render(root)
    assert "| [fft/small](fft/small/REPORT.md) (small) | 3 | 2 | 1 | 0 | 0 | 0.80 | 3 |" in tables.docs
    assert "[ares](ares/REPORT.md)" in tables.docs  # listed as a report without claims.csv
    assert "| avg-jct: fft better than gavel (1.5×), row r0 | reproduces | cosim 1.4×, margin ratio 0.80 | " \
           "3 (3 hold; 1.3-1.5×) |" in tables.docs
    readme = tmp_path / "README.md"
    readme.write_text("# cosim\n")
    msgs = write(root, readme)
    assert readme.read_text() == "# cosim\n" and "no <!-- reproductions:begin -->" in msgs[1]
    readme.write_text(f"# cosim\n\n{BEGIN}\nold\n{END}\n\nmore\n")
    write(root, readme)
    text = readme.read_text()
    assert text.startswith(f"# cosim\n\n{BEGIN}\n") and text.endswith(f"\n{END}\n\nmore\n") and "old" not in text
    assert tables.block in text and (root / "README.md").read_text() == tables.docs


def test_summary_cli_names_a_bad_claims_file(tmp_path, monkeypatch):
    import experiments.reproduction_summary as rs

    root = tmp_path / "docs"
    (root / "x").mkdir(parents=True)
    (root / "x" / "claims.csv").write_text("experiment,size\nfft,small\n")
    monkeypatch.setattr(rs, "DOCS", root)
    monkeypatch.setattr(rs.write, "__defaults__", (root, tmp_path / "README.md"))
    res = CliRunner().invoke(app, ["reproduce", "--summary"])
    assert res.exit_code == 2 and "claims.csv" in res.output and "figure" in res.output


@pytest.mark.parametrize("text", ["no block", f"{END}\n{BEGIN}"])
def test_fill_block_needs_both_markers_in_order(text):
    assert fill_block(text, "x") is None
