"""Trace formats: one loader per raw format, chosen by name or detected from the file's content.

Each format registers a `TraceFormat` in `FORMATS` (a `cosim.registry.Registry`) with a
`sniff(head, header)` test and a `read(path, report)` function returning canonical columns.
`load_with_report` runs the reader, then `traces.io.normalize`, and returns the table with a
`LoadReport` counting the rows that were valid but unusable (zero GPUs, never started …).

Detection looks only at the content (never the file name): Parquet magic bytes → the canonical
table; a JSON list whose records have ``attempts``/``jobid`` → Philly, ``max_parallelism`` /
``time_per_iteration`` → SenseTime; a CSV whose header holds a format's characteristic columns.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from cosim.errors import InputError
from cosim.registry import Registry
from traces.io import LoadReport, normalize, read_jobs

log = logging.getLogger(__name__)

_HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class TraceFormat:
    """A raw trace format: how to recognise it and how to read it."""

    name: str
    sniff: Callable[[str, frozenset[str] | None], bool]  # (text head, CSV header columns or None)
    #: canonical columns (+ `_row`: source position of each kept row; attrs["time_origin_s"]:
    #: epoch seconds of submit_time 0 when the source has dates)
    read: Callable[[Path, LoadReport], pd.DataFrame]
    help: str = ""


FORMATS: Registry[TraceFormat] = Registry("trace format")


def register(fmt: TraceFormat) -> TraceFormat:
    return FORMATS.register(fmt.name, help=fmt.help)(fmt)


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(_HEAD_BYTES)
    except FileNotFoundError:
        raise InputError.at(path, expected="an existing file") from None
    except IsADirectoryError:
        raise InputError.at(path, expected="a file, not a directory") from None
    except OSError as exc:
        raise InputError.at(path, expected="a readable file", detail=exc.strerror) from None


def detect(path: str | os.PathLike) -> str:
    """The name of the format of `path`, from its content; InputError if none matches."""
    p = Path(path)
    raw = _head(p)
    if raw.startswith(b"PAR1"):
        return "parquet"
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    header = None
    if not text.lstrip().startswith(("[", "{")):
        first = text.splitlines()[0] if text.strip() else ""
        header = frozenset(c.strip().strip('"') for c in first.split(","))
    for name in FORMATS.names():
        if name != "parquet" and FORMATS.get(name).sniff(text, header):
            return name
    raise InputError.at(p, expected="a known trace format (" + ", ".join(FORMATS.names()) + ")",
                        detail="unknown format: pass --format to choose one")


def load_with_report(path: str | os.PathLike, format: str = "auto",
                     **options: object) -> tuple[pd.DataFrame, LoadReport]:
    """Load any supported trace file as the canonical job table, with what was excluded and why.

    `options` go to the format's reader (e.g. ``duration_mode="sum"``, ``gpus_from="first"`` for
    philly-json); an option the reader does not take is an InputError.
    """
    p = Path(path)
    name = detect(p) if format == "auto" else FORMATS.get(format).name
    report = LoadReport(source=str(p), format=name)
    reader = FORMATS.get(name).read
    if options:
        import inspect

        known = set(inspect.signature(reader).parameters) - {"path", "report"}
        for key in options:
            if key not in known:
                raise InputError.at(field=key, expected=f"an option of the {name} reader: "
                                                        f"{', '.join(sorted(known)) or 'none'}")
    raw = reader(p, report, **options)
    rows = raw.pop("_row").to_numpy() if "_row" in raw.columns else None
    jobs = normalize(raw, source=str(p), row_numbers=rows)
    report.rows_kept = len(jobs)
    if report.excluded:
        log.info("%s: %s", p, report.summary())
    jobs.attrs.update(raw.attrs)  # e.g. time_origin_s: wall-clock seconds of submit_time 0
    jobs.attrs["load_report"] = report.to_dict()
    return jobs, report


def load(path: str | os.PathLike, format: str = "auto", **options: object) -> pd.DataFrame:
    """Load any supported trace file as the canonical job table (report in ``df.attrs``)."""
    return load_with_report(path, format, **options)[0]


def _read_parquet(path: Path, report: LoadReport) -> pd.DataFrame:
    df = read_jobs(path)
    report.rows_read = len(df)
    return df


register(TraceFormat("parquet", lambda text, header: False, _read_parquet,
                     "the canonical job table written by `cosim traces convert`"))

# the loaders register themselves on import
from traces.formats import helios, philly, sensetime, workloads  # noqa: E402,F401
