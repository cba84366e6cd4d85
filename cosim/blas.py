"""Which OpenBLAS kernels and numpy loops cosim runs on, set before numpy loads.

OpenBLAS picks its kernels by the CPU it loads on (Haswell's on AVX2 CPUs, SkylakeX's on AVX-512
ones, …), and the kernels add a product's terms in different orders. A simulation's few products
(a fitted step form's features × weights, Gavel's throughputs × shares, Pollux's optimiser steps)
then differ in the last bit between CPUs, and one last bit can move an event time and every
decision after it: the 100,000-job benchmark's jobs table (`python -m benchmarks.bench_scale
--jobs 100000 --hash`) hashed differently with the Haswell kernels and with the SkylakeX ones.
numpy does the same in its own loops: on an AVX-512 CPU it runs other implementations of tanh,
exp, log and others than on an AVX2 one, and they differ in the last bit (ONES' predictor, a
small tanh network, moved a 32-GPU ONES run's average JCT by 3 %). So on an x86-64 CPU with AVX2
and FMA, cosim asks for OpenBLAS' Haswell kernels and, on an AVX-512 CPU, for numpy's AVX2 loops
(`NPY_DISABLE_CPU_FEATURES` = numpy's AVX-512 targets): what every such CPU runs, so the same seed
gives the same Parquet on all of them. CPUs without AVX2 and other architectures (ARM) keep the
libraries' own choices, and their outputs may differ in the last bits.

It also asks for one OpenBLAS thread: the simulator's linear algebra is tiny (a Delaunay's 4x4
barycentric solves, an 8-feature dot product); with the default one thread per core, the workers
spin after each call, and on a shared 2-core host that spinning cost the Pollux workload-1 run
0.2-2 s of CPU against 0.3 s for the whole engine.

All are defaults (`OPENBLAS_CORETYPE`, `NPY_DISABLE_CPU_FEATURES`, `OPENBLAS_NUM_THREADS`): a
value set in the environment is kept. numpy reads its setting at import and each OpenBLAS copy
its own when it loads (numpy's at numpy's import, scipy's when its linear algebra first loads),
so `configure()` runs from `cosim/__init__.py`, and a program that imports numpy before cosim
keeps what numpy loaded with.
"""

from __future__ import annotations

import os
import platform

#: OpenBLAS' name of the kernels every x86-64 CPU with AVX2 and FMA runs
X86_KERNELS = "Haswell"
#: numpy's AVX-512 dispatch targets (`NPY_DISABLE_CPU_FEATURES`), from numpy 2.4 and before it
NUMPY_AVX512_TARGETS = "X86_V4 AVX512_ICL AVX512_SPR"
NUMPY_AVX512_TARGETS_BEFORE_2_4 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (Linux); empty where it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def kernels_for(machine: str, flags: set[str]) -> str | None:
    """The OpenBLAS core type cosim asks for on this CPU, or None (OpenBLAS' own choice)."""
    if machine.lower() in ("x86_64", "amd64") and {"avx2", "fma"} <= flags:
        return X86_KERNELS
    return None


def numpy_avx512_targets() -> str | None:
    """The AVX-512 targets of the installed numpy's dispatched loops, by its version (read from its
    `version.py`, without importing it): numpy 2.4 names them by x86-64 level, earlier ones by
    feature group. None when numpy is not found."""
    import importlib.util

    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.origin:
        return None
    try:
        text = open(os.path.join(os.path.dirname(spec.origin), "version.py")).read()
        major, minor = (int(x) for x in text.split('version = "', 1)[1].split(".")[:2])
    except (OSError, IndexError, ValueError):
        return None
    return NUMPY_AVX512_TARGETS if (major, minor) >= (2, 4) else NUMPY_AVX512_TARGETS_BEFORE_2_4


def configure() -> None:
    """Set the defaults of the module doc unless the environment has them."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    flags = cpu_flags()
    core = kernels_for(platform.machine(), flags)
    if core is None:
        return
    os.environ.setdefault("OPENBLAS_CORETYPE", core)
    if "avx512f" in flags:
        targets = numpy_avx512_targets()
        if targets:
            os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", targets)
