"""Atomic writes: output appears whole under its final name or not at all.

Everything cosim writes goes to a temporary sibling first and is renamed into place, so a
crash, a bad input found half-way or a killed sweep never leaves a truncated file that
looks complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

if TYPE_CHECKING:  # pyarrow(.parquet) is imported where a Parquet file is written or read: text writes
    import pyarrow as pa  # and runs that write nothing (a plain `cosim simulate`) do not load it


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it to `path` only if the block succeeds."""
    from cosim.errors import InputError

    final = Path(path)
    if final.is_dir():
        raise InputError.at(final, expected="a file path, not an existing folder")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    except (FileExistsError, NotADirectoryError):  # a parent is a file
        raise InputError.at(final, expected="a path whose parent folders are folders, not files") from None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(final)) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp_path, final)
    except OSError as exc:  # disk full, a vanished folder …: name the file the user asked for, not the temporary one
        if exc.filename is None or str(exc.filename) == str(tmp_path) or str(exc.filename2) == str(final):
            raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from None
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_parquet(table: pa.Table, path: str | os.PathLike, metadata: Mapping[str, object] | None = None,
                  columns: Mapping[str, tuple[str, str]] | None = None) -> Path:
    """Write `table` atomically, deterministically (no timestamps), with JSON-able metadata.

    Metadata values are stored as JSON strings under `cosim.<key>` in the schema metadata,
    merged with what the table already carries; every column listed in `columns` (the file's own
    glossary: unit, description) or `cosim.columns` gets its `unit` and `description` as field
    metadata.
    """
    import pyarrow.parquet as pq

    table = _with_column_docs(table, columns)
    if metadata:
        meta = dict(table.schema.metadata or {})
        for k, v in metadata.items():
            meta[f"cosim.{k}".encode()] = json.dumps(v, sort_keys=True, default=str).encode()
        table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", write_statistics=True)
    return Path(path)


def _with_column_docs(table: pa.Table, columns: Mapping[str, tuple[str, str]] | None = None) -> pa.Table:
    """Attach each known column's unit and description (`columns`, else `cosim.columns`) as Parquet
    field metadata."""
    import pyarrow as pa

    from cosim.columns import field_metadata

    fields = []
    changed = False
    for f in table.schema:
        doc = field_metadata(f.name, columns)
        if doc is not None:
            f = f.with_metadata({**(f.metadata or {}), **doc})
            changed = True
        fields.append(f)
    if not changed:
        return table
    # the same columns under the documented schema; not `table.cast`, which imports
    # pyarrow.compute (≈ 0.07 s CPU, a tenth of a cached `cosim simulate`) to cast nothing
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def read_metadata(path: str | os.PathLike) -> dict[str, object]:
    """The `cosim.*` metadata of a Parquet file written by `write_parquet`, decoded."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    out: dict[str, object] = {}
    for k, v in meta.items():
        key = k.decode()
        if key.startswith("cosim."):
            out[key[len("cosim."):]] = json.loads(v.decode())
    return out


def write_text(text: str, path: str | os.PathLike) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)
