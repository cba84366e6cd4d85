"""On-disk cache of assembled trace files: loaded and assembled once, then read back as Arrow.

`cosim simulate --trace FILE` loads the file (`traces.load`: detection, the format's reader,
`traces.io.normalize`) and assembles it (`traces.workload.assemble`: models, batches, GPU bounds,
work) on every run. For the 160-job Pollux workloads that is a few milliseconds of work, but
it is pandas work: importing pandas cost ≈ 0.2 s CPU of a cached run's ≈ 1 s. The assembled table is therefore kept as an Arrow IPC file and read back
with pyarrow alone; the run gets the same columns either way (`columns`: the table is converted
to numpy columns on a miss too, so both paths hand `simcore.prepare.build_jobs` the same arrays).

Where: `$COSIM_TRACE_CACHE_DIR` if set (tests point it at a temporary folder), else
`$XDG_CACHE_HOME/cosim/traces` (default `~/.cache/cosim/traces`, beside the measured tables and
numba's kernels, `cosim.numba_cache.user_cache_dir`), else `<tmp>/cosim-traces-<user>`; when no
folder can be written, nothing is cached.

An entry is named by a SHA-256 of `FORMAT_VERSION`, the seed, the pandas, pyarrow and numpy
versions and the absolute path, size and modification time (ns) of the trace file and of every
source of the loaders (`traces/**/*.py`, `traces/data/training_runs.json`), so an edited trace,
an edited loader or another seed is a different entry (old entries, a few kB each, stay until the
folder is cleared). An unreadable entry is rebuilt. A load that logged a warning (rows excluded,
jobs without a training run) is not cached, so every run repeats its warnings; the loaders' info
lines (`-v`) are logged on the first load only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from cosim.errors import CosimError

log = logging.getLogger(__name__)

ENV = "COSIM_TRACE_CACHE_DIR"
#: bump when what an entry holds, or how it is read back, changes
FORMAT_VERSION = 2
#: the loader's report (`traces.io.LoadReport`: rows read, kept, excluded by reason) in an entry's schema metadata
REPORT_KEY = b"cosim.load_report"
_PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path | None:
    """The cache folder (module docstring), created; None when none can be written."""
    from cosim.numba_cache import user_cache_dir

    return user_cache_dir("traces", (ENV,))


def _versions() -> str:
    from cosim.arrow_columns import pandas_version

    return f"pandas={pandas_version()},pyarrow={pa.__version__},numpy={np.__version__}"


def _sources() -> list[Path]:
    return sorted(_PACKAGE.rglob("*.py")) + [_PACKAGE / "data" / "training_runs.json"]


def entry_key(path: Path, seed: int, options: str = "") -> str:
    """SHA-256 naming the entry of trace `path` assembled with `seed` and assembly `options`
    (text naming non-default `traces.workload.assemble` options; "" for the defaults)."""
    from cosim.numba_cache import files_stamp

    opts = f"\0options={options}" if options else ""
    return files_stamp(f"cosim-trace-cache v{FORMAT_VERSION}\0seed={int(seed)}{opts}\0{_versions()}\n",
                       [Path(path).absolute(), *_sources()])


class Columns(dict):
    """name → numpy array, with the `attrs` a DataFrame of the same table carries (the loader's
    `load_report`), so the runner reads what a loader excluded from either."""

    def __init__(self, cols: dict, attrs: dict | None = None) -> None:
        super().__init__(cols)
        self.attrs = dict(attrs or {})


def _report_of(table: pa.Table) -> dict:
    import json

    blob = (table.schema.metadata or {}).get(REPORT_KEY)
    return {"load_report": json.loads(blob)} if blob else {}


def columns(table: Any) -> dict[str, np.ndarray]:
    """A canonical job table (pyarrow Table, DataFrame, or already columns) as name → numpy array.

    Numbers keep their type, except that an integer column with missing values becomes float64
    with NaN; strings are object arrays with NaN where missing (pandas' `str` missing value), so
    code reading the columns sees what it saw in the DataFrame (`to_numpy`)."""
    if isinstance(table, dict):
        return table
    out: dict[str, np.ndarray] = {}
    if isinstance(table, pa.Table):
        from cosim.arrow_columns import to_numpy

        return {name: to_numpy(col) for name, col in zip(table.column_names, table.columns)}
    for name in table.columns:  # a DataFrame (callers that build their own table)
        s = table[name]
        kind = getattr(s.dtype, "kind", "O")
        if kind in "iub" and s.isna().any():  # a nullable integer/boolean column with missing values
            out[str(name)] = s.to_numpy(dtype=np.float64 if kind != "b" else object, na_value=np.nan)
        elif kind in "iufb":
            out[str(name)] = s.to_numpy(dtype=getattr(s.dtype, "numpy_dtype", s.dtype))
        else:
            out[str(name)] = s.to_numpy(dtype=object)
    return out


class _Warned(logging.Handler):
    """Notes whether a record at WARNING or above passed through the loaders' loggers."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.warned = False

    def emit(self, record: logging.LogRecord) -> None:
        self.warned = True


def load(path: Path, seed: int, build: Callable[[], Any], options: str = "") -> Columns:
    """The columns of trace `path` assembled with `seed` (and `options`, `entry_key`): from the cache when an entry exists,
    else `build()` (the DataFrame `traces.load` + `traces.workload.assemble` make), stored for
    the next run unless it logged a warning. Errors of `build` (an `InputError`) propagate and
    store nothing."""
    folder = cache_dir()
    entry = folder / f"{entry_key(path, seed, options)}.arrow" if folder is not None else None
    if entry is not None and entry.is_file():
        try:
            with pa.memory_map(str(entry)) as src:
                table = pa.ipc.open_file(src).read_all()
            log.info("%s: assembled table read from the trace cache (%s)", path, entry)
            return Columns(columns(table), _report_of(table))
        except (OSError, pa.ArrowInvalid, ValueError) as exc:
            log.info("trace cache: unreadable entry %s (%s); rebuilding it", entry, exc)
    watch = _Warned()
    traces_log = logging.getLogger("traces")
    traces_log.addHandler(watch)
    try:
        df = build()
    finally:
        traces_log.removeHandler(watch)
    table = pa.Table.from_pandas(df, preserve_index=False)
    report = df.attrs.get("load_report")
    if report:
        import json

        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               REPORT_KEY: json.dumps(report, sort_keys=True).encode()})
    if entry is not None and not watch.warned:
        _write(entry, table)
    return Columns(columns(table), _report_of(table))


def _write(entry: Path, table: pa.Table) -> None:
    from cosim.atomic import atomic_path

    try:
        with atomic_path(entry) as tmp:
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
    except (OSError, CosimError) as exc:  # a full or read-only disk, a file for a folder: the run goes on
        log.info("trace cache: could not write %s (%s)", entry, exc)
