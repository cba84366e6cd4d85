"""Where the measured data sets and the source checkout are, for installed and checkout runs alike.

The data (`../shared/data` beside a checkout: profiles/, traces/, models/) is never installed, so a
path relative to the package would point inside site-packages after a plain `pip install .`. It is
found here instead, in this order:

1. `$COSIM_SHARED_DATA` (the folder holding profiles/, traces/, models/);
2. `../shared/data` beside the source checkout cosim is imported from (editable installs, tests);
3. `./shared/data` or `../shared/data` from the working directory (a plain install run in or next
   to the checkout).

`shared_data_dir()` returns the first that exists, or raises an `InputError` saying in one line
how to point cosim at it — never a path inside site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path

from cosim.errors import InputError

ENV = "COSIM_SHARED_DATA"
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the checkout, or site-packages when installed


def source_checkout() -> Path | None:
    """The source checkout cosim is imported from (it has pyproject.toml), or None for a plain install."""
    return _PACKAGE_ROOT if (_PACKAGE_ROOT / "pyproject.toml").is_file() else None


def _candidates() -> list[Path]:
    out = []
    env = os.environ.get(ENV, "").strip()
    if env:
        out.append(Path(env).expanduser())
    repo = source_checkout()
    if repo is not None:
        out.append(repo.parent / "shared" / "data")
    cwd = Path.cwd()
    out += [cwd / "shared" / "data", cwd.parent / "shared" / "data"]
    return out


def shared_data_dir(sub: str | None = None, *, option: str | None = None) -> Path:
    """The shared data folder (or its `sub` folder, e.g. "profiles"); InputError saying how to set it."""
    env = os.environ.get(ENV, "").strip()
    for base in _candidates():
        p = base / sub if sub else base
        if p.is_dir():
            return p
        if env and base == Path(env).expanduser():  # an explicit setting that is wrong is an error, not a fallback
            raise InputError.at(p, field=ENV, expected=f"a folder holding {sub or 'profiles/, traces/, models/'}")
    hint = f"pass {option} DIR, or " if option else ""
    raise InputError(f"measured data{f' ({sub}/)' if sub else ''} not found: {hint}set {ENV}=/path/to/shared/data "
                     "(the folder with profiles/, traces/, models/), or run from a checkout with ../shared beside it")


def shared_file(rel: str, what: str) -> Path:
    """A file of the shared data folder by its path inside it (`rel`, e.g.
    "traces/ones/job_history.csv"), found as `shared_data_dir` finds the folder: the same file
    whatever the working directory. A missing file is an `InputError` naming it and `what` it is."""
    parts = Path(rel)
    p = shared_data_dir(str(parts.parent)) / parts.name if parts.parent != Path(".") else shared_data_dir() / rel
    if not p.is_file():
        raise InputError.at(p, expected=what)
    return p


def for_display(spec: str) -> str:
    """`spec` as a report prints it, naming no folder of the machine that wrote it: a file inside
    the shared data folder as `../shared/data/<path inside it>` (where cosim looks beside a
    checkout; `$COSIM_SHARED_DATA` moves it), a file shipped with cosim (a catalog's cluster
    file) as its path inside the package root, e.g. `experiments/catalog/aryl/x.toml`; anything
    else as given."""
    try:
        path = Path(spec).resolve()
    except (OSError, ValueError):
        return spec
    try:
        return f"../shared/data/{path.relative_to(shared_data_dir().resolve()).as_posix()}"
    except (InputError, ValueError, OSError):
        pass
    try:
        return path.relative_to(_PACKAGE_ROOT).as_posix() if Path(spec).is_absolute() else spec
    except ValueError:
        return spec
