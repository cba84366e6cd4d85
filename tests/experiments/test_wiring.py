"""simcore imports no policy: the runner's registry is injected, and sweeps carry it to workers."""

from __future__ import annotations

import pytest

from cosim.errors import CosimError


def test_runner_without_a_registry_fails_in_one_line(monkeypatch):
    import simcore.runner as runner

    monkeypatch.setattr(runner, "_policy_loader", None)
    with pytest.raises(CosimError, match="no policy registry installed"):
        runner.run(runner.RunConfig(trace="synth:philly:4", policies=("fifo",)), None)


def test_sweep_refuses_to_start_without_a_registry(monkeypatch, tmp_path):
    import simcore.runner as runner
    from simcore.sweep import parse_sweep, run_sweep

    monkeypatch.setattr(runner, "_policy_loader", None)
    with pytest.raises(CosimError, match="no policy registry installed"):
        run_sweep(parse_sweep({"traces": ["synth:philly:4"], "policies": ["fifo"]}), tmp_path / "s",
                  runner="simcore.runner")
    assert not (tmp_path / "s").exists()


def test_spawned_sweep_workers_get_the_drivers_registry(tmp_path):
    """The bare simcore.runner in a process pool: the workers import no policy themselves, so
    their cells only succeed because the driver's loader travelled with them."""
    import simcore.runner as runner
    from experiments.wiring import policy_registry
    from simcore.sweep import parse_sweep, run_sweep

    assert runner.policy_factory_loader() is policy_registry  # installed by tests/conftest.py, as the CLI does
    grid = parse_sweep({"traces": ["synth:philly:4"], "policies": ["fifo", "sjf"], "clusters": ["dgx-a100"]})
    res = run_sweep(grid, tmp_path / "pool", workers=2, runner="simcore.runner")
    assert (res.summary["status"] == "ok").all(), res.summary["error"].tolist()
    assert res.summary["finished"].tolist() == [4, 4]
