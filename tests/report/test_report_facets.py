"""Report items: CDFs per trace and cluster, exposed communication and contention
slowdown figures, the per-cell table, units on every axis, identical curves kept apart."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from experiments.report import make_report, plots, sweep_plots
from experiments.report.load import ReportData, load
from tests.report.test_report import sweep_dir  # noqa: F401  the module-scoped 3 traces x 4 policies x 2 seeds sweep

UNIT = re.compile(r"\([^)]+\)\s*$")


def _capture(monkeypatch) -> list:
    figs: list = []
    for mod in (plots, sweep_plots):
        monkeypatch.setattr(mod, "_save", lambda fig, path: figs.append((fig, path)) or path)
    return figs


def test_cdfs_have_one_panel_per_trace_and_never_pool_traces(sweep_dir, monkeypatch):  # noqa: F811
    data = load(sweep_dir)
    cells = pd.read_parquet(sweep_dir / "summary.parquet")
    traces = list(dict.fromkeys(cells["trace"]))
    assert len(traces) == 3 and sorted(data.facets) == sorted(f"trace={t}" for t in traces)
    figs = _capture(monkeypatch)
    plots.jct_cdf(data, sweep_dir)
    fig, _ = figs[0]
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == [f"trace={t}" for t in traces]
    for ax, trace in zip(axes, traces):
        mine = cells[(cells["trace"] == trace) & (cells["status"] == "ok")]
        for line in ax.get_lines():
            label, n = re.fullmatch(r"(.+) \(n=(\d+)\)", line.get_label()).groups()
            jobs = [pd.read_parquet(sweep_dir / "cells" / c / "jobs.parquet")
                    for c in mine[mine["policy_label"] == label]["cell_id"]]
            finite = pd.concat(jobs)["jct_s"].pipe(np.isfinite).sum()
            assert int(n) == finite  # this trace's jobs only (both seeds), not the pooled grid
            assert line.get_xdata().size <= finite


def test_identical_curves_get_different_line_styles(tmp_path, monkeypatch):
    jobs = pd.DataFrame({"jct_s": [10.0, 20.0, 40.0], "queueing_delay_s": [0.0, 1.0, 5.0]})
    data = ReportData("simulate", tmp_path, "t", pd.DataFrame({"policy": ["a", "b", "c"]}),
                      jobs={k: jobs.copy() for k in "abc"})
    data.facets = {"": data.jobs}
    figs = _capture(monkeypatch)
    plots.jct_cdf(data, tmp_path)
    lines = figs[0][0].axes[0].get_lines()
    assert len(lines) == 3
    assert np.array_equal(lines[0].get_ydata(), lines[1].get_ydata())  # the data are the same ...
    assert len({(ln.get_linestyle(), ln.get_linewidth()) for ln in lines}) == 3  # ... the drawing is not


def test_exposed_comm_cdf_is_the_share_of_executed_time(tmp_path, monkeypatch):
    jobs = pd.DataFrame({"exposed_comm_s": [0.0, 5.0, 30.0, 1.0], "executed_s": [100.0, 100.0, 60.0, 0.0]})
    data = ReportData("simulate", tmp_path, "t", pd.DataFrame({"policy": ["p"]}), jobs={"p": jobs})
    data.facets = {"": data.jobs}
    figs = _capture(monkeypatch)
    assert plots.exposed_comm_cdf(data, tmp_path) is not None
    ax = figs[0][0].axes[0]
    line = ax.get_lines()[0]
    assert line.get_label() == "p (n=3)"  # a job that never ran has no share
    np.testing.assert_allclose(line.get_xdata(), [0.0, 5.0, 50.0])
    assert "%" in ax.get_xlabel()


def test_contention_slowdown_pairs_cells_on_every_other_coordinate(tmp_path, monkeypatch):
    rows = []
    for trace in ("a", "b"):
        for seed in (0, 1):
            for pol, slow in (("fifo", 1.5), ("sjf", 1.2)):
                base = 100.0 * (seed + 1) * (2 if trace == "b" else 1)
                extra = 0.1 * seed if trace == "a" else 0.0
                for on in (True, False):
                    rows.append({"cell_id": f"{trace}{seed}{pol}{on}", "trace": trace, "cluster": "x",
                                 "contention": on, "policy": pol, "policy_label": pol, "seed": seed, "status": "ok",
                                 "avg_jct_s": base * (slow + extra) if on else base})
    cells = pd.DataFrame(rows)
    data = ReportData("sweep", tmp_path, "t", pd.DataFrame(), cells=cells)
    figs = _capture(monkeypatch)
    assert sweep_plots.contention_slowdown(data, tmp_path) is not None
    fig, path = figs[0]
    assert path.name == "contention_slowdown.png"
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["trace=a", "trace=b"]
    tops = [[p.get_y() + p.get_height() for p in ax.patches] for ax in axes]  # bars start at 1 (no slowdown)
    np.testing.assert_allclose(tops, [[1.55, 1.25], [1.5, 1.2]])  # trace a: seeds 0 and 1 averaged
    assert all(p.get_y() == 1.0 for ax in axes for p in ax.patches)
    assert "ratio" in axes[0].get_ylabel()
    # without both contention settings there is nothing to compare
    assert sweep_plots.contention_slowdown(ReportData("sweep", tmp_path, "t", pd.DataFrame(),
                                                cells=cells[cells["contention"]]), tmp_path) is None


def test_page_has_a_row_per_cell_and_every_axis_has_a_unit(sweep_dir, tmp_path, monkeypatch):  # noqa: F811
    import matplotlib.figure

    labels: list[tuple[str, str, str]] = []
    real = matplotlib.figure.Figure.savefig

    def spy(fig, *a, **k):
        for ax in fig.axes:
            if ax.get_visible() and ax.has_data():
                labels.append((fig._suptitle.get_text() if fig._suptitle else ax.get_title(),
                               ax.get_xlabel(), ax.get_ylabel()))
        return real(fig, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    rep = make_report(sweep_dir, tmp_path / "rep")
    page = rep.html.read_text()
    cells = pd.read_parquet(sweep_dir / "summary.parquet")
    table = page.split("<h2>Per-cell results</h2>", 1)[1].split("<h2>", 1)[0]
    assert table.count("<tr>") == len(cells) + 1  # header + one row per cell
    for cid in cells["cell_id"]:
        assert f"<td>{cid}</td>" in table
    assert labels
    for title, x, y in labels:
        if "bars" in title.lower() or not x:  # categorical x (policy names) needs no unit
            x = "(policy)"
        assert UNIT.search(y), (title, y)
        assert UNIT.search(x), (title, x)


@pytest.mark.parametrize("n, shape", [(1, (1, 1)), (3, (1, 3)), (4, (2, 3))])
def test_facet_grid(n, shape):
    plt = plots._plt()
    fig, axes = plots._facet_axes(plt, n)
    assert len(axes) == n and len(fig.axes) == shape[0] * shape[1]
    plt.close(fig)


def test_ftf_legend_counts_unfair_as_the_metrics_do(tmp_path, monkeypatch):
    """One definition of unfair: FTF > 1 + FTF_TOLERANCE, in the legend as in the summary table."""
    from simcore.metrics import FTF_TOLERANCE

    jobs = pd.DataFrame({"ftf": [1.0 + FTF_TOLERANCE / 10, 1.0 + FTF_TOLERANCE / 10, 0.8, 1.5]})
    data = ReportData("simulate", tmp_path, "t", pd.DataFrame({"policy": ["p"]}), jobs={"p": jobs})
    data.facets = {"": data.jobs}
    figs = _capture(monkeypatch)
    plots.ftf_cdf(data, tmp_path)
    assert figs[0][0].axes[0].get_lines()[0].get_label() == "p: unfair 25.0%"  # only the 1.5; `> 1.0` said 75 %


def test_paired_bars_keep_traces_apart_and_share_one_scale_per_metric(tmp_path, monkeypatch):
    rows = []
    for trace, scale in (("short", 1.0), ("long", 50.0)):
        for seed in (0, 1):
            for pol, factor in (("fifo", 1.0), ("sjf", 0.5 if trace == "short" else 0.8)):
                rows.append({"cell_id": f"{trace}{seed}{pol}", "trace": trace, "policy": pol, "policy_label": pol,
                             "seed": seed, "status": "ok", "avg_jct_s": scale * (1 + seed) * factor,
                             "makespan_s": scale * 3.0})
    data = ReportData("sweep", tmp_path, "t", pd.DataFrame(), cells=pd.DataFrame(rows))
    figs = _capture(monkeypatch)
    assert sweep_plots.paired_bars(data, tmp_path, "fifo") is not None
    fig, path = figs[0]
    assert path.name == "bars.png"
    jct = [ax for ax in fig.axes if "JCT" in ax.get_ylabel()]
    assert [ax.get_title() for ax in jct] == ["trace=short", "trace=long"]  # one row per trace, never pooled
    tops = [[p.get_y() + p.get_height() for p in ax.patches] for ax in jct]
    np.testing.assert_allclose(tops, [[0.5], [0.8]])  # sjf / fifo on the same seed, the only bar
    assert jct[0].get_ylim() == jct[1].get_ylim()  # one y scale per metric


def test_utilisation_is_binned_per_policy_and_names_its_cell(tmp_path, monkeypatch):
    t = np.arange(0.0, 7200.0 + 1, 10.0)
    busy = np.where((t // 10) % 2 == 0, 8.0, 0.0)  # flips every 10 s: a solid block when drawn raw
    tl = pd.DataFrame({"time_s": t, "busy_gpus": busy, "total_gpus": 8.0})
    data = ReportData("sweep", tmp_path, "t", pd.DataFrame({"policy": ["a", "b"]}), timelines={"a": tl, "b": tl})
    data.timeline_where = "trace=x, seed=0"
    data.time = ("h", 3600.0)
    figs = _capture(monkeypatch)
    plots.utilization(data, tmp_path)
    fig, _ = figs[0]
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["a", "b"]
    y = axes[0].get_lines()[0].get_ydata()
    assert len(y) == plots.UTIL_BINS + 1 and np.allclose(y, 50.0, atol=4.0)  # the mean, not the flicker
    assert "trace=x, seed=0" in fig._suptitle.get_text() and axes[0].get_xlabel() == "simulated time (h)"


def test_page_opens_with_what_ran_and_human_column_names(sweep_dir, tmp_path):  # noqa: F811
    page = make_report(sweep_dir, tmp_path / "rep").html.read_text()
    head = page.split("<h2>What ran</h2>", 1)[1].split("<h2>", 1)[0]
    cells = pd.read_parquet(sweep_dir / "summary.parquet")
    for t in cells["trace"].unique():
        assert t in head
    for name in ("trace", "cluster", "iteration-time backend", "contention", "seeds", "version", "times"):
        assert f"<dt>{name}</dt>" in head
    summary = page.split("<h2>Per-policy summary</h2>", 1)[1].split("</table>", 1)[0]
    assert "<th title='avg_jct_s'>average JCT (" in summary and ">avg_jct_s<" not in summary
    assert "class='scroll'" in summary
