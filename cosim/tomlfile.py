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
        return tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise InputError.at(p, expected=f"an existing {what}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError.at(p, expected="valid TOML", detail=str(exc)) from None
