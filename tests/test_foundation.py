"""The base package: errors print one line with exit code 2, registry lists valid names, writes are atomic."""

from __future__ import annotations

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from cosim.atomic import read_metadata, write_parquet
from cosim.errors import InputError, UnknownNameError
from cosim.registry import Registry
from cosim.units import parse_bytes, parse_seconds


def test_input_error_names_file_row_field():
    e = InputError.at("t.csv", row=7, field="num_gpus", expected="a positive integer", got="x")
    assert str(e.format_message()) == "t.csv: row 7: field 'num_gpus': expected a positive integer, got 'x'"
    assert e.exit_code == 2


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x85", "\u2028", "\u2029"])
def test_error_quoting_a_line_break_stays_one_line(brk):
    """A key from the user's file may hold a line break; the message shows it escaped, on one line."""
    e = InputError.at("thr.json", row=f"v100/a{brk}b", expected="a key like \"('m', 1)\"")
    assert len(e.format_message().splitlines()) == 1
    assert e.format_message() == str(e)
    assert brk.encode("unicode_escape").decode() in e.format_message()


def test_registry_unknown_name_lists_valid():
    reg: Registry[int] = Registry("policy")
    reg.register("fifo")(1)
    reg.register("sjf")(2)
    assert reg.get("sjf") == 2
    with pytest.raises(UnknownNameError, match="valid: fifo, sjf"):
        reg.get("nope")
    with pytest.raises(ValueError):
        reg.register("fifo")(3)


def test_atomic_parquet_roundtrip_and_failure_leaves_nothing(tmp_path):
    t = pa.table({"a": [1, 2]})
    out = write_parquet(t, tmp_path / "x.parquet", {"seed": 3})
    assert read_metadata(out) == {"seed": 3}

    class Boom(Exception):
        pass

    from cosim.atomic import atomic_path

    with pytest.raises(Boom):
        with atomic_path(tmp_path / "y.parquet") as tmp:
            tmp.write_text("partial")
            raise Boom
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.parquet"]


@pytest.mark.parametrize(
    "text,value", [("4096", 4096), ("100MB", 1e8), ("1GiB", 2**30), ("8B", 8), ("1.5kb", 1500)]
)
def test_parse_bytes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text,value", [("8h", 28800), ("30m", 1800), ("45", 45), ("2d", 172800)])
def test_parse_seconds(text, value):
    assert parse_seconds(text) == value


def test_parse_rejects_garbage():
    with pytest.raises(InputError, match="field 'size'"):
        parse_bytes("lots")
    with pytest.raises(InputError):
        parse_seconds("-3")


def test_cli_version_and_help():
    from cli.app import app

    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and "cosim 0.1.0" in r.output
    r = CliRunner().invoke(app, ["--help"])
    assert r.exit_code == 0 and "Usage" in r.output


def test_cli_turns_cosim_error_into_one_line_exit_2():
    """Every registered command is guarded: a CosimError never reaches the user as a traceback."""
    import typer

    from cli.app import _guard_all

    app = typer.Typer()

    @app.command()
    def boom():
        raise InputError.at("f.csv", row=3, field="x", expected="a number", got="y")

    @app.command()
    def ok():
        typer.echo("fine")

    _guard_all(app)
    r = CliRunner().invoke(app, ["boom"])
    assert r.exit_code == 2
    assert "error: f.csv: row 3: field 'x': expected a number, got 'y'" in r.output
    assert "Traceback" not in r.output
