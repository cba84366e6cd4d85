"""The experiments layer composes engine and policies: a sweep's spawned workers build their
policies from the project's registry themselves, with nothing installed by the parent."""

from __future__ import annotations

import pickle


def test_the_default_runner_pickles_by_reference():
    from experiments import runner
    from experiments.sweep.cell import default_runner

    r = pickle.loads(pickle.dumps(default_runner()))
    assert r.run is runner.run and r.config is runner.RunConfig and r.policy_factory is runner.policy_factory


def test_spawned_sweep_workers_build_policies_from_the_registry(tmp_path):
    from experiments.sweep import parse_sweep, run_sweep

    grid = parse_sweep({"traces": ["synth:philly:4"], "policies": ["fifo", "sjf"], "clusters": ["dgx-a100"]})
    res = run_sweep(grid, tmp_path / "pool", workers=2)
    assert (res.summary["status"] == "ok").all(), res.summary["error"].tolist()
    assert res.summary["finished"].tolist() == [4, 4]
