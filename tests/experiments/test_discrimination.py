"""Warnings for runs that cannot discriminate: hand-made summaries and one real tiny run."""

from experiments.discrimination import inert_axes, never_queues, sweep_warnings, warnings
from experiments.sweep import parse_sweep

BASE = dict(finished=10, avg_jct_s=100.0, makespan_s=500.0, starvation_s=30.0, status="ok")


def test_never_queues_only_when_no_job_waited_anywhere():
    assert never_queues([dict(BASE, starvation_s=0.0), dict(BASE, starvation_s=0.0)]).startswith(
        "warning: the cluster never queues")
    assert never_queues([dict(BASE, starvation_s=0.0), dict(BASE, starvation_s=5.0)]) is None
    # a failed cell's missing metrics do not count as a run that never queued
    assert never_queues([dict(status="error", starvation_s=None)]) is None


def test_axis_that_changes_nothing_is_named_and_one_that_does_is_not():
    rows = [dict(BASE, policy=p, seed=s, avg_jct_s=100.0 + s) for p in ("fifo", "sjf") for s in (0, 1)]
    assert inert_axes(rows, ["policy", "seed"]) == ["policy"]
    rows[0]["avg_jct_s"] = 99.0  # fifo differs from sjf on seed 0
    assert inert_axes(rows, ["policy", "seed"]) == []


def test_contention_axis_reads_as_contention_never_binds():
    rows = [dict(BASE, policy=p, contention=c) for p in ("fifo", "sjf") for c in (True, False)]
    rows[0]["avg_jct_s"] = 90.0  # policies differ; contention on equals off within each policy
    rows[1]["avg_jct_s"] = 90.0
    lines = warnings(rows, ["policy", "contention"])
    assert lines == ["warning: contention never binds: every run with network contention on gives the same "
                     "results as with it off, so no job's communication was slowed by another's"]


def test_sweep_names_a_policy_parameter_that_changes_nothing():
    cfg = parse_sweep({"traces": ["synth:philly:8"], "seeds": [0, 1],
                       "policies": {"fifo": {}, "ares": {"alpha": [0.55, 0.75]}}})
    rows = []
    for cell in cfg.cells():
        row = dict(BASE, policy=cell.policy.name, policy_label=cell.policy.label, seed=cell.seed,
                   trace=cell.trace.label, avg_jct_s=100.0 + cell.seed + (cell.policy.name == "ares"))
        row.update({f"param_{k}": v for k, v in cell.policy.params})
        rows.append(row)
    assert sweep_warnings(rows, cfg) == ["warning: ares's alpha changes no output: every group of ares runs that "
                                         "differs only in alpha has identical results"]


def test_real_run_on_an_idle_cluster_warns_that_it_never_queues():
    from experiments.runner import RunConfig, run
    from simcore.tables import table_rows

    # 12 jobs over 4 hours on 64 GPUs: nothing ever waits, so FIFO and SJF schedule alike
    result = run(RunConfig(trace="synth:philly:12:4h", policies=("fifo", "sjf")), None)
    lines = warnings(table_rows(result.summary_table), ["policy"])
    assert any(line.startswith("warning: the cluster never queues") for line in lines)
    assert any(line.startswith("warning: the policy axis changes no output") for line in lines)
