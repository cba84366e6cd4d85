"""Where numba keeps its compiled-kernel cache: a per-user folder, never inside the package.

numba's default (`cache=True`) writes `*.nbi`/`*.nbc` files into `__pycache__` beside each
source file. For an installed cosim that is `site-packages/<pkg>/__pycache__`: `pip uninstall`
does not know those files, leaves the folders behind, and an editable install made later is
shadowed by them (Python finds the leftover folder as a namespace package first). So cosim
points numba at a per-user cache instead, before any kernel is decorated:

    $COSIM_NUMBA_CACHE_DIR                  if set (cosim-specific override)
    $NUMBA_CACHE_DIR                        if set (numba's own override, respected)
    $XDG_CACHE_HOME/cosim/numba             otherwise (default ~/.cache/cosim/numba)
    <tmp>/cosim-numba-<user>                when none of those can be written

numba files each source folder under its own sub-folder (folder name + hash of its absolute
path), so an installed copy, an editable checkout and several worktrees never share entries.
`configure()` runs once from `cosim/__init__.py`; every package with numba kernels imports
`cosim` before its kernels, and the value is exported in the environment so worker processes
(sweep pools, Ray) use the same folder.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ENV = "COSIM_NUMBA_CACHE_DIR"


def default_dir() -> Path:
    """The folder numba should use, from the environment (see the module docstring)."""
    for var in (ENV, "NUMBA_CACHE_DIR"):
        value = os.environ.get(var, "").strip()
        if value:
            return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cosim" / "numba"


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def configure() -> Path:
    """Point numba's cache at `default_dir()` (or a temp fallback); returns the folder used."""
    path = default_dir()
    if not _writable(path):
        user = os.environ.get("USER") or str(getattr(os, "getuid", lambda: "user")())
        path = Path(tempfile.gettempdir()) / f"cosim-numba-{user}"
        path.mkdir(parents=True, exist_ok=True)
    value = str(path.resolve())
    os.environ["NUMBA_CACHE_DIR"] = value
    numba = sys.modules.get("numba")
    if numba is not None:  # numba read its config already: set it where the cache locator looks
        numba.core.config.CACHE_DIR = value
    return Path(value)
