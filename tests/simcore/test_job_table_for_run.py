"""Each policy's run starts from the same job table: `JobTable.for_run` shares the trace's
columns (which no run writes) and copies the run's state, except for the runner's last policy,
which takes the table's state over (a million-job run keeps one table in memory, not two)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simcore.state import STATIC_COLUMNS, JobTable


def _table(n: int = 5) -> JobTable:
    static = {f.name: np.arange(n) for f in dataclasses.fields(JobTable)
              if f.name in STATIC_COLUMNS}
    static["global_batch"] = np.full(n, 32, np.int32)
    return JobTable.build(static)


def test_static_columns_are_exactly_the_ones_build_takes():
    built = _table()
    dynamic = {f.name for f in dataclasses.fields(JobTable)} - STATIC_COLUMNS - {"attrs"}
    assert STATIC_COLUMNS <= set(vars(built))
    assert all(getattr(built, k).shape == (5,) for k in dynamic)


def test_for_run_shares_trace_columns_and_copies_state():
    base = _table()
    base.attrs["lr"] = np.ones(5)
    run = base.for_run()
    for k in STATIC_COLUMNS:
        assert getattr(run, k) is getattr(base, k), k
    run.progress[:] = 0.5
    run.state[:] = 3
    run.attrs["lr"][:] = 7.0
    assert (base.progress == 0).all() and (base.state != 3).all() and (base.attrs["lr"] == 1.0).all()


def test_last_run_takes_the_state_over():
    base = _table()
    run = base.for_run(last=True)
    assert all(getattr(run, k) is getattr(base, k) for k in vars(base) if k != "attrs")


@pytest.mark.parametrize("order", [("optimus", "tiresias", "fifo"), ("fifo", "tiresias", "optimus")])
def test_each_policy_as_if_alone(order):
    """A run of several policies gives each one the jobs table it gets alone, in any order: no
    run leaves state behind in the trace's columns or in the next run's."""
    from experiments.runner import RunConfig, run

    cfg = dict(trace="synth:philly:300", cluster="dgx-a100", cluster_nodes=4, seed=3)
    together = run(RunConfig(policies=order, **cfg), None)
    for name in order:
        alone = run(RunConfig(policies=(name,), **cfg), None)
        a, b = alone.job_tables[name], together.job_tables[name]
        assert a.equals(b), name
