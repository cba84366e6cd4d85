"""The experiments layer: runs, sweeps, reports and paper reproductions, above the engine and
the policies.

- `experiments.runner`: one run (trace + cluster + perf model + policies from the registry →
  Parquet outputs); `experiments.sweep`: grids of runs, local or on Ray, resumable;
  `experiments.report`: figures and an HTML page from a run or sweep folder.
- `experiments.spec`: an experiment declared as data (`experiments/catalog/<name>.toml`):
  grids of traces × clusters × perf backends × policies × parameters × seeds, per figure a
  metric and the paper's reported numbers or orderings; sizes `small` (CI), `full` and, where
  declared, `medium`; an optional hooks module adds per-cell metrics and report tables (Aryl).
- `experiments.reproduction`: runs the grids through the sweep machinery and writes Parquet,
  figures and REPORT.md ("paper | cosim | same ordering?"); `cosim reproduce` is its CLI.
"""

from __future__ import annotations

import cosim  # noqa: F401  first: OpenBLAS' kernels and threads are set before numpy loads (cosim.blas)

from typing import Any


def reproduce(*args: Any, **kwargs: Any):
    """See `experiments.reproduction.reproduce` (imported on use: the package import stays light)."""
    from experiments.reproduction import reproduce as run

    return run(*args, **kwargs)


def names() -> list[str]:
    from experiments.spec import names as catalog

    return catalog()


def load_experiment(name: str):
    from experiments.spec import load_experiment as load

    return load(name)


__all__ = ["reproduce", "names", "load_experiment"]
