"""Start-up work `cosim simulate` no longer does: numba's BLAS probe deferred, its target refresh
skipped when kernels only load from the cache, networkx not loaded.

Each check runs in a fresh interpreter (what is imported depends on what ran before).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _run_twice(code: str, cache: Path) -> list[list[str]]:
    """The words `code` prints in each of two fresh interpreters sharing the kernel cache `cache`
    (the first compiles, the second loads)."""
    import os

    env = dict(os.environ, COSIM_NUMBA_CACHE_DIR=str(cache))
    outs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600,
                              check=False, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        outs.append(done.stdout.split())
    return outs


def test_blas_probe_deferred_but_answers_as_numba_would():
    out = _run(
        "import sys, cosim, numba, numpy as np\n"
        "from numba.core.registry import cpu_target\n"
        "cpu_target.target_context.refresh()  # what the first kernel load does\n"
        "import numba.np.arraymath as A\n"
        "print('scipy.linalg' in sys.modules, type(A._HAVE_BLAS).__name__)\n"
        "from numba.np.linalg import ensure_blas\n"
        "try:\n    ensure_blas(); real = True\nexcept ImportError:\n    real = False\n"
        "print(bool(A._HAVE_BLAS) == real)\n"
        "f = numba.njit(lambda a, b: np.correlate(a, b))\n"
        "a, b = np.linspace(0, 1, 7), np.linspace(1, 2, 3)\n"
        "print(np.array_equal(f(a, b), np.correlate(a, b)))\n")
    assert out.split() == ["False", "_DeferredBlasCheck", "True", "True"]


def test_default_run_setup_loads_neither_networkx_nor_scipy_linalg():
    """The default simulate's set-up (cluster, network model, a first kernel, trace):
    networkx only serves `Topology.graph()`, scipy's BLAS no cosim kernel."""
    out = _run(
        "import sys\n"
        "from experiments.runner import DEFAULT_TRACE, RunConfig, real_backends\n"
        "from experiments.run_perf import build_perf\n"
        "cfg = RunConfig(trace=DEFAULT_TRACE, cluster='dgx-a100')\n"
        "be = real_backends(cfg)\n"
        "topo = be.topology(cfg)\n"
        "perf = build_perf(topo, be, cfg)\n"
        "perf.prepared.job(1.0, 0.5, 0.1, [0], [1e9])  # a first kernel load (the set-up itself loads none)\n"
        "be.load_trace(cfg)\n"
        "print('networkx' in sys.modules, 'scipy.linalg' in sys.modules)\n")
    assert out.split() == ["False", "False"]  # whether the kernel compiled or loaded from the cache


def test_registering_every_policy_loads_no_scipy_special():
    """Loading every policy module (what `cosim policies list` does; a run loads only its own,
    tests/policies/test_lazy_registry.py): scipy.special (≈ 0.12 s) is imported only where a
    policy first uses it (ONES' Beta predictor)."""
    out = _run("import sys\nimport policies\npolicies.POLICIES.load_all()\n"
               "print('scipy.special' in sys.modules, len(policies.POLICIES.loaded()) > 0)\n")
    assert out.split() == ["False", "True"]


KERNEL = """
import numba
import numpy as np


@numba.njit(cache=True)
def total(a):
    return np.sort(a)[::2].sum()
"""


def test_cached_kernel_loads_without_target_refresh_and_compiling_still_works(tmp_path):
    """A kernel compiled in one process loads from the cache in the next without numba's target
    refresh (its registries, e.g. numba's cffi typing and numba.np.random, stay unimported), gives
    the same result, and a kernel compiled after it still gets the full target (the compiler
    refreshes it): `cosim.numba_cache.defer_target_refresh`."""
    (tmp_path / "kmod.py").write_text(KERNEL)
    code = ("import sys\nsys.path.insert(0, %r)\nimport cosim, numba, numpy as np\nimport kmod\n"
            "from numba.core import caching\nfrom cosim import numba_cache\n"
            "print(caching.Cache.load_overload is numba_cache._load_overload_without_refresh)\n"
            "print(kmod.total(np.array([3.0, 1.0, 2.0, 5.0])))\n"
            "print('numba.core.typing.cffi_utils' in sys.modules, 'numba.np.random.generator_methods' in sys.modules)\n"
            "g = numba.njit(lambda a: np.cumsum(a)[-1] + np.random.rand() * 0)\n"
            "print(g(np.arange(4.0)), 'numba.np.random.generator_methods' in sys.modules)\n") % str(tmp_path)
    outs = _run_twice(code, tmp_path / "cache")
    first, second = outs
    assert first[:2] == ["True", "4.0"] and first[2:4] == ["True", "True"]  # compiled: full target
    assert second[:2] == ["True", "4.0"] and second[2:4] == ["False", "False"]  # loaded: no refresh
    assert second[4:] == ["6.0", "True"]  # a compile after a cached load: refreshed, correct


def test_numba_imports_neither_scipy_nor_yaml_and_reads_a_config_file_as_before(tmp_path):
    """`cosim.numba_cache.trim_numba_import`: `import numba` after cosim loads neither scipy (its
    version check only) nor PyYAML (no `.numba_config.yaml` here), numba still knows PyYAML is
    there, and a `.numba_config.yaml` in the working folder is read as numba reads it."""
    code = ("import sys\nsys.path.insert(0, %r)\nimport cosim, numba\nimport numba.core.config as c\n"
            "print('scipy' in sys.modules, 'yaml' in sys.modules, c._HAVE_YAML, numba.config.DISABLE_JIT)\n"
            "import scipy\nprint(scipy.__version__ > '1')\n") % str(REPO)
    plain = tmp_path / "plain"
    with_file = tmp_path / "with-file"
    plain.mkdir()
    with_file.mkdir()
    (with_file / ".numba_config.yaml").write_text("disable_jit: 1\n")
    runs = [subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600,
                           check=False) for cwd in (plain, with_file)]
    for done in runs:
        assert done.returncode == 0, done.stderr[-2000:]
    assert runs[0].stdout.split() == ["False", "False", "True", "0", "True"]
    assert runs[1].stdout.split() == ["False", "True", "True", "1", "True"]


def test_cache_folder_probe_runs_once_per_folder(tmp_path):
    """Numba's writability probe of a kernel cache folder (a temporary file) runs for the first
    kernel of each folder only; a folder removed meanwhile is created again, and caching works."""
    (tmp_path / "kmods").mkdir()
    (tmp_path / "kmods" / "kmod.py").write_text(KERNEL + "\n\n@numba.njit(cache=True)\ndef twice(a):\n"
                                                "    return 2 * a.sum()\n")
    (tmp_path / "kmod2.py").write_text(KERNEL)
    code = ("import sys, shutil, tempfile\nsys.path[:0] = [%r, %r]\nimport cosim, numba, numpy as np\n"
            "calls = []\nreal = tempfile.TemporaryFile\n"
            "tempfile.TemporaryFile = lambda *a, **k: calls.append(k['dir']) or real(*a, **k)\n"
            "import kmod\nprint(len(calls))\nshutil.rmtree(calls[0])\nimport kmod2\nprint(len(calls))\n"
            "print(kmod.twice(np.ones(3)), kmod2.total(np.array([3.0, 1.0, 2.0, 5.0])))\n"
            ) % (str(tmp_path / "kmods"), str(tmp_path))
    outs = _run_twice(code, tmp_path / "cache")
    # one probe per folder: kmods/ (two kernels) then the test folder (removed kmods/ is made again on save)
    assert outs[0][:2] == ["1", "2"] and outs[0][2:] == ["6.0", "4.0"]
    assert outs[1] == outs[0]


def test_cosim_kernels_load_without_the_entry_point_scan_and_extensions_still_initialise(tmp_path):
    """`cosim.numba_cache.defer_extension_init`: a cached cosim kernel is called without numba
    importing `importlib.metadata` and scanning every distribution's entry points; an installed
    numba extension (a `numba_extensions` entry point, here a distribution in a folder on
    `sys.path`) is still initialised before any other kernel is typed, as numba does it."""
    dist = tmp_path / "site" / "cosimtestext-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cosimtestext\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[numba_extensions]\ninit = cosimtestext:init\n")
    (tmp_path / "site" / "cosimtestext.py").write_text("CALLS = []\n\ndef init():\n    CALLS.append(1)\n")
    code = ("import sys\nsys.path.insert(0, %r)\nimport cosim, numba, numpy as np\nimport cosimtestext\n"
            "from cosim.nsort import sorted_copy\n"
            "print(sorted_copy(np.array([3.0, 1.0, 2.0]))[0], 'importlib.metadata' in sys.modules, "
            "len(cosimtestext.CALLS))\n"
            "print(numba.njit(lambda a: a.sum())(np.ones(3)), 'importlib.metadata' in sys.modules, "
            "len(cosimtestext.CALLS))\n") % str(tmp_path / "site")
    first, second = _run_twice(code, tmp_path / "cache")
    assert first[:1] == ["1.0"] and first[3:] == ["3.0", "True", "1"]  # compiled: the compiler initialised it
    assert second == ["1.0", "False", "0", "3.0", "True", "1"]  # loaded: no scan until another kernel's first call
