"""`cosim report`: figures + one self-contained HTML page, for sweep and simulate folders."""

from __future__ import annotations

import base64
import re
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app
from cosim.errors import CosimError, InputError
from experiments.report import make_report
from experiments.report.load import load, swept_axes
from experiments.report.plots import _binned_step, _ecdf
from experiments.sweep import parse_sweep, run_sweep
from tests.sweep import runners

PNG = b"\x89PNG\r\n\x1a\n"
BASE = ["jct_cdf.png", "queueing_cdf.png", "utilization.png", "ftf_cdf.png", "exposed_comm_cdf.png", "bars.png"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """The issue's sweep: 3 traces x 4 policies x 2 seeds."""
    out = tmp_path_factory.mktemp("sweep")
    data = runners.small_grid()
    cfg = parse_sweep(data, source="t")
    run_sweep(cfg, out, runner=runners.runner())
    return out


def _html_images(page: str) -> dict[str, bytes]:
    imgs = re.findall(r"<img [^>]*data-src='([^']+)' src='data:image/png;base64,([^']+)'", page)
    return {name: base64.b64decode(b64) for name, b64 in imgs}


def test_sweep_report_writes_every_figure_and_embeds_it(sweep_dir, tmp_path):
    rep = make_report(sweep_dir, tmp_path / "rep")
    assert rep.kind == "sweep"
    names = [p.name for p in rep.figures]
    assert names[:6] == BASE
    # traces and seeds are swept; seeds become error bars, so only the trace axis gets a figure
    assert names[6:] == ["sweep_trace.png"]
    for p in rep.figures:
        assert p.is_file() and p.read_bytes().startswith(PNG) and p.stat().st_size > 5000
    page = rep.html.read_text()
    imgs = _html_images(page)
    assert set(imgs) == set(names)  # the page references every figure ...
    for name, blob in imgs.items():  # ... and embeds exactly its bytes (self-contained)
        assert blob == (tmp_path / "rep" / name).read_bytes()
    for label in runners.labels():
        assert label in page
    assert "src='http" not in page and "<script" not in page


def test_sweep_loader_pools_jobs_per_policy(sweep_dir):
    data = load(sweep_dir)
    cells = pd.read_parquet(sweep_dir / "summary.parquet")
    assert set(data.jobs) == set(cells["policy_label"])
    per_cell = cells.groupby("policy_label")["jobs"].sum() if "jobs" in cells else None
    for label, jobs in data.jobs.items():
        assert len(jobs) == (per_cell[label] if per_cell is not None else len(jobs))
    assert set(data.timelines) == set(cells["policy_label"])
    assert data.swept == ["trace"]
    # one row per trace and policy, never a mean over different traces
    assert list(data.policy_summary["cells"]) == [2] * 12
    assert data.policy_summary.groupby("trace").size().tolist() == [4, 4, 4]


def test_simulate_folder_report(tmp_path):
    import importlib

    mod = importlib.import_module(runners.runner_name())
    pols = tuple(runners.policies(3))
    mod.run(mod.RunConfig(trace="synth:philly:20", cluster="dgx-a100", policies=pols, seed=1), tmp_path / "sim")
    cli = CliRunner()
    r = cli.invoke(app, ["report", str(tmp_path / "sim"), "-o", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    figs = sorted(p.name for p in (tmp_path / "rep").glob("*.png"))
    assert figs == sorted(BASE)
    page = (tmp_path / "rep" / "report.html").read_text()
    assert set(_html_images(page)) == set(BASE)
    assert "cosim simulate" in page


def test_cli_report_default_out_and_bad_folder(tmp_path):
    cli = CliRunner()
    r = cli.invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "summary.parquet" in r.output and "Traceback" not in r.output
    data = runners.small_grid(runners.policies(2), seeds=(0,), traces=runners.TRACES[:1])
    run_sweep(parse_sweep(data, source="t"), tmp_path / "s", runner=runners.runner())
    r = cli.invoke(app, ["report", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "s" / "report" / "report.html").is_file() and "6 figures" in r.output


def test_failed_cells_are_listed_and_left_out(tmp_path):
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"garbage")
    data = runners.small_grid(runners.policies(2), seeds=(0, 1), traces=(runners.TRACES[0], str(bad)))
    run_sweep(parse_sweep(data, source="t", base_dir=tmp_path), tmp_path / "s", runner=runners.runner())
    rep = make_report(tmp_path / "s", tmp_path / "r")
    page = rep.html.read_text()
    assert "Failed cells" in page and "4 of 8 cells failed" in page
    assert "sweep_trace.png" not in [p.name for p in rep.figures]  # only one trace succeeded: nothing swept


def test_missing_matplotlib_is_one_clear_error(sweep_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(CosimError, match=r"pip install matplotlib$"):
        make_report(sweep_dir, tmp_path / "x")


def test_not_a_run_folder(tmp_path):
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "summary.parquet")
    with pytest.raises(InputError, match="policy"):
        load(tmp_path)


def test_ecdf_and_binned_step_hand_values():
    x, y = _ecdf(np.array([3.0, 1.0, np.nan, 2.0]))
    assert list(x) == [1.0, 2.0, 3.0] and list(y) == pytest.approx([1 / 3, 2 / 3, 1.0])
    # step: 1 on [0,1), 0 on [1,3), 0.5 from 3 to the end at 4 -> bins of width 2: [0,2) mean 0.5, [2,4) mean 0.25
    t = np.array([0.0, 1.0, 3.0, 4.0])
    u = np.array([1.0, 0.0, 0.5, 0.5])
    edges, mean = _binned_step(t, u, 2)
    assert list(edges) == [0.0, 2.0] and list(mean) == pytest.approx([0.5, 0.25])


def test_swept_axes_ignores_constant_columns():
    cells = pd.DataFrame({"trace": ["a", "a"], "cluster": ["x", "y"], "cluster_nodes": [4, 4],
                          "contention": [True, True], "param_alpha": [0.5, None], "seed": [0, 1]})
    assert swept_axes(cells) == ["cluster"]
    cells["param_alpha"] = [0.5, 0.7]
    assert swept_axes(cells) == ["cluster", "param_alpha"]


def test_parameter_axis_gets_a_figure_with_seed_error_bars(tmp_path):
    if runners.runner_name() == runners.REAL:
        from policies.registry import POLICIES

        if "tiresias" not in POLICIES:
            pytest.skip("tiresias not registered")
    data = {"traces": [runners.TRACES[0]], "clusters": [dict(runners.CLUSTER)], "seeds": [0, 1],
            "policies": {"fifo": {}, "tiresias": {"promote_knob": [0.0, 8.0], "interval_s": 3600.0}}}
    run_sweep(parse_sweep(data, source="t"), tmp_path / "s", runner=runners.runner())
    rep = make_report(tmp_path / "s", tmp_path / "r")
    names = [p.name for p in rep.figures]
    assert "sweep_param_promote_knob.png" in names and "sweep_trace.png" not in names
    data_ = load(tmp_path / "s")
    assert data_.swept == ["param_promote_knob"]
    assert list(data_.policy_summary["policy"]) == ["fifo", "tiresias(interval_s=3600,promote_knob=0)",
                                                    "tiresias(interval_s=3600,promote_knob=8)"]


def test_cluster_size_axis(tmp_path):
    data = {"traces": [runners.TRACES[0]], "clusters": [{"preset": "dgx-a100", "nodes": [2, 8]}], "seeds": [0, 1],
            "policies": runners.policies(2), "skip_invalid": True}
    res = run_sweep(parse_sweep(data, source="t"), tmp_path / "s", runner=runners.runner())
    assert set(res.summary["status"]) == {"ok"}, res.summary["error"].tolist()
    assert sorted(res.summary["cluster_nodes"].unique()) == [2, 8]
    rep = make_report(tmp_path / "s", tmp_path / "r")
    assert "sweep_cluster_nodes.png" in [p.name for p in rep.figures]


def test_report_on_incomplete_or_all_failed_sweep_exits_non_zero(tmp_path):
    """`report` on a sweep with failed or missing cells says so and exits 1; all failed → exit 2."""
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"garbage")
    data = runners.small_grid(runners.policies(2), seeds=(0,), traces=(runners.TRACES[0], str(bad)))
    run_sweep(parse_sweep(data, source="t", base_dir=tmp_path), tmp_path / "s", runner=runners.runner())
    cli = CliRunner()
    r = cli.invoke(app, ["report", str(tmp_path / "s"), "-o", str(tmp_path / "r")])
    assert r.exit_code == 1 and "incomplete sweep: 2 of 4 cells failed" in r.output, r.output
    assert "Incomplete sweep" in (tmp_path / "r" / "report.html").read_text()
    # keep one committed cell: the grid in sweep.json has more cells than the summary
    summary = pd.read_parquet(tmp_path / "s" / "summary.parquet")
    summary[summary["status"] == "ok"].iloc[:1].to_parquet(tmp_path / "s" / "summary.parquet")
    r = cli.invoke(app, ["report", str(tmp_path / "s"), "-o", str(tmp_path / "r2")])
    assert r.exit_code == 1 and "3 of 4 cells have not run" in r.output, r.output
    only_bad = runners.small_grid(runners.policies(2), seeds=(0,), traces=(str(bad),))
    run_sweep(parse_sweep(only_bad, source="t", base_dir=tmp_path), tmp_path / "f", runner=runners.runner())
    r = cli.invoke(app, ["report", str(tmp_path / "f")])
    assert r.exit_code == 2 and "all 2 cells failed" in r.output and "Traceback" not in r.output, r.output


def test_sweep_axis_plots_ratios_paired_per_seed_one_row_per_trace(tmp_path, monkeypatch):
    """A policy's ratio to the baseline is taken cell by cell (same trace, seed) and only then
    averaged: seed 1 doubles every policy's JCT, which unpaired error bars would show as a huge
    spread; paired, the spread is the policies' own difference. Traces are rows, never pooled."""
    from experiments.report import sweep_plots
    from experiments.report.load import ReportData

    rows = []
    for trace, scale in (("a", 1.0), ("b", 100.0)):
        for seed in (0, 1):
            base = scale * 10.0 * (1 + seed)
            rows.append({"cell_id": f"{trace}f{seed}", "trace": trace, "policy": "fifo", "policy_label": "fifo",
                         "param_x": np.nan, "seed": seed, "status": "ok", "avg_jct_s": base})
            for x in (1.0, 2.0):
                rows.append({"cell_id": f"{trace}p{x}{seed}", "trace": trace, "policy": "p",
                             "policy_label": f"p(x={x:g})", "param_x": x, "seed": seed, "status": "ok",
                             "avg_jct_s": base * x * (1 + 0.1 * seed)})
    cells = pd.DataFrame(rows)
    ratios = sweep_plots.paired_ratios(cells, "avg_jct_s", "fifo")
    assert len(ratios) == 8 and "fifo" not in set(ratios["policy_label"])
    np.testing.assert_allclose(ratios.sort_values(["trace", "param_x", "seed"])["ratio"],
                               [1.0, 1.1, 2.0, 2.2] * 2)
    data = ReportData("sweep", tmp_path, "t", pd.DataFrame(), cells=cells, swept=swept_axes(cells))
    assert data.swept == ["trace", "param_x"]
    figs = []
    monkeypatch.setattr(sweep_plots, "_save", lambda fig, path: figs.append(fig) or path)
    monkeypatch.setattr(sweep_plots, "METRICS", ("avg_jct",))
    assert sweep_plots.sweep_axis(data, "param_x", tmp_path, "fifo") is not None
    fig = figs[0]
    assert "min-max" in fig._suptitle.get_text() and "fifo" in fig._suptitle.get_text()
    for ax, trace in zip(fig.axes, "ab"):
        assert ax.get_title() == f"trace={trace}"
        np.testing.assert_allclose(np.asarray(ax.lines[0].get_ydata(), dtype=float), [1.05, 2.1])  # paired means
        assert ax.get_ylabel() == "average JCT / fifo's (ratio)"
    with pytest.raises(InputError, match="--baseline"):
        sweep_plots.choose_baseline(cells, "p")  # two labels of p: say which
    assert sweep_plots.choose_baseline(cells, None) == "fifo"
    assert sweep_plots.choose_baseline(cells, "p(x=2)") == "p(x=2)"
