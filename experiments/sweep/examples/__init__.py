"""Example sweep files shipped with the package (`cosim sweep --example NAME`; docs/sweeps.md)."""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent


def example_names() -> list[str]:
    """The names of the shipped examples, sorted."""
    return sorted(p.stem for p in DIR.glob("*.toml"))


def example_text(name: str) -> str:
    """The TOML text of example `name` (KeyError when there is none)."""
    path = DIR / f"{name}.toml"
    if name not in example_names():
        raise KeyError(name)
    return path.read_text(encoding="utf-8")
