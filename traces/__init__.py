"""Trace sources → one canonical job table (see `traces.schema`).

`load(path, format="auto")` reads any supported raw trace (Philly JSON/CSV, Helios, SenseTime,
Pollux/Sia/Ares workloads, ONES) or a canonical Parquet file; `traces.io` reads and writes the
canonical table; `traces.sample`, `traces.workload` and `traces.synth` build workloads from it.
"""

from __future__ import annotations

import cosim  # noqa: F401  first: OpenBLAS' kernels and threads are set before numpy loads (cosim.blas)

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def load(path: str | os.PathLike, format: str = "auto", **options: object) -> "pd.DataFrame":
    """Any supported trace file → the canonical job table (`traces.formats.load`)."""
    from traces.formats import load as _load

    return _load(path, format, **options)
