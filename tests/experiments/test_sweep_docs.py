"""docs/sweeps.md runs as written: every TOML block parses, and one cell of each runs."""

import re
import tomllib
from pathlib import Path

import pytest

from experiments.sweep import parse_sweep
from experiments.sweep.cell import default_runner, run_cell
from experiments.sweep.config import KNOWN_KEYS
from experiments.sweep.examples import example_names, example_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "sweeps.md"
BLOCKS = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_documents_every_key_and_has_examples():
    text = DOC.read_text(encoding="utf-8")
    assert len(BLOCKS) >= 5
    for key in KNOWN_KEYS:
        assert f"| `{key}` |" in text, key


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: tomllib.loads(b)["name"])
def test_each_documented_sweep_runs_one_cell(block, tmp_path):
    cfg = parse_sweep(tomllib.loads(block), source="docs/sweeps.md", base_dir=tmp_path)
    cells = cfg.cells()
    assert cells
    cell = cells[-1]  # the last cell: every axis at its last value
    out = run_cell(cell, cell.trace.spec, str(tmp_path / "out"), default_runner())
    assert out["row"]["status"] == "ok", out["row"]["error"]
    assert out["row"]["finished"] > 0


def test_each_shipped_example_is_the_documented_one():
    documented = {tomllib.loads(b)["name"]: parse_sweep(tomllib.loads(b)) for b in BLOCKS}
    assert set(example_names()) == {"small", "parameters", "contention"}
    for name in example_names():
        cfg = parse_sweep(tomllib.loads(example_text(name)))
        assert [c.cell_id for c in cfg.cells()] == [c.cell_id for c in documented[cfg.name].cells()], name
    assert len(parse_sweep(tomllib.loads(example_text("small"))).cells()) == 24


def test_cli_prints_and_lists_examples_and_help_names_every_key():
    from typer.testing import CliRunner

    from cli.app import app

    runner = CliRunner()
    shown = runner.invoke(app, ["sweep", "--example", "small"])
    assert shown.exit_code == 0 and shown.stdout == example_text("small")
    listed = runner.invoke(app, ["sweep", "--example", "nope"])
    assert listed.exit_code == 2 and all(n in listed.output for n in example_names())
    help_text = " ".join(runner.invoke(app, ["sweep", "--help"], env={"COLUMNS": "200"}).output.split())
    for key in KNOWN_KEYS + ("docs/sweeps.md", "--example"):
        assert key in help_text, key
