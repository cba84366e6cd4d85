"""Start-up work `cosim simulate` no longer does: numba's BLAS probe deferred, networkx not loaded.

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
        "from simcore.runner import build_perf\n"
        "cfg = RunConfig(trace=DEFAULT_TRACE, cluster='dgx-a100')\n"
        "be = real_backends(cfg)\n"
        "topo = be.topology(cfg)\n"
        "perf = build_perf(topo, be, cfg)\n"
        "perf.prepared.job(1.0, 0.5, 0.1, [0], [1e9])  # a first kernel load (the set-up itself loads none)\n"
        "be.load_trace(cfg)\n"
        "print('networkx' in sys.modules, 'scipy.linalg' in sys.modules, 'numba.np.arraymath' in sys.modules)\n")
    assert out.split() == ["False", "False", "True"]


def test_registering_every_policy_loads_no_scipy_special():
    """Loading every policy module (what `cosim policies list` does; a run loads only its own,
    tests/policies/test_lazy_registry.py): scipy.special (≈ 0.12 s) is imported only where a
    policy first uses it (ONES' Beta predictor)."""
    out = _run("import sys\nimport policies\npolicies.POLICIES.load_all()\n"
               "print('scipy.special' in sys.modules, len(policies.POLICIES.loaded()) > 0)\n")
    assert out.split() == ["False", "True"]
