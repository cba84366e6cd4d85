"""Completions a policy declared need a queue (`completions_need_queue`) are answered by the
engine without calling it while nothing is queued, and the run is the same as when every
completion calls the policy.

Two workloads for FIFO: one where jobs queue (3 DGX-A100 nodes, a 2-hour burst: the engine
must still call the policy at a completion with a queue behind it) and one where nothing
queues (40 nodes: every completion is answered by the engine). The reference run is FIFO with
the declaration switched off. The policy's calls are counted as they are made; the summary's
`policy_calls` counts decision points, so it is the same in both runs.
"""

from __future__ import annotations

import pandas as pd
import pytest

from policies.fifo import Fifo

DECIDE = Fifo.decide  # the policy's own, wrapped afresh in each run

WORKLOADS = {
    "queueing": dict(trace="synth:philly-sia:120:2h", cluster="dgx-a100", cluster_nodes=3),
    "idle": dict(trace="synth:philly:150", cluster="dgx-a100", cluster_nodes=40),
}


def _run(monkeypatch, workload: str, declared: bool) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    from experiments.runner import RunConfig, run

    made = []  # (time, queued jobs) of each call the policy saw

    def counted(self, view, now):
        made.append((now, int(view.queued().shape[0])))
        return DECIDE(self, view, now)

    monkeypatch.setattr(Fifo, "decide", counted)
    monkeypatch.setattr(Fifo, "completions_need_queue", declared)
    res = run(RunConfig(policies=("fifo",), seed=0, **WORKLOADS[workload]), None)
    return res.jobs["fifo"], res.summary, made


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_quiet_completions_change_nothing_but_the_calls_made(monkeypatch, workload):
    jobs_q, summary_q, made_q = _run(monkeypatch, workload, declared=True)
    jobs_all, summary_all, made_all = _run(monkeypatch, workload, declared=False)
    pd.testing.assert_frame_equal(jobs_q, jobs_all, check_exact=True)
    cols = [c for c in summary_all.columns if "wall" not in c]
    pd.testing.assert_frame_equal(summary_q[cols], summary_all[cols], check_exact=True)
    calls = int(summary_all["policy_calls"].iloc[0])
    assert len(made_all) == calls  # without the declaration every decision point is a call
    assert len(made_q) < calls  # with it, completions with nothing queued were answered here
    # an instant the engine answered changes nothing: the calls it skipped all saw no queue
    skipped = sorted(set(made_all) - set(made_q))
    assert skipped and all(q == 0 for _, q in skipped)
    if workload == "queueing":
        assert (jobs_all["waiting_s"] > 0).any()  # jobs queued: completions with a queue were calls
        assert any(q > 0 for _, q in made_q)
    else:
        assert not (jobs_all["waiting_s"] > 0).any()
        assert len(made_q) == len(jobs_all)  # one call per arrival, none per completion
