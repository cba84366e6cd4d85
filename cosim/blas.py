"""Which OpenBLAS kernels cosim's linear algebra runs on, set before numpy loads OpenBLAS.

OpenBLAS picks its kernels by the CPU it loads on (Haswell's on AVX2 CPUs, SkylakeX's on AVX-512
ones, …), and the kernels add a product's terms in different orders. A simulation's few products
(a fitted step form's features × weights, Gavel's throughputs × shares, Pollux's optimiser steps)
then differ in the last bit between CPUs, and one last bit can move an event time and every
decision after it: the 100,000-job benchmark's jobs table (`python -m benchmarks.bench_scale
--jobs 100000 --hash`) hashed differently with the Haswell kernels and with the SkylakeX ones.
So on an x86-64 CPU with AVX2 and FMA, cosim asks for the Haswell kernels, which
every such CPU runs: the same seed gives the same Parquet on all of them. CPUs without AVX2 and
other architectures (ARM) keep OpenBLAS' own choice, and their outputs may differ in the last bits.

It also asks for one OpenBLAS thread: the simulator's linear algebra is tiny (a Delaunay's 4x4
barycentric solves, an 8-feature dot product); with the default one thread per core, the workers
spin after each call, and on a shared 2-core host that spinning cost the Pollux workload-1 run
0.2-2 s of CPU against 0.3 s for the whole engine.

Both are defaults (`OPENBLAS_CORETYPE`, `OPENBLAS_NUM_THREADS`): a value set in the environment
is kept. Each OpenBLAS copy reads them when it loads (numpy's at its import, scipy's when its
linear algebra first loads), so `configure()` runs from `cosim/__init__.py`, and a program that
imports numpy before cosim keeps the kernels numpy loaded with.
"""

from __future__ import annotations

import os
import platform

#: OpenBLAS' name of the kernels every x86-64 CPU with AVX2 and FMA runs
X86_KERNELS = "Haswell"


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


def configure() -> None:
    """Set the two OpenBLAS defaults (module doc) unless the environment has them."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    core = kernels_for(platform.machine(), cpu_flags())
    if core is not None:
        os.environ.setdefault("OPENBLAS_CORETYPE", core)
