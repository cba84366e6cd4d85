"""Rounds a policy promised quiet (`Decision.quiet_until`) are answered by the engine without
calling it, and the run is the same as when every round calls the policy.

Tiresias with the Pollux simulator's settings (`tiresias-pollux`: admission by GPU count, 60-s
rounds) promises quiet until the next queue crossing; thresholds of 0.2 and 1 GPU-hour make
jobs cross often on a small queueing workload, so both the promise's end at a crossing and the
demotions it must not skip are exercised. The reference run strips every promise.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from policies.tiresias import TiresiasPollux

CONFIG = dict(trace="synth:philly-sia:60:1h", cluster="dgx-a100", cluster_nodes=2, seed=3,
              policies=("tiresias-pollux",),
              policy_params={"tiresias-pollux": {"thresholds_gpu_s": (720.0, 3600.0)}})


def _run(monkeypatch, promise: bool) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    from experiments.runner import RunConfig, run

    calls = []
    decide = TiresiasPollux.decide

    def counted(self, view, now):
        calls.append(now)
        d = decide(self, view, now)
        return d if promise else dataclasses.replace(d, quiet_until=None)

    monkeypatch.setattr(TiresiasPollux, "decide", counted)
    res = run(RunConfig(**CONFIG), None)
    return res.jobs["tiresias-pollux"], res.summary, len(calls)


def test_quiet_rounds_change_nothing_but_the_calls_made(monkeypatch):
    jobs_q, summary_q, made_q = _run(monkeypatch, promise=True)
    jobs_all, summary_all, made_all = _run(monkeypatch, promise=False)
    pd.testing.assert_frame_equal(jobs_q, jobs_all, check_exact=True)
    pd.testing.assert_frame_equal(summary_q, summary_all, check_exact=True)
    assert (jobs_all["num_restarts"] > 0).any()  # demotions preempted jobs: crossings were seen
    calls = int(summary_all["policy_calls"].iloc[0])
    assert made_all == calls  # without promises every decision point is a call
    assert made_q < calls  # with them, some rounds were answered by the engine (still counted)


def test_decision_quiet_until_defaults_to_no_promise():
    from simcore.api import Decision

    assert Decision().quiet_until is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        Decision().quiet_until = 1.0  # type: ignore[misc]
