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

It also defers one start-up cost that no cosim kernel needs (`defer_blas_probe`): when numba
first loads or compiles any kernel it imports `numba.np.arraymath`, whose import-time
`_HAVE_BLAS = _check_blas()` imports `scipy.linalg` (with numpy.f2py and charset_normalizer):
0.3 s on an idle 2-core host, 0.6-0.8 s on a loaded one, on every warm `cosim simulate`. The
flag only picks the BLAS or the plain loop for `np.correlate`/`np.convolve` when a kernel
using them is compiled; cosim's kernels use neither. The hook lets that import skip the probe
and leaves a flag that runs the very same probe the first time numba reads it, so numba behaves
exactly as before, only later.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import tempfile
from pathlib import Path

ENV = "COSIM_NUMBA_CACHE_DIR"


def user_cache_dir(kind: str, env_vars: tuple[str, ...] = ()) -> Path | None:
    """A writable per-user cache folder for `kind`, created: the first set variable of
    `env_vars`, else `$XDG_CACHE_HOME/cosim/<kind>` (default `~/.cache/cosim/<kind>`); when that
    cannot be written, `<tmp>/cosim-<kind>-<user>`; None when nothing can be. Shared by numba's
    kernel cache (here) and the measured tables' cache (`simcore.measured_cache`)."""
    path = None
    for var in env_vars:
        value = os.environ.get(var, "").strip()
        if value:
            path = Path(value).expanduser()
            break
    if path is None:
        base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "cosim" / kind
    user = os.environ.get("USER") or str(getattr(os, "getuid", lambda: "user")())
    for candidate in (path, Path(tempfile.gettempdir()) / f"cosim-{kind}-{user}"):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


def configure() -> Path:
    """Point numba's cache at `user_cache_dir("numba", ...)`; returns the folder used."""
    path = user_cache_dir("numba", (ENV, "NUMBA_CACHE_DIR"))
    if path is None:
        raise OSError(f"no writable folder for numba's kernel cache (set ${ENV})")
    value = str(path.resolve())
    os.environ["NUMBA_CACHE_DIR"] = value
    numba = sys.modules.get("numba")
    if numba is not None:  # numba read its config already: set it where the cache locator looks
        numba.core.config.CACHE_DIR = value
    defer_blas_probe()
    return Path(value)


class _DeferredBlasCheck:
    """Stands for `numba.np.arraymath._HAVE_BLAS`: runs numba's own probe (`ensure_blas`, which
    imports scipy's BLAS) the first time numba asks, then answers as the original flag would."""

    def __init__(self, probe) -> None:
        self._probe, self._value = probe, None

    def __bool__(self) -> bool:
        if self._value is None:
            try:
                self._probe()
                self._value = True
            except ImportError:
                self._value = False
        return self._value


class _BlasProbeDeferrer(importlib.abc.MetaPathFinder):
    """Import hook for `numba.np.arraymath` only (removed once used): runs the module with
    `ensure_blas` failing fast, then puts a `_DeferredBlasCheck` in `_HAVE_BLAS`. Any surprise
    (another numba layout) falls back to numba's normal import."""

    TARGET = "numba.np.arraymath"

    def find_spec(self, name, path, target=None):
        if name != self.TARGET:
            return None
        _remove_hook()
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            linalg = importlib.import_module("numba.np.linalg")
            probe = getattr(linalg, "ensure_blas", None)
            if probe is None:
                return run(module)

            def skip():
                raise ImportError("BLAS probe deferred by cosim.numba_cache")

            linalg.ensure_blas = skip
            try:
                run(module)
            finally:
                linalg.ensure_blas = probe
            if getattr(module, "_HAVE_BLAS", None) is False and getattr(module, "ensure_blas", None) is skip:
                module.ensure_blas = probe
                module._HAVE_BLAS = _DeferredBlasCheck(probe)

        spec.loader.exec_module = exec_module
        return spec


def _remove_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _BlasProbeDeferrer)]


def defer_blas_probe() -> None:
    """Install the hook (idempotent; nothing to do when numba's target is already set up)."""
    if "numba.np.arraymath" in sys.modules or any(isinstance(f, _BlasProbeDeferrer) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _BlasProbeDeferrer())
