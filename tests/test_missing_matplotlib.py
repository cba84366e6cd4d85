"""Without matplotlib, what needs it says so in one line with the install hint, before any work."""

from __future__ import annotations

import sys
import time

from typer.testing import CliRunner

from cli.app import app
from cosim.plotting import INSTALL_HINT


def test_validate_plot_without_matplotlib_is_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, ["validate", "--plot", str(tmp_path / "v.png"), "--profiles", str(tmp_path)])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert lines == [f"error: cosim validate --plot needs matplotlib: {INSTALL_HINT}"]
    assert INSTALL_HINT == "pip install matplotlib"  # the package itself, not an extra of a same-named project
    assert time.perf_counter() - t0 < 10  # refused before fitting anything
    assert not (tmp_path / "v.png").exists()
