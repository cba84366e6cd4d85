"""The runner with the project's policies wired in: what the CLI, sweeps and reproductions run.

`simcore.runner` is the engine-side orchestration with the policy registry as an injected
dependency; importing this module installs the project's registry (`experiments.wiring`) and
re-exports the runner's contract (`RunConfig`, `run`, …). Sweeps name it as their runner
module (`runner="experiments.runner"`), so spawned and Ray workers that import it by name get
the registry too.
"""

from __future__ import annotations

from experiments.wiring import install
from simcore.runner import (DEFAULT_TRACE, Backends, RunConfig, RunResult, default_policies, load_capacity,
                            policy_factory, policy_factory_loader, real_backends, run, set_policy_factory)

install()

__all__ = ["DEFAULT_TRACE", "Backends", "RunConfig", "RunResult", "default_policies", "load_capacity",
           "policy_factory", "policy_factory_loader", "real_backends", "run", "set_policy_factory"]
