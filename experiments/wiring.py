"""The composition root: wires the policy registry into the engine's runner.

simcore imports no policy package (tests/test_import_graph.py); its runner takes the registry
as an injected dependency (`simcore.runner.set_policy_factory`). This module, one layer up,
knows both and installs it. `install()` is idempotent and cheap (the loader imports
`policies` on first use), so `cosim --help` stays fast. `policy_registry` is a module-level
function so sweeps can send it to spawned and Ray workers by reference.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping


def make_policy(name: str, params: Mapping[str, Any]) -> Any:
    """A policy from the project's registry, with its parameters."""
    import policies

    return policies.make(name, **dict(params))


def policy_registry() -> tuple[Callable[[str, Mapping[str, Any]], Any], Callable[[], list[str]]]:
    """`(make, names)` of the project's policy registry (the loader `install` hands simcore)."""
    from policies.registry import POLICIES
    from experiments import fft_metrics

    fft_metrics.install()  # FFT's summary columns (also in sweep workers, which load the registry here)
    return make_policy, POLICIES.names


def install() -> None:
    """Give simcore's runner the project's policy registry (the default `Backends` use it)."""
    from simcore import runner

    runner.set_policy_factory(policy_registry)
