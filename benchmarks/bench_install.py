"""A new user's first minutes: a fresh venv, `pip install <checkout>`, the first and a warm `cosim simulate`.

Target: `pip install . && cosim simulate` ≤ 60 s in total on a 2-core machine, of
it ≤ 20 s the first simulate. Each step is timed from outside (wall seconds, and the CPU
seconds of the child processes, user + system, which a shared host inflates less than wall
time):

    venv       python -m venv V                        (the user's own step, reported apart)
    install    V/bin/pip install [PIP_ARGS] SRC        (our wheel build + the dependencies)
    first      V/bin/cosim simulate                    (empty kernel cache; from another folder)
    warm       V/bin/cosim simulate                    (the same again)
    help       V/bin/cosim --help

    python -m benchmarks.bench_install                          # this checkout, pip's defaults
    python -m benchmarks.bench_install --pip-args=--no-compile  # no byte-compiling at install
    python -m benchmarks.bench_install --repo OTHER             # another checkout (before/after)
    python -m benchmarks.bench_install --no-simulate            # the install only

The checkout's installable part is copied first (pip builds from the copy and leaves nothing in
the checkout). pip's download and wheel caches are used as they are: say whether they were warm
(the first measurement on a machine fills them). The kernel cache is a new empty folder
(COSIM_NUMBA_CACHE_DIR), so `first` includes compiling the default run's numba kernels.
PYTHONDONTWRITEBYTECODE is removed from the environment, as in a user's shell: with
`--no-compile`, Python then compiles the modules a command imports on first use and caches
them in the venv (`first` pays that once; `warm` reads the cached bytecode).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.child_env import user_env

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("cosim", "simcore", "netmodel", "collectives", "calibration", "policies", "traces", "experiments", "cli")


def _timed(name: str, cmd: list[str], cwd: Path, env: dict) -> dict:
    """Run `cmd`; its wall and CPU seconds."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{name}: {' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}")
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return {"step": name, "wall_s": wall, "cpu_s": cpu}


def copy_source(repo: Path, dst: Path) -> Path:
    """The installable part of `repo` (pyproject, README, the packages without caches)."""
    dst.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(repo / name, dst / name)
    for pkg in PACKAGES:
        shutil.copytree(repo / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nb[ic]"))
    return dst


def measure(repo: Path, pip_args: list[str], simulate: bool = True) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="cosim-install-") as tmp:
        root = Path(tmp)
        src = copy_source(repo, root / "src")
        elsewhere = root / "cwd"  # not the source folder: `import cosim` must come from the venv
        elsewhere.mkdir()
        # a user's shell: no PYTHONDONTWRITEBYTECODE (some CI images set it; with it, a
        # --no-compile install would compile every imported module again on every run)
        env = user_env(drop=("PYTHONPATH", "NUMBA_CACHE_DIR", "VIRTUAL_ENV"))
        env["COSIM_NUMBA_CACHE_DIR"] = str(root / "numba-cache")
        venv = root / "venv"
        rows = [_timed("venv", [sys.executable, "-m", "venv", str(venv)], elsewhere, env)]
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        rows.append(_timed("install", [str(venv / "bin" / "pip"), "install", "--disable-pip-version-check",
                                       *pip_args, str(src)], elsewhere, env))
        rows.append(_timed("help", [str(venv / "bin" / "cosim"), "--help"], elsewhere, env))
        if simulate:
            rows.append(_timed("first", [str(venv / "bin" / "cosim"), "simulate"], elsewhere, env))
            rows.append(_timed("warm", [str(venv / "bin" / "cosim"), "simulate"], elsewhere, env))
        return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to install (default: this one)")
    ap.add_argument("--pip-args", default="", help="extra arguments for `pip install`, e.g. --no-compile")
    ap.add_argument("--no-simulate", action="store_true", help="time the venv and the install only")
    args = ap.parse_args(argv)
    rows = measure(args.repo.resolve(), args.pip_args.split(), simulate=not args.no_simulate)
    for r in rows:
        print(f"{r['step']:8s} {r['wall_s']:7.1f} s wall {r['cpu_s']:7.1f} s CPU")
    total = sum(r["wall_s"] for r in rows if r["step"] in ("install", "first"))
    print(f"install + first simulate: {total:.1f} s wall (target <= 60 s, first <= 20 s); repo {args.repo}, "
          f"pip args {args.pip_args or '(none)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
