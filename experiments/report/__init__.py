"""Reports: figures and one self-contained HTML page from a simulate or sweep folder.

Loading (`load`), plotting (`plots`) and page writing (`html`) are separate modules;
`make_report` strings them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Report:
    html: Path
    figures: tuple[Path, ...]
    kind: str
    notes: tuple[str, ...]
    incomplete: tuple[str, ...] = ()  # why a sweep's results are partial (missing or failed cells)


def make_report(run_dir: str | Path, out_dir: str | Path | None = None, baseline: str | None = None) -> Report:
    """Write `report.html` and the PNG figures into `out_dir` (default `run_dir/report`). A sweep's
    comparison figures are ratios to `baseline` (a policy label or name; default the grid's first)."""
    from experiments.report.html import write_html
    from experiments.report.load import load
    from experiments.report.plots import all_figures

    data = load(run_dir)
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "report"
    figures = all_figures(data, out, baseline)
    page = write_html(data, figures, out / "report.html")
    return Report(page, tuple(p for _, p in figures), data.kind, tuple(data.notes), tuple(data.incomplete))
