"""Parameter sweeps: many simulations (cells) over a grid, run locally or on Ray, resumable.

`load_sweep(path) -> SweepConfig`, `SweepConfig.cells()`, `run_sweep(config, out_dir, ...)`.
The folder layout and its crash-safety argument are in `experiments.sweep.store`.
"""

from experiments.sweep.config import Cell, ClusterSpec, PolicyPoint, SweepConfig, TraceSpec, load_sweep, parse_sweep
from experiments.sweep.driver import SweepResult, run_sweep
from experiments.sweep.store import NONDETERMINISTIC, SUMMARY_FILE

__all__ = ["Cell", "ClusterSpec", "PolicyPoint", "SweepConfig", "TraceSpec", "load_sweep", "parse_sweep",
           "SweepResult", "run_sweep", "NONDETERMINISTIC", "SUMMARY_FILE"]
