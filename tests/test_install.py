"""Install, run, reinstall editable, run again — in one venv — and nothing shadows anything.

numba's default is to write its kernel cache into `site-packages/<pkg>/__pycache__`; `pip
uninstall` leaves those folders, and Python then finds them as namespace packages ahead of a
later editable install (`module 'policies' has no attribute 'POLICIES'`). cosim points
numba at a per-user cache (`cosim.numba_cache`); these tests check that on a real install:

- after `pip install .` and a command that compiles kernels, no `*.nbi`/`*.nbc` file exists
  anywhere under the venv, and the compiled kernels are in `COSIM_NUMBA_CACHE_DIR`;
- after `pip uninstall` + `pip install -e .` in the same venv, `cosim policies list` and the same
  kernel-compiling command work and import cosim from the source folder, not site-packages.

The inner venv sees the packages of the interpreter running the tests (the dependencies are
installed there; cosim is installed with `--no-deps`): `--system-site-packages` gives it the base
interpreter's, and when the tests themselves run in a venv — where users run them — a `.pth` file
adds that venv's site-packages too, after the inner venv's own (`_inherit_outer_site_packages`).
Builds use pip's ordinary build isolation (a venv's bundled setuptools is older than pyproject's `setuptools>=68`,
so pip fetches the backend from the configured index or wheel folder). The quick test (~50 s) compiles the collective kernels
(`cosim net allreduce`); the slow one runs `cosim simulate` both times, as the README does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("cosim", "simcore", "netmodel", "collectives", "calibration", "policies", "traces", "experiments", "cli")


def _copy_source(dst: Path) -> Path:
    """The installable part of the checkout, copied so the build leaves nothing in the repo."""
    dst.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dst / name)
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nb[ic]"))
    return dst


def _inherit_outer_site_packages(python: Path) -> None:
    """When this interpreter is itself a venv's, make the inner venv at `python` see its packages.

    `python -m venv --system-site-packages` run from a venv links the new one to the *base*
    interpreter (venvs do not nest), so without this the dependencies installed in the outer venv
    (numba, pandas, ...) are missing inside. Plain path lines in a `.pth` file append the outer
    site-packages after the inner venv's own, so what pip installs in the inner venv comes first."""
    if sys.prefix == sys.base_prefix:
        return  # the system interpreter: --system-site-packages already gives its packages
    import site

    outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
    inner = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           check=True, capture_output=True, text=True).stdout.strip()
    (Path(inner) / "_outer_venv.pth").write_text("".join(f"{p}\n" for p in outer))


class Venv:
    def __init__(self, root: Path, cache: Path):
        self.root = root
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True)
        self.python = root / "bin" / "python"
        _inherit_outer_site_packages(self.python)
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
        self.env.update(COSIM_NUMBA_CACHE_DIR=str(cache), PATH=f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}")

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        return proc

    def pip(self, *args: str, cwd: Path) -> None:
        self.run(str(self.python), "-m", "pip", "--disable-pip-version-check", "--no-input", *args, cwd=cwd)

    def cosim(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        return self.run(str(self.root / "bin" / "cosim"), *args, cwd=cwd)

    def module_file(self, module: str, cwd: Path) -> Path:
        out = self.run(str(self.python), "-c", f"import {module}; print({module}.__file__)", cwd=cwd)
        return Path(out.stdout.strip()).resolve()

    def numba_files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.suffix in (".nbi", ".nbc"))


def _install_cycle(tmp_path: Path, command: tuple[str, ...]) -> None:
    src = _copy_source(tmp_path / "src")
    cache = tmp_path / "numba-cache"
    venv = Venv(tmp_path / "venv", cache)
    elsewhere = tmp_path / "cwd"  # not the source folder, so `import cosim` cannot come from the cwd
    elsewhere.mkdir()

    venv.pip("install", "--no-deps", str(src), cwd=elsewhere)
    installed = venv.module_file("policies", elsewhere)
    assert "site-packages" in installed.parts, installed
    venv.cosim(*command, cwd=elsewhere)
    assert venv.numba_files() == [], f"numba cache files inside the venv: {venv.numba_files()[:5]}"
    first = sorted(cache.rglob("*.nbi"))
    assert first, f"no numba index files in {cache}: kernels were not cached where cosim.numba_cache says"

    venv.pip("uninstall", "-y", "cosim", cwd=elsewhere)
    leftovers = [p for p in (installed.parents[1] / pkg for pkg in PACKAGES) if p.exists()]
    assert leftovers == [], f"pip uninstall left package folders behind: {leftovers}"
    venv.pip("install", "--no-deps", "-e", str(src), cwd=elsewhere)
    assert venv.module_file("policies", elsewhere) == (src / "policies" / "__init__.py").resolve()
    listing = venv.cosim("policies", "list", cwd=elsewhere).stdout
    assert "fifo" in listing and "tiresias" in listing, listing
    venv.cosim(*command, cwd=elsewhere)
    assert venv.numba_files() == []
    assert len(sorted(cache.rglob("*.nbi"))) > len(first), "the editable copy's kernels were not cached apart"


def test_install_then_editable_collectives(tmp_path):
    """pip install . → kernels compile outside site-packages → uninstall → pip install -e . → works."""
    _install_cycle(tmp_path, ("net", "allreduce", "--placement", "4,4", "--bytes", "64MB"))


@pytest.mark.slow
def test_install_then_editable_simulate(tmp_path):
    """The README's order (`pip install . && cosim simulate`, then the editable test install) on a small run."""
    _install_cycle(tmp_path, ("simulate", "--synth", "philly-sia:12:1h", "--policy", "fifo,tiresias"))


def test_editable_then_install_collectives(tmp_path):
    """The other order: the test install (`pip install -e .`) and a kernel-compiling command first,
    then `pip install .` in the same venv: the CLI now runs the installed copy and still works."""
    src = _copy_source(tmp_path / "src")
    cache = tmp_path / "numba-cache"
    venv = Venv(tmp_path / "venv", cache)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    command = ("net", "allreduce", "--placement", "4,4", "--bytes", "64MB")

    venv.pip("install", "--no-deps", "-e", str(src), cwd=elsewhere)
    assert venv.module_file("policies", elsewhere) == (src / "policies" / "__init__.py").resolve()
    first = venv.cosim(*command, cwd=elsewhere).stdout
    venv.pip("install", "--no-deps", str(src), cwd=elsewhere)
    installed = venv.module_file("policies", elsewhere)
    assert "site-packages" in installed.parts, installed
    listing = venv.cosim("policies", "list", cwd=elsewhere).stdout
    assert "fifo" in listing and "tiresias" in listing, listing
    assert venv.cosim(*command, cwd=elsewhere).stdout == first
    assert venv.numba_files() == [], f"numba cache files inside the venv: {venv.numba_files()[:5]}"
