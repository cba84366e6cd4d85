"""First run of `cosim simulate`: compile the default run's kernels on two cores, not one.

Nearly all of a first `cosim simulate` (empty kernel cache) is numba compiling the kernels the
default run calls from Python, with their callees (the target is ≤ 20 s on a 2-core
machine). numba compiles under one process-wide lock, so a process uses one core
however many kernels wait. `start()` launches a worker process before the CLI's heavy imports;
the worker and then the CLI (`Primer.finish()`) take *units* of the list (kernels sharing
callees, whole modules) one at a time, heaviest first, by claiming a file in a scratch folder
of the cache (`compile_claimed`), so each unit is compiled once and whichever process runs
ahead takes more: no recorded split to go stale, and a host that slows one process does not
leave the other idle. A unit that calls another unit's kernels (`#after` lines: the walk
kernel places with `consolidate_gpus`, Tiresias' round kernel runs the walk kernel) waits until
that unit is in the cache and then loads it instead of compiling it again. The run then loads
every kernel from the cache. The compiled code is the same as a lazy compile (numba saves each
signature's object code; nothing here changes what is compiled, only when and in which process).

The list (`default_kernels.txt`, one kernel a line: unit, measured seconds, module, function,
numba signature) is recorded from a real default run by
`python -m benchmarks.bench_startup --record-kernels`; tests/test_warmup.py checks it still
equals what the default run compiles. A kernel whose signature drifted is compiled lazily by
the run: a stale list costs time, never correctness. Per-kernel compile times:
`python -m benchmarks.compile_profile`.

A stamp file in the cache folder (keyed by the list, the kernel modules' sizes and mtimes,
the checkout's folder, Python's and numba's version) marks a primed cache, so a warm run pays
only a few `stat` calls. Nothing is primed without a free second core (`spare_core()`: one
core, or a 1-minute system load (`os.getloadavg`) above cores - 0.5): the run then compiles lazily in one process. `COSIM_PRIME=1` primes regardless, `COSIM_PRIME=0` never.

The units' compile times, recorded in the list, guide the order only. On a 2-core host the
default run's units take 2-8 s of CPU each (costs, Tiresias, placement, walk, gps, contention,
engine, groups), and the chain placement → walk → Tiresias about as long as all the rest, so
two processes end together; the first run then takes about half its single-process time plus
the imports, which needs an idle second core.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS_FILE = Path(__file__).with_name("default_kernels.txt")
OFF = "COSIM_PRIME"  # 0: compile lazily in one process (how the list is recorded); 1: prime even on a busy host
ROOT = Path(__file__).resolve().parents[1]  # the folder holding cosim/, simcore/, policies/, ...


def entries(path: Path = KERNELS_FILE) -> list[tuple[int, float, str, str, str]]:
    """(unit, seconds, module, qualname, signature) of every listed kernel."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        unit, seconds, module, qualname, sig = line.split("\t")
        rows.append((int(unit), float(seconds), module, qualname, sig))
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


def _compile_rows(rows) -> int:
    """Compile (or load from the cache) these list rows; returns how many failed."""
    from numba.core import types

    names = {k: getattr(types, k) for k in dir(types) if not k.startswith("_")}
    failed = 0
    for _, _, module, qualname, sig in rows:
        try:
            fn = importlib.import_module(module)
            for part in qualname.split("."):
                fn = getattr(fn, part)
            fn.compile(eval(sig, {"__builtins__": {}}, names))  # noqa: S307 (our own list of numba types)
        except Exception:  # noqa: BLE001 - a stale entry must not stop the run
            failed += 1
    return failed


def compile_group(group: int | None, path: Path = KERNELS_FILE) -> int:
    """Compile (or load from the cache) every listed kernel of unit `group` (None: all); returns
    how many could not be compiled from the list (a drifted signature: the run compiles it lazily)."""
    return _compile_rows([r for r in entries(path) if group is None or r[0] == group])


def units(path: Path = KERNELS_FILE) -> list[int]:
    """The list's units, longest chain first: a unit's recorded compile seconds plus the
    longest chain of units that wait for it (`after`), so a chain such as placement → walk →
    Tiresias starts at once instead of ending the priming alone; ties by seconds, then number."""
    total: dict[int, float] = {}
    for unit, seconds, *_ in entries(path):
        total[unit] = total.get(unit, 0.0) + seconds
    deps = after(path)
    chain: dict[int, float] = {}

    def length(u: int, seen: frozenset = frozenset()) -> float:
        if u not in chain:
            waiting = [v for v, before in deps.items() if u in before and v in total and v not in seen]
            chain[u] = total[u] + max((length(v, seen | {u}) for v in waiting), default=0.0)
        return chain[u]

    return sorted(total, key=lambda u: (-length(u), -total[u], u))


def after(path: Path = KERNELS_FILE) -> dict[int, set[int]]:
    """Per unit, the units whose kernels it calls (`#after<TAB>unit<TAB>unit,unit` lines): it is
    compiled once those are in the cache, so it loads them instead of compiling them again."""
    deps: dict[int, set[int]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("#after\t"):
            _, unit, before = line.split("\t")
            deps[int(unit)] = {int(u) for u in before.split(",") if u.strip()}
    return deps


def compile_claimed(claims: Path, path: Path = KERNELS_FILE, other_alive=None, poll_s: float = 0.05) -> int:
    """Compile every unit this process claims first, in `units` order: a unit is claimed by
    creating `claims/<unit>` (atomic, O_EXCL), so each unit is compiled by exactly one of the
    processes sharing `claims`, and a process that runs ahead (the worker starts before the
    CLI's heavy imports; one process may be slowed by the host) takes more of them: the
    two finish within about one unit of each other without a recorded split. A unit whose
    `after` units are not done yet (`claims/<unit>.done`) waits for them: compiled sooner,
    it would compile their kernels again instead of loading them, unless the other process
    has ended (`other_alive()` False). Returns how many kernels failed."""
    rows = entries(path)
    deps = after(path)
    todo = units(path)
    failed = 0
    while todo:
        ready = [u for u in todo if all((claims / f"{d}.done").exists() for d in deps.get(u, ()))]
        if not ready:  # the other process is compiling what every unit left needs: wait for it
            if not claims.is_dir():
                break
            if other_alive is None or other_alive():
                time.sleep(poll_s)
                continue
            ready = todo  # it ended without finishing them: compile here
        unit = ready[0]
        todo.remove(unit)
        try:
            os.close(os.open(claims / str(unit), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        except OSError:  # the claims folder is gone (the other process gave up): compile lazily
            break
        failed += _compile_rows([r for r in rows if r[0] == unit])
        try:
            os.close(os.open(claims / f"{unit}.done", os.O_CREAT | os.O_WRONLY))
        except OSError:
            break
    return failed


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def spare_core() -> bool:
    """Whether a second core is free: at least two cores and a 1-minute system load (`os.getloadavg`)
    below cores - 0.5 (the figure lags: just after another run it reads ≈ 1.0 on an idle 2-core
    host, where priming still halves the first run's wall time: 28.8 s vs 42-46 s). On a saturated host a worker process gains no wall time (measured with 8 runnable
    processes on a 2-core host: both groups at once 84 s, one after the other 80 s) and only
    adds the work both processes repeat (numba's own helpers, imports: ≈ 5 s of CPU)."""
    cores = _cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return cores >= 2 and load < cores - 0.5


class Primer:
    """A priming in progress (`start`): the worker compiling units in the background; `finish`
    compiles the units left in this process, waits for the worker and marks the cache."""

    def __init__(self, worker: subprocess.Popen, claims: Path, stamp: Path, path: Path) -> None:
        self.worker, self.claims, self.stamp, self.path = worker, claims, stamp, path
        atexit.register(self._stop)  # an error before `finish` must not leave the worker behind

    def _stop(self) -> None:
        if self.worker.poll() is None:
            self.worker.kill()
            self.worker.wait()
        shutil.rmtree(self.claims, ignore_errors=True)

    def finish(self) -> bool:
        try:
            failed = compile_claimed(self.claims, self.path, other_alive=lambda: self.worker.poll() is None)
            rc = self.worker.wait()
        finally:
            self._stop()  # this process failed or was interrupted: do not leave the worker behind
            atexit.unregister(self._stop)
        if failed or rc:
            logging.getLogger(__name__).info("priming: %d kernel(s) here and worker exit %d", failed, rc)
        try:  # once is enough: a drifted entry would fail again (the run compiles it lazily)
            self.stamp.touch()
        except OSError:
            pass
        return True


def start(phase=None, path: Path = KERNELS_FILE) -> Primer | None:
    """Start priming unless the cache is primed already, priming is off, or no core is free:
    the worker process begins compiling now (call this before the CLI's heavy imports, so the
    worker's start-up and first unit overlap them); `Primer.finish()` does the rest. None when
    there is nothing to do. `phase(msg)` announces the step (cosim.progress.phase)."""
    cache = os.environ.get("NUMBA_CACHE_DIR", "")  # set by cosim.numba_cache.configure()
    setting = os.environ.get(OFF, "").strip()
    if not cache or setting == "0" or not Path(path).is_file() or (setting != "1" and not spare_core()):
        return None
    stamp = Path(cache) / stamp_name(path)
    if stamp.exists():
        return None
    try:
        claims = Path(tempfile.mkdtemp(prefix=f"{stamp.name}.claims-", dir=cache))
    except OSError:
        return None
    if phase is not None:
        phase(f"first run: compiling {len(entries(path))} numba kernels in 2 processes (once; later runs load them)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    worker = subprocess.Popen([sys.executable, "-m", "cosim.warmup", str(claims), str(path)], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Primer(worker, claims, stamp, Path(path))


def prime(phase=None, path: Path = KERNELS_FILE) -> bool:
    """`start` and `finish` at once; True when it compiled."""
    primer = start(phase, path)
    return primer.finish() if primer is not None else False


if __name__ == "__main__":  # the worker: python -m cosim.warmup CLAIMS LIST
    _parent = os.getppid()  # the CLI: while it lives, a unit waiting for its units waits
    sys.exit(1 if compile_claimed(Path(sys.argv[1]), Path(sys.argv[2]), lambda: os.getppid() == _parent) else 0)
