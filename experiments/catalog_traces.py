"""A catalog grid's traces: each entry a synth spec, a file, or a file under the shared data (`shared`)
with a `fallback` synth spec that runs, labelled `[synthetic fallback …]`, when the file is absent.

`resolve_traces(experiment, grid, size)` gives the entries the runner gets; `trace_table` and
`trace_name` are the one rule for how an entry reads (a string is a synth spec or a file; its name is
the given one, else the spec or the file's stem; its group the given one, else its name), which
`experiments.spec` also uses to know the rows a figure can have.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from cosim.errors import InputError

if TYPE_CHECKING:
    from experiments.spec import Experiment

TRACE_KEYS = ("shared", "synth", "path", "name", "group", "fallback")
#: where the shared data lives unless COSIM_SHARED_DATA says otherwise (the checkout's sibling)
DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


@dataclass(frozen=True)
class TraceEntry:
    """One trace of a grid: `spec` (synth spec or file path) as the runner gets it."""

    name: str
    group: str
    spec: str
    path: Path | None = None
    fallback: bool = False  # the shared file was absent: `spec` is the synthetic stand-in



def shared_data_dir() -> Path:
    """The shared data folder as every other reader finds it (`cosim.paths.shared_data_dir`); where
    there is none and `$COSIM_SHARED_DATA` is not set, the checkout's sibling, whose absence makes
    the shared traces fall back to their synth specs (labelled). A `$COSIM_SHARED_DATA` that
    names no folder is an error, not a fallback."""
    from cosim import paths

    try:
        return paths.shared_data_dir()
    except InputError:
        if os.environ.get(paths.ENV, "").strip():
            raise
        return DEFAULT_SHARED


def trace_table(v: Any) -> Any:
    """A grid's trace entry as a table: a string is a synth spec (`synth:`, `dally:`, `aryl:`) or a file."""
    return ({"synth": v} if v.startswith(("synth:", "dally:", "aryl:")) else {"path": v}) if isinstance(v, str) else v


def trace_name(v: Mapping[str, Any], kind: str, spec: str) -> tuple[str, str]:
    """(name, group) of a trace table: the given ones, else the synth spec or the file's stem."""
    name = v.get("name", Path(spec).stem if kind != "synth" else spec)
    return name, v.get("group", name)


def resolve_traces(experiment: Experiment, grid: str, size: str, shared: Path | None = None) -> list[TraceEntry]:
    """The grid's traces at `size`; shared files fall back to their synth spec when absent."""
    shared = shared_data_dir() if shared is None else Path(shared)
    src = experiment.source
    values = experiment.grid(grid, size).get("traces")
    if not isinstance(values, list) or not values:
        raise InputError.at(src, field=f"grids.{grid}.traces ({size})", expected="a non-empty list of traces",
                            got=values)
    out: list[TraceEntry] = []
    for i, v in enumerate(values):
        where = f"grids.{grid}.traces[{i}] ({size})"
        v = trace_table(v)
        if not isinstance(v, dict):
            raise InputError.at(src, field=where, expected="a synth spec, a file or a table", got=v)
        unknown = sorted(set(v) - set(TRACE_KEYS))
        if unknown:
            raise InputError.at(src, field=f"{where}.{unknown[0]}", expected=f"one of {', '.join(TRACE_KEYS)}",
                                got=unknown[0])
        kinds = [k for k in ("shared", "synth", "path") if k in v]
        if len(kinds) != 1:
            raise InputError.at(src, field=where, expected="exactly one of shared, synth, path", got=kinds)
        kind, spec = kinds[0], v[kinds[0]]
        if not isinstance(spec, str) or not spec:
            raise InputError.at(src, field=f"{where}.{kind}", expected="a non-empty string", got=spec)
        name, group = trace_name(v, kind, spec)
        if kind == "synth":
            out.append(TraceEntry(name, group, spec))
            continue
        path = (shared / spec) if kind == "shared" else Path(spec)
        if path.is_file():
            out.append(TraceEntry(name, group, str(path), path))
        elif kind == "shared" and isinstance(v.get("fallback"), str):
            fb = v["fallback"]
            out.append(TraceEntry(f"{name} [synthetic fallback {fb}]", f"{group} [synthetic]", fb, None, True))
        else:
            raise InputError.at(src, field=where, expected=f"an existing file ({path})" +
                                (" or a fallback synth spec" if kind == "shared" else ""), got=spec)
    labels = [t.name for t in out]
    if len(set(labels)) != len(labels):
        raise InputError.at(src, field=f"grids.{grid}.traces ({size})", expected="distinct trace names", got=labels)
    return out
