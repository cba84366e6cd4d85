"""cosim pins OpenBLAS' kernels on x86-64 CPUs with AVX2 and FMA (cosim.blas): the same seed gives
the same outputs on all of them. The choice is a default the environment overrides, and it reaches
numpy's OpenBLAS when cosim is imported first."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from cosim.blas import X86_KERNELS, cpu_flags, kernels_for

#: prints the core type of every OpenBLAS copy loaded after importing cosim, then numpy
PROBE = """
import ctypes, cosim, numpy
libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l.lower() and '.so' in l})
for lib in libs:
    L = ctypes.CDLL(lib)
    for name in ('scipy_openblas_get_corename64_', 'scipy_openblas_get_corename', 'openblas_get_corename'):
        f = getattr(L, name, None)
        if f is not None:
            f.restype = ctypes.c_char_p
            print(f().decode())
            break
"""


def test_kernels_for():
    assert kernels_for("x86_64", {"avx2", "fma", "sse4_2"}) == X86_KERNELS
    assert kernels_for("AMD64", {"avx2", "fma"}) == X86_KERNELS
    assert kernels_for("x86_64", {"avx", "sse4_2"}) is None  # a CPU that cannot run the Haswell kernels
    assert kernels_for("aarch64", {"avx2", "fma"}) is None


def _corenames(env: dict[str, str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(not (sys.platform.startswith("linux") and kernels_for(platform.machine(), cpu_flags())),
                    reason="pins kernels only on Linux x86-64 CPUs with AVX2 and FMA")
def test_numpy_loads_the_pinned_kernels_and_the_environment_wins():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    names = _corenames(env)
    if not names:
        pytest.skip("numpy's OpenBLAS does not report its core name")
    assert set(names) == {X86_KERNELS}
    assert set(_corenames({**env, "OPENBLAS_CORETYPE": "Sandybridge"})) == {"Sandybridge"}


def test_numpy_targets_by_version(monkeypatch):
    import cosim.blas as B

    assert B.numpy_avx512_targets() in (B.NUMPY_AVX512_TARGETS, B.NUMPY_AVX512_TARGETS_BEFORE_2_4)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert B.numpy_avx512_targets() is None


@pytest.mark.skipif(not (sys.platform.startswith("linux") and "avx512f" in cpu_flags()
                         and kernels_for(platform.machine(), cpu_flags())),
                    reason="numpy's AVX-512 loops are switched off only on AVX-512 CPUs")
def test_numpy_runs_its_avx2_loops_on_an_avx512_cpu():
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    probe = ("import cosim, numpy\n"
             "try:\n    from numpy._core._multiarray_umath import __cpu_features__ as f\n"
             "except ImportError:\n    from numpy.core._multiarray_umath import __cpu_features__ as f\n"
             "print(f.get('X86_V4', f.get('AVX512_SKX')), f.get('X86_V3', f.get('AVX2')))")
    out = subprocess.run([sys.executable, "-W", "error::ImportWarning", "-c", probe], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
