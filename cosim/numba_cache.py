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

And one more (`defer_target_refresh`): loading a cached kernel makes numba refresh its CPU
target first (`Cache.load_overload` → `CPUContext.refresh`), which imports and registers every
typing and lowering registry numba has — unicode, lists, sets, typed dicts, `numba.np.random`,
polynomials, cffi (with pycparser), np.linalg … — ≈ 0.13 s CPU of a cached `cosim simulate` at
low load (≈ 0.2 s loaded), for kernels whose machine code is already in the cache. Rebuilding
a cached kernel needs only numba's runtime (`rtsys.initialize`), which the hook keeps; every
path that needs the registries refreshes on its own (a compile: `CompilerBase.__init__`; a
lowering lookup that misses: `BaseContext.get_function`), so they are imported when, and only
if, something is compiled.

And the entry-point scan (`defer_extension_init`): before typing the arguments of a kernel's
first call, numba initialises its extensions (`numba_extensions` entry points), reading the
entry points of every installed distribution through `importlib.metadata` (imported for it,
with `email` and `socket`): ≈ 0.02 s of CPU of a cached `cosim simulate`, whose kernels take
numpy arrays and scalars only. For the kernels of cosim's packages (`COSIM_PACKAGES`) that call
is skipped; the extensions are still initialised, by numba itself, before the first call of any
other kernel and whenever anything is compiled (the compiler's target refresh), and
`importlib.metadata` is imported when that happens.

And three smaller ones of numba's own start-up (`trim_numba_import`; numba's import stage of
`python -m benchmarks.process_floor` took 0.175 s of CPU with them against 0.194 s without,
median of 15 processes each, the two alternated):
- `import numba` imports scipy only to check that it is 1.0 or newer; cosim requires scipy
  1.15 or newer (pyproject.toml), so for that one check scipy is reported absent and numba
  skips it; scipy itself is imported wherever it is used, as before;
- `numba.core.config` imports PyYAML to read a `.numba_config.yaml` in the working folder; when
  there is none it gets a stand-in that imports PyYAML on first use (numba's config reload reads
  such a file created later exactly as before);
- every kernel decorated with `cache=True` makes numba check that its cache folder can be
  written by creating and deleting a temporary file there: 79 times in a Pollux-workload run, for
  4 folders (one per source folder); the check (`mkdir` and the temporary file) still runs for each
  folder, once per process, and the folder is still created whenever it is missing.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
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
    defer_target_refresh()
    defer_extension_init()
    trim_numba_import()
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



def files_stamp(header: str, paths) -> str:
    """SHA-256 of `header` and each file's absolute path, size and mtime (ns), or 'absent': the key
    of an on-disk cache entry built from those files (the measured tables, assembled traces)."""
    import hashlib

    h = hashlib.sha256(header.encode())
    for p in paths:
        p = Path(p).absolute()
        try:
            st = p.stat()
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{p}\0absent\n".encode())
    return h.hexdigest()


def defer_blas_probe() -> None:
    """Install the hook (idempotent; nothing to do when numba's target is already set up)."""
    if "numba.np.arraymath" in sys.modules or any(isinstance(f, _BlasProbeDeferrer) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _BlasProbeDeferrer())


def _load_overload_without_refresh(self, sig, target_context):
    """`numba.core.caching.Cache.load_overload` less the target refresh (module docstring):
    initialise numba's runtime, then load and rebuild the cached overload as numba does."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)


def _patch_cache_loading(caching) -> None:
    """Swap `Cache.load_overload` of numba's `caching` module for `_load_overload_without_refresh`,
    only when numba's layout is the one it was written for (else numba is left as it is)."""
    cache = getattr(caching, "Cache", None)
    original = getattr(cache, "load_overload", None)
    if original is None or original is _load_overload_without_refresh:
        return
    if not all(hasattr(cache, a) for a in ("_guard_against_spurious_io_errors", "_load_overload")):
        return
    try:
        from numba.core.runtime import rtsys
    except ImportError:
        return
    if not callable(getattr(rtsys, "initialize", None)):
        return
    cache.load_overload = _load_overload_without_refresh
    _patch_locator_check(caching)


_CHECKED_CACHE_PATHS: set[str] = set()


def _ensure_cache_path_once(self) -> None:
    """`numba.core.caching._CacheLocator.ensure_cache_path` writing its probe file once per folder
    and process: the folder is created whenever missing, as numba does, and the first kernel of
    each folder still proves it writable (numba's own check, raising as it does)."""
    path = self.get_cache_path()
    os.makedirs(path, exist_ok=True)
    if path not in _CHECKED_CACHE_PATHS:
        tempfile.TemporaryFile(dir=path).close()
        _CHECKED_CACHE_PATHS.add(path)


def _patch_locator_check(caching) -> None:
    locator = getattr(caching, "_CacheLocator", None)
    if locator is not None and callable(getattr(locator, "ensure_cache_path", None)) \
            and callable(getattr(locator, "get_cache_path", None)):
        locator.ensure_cache_path = _ensure_cache_path_once


class _AfterImport(importlib.abc.MetaPathFinder):
    """Import hook for one module (removed once used): runs `after(module)` once it is executed;
    with `before`, calls it first and, however the module's code ends, the undo it returns."""

    def __init__(self, target: str, after, before=None) -> None:
        self.target, self.after, self.before = target, after, before

    def find_spec(self, name, path, target=None):
        if name != self.target:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run, after, before = spec.loader.exec_module, self.after, self.before

        def exec_module(module):
            undo = before() if before is not None else None
            try:
                run(module)
            finally:
                if undo is not None:
                    undo()
            after(module)

        spec.loader.exec_module = exec_module
        return spec


def _after_import(target: str, after, before=None) -> None:
    """Run `after(module)` on `target` now if it is imported, else once it is (idempotent)."""
    module = sys.modules.get(target)
    if module is not None:
        after(module)
    elif not any(isinstance(f, _AfterImport) and f.target == target for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(target, after, before))


def defer_target_refresh() -> None:
    """Load cached kernels without numba's full target refresh (module docstring); idempotent.
    numba already imported: patched now; else when `numba.core.caching` is imported."""
    _after_import("numba.core.caching", _patch_cache_loading)


#: cosim's top-level packages (pyproject.toml): their kernels take numpy arrays and scalars only
COSIM_PACKAGES = frozenset({"cosim", "simcore", "netmodel", "collectives", "calibration", "policies", "traces",
                            "experiments", "cli"})


def _metadata_stand_in():
    """While `numba.core.entrypoints` runs: `importlib.metadata` is a `_LazyModule` (imported when
    numba first scans entry points); returns the undo, or None when it is imported already."""
    if "importlib.metadata" in sys.modules:
        return None
    stand_in = _LazyModule("importlib.metadata")
    sys.modules["importlib.metadata"] = stand_in

    def undo() -> None:
        if sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]

    return undo


def _patch_extension_init(dispatcher) -> None:
    """`_compilation_chain_init_hook` of numba's dispatchers: numba's own (the entry-point scan) for
    every kernel but cosim's; left as it is when numba's layout is not the one written for."""
    base = getattr(dispatcher, "_DispatcherBase", None)
    hook = getattr(base, "_compilation_chain_init_hook", None)
    if not callable(hook) or getattr(hook, "cosim_patched", False):
        return

    def chain_init(self):
        module = getattr(getattr(self, "py_func", None), "__module__", None) or ""
        if module.partition(".")[0] not in COSIM_PACKAGES:
            hook(self)

    chain_init.cosim_patched = True
    base._compilation_chain_init_hook = chain_init


def defer_extension_init() -> None:
    """Call cosim's kernels without numba's scan of installed entry points (module docstring);
    idempotent. `importlib.metadata` is put off as well when numba is not imported yet."""
    _after_import("numba.core.entrypoints", lambda module: None, _metadata_stand_in)
    _after_import("numba.core.dispatcher", _patch_extension_init)


#: numba's configuration file, read from the working folder when `numba.core.config` loads
NUMBA_CONFIG_FILE = ".numba_config.yaml"


class _LazyModule:
    """Stands for a module not imported yet: imports it on the first attribute read."""

    __spec__ = None  # read by the import system when the stand-in sits in `sys.modules`

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)


class _NumbaImportTrimmer(importlib.abc.MetaPathFinder):
    """Import hook used while numba is imported (module docstring), removed with
    `numba.core.config`: reports scipy absent to numba's version check only, and loads
    numba's config module with PyYAML put off until a config file needs it."""

    def find_spec(self, name, path, target=None):
        if name == "scipy":
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_code.co_name == "_ensure_critical_deps" and frame.f_globals.get("__name__") == "numba":
                    raise ModuleNotFoundError("scipy version check skipped by cosim.numba_cache", name=name)
                frame = frame.f_back
            return None
        if name != "numba.core.config":
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if "yaml" in sys.modules or os.path.exists(NUMBA_CONFIG_FILE):
            return spec
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            sys.modules["yaml"] = None  # `import yaml` fails fast: numba notes PyYAML absent
            try:
                run(module)
            finally:
                if sys.modules.get("yaml", 0) is None:
                    del sys.modules["yaml"]
            if getattr(module, "_HAVE_YAML", None) is False and importlib.util.find_spec("yaml") is not None:
                module.yaml, module._HAVE_YAML = _LazyModule("yaml"), True

        spec.loader.exec_module = exec_module
        return spec


def trim_numba_import() -> None:
    """Install `_NumbaImportTrimmer` before numba is imported (idempotent; nothing once it is)."""
    if "numba.core.config" in sys.modules or any(isinstance(f, _NumbaImportTrimmer) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _NumbaImportTrimmer())
