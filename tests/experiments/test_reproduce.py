"""`cosim reproduce tiresias-vs-fifo --size small` end to end (what CI runs), its REPORT.md rows
checked against the cells it ran; resume; the synthetic fallback; the CLI's bad names; the
policy registry reaching sweep workers although simcore imports no policy."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app
from experiments.compare import counted
from experiments.spec import names
from tests.conftest import SHARED_DATA as _CHECKOUT_SHARED

PAPER = "tiresias-vs-fifo"
#: the shared workloads: ../shared/data beside the checkout, or where COSIM_SHARED_DATA points
SHARED_DATA = Path(os.environ.get("COSIM_SHARED_DATA", "").strip() or _CHECKOUT_SHARED)


def _table(report: str, section: str, header: str) -> list[list[str]]:
    """The rows of the markdown table starting with `header` inside `## section…`."""
    body = report.split(f"## {section}:", 1)[1].split("\n## ", 1)[0]
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def _hours(text: str) -> float:
    return float(re.search(r"([0-9.]+) h", text).group(1))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The small size through the CLI, on the shared workloads when ../shared is present."""
    out = tmp_path_factory.mktemp("repro") / "small"
    mp = pytest.MonkeyPatch()
    if SHARED_DATA.is_dir():
        mp.setenv("COSIM_SHARED_DATA", str(SHARED_DATA))
    try:
        res = CliRunner().invoke(app, ["reproduce", PAPER, "--size", "small", "--out", str(out), "--workers", "1"])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    return out, res.output


def test_report_rows_match_the_cells(small):
    out, output = small
    report = (out / "REPORT.md").read_text()
    cells = pd.read_parquet(out / "cells.parquet")
    assert len(cells) == 6 and (cells["status"] == "ok").all()
    assert set(cells["policy"]) == {"fifo", "sjf", "tiresias"} and cells["group"].nunique() == 2
    means = cells.groupby(["group", "policy"])["avg_jct_s"].mean() / 3600
    claims = _table(report, "avg-jct", "| row | paper | cosim | same ordering? |")
    assert len(claims) == 5  # 2 trace sets x 2 claims, and the "up to" claim's margin on its largest row
    csv = pd.read_csv(out / "claims.csv")
    *rows, largest = claims
    tiresias = {r[0]: means[(r[0], "fifo")] / means[(r[0], "tiresias")] for r in rows if "tiresias better" in r[1]}
    top = max(tiresias, key=tiresias.get)
    assert largest[0] == f"largest over rows ({top})" and "up to 5.5×" in largest[1]
    assert largest[2] == f"largest over rows: {tiresias[top]:.2f}× on row {top}, ratio {largest[4]}"
    assert float(largest[4]) == pytest.approx((tiresias[top] - 1) / 4.5, abs=0.01)
    assert largest[6].startswith("reproduces" if 0.5 <= float(largest[4]) <= 2 else "direction only")
    for row, paper, cosim, verdict, ratio, seeds, level in rows:
        better, worse = re.match(r"(\w+) better than (\w+)", paper).groups()
        vb, vw = means[(row, better)], means[(row, worse)]
        # the cosim column shows the cells' means and the verdict follows the 2 % rule
        nums = [float(x) for x in re.findall(r" ([0-9.]+) h", cosim)]
        assert nums == pytest.approx([vb, vw], rel=5e-3)
        rel = (vw - vb) / max(vb, vw)
        assert verdict == ("yes" if rel > 0.02 else "no" if rel < -0.02 else "tie")
        assert seeds == "1 seed"  # one seed per cell at this size
        line = csv[(csv["row"] == row) & (csv["better"] == better) & (csv["worse"] == worse)].iloc[0]
        assert line["direction"] == verdict and level.startswith(line["verdict"])
        if verdict != "yes":
            assert line["verdict"] == "does not reproduce"
        if better == "tiresias":
            assert "up to 5.5×" in paper
            assert verdict == "yes"  # the literature's direction: Tiresias lowers average JCT vs FIFO
            assert float(ratio) == pytest.approx((vw / vb - 1) / 4.5, abs=0.01)  # cosim's margin / the paper's
            assert line["verdict"] == "reproduces" and line["check"] == "direction"  # a row of "up to": direction
    values = _table(report, "avg-jct", "| row | fifo | sjf | tiresias |")
    assert [r[0] for r in values] == list(dict.fromkeys(cells["group"]))
    for row, fifo, sjf, tiresias, n, order, _ in values:
        got = {"fifo": _hours(fifo), "sjf": _hours(sjf), "tiresias": _hours(tiresias)}
        assert got == pytest.approx({p: means[(row, p)] for p in got}, rel=5e-3)
        assert n == "1" and order.split()[0] == min(got, key=got.get)
    fig = pd.read_parquet(out / "avg-jct.parquet")
    assert list(fig.columns) == ["row", "policy", "value", "std", "n", "paper"] and len(fig) == 6
    assert f"cosim reproduce {PAPER} --size small" in report and "commit " in report and "wall time:" in report
    assert "avg-jct: same ordering yes" in output
    if SHARED_DATA.is_dir():
        assert "[synthetic" not in report and "workload-1.csv" in report
    if _has_matplotlib():
        assert (out / "avg-jct.png").stat().st_size > 1000 and "![avg-jct](avg-jct.png)" in report


def test_report_opens_with_what_ran_and_the_claims_summary(small):
    out, _ = small
    report = (out / "REPORT.md").read_text()
    head = report.split("## What ran", 1)[1].split("\n## ", 1)[0]
    assert report.index("## What ran") < report.index("## avg-jct:")  # before any result
    cells = pd.read_parquet(out / "cells.parquet")
    for t in cells["trace"].unique():
        assert t in head
    for name in ("trace", "cluster", "iteration-time backend", "contention", "seeds", "version"):
        assert f"- {name}: " in head
    csv = pd.read_csv(out / "claims.csv")
    csv = csv[counted(csv)]  # an "up to" claim counts once, by its largest-row line
    counts = csv["verdict"].value_counts()
    summary = re.search(r"\*\*Claims:\*\* (\d+) of (\d+) claims checked: (\d+) reproduces, (\d+) direction only, "
                        r"(\d+) does not reproduce", head)
    assert summary is not None, head
    assert [int(x) for x in summary.groups()] == [
        len(csv) - counts.get("not checked", 0), len(csv), counts.get("reproduces", 0),
        counts.get("direction only", 0), counts.get("does not reproduce", 0)]


def test_a_grid_whose_cells_all_fail_stops_with_the_reason_and_no_report(tmp_path, monkeypatch):
    """Without the measured tables every Pollux cell fails: one line on stderr naming what is
    missing, exit 2, and no REPORT.md claiming anything. A COSIM_SHARED_DATA that names no folder
    is the same kind of error, before any cell runs."""
    empty = tmp_path / "empty-data"
    empty.mkdir()
    monkeypatch.setenv("COSIM_SHARED_DATA", str(empty))
    res = CliRunner().invoke(app, ["reproduce", "pollux", "--size", "small", "--out", str(tmp_path / "o"),
                                   "--workers", "1"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: pollux (small): all 2 cells of grid 'workloads' failed")
    assert "COSIM_SHARED_DATA" in lines[0] and "empty-data" in lines[0]
    assert not (tmp_path / "o" / "REPORT.md").exists()
    monkeypatch.setenv("COSIM_SHARED_DATA", str(tmp_path / "nowhere"))
    res = CliRunner().invoke(app, ["reproduce", "pollux", "--size", "small", "--out", str(tmp_path / "o2"),
                                   "--workers", "1"])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith("error:") and "COSIM_SHARED_DATA" in lines[0] and "nowhere" in lines[0]
    assert not (tmp_path / "o2").exists() or not any((tmp_path / "o2").iterdir())


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_rerun_into_the_same_folder_reuses_every_cell(small):
    from experiments import reproduce

    out, _ = small
    before = pd.read_parquet(out / "avg-jct.parquet")
    res = reproduce(PAPER, "small", out, shared_data=SHARED_DATA if SHARED_DATA.is_dir() else None,
                    figures=["avg-jct"])
    assert (res.ran, res.resumed) == (0, 6)
    pd.testing.assert_frame_equal(res.tables["avg-jct"], before)
    assert "## p99-jct" not in res.report.read_text()  # --figure: only the chosen figure is reported


def test_synthetic_fallback_is_labelled_and_figures_skip_without_matplotlib(tmp_path, monkeypatch):
    from experiments import reproduce

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    res = reproduce(PAPER, "small", tmp_path / "fb", shared_data=tmp_path / "no-shared", figures=["avg-jct"])
    text = res.report.read_text()
    assert "**Synthetic fallback:**" in text and "2 trace(s)" in text
    rows = _table(text, "avg-jct", "| row | paper | cosim | same ordering? |")
    assert {r[0] for r in rows} - {r[0] for r in rows if r[0].startswith("largest over rows (")} == {
        "philly [synthetic]", "helios-saturn [synthetic]"}
    assert res.cells["fallback"].all() and res.cells["trace"].str.contains("synthetic fallback").all()
    assert "figure skipped: matplotlib is not installed" in text and not (tmp_path / "fb" / "avg-jct.png").exists()


@pytest.mark.parametrize("args, needle", [
    (["reproduce", "no-such-paper"], "unknown experiment 'no-such-paper'; valid: " + ", ".join(sorted(names()))),
    (["reproduce", PAPER, "--figure", "fig-9"], "unknown figure 'fig-9'; valid: avg-jct, p99-jct"),
    (["reproduce", PAPER, "--size", "huge"], "unknown size 'huge'; valid: full, small"),
    (["reproduce", PAPER, "--size", "medium"], "unknown size 'medium'; valid: full, small"),  # not declared here
    (["reproduce", PAPER, "--backend", "slurm"], "unknown backend 'slurm'; valid: local, ray"),
])
def test_bad_names_are_one_line_with_the_valid_ones(args, needle, tmp_path):
    res = CliRunner().invoke(app, args + ["--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert lines == [f"error: {needle}"]
    assert not (tmp_path / "o").exists()  # nothing ran


def test_list_shows_the_registry():
    res = CliRunner().invoke(app, ["reproduce", "--list"])
    assert res.exit_code == 0
    assert f"{PAPER}: Gu et al., Tiresias" in res.output
    assert "figures: avg-jct, p99-jct" in res.output and "small:" in res.output and "full:" in res.output
    aryl = res.output.split("\naryl: ", 1)[1].split("\n")  # on the common path like the others, with its medium size
    assert aryl[0].startswith("Li et al., Aryl") and aryl[1].startswith("  figures: table5-qt-mean,")
    assert [line.split(":")[0].strip() for line in aryl[2:5]] == ["small", "medium", "full"]


def test_failure_reasons_group_the_cells_errors_most_frequent_first():
    from experiments.reproduction import failure_reasons

    cells = pd.DataFrame({"status": ["ok", "error", "error", "error"],
                          "policy_label": ["fifo", "sjf", "tiresias", "sjf"],
                          "error": [None, "InputError: x.csv: missing", "ValueError: boom", "InputError: x.csv: missing"]})
    assert failure_reasons(cells) == ["2 cell(s) (sjf): InputError: x.csv: missing",
                                      "1 cell(s) (tiresias): ValueError: boom"]
    assert failure_reasons(cells, limit=1)[1] == "1 other error(s): see the error column of cells.parquet"
    assert failure_reasons(cells[cells["status"] == "ok"]) == []


def test_figures_draw_the_papers_values_beside_cosims_with_named_axes(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import numpy as np

    from experiments import reproduction_report as rr
    from experiments.spec import load_experiment

    figs = []
    monkeypatch.setattr(rr, "save_figure", lambda fig, path: figs.append(fig) or path)
    figure = load_experiment("pollux").figure("avg-jct")
    table = pd.DataFrame({"row": ["workload-1", "workload-1"], "policy": ["tiresias-pollux", "optimus"],
                          "value": [2400.0, 4000.0], "std": [100.0, 0.0], "n": [3, 3],
                          "paper": [2473.65, 4087.06]})
    rr.plot_figure(table, figure, tmp_path / "f.png")
    ax = figs[0].axes[0]
    paper = [ln for ln in ax.get_lines() if ln.get_label() == "paper's value"]
    assert len(paper) == 1 and sum(ln.get_label() == "paper's value" for ln in ax.get_lines()) == 1
    drawn = np.concatenate([ln.get_ydata() for ln in ax.get_lines() if ln.get_marker() == "D"])
    np.testing.assert_allclose(drawn, [2473.65 / 3600, 4087.06 / 3600])  # hours, as the bars
    assert ax.get_ylabel() == "average JCT (h)"  # the unit named once, in words
    assert ax.get_xlabel().startswith("trace\nbars: mean over each row's cells (up to 3")
