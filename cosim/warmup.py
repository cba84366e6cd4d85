"""First run of `cosim simulate`: compile the default run's kernels on two cores, not one.

Nearly all of a first `cosim simulate` (empty kernel cache) is numba compiling the 23 kernels
the default run calls from Python, with their callees: ≈ 38 s of CPU on the 2-core project
machine, issue 15 asks for ≤ 20 s. numba compiles under one process-wide lock, so a process
uses one core however many kernels wait. `prime()` splits the list into two groups of about
equal compile time (whole modules together: kernels of one module share callees, which a
second process would compile again), starts a worker process that compiles group 1 into the
shared cache folder while this process compiles group 0, and waits for it; the run then
loads every kernel from the cache. The compiled code is the same as a lazy compile (numba
saves each signature's object code; nothing here changes what is compiled, only when and in
which process).

The list (`default_kernels.txt`, one kernel a line: group, measured seconds, module,
function, numba signature) is recorded from a real default run by
`python -m benchmarks.bench_startup --record-kernels`; tests/test_warmup.py checks it still
equals what the default run compiles. A kernel whose signature drifted is compiled lazily by
the run, as before: a stale list costs time, never correctness.

A stamp file in the cache folder (keyed by the list, the kernel modules' sizes and mtimes,
the checkout's folder, Python's and numba's version) marks a primed cache, so a warm run pays
only a few `stat` calls. Nothing is primed without a free second core (`spare_core()`: one
core, or a 1-minute load average above cores - 1): the run then compiles lazily in one process
as before. `COSIM_PRIME=1` primes regardless, `COSIM_PRIME=0` never.

Measured (CPU s of each process, fresh cache, load 8-15 on the 2-core project machine): group
0 22.3 s, group 1 23.8 s, against 43-48 s for the one process that compiles everything; with a
free second core the first run's wall time is about the larger half plus imports and the run.
On this shared host no second core was free during the measurements (see `spare_core`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

KERNELS_FILE = Path(__file__).with_name("default_kernels.txt")
OFF = "COSIM_PRIME"  # 0: compile lazily in one process (how the list is recorded); 1: prime even on a busy host
ROOT = Path(__file__).resolve().parents[1]  # the folder holding cosim/, simcore/, policies/, ...


def entries(path: Path = KERNELS_FILE) -> list[tuple[int, float, str, str, str]]:
    """(group, seconds, module, qualname, signature) of every listed kernel."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        group, seconds, module, qualname, sig = line.split("\t")
        rows.append((int(group), float(seconds), module, qualname, sig))
    return rows


def _module_file(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def stamp_name(path: Path = KERNELS_FILE) -> str:
    """File name marking a cache primed for this list, these sources, this Python and numba."""
    h = hashlib.sha1(Path(path).read_bytes())
    h.update(f"{ROOT}|{sys.version}".encode())
    spec = importlib.util.find_spec("numba")  # top-level: finds numba without importing it
    paths = sorted({_module_file(m) for _, _, m, _, _ in entries(path)})
    if spec is not None and spec.origin:
        paths.append(Path(spec.origin))
    for path in paths:
        try:
            st = path.stat()
            h.update(f"{path}|{st.st_size}|{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"{path}|missing".encode())
    return f"cosim-primed-{h.hexdigest()[:16]}"


def compile_group(group: int | None, path: Path = KERNELS_FILE) -> int:
    """Compile (or load from the cache) every listed kernel of `group` (None: all); returns how
    many could not be compiled from the list (a drifted signature: the run compiles it lazily)."""
    from numba.core import types

    names = {k: getattr(types, k) for k in dir(types) if not k.startswith("_")}
    failed = 0
    for g, _, module, qualname, sig in entries(path):
        if group is not None and g != group:
            continue
        try:
            fn = importlib.import_module(module)
            for part in qualname.split("."):
                fn = getattr(fn, part)
            fn.compile(eval(sig, {"__builtins__": {}}, names))  # noqa: S307 (our own list of numba types)
        except Exception:  # noqa: BLE001 - a stale entry must not stop the run
            failed += 1
    return failed


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def spare_core() -> bool:
    """Whether a second core is free: at least two cores and a 1-minute load average below
    cores - 0.5 (the average lags: just after a previous run it reads ≈ 1.0 on an idle 2-core
    host, where priming still halves the first run's wall time: 28.8 s vs 42-46 s). On a saturated host a worker process gains no wall time (measured at load 8 on
    the 2-core project machine: both groups at once 84 s, one after the other 80 s) and only
    adds the work both processes repeat (numba's own helpers, imports: ≈ 5 s of CPU)."""
    cores = _cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return cores >= 2 and load < cores - 0.5


def prime(phase=None, path: Path = KERNELS_FILE) -> bool:
    """Compile the listed kernels in this process and one worker unless the cache is primed
    already; True when it compiled. `phase(msg)` announces the step (cosim.progress.phase)."""
    cache = os.environ.get("NUMBA_CACHE_DIR", "")  # set by cosim.numba_cache.configure()
    setting = os.environ.get(OFF, "").strip()
    if not cache or setting == "0" or not Path(path).is_file() or (setting != "1" and not spare_core()):
        return False
    stamp = Path(cache) / stamp_name(path)
    if stamp.exists():
        return False
    rows = entries(path)
    if phase is not None:
        phase(f"first run: compiling {len(rows)} numba kernels in 2 processes (once; later runs load them)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    worker = subprocess.Popen([sys.executable, "-m", "cosim.warmup", "1", str(path)], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        failed = compile_group(0, path)
        rc = worker.wait()
    finally:
        if worker.poll() is None:  # this process failed or was interrupted: do not leave it behind
            worker.kill()
            worker.wait()
    if failed or rc:
        logging.getLogger(__name__).info("priming: %d kernel(s) of group 0 and worker exit %d", failed, rc)
    try:  # once is enough: a drifted entry would fail again (the run compiles it lazily)
        stamp.touch()
    except OSError:
        pass
    return True



if __name__ == "__main__":  # the worker: python -m cosim.warmup GROUP LIST
    sys.exit(1 if compile_group(int(sys.argv[1]), Path(sys.argv[2])) else 0)
