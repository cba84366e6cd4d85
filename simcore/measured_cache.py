"""On-disk cache of the measured tables: built once from the CSVs, then loaded as numpy arrays.

Table mode (`--perf measured*`) and goodput progress (`--progress goodput`) read the Pollux/Sia
sets on every run: per application the placements/scalability step times, their per-placement
means, the 3-D point set and its Delaunay triangulation (`simcore.measured_interp`), and the
gradient statistics of its `validation-<b>.csv` files. Building those (pandas group-bys, CSV
parsing, qhull) cost about 2.5 s of a 4-s `cosim simulate`; loading the arrays back costs a few
milliseconds and imports neither pandas nor scipy.

Where: `$COSIM_MEASURED_CACHE_DIR` if set (tests point it at a temporary folder), else
`$XDG_CACHE_HOME/cosim/measured` (default `~/.cache/cosim/measured`, beside numba's
`~/.cache/cosim/numba`, `cosim.numba_cache`), else `<tmp>/cosim-measured-<user>` when those
cannot be written. When no folder can be written the tables are built in memory, as before.

An entry is one file per (kind, source folder, name) — e.g. the placements of `cifar10` on
`aws` — named by a hash of its first source file's absolute path, and holding a *stamp*: the
SHA-256 of `FORMAT_VERSION` and every source file's absolute path, size and modification time
(ns), or "absent" for an optional file that does not exist. An entry is used only when its stamp
equals the sources' stamp now and all its arrays load with the expected names; anything else —
a stale stamp, a truncated or corrupt file, a missing array, a shape the reader rejects — is
rebuilt from the CSVs and rewritten (atomically: `cosim.atomic.atomic_path`, so concurrent runs
never see half a file). A changed CSV therefore changes its stamp and is re-read; bump
`FORMAT_VERSION` whenever what is stored, or how it is computed, changes.

An entry's layout (`_write`, `_read`): its JSON header's length (8 bytes), the header — the
stamp, and each array's name, dtype, shape and offset — then the arrays' bytes, each at a
64-byte aligned offset; numeric, boolean or fixed-width string arrays only (nothing is
unpickled). A load is one file read and a view per array, ~0.2 ms an entry. (The `.npz` it
replaces — a zip of `.npy` files — took ~1.5 ms an entry: the zip's member reads and CRCs
and an `ast` parse of each array's header; the Pollux workloads' `cosim simulate` loads 10
entries, 15 ms of its ~0.2 s after imports.)
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

import numpy as np

log = logging.getLogger(__name__)

ENV = "COSIM_MEASURED_CACHE_DIR"
#: bump when the stored arrays or the way they are computed change (old entries are then rebuilt)
FORMAT_VERSION = 2
#: an entry starts with its header's length in bytes (8, little-endian), then the JSON header
_HEAD_LEN_BYTES = 8
_ALIGN_BYTES = 64  # array offsets: aligned arrays, as numba's kernels are compiled for
T = TypeVar("T")


def cache_dir() -> Path | None:
    """The cache folder (see the module docstring), created; None when none can be written."""
    from cosim.numba_cache import user_cache_dir

    return user_cache_dir("measured", (ENV,))


def stamp(sources: Iterable[Path]) -> str:
    """SHA-256 of `FORMAT_VERSION` and each source's absolute path, size and mtime (ns) or 'absent'."""
    from cosim.numba_cache import files_stamp

    return files_stamp(f"cosim-measured-cache v{FORMAT_VERSION}\n", sources)


def entry_path(folder: Path, kind: str, name: str, sources: list[Path]) -> Path:
    """The entry file of `kind`/`name` built from `sources` (named by the first source's path)."""
    where = hashlib.sha256(str(Path(sources[0]).absolute()).encode()).hexdigest()[:16]
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{kind}-{name}")
    return folder / f"{safe}-{where}.arrays"


def _aligned(nbytes: int) -> int:
    return -(-nbytes // _ALIGN_BYTES) * _ALIGN_BYTES


def _read(path: Path, want: str, fields: Iterable[str]) -> dict[str, np.ndarray] | None:
    """The entry's arrays when its stamp is `want` and every field is there, else None. The
    arrays are writable views of one buffer read from the file (module docstring: layout)."""
    try:
        buf = np.fromfile(path, np.uint8)  # one read, into numpy's (aligned, writable) memory
        n = int.from_bytes(buf[:_HEAD_LEN_BYTES].tobytes(), "little")
        head = json.loads(buf[_HEAD_LEN_BYTES:_HEAD_LEN_BYTES + n].tobytes())
        if head["stamp"] != want:
            return None
        data = _aligned(_HEAD_LEN_BYTES + n)  # array offsets count from here
        out = {}
        for name, dtype, shape, offset in head["arrays"]:
            dt = np.dtype(dtype)
            start, size = data + offset, dt.itemsize * math.prod(shape)
            if dt.hasobject or offset % _ALIGN_BYTES or start + size > buf.shape[0]:
                raise ValueError(f"array {name!r}: object dtype, misaligned or past the end of the entry")
            out[name] = buf[start:start + size].view(dt).reshape(tuple(shape))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:  # JSONDecodeError is a ValueError
        log.info("measured cache: unreadable entry %s (%s); rebuilding it", path, exc)
        return None
    if any(f not in out for f in fields):
        return None
    return out


def _write(path: Path, want: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write the entry (module docstring: layout) atomically; a disk that refuses is logged."""
    from cosim.atomic import atomic_path

    parts = {name: np.asarray(a) for name, a in arrays.items()}
    table, offset = [], 0
    for name, a in parts.items():
        table.append([name, a.dtype.str, list(a.shape), offset])
        offset += _aligned(a.nbytes)
    head = json.dumps({"stamp": want, "arrays": table}).encode()
    data = _aligned(_HEAD_LEN_BYTES + len(head))
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            fh.write(len(head).to_bytes(_HEAD_LEN_BYTES, "little") + head)
            for (_, _, _, o), a in zip(table, parts.values()):
                fh.seek(data + o)  # the gaps read back as zeros
                fh.write(a.tobytes())  # C order, as `_read` views it
    except OSError as exc:  # a full or read-only disk: the run goes on with the built arrays
        log.info("measured cache: could not write %s (%s)", path, exc)
        return
    # the same entry in the first format (FORMAT_VERSION 1: an .npz beside it) is never read again
    path.with_suffix(".npz").unlink(missing_ok=True)


def load_or_build(kind: str, name: str, sources: list[Path], fields: Iterable[str],
                  build: Callable[[], Mapping[str, np.ndarray]], parse: Callable[[dict[str, np.ndarray]], T]) -> T:
    """`parse` of the arrays `build()` makes from `sources`, from the cache when a valid entry exists.

    `fields`: the arrays an entry must hold. `parse(arrays)` turns them into the object the caller
    wants and raises `ValueError`/`KeyError`/`IndexError`/`TypeError` on arrays it cannot use: a
    cached entry it rejects is rebuilt, never trusted. Errors of `build` (an `InputError` for a bad
    CSV) propagate and write nothing."""
    fields = tuple(fields)
    want = stamp(sources)
    folder = cache_dir()
    path = entry_path(folder, kind, name, sources) if folder is not None else None
    if path is not None:
        got = _read(path, want, fields)
        if got is not None:
            try:
                return parse(got)
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                log.info("measured cache: rejected entry %s (%s); rebuilding it", path, exc)
    arrays = {k: np.asarray(v) for k, v in build().items()}
    if path is not None:
        _write(path, want, arrays)
    return parse(arrays)
