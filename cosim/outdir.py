"""Output folders that one writer owns: checked before the run, locked while it runs.

Two `cosim simulate --out D` (or two sweeps into D) running at once used to interleave their
files (one run's summary beside the other's jobs), and a rerun into an old folder left stale
policy folders beside the new ones. `claim_out_dir` settles both before any work starts:

- `D` naming an existing file, or a folder that cannot be created/written, is a one-line
  `InputError` (not a `NotADirectoryError` after the whole simulation);
- a non-empty `D` is refused unless `overwrite` (clear it first) or `resume` (a sweep going on);
  `overwrite` only clears a folder that looks like cosim output, never an arbitrary one;
- an exclusive `flock` on `D/.cosim.lock` is held until the returned lock is released (the OS
  drops it if the process dies), so a second writer fails at once, naming the holder's pid.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from cosim.errors import InputError

LOCK_NAME = ".cosim.lock"
#: names that mark a folder as cosim output (safe to clear with --overwrite)
OUTPUT_MARKERS = ("summary.parquet", "config.json", "sweep.json", "cells", "report.html", LOCK_NAME)


class OutDirLock:
    """The held lock of one output folder; `release()` (or leaving the `with` block) frees it."""

    def __init__(self, path: Path, fd: int | None):
        self.path, self._fd = path, fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                import fcntl

                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "OutDirLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _entries(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.name != LOCK_NAME]


def _lock(path: Path, option: str) -> OutDirLock:
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks; the emptiness check still applies
        return OutDirLock(path, None)
    lock_file = path / LOCK_NAME
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise InputError.at(path, field=option, expected="a writable folder", detail=exc.strerror) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise InputError.at(path, field=option, expected="a folder no other cosim run is writing",
                                detail=f"in use by process {holder}; wait for it or choose another folder") from None
        raise InputError.at(path, field=option, expected="a lockable folder", detail=exc.strerror) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return OutDirLock(path, fd)


def claim_out_dir(path: str | os.PathLike, *, overwrite: bool = False, resume: bool = False,
                  option: str = "--out") -> OutDirLock:
    """Create/check/lock the output folder `path` (see the module docstring); raises InputError."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError.at(p, field=option, expected="a folder, not an existing file")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError.at(p, field=option, expected="a folder that can be created",
                            detail=exc.strerror or str(exc)) from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise InputError.at(p, field=option, expected="a writable folder", detail="permission denied")
    lock = _lock(p, option)
    try:
        entries = _entries(p)
        if entries and not resume:
            if not overwrite:
                raise InputError.at(p, field=option, expected="an empty or new folder",
                                    detail=f"it holds {len(entries)} entries from an earlier run; add --overwrite "
                                    "to replace them or choose another folder")
            if not any((p / m).exists() for m in OUTPUT_MARKERS if m != LOCK_NAME):
                raise InputError.at(p, field=option, expected="a cosim output folder to overwrite",
                                    detail="it holds no summary.parquet, config.json or sweep.json; "
                                    "refusing to clear it")
            for e in entries:
                if e.is_dir() and not e.is_symlink():
                    shutil.rmtree(e)
                else:
                    e.unlink()
    except BaseException:
        lock.release()
        raise
    return lock


def check_out_path(path: str | os.PathLike, option: str = "-o", *, folder: bool = False) -> Path:
    """Check, before any work, that `path` can be written as a file (or, `folder`, created as a
    folder): it is not the other kind of thing already, and its nearest existing parent is a
    writable folder, not a file. Creates nothing; raises a one-line InputError."""
    p = Path(path)
    kind = "a folder" if folder else "a file"
    if p.exists() and p.is_dir() != folder:
        raise InputError.at(p, field=option, expected=f"{kind}, not an existing {'file' if folder else 'folder'}")
    parent = p if folder and p.exists() else p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError.at(p, field=option, expected=f"{kind} path whose parent folders are folders",
                            detail=f"{parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError.at(p, field=option, expected=f"{kind} path in a writable folder",
                            detail=f"{parent}: permission denied")
    return p
