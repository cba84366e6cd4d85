"""Reading a user's TOML file with errors that name the file (one way for every layer)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from cosim.errors import InputError


def read_toml(path: str | os.PathLike, what: str = "TOML file") -> dict:
    """Parse `path`; a missing file or bad TOML is an `InputError` naming the file and `what`."""
    p = Path(path)
    try:
        return tomllib.loads(p.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise InputError.at(p, expected=f"an existing {what}") from None
    except UnicodeDecodeError as exc:
        raise InputError.at(p, expected=f"a UTF-8 {what}", detail=f"undecodable byte at offset {exc.start}") from None
    except OSError as exc:
        raise InputError.at(p, expected=f"a readable {what}", detail=exc.strerror or str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError.at(p, expected="valid TOML", detail=str(exc)) from None


def check_utf8(path: str | os.PathLike, what: str = "TOML file") -> None:
    """Fail in one line if `path` is readable but not UTF-8 (for readers that call `read_text()`)."""
    p = Path(path)
    try:
        p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.at(p, expected=f"a UTF-8 {what}", detail=f"undecodable byte at offset {exc.start}") from None
    except OSError:
        return  # missing/unreadable: the reader reports it in its own words
