"""`simcore.engine.FrozenGarbage`: the full collections around `Engine.run`'s `gc.freeze()`.

A run freezes every tracked object, garbage included; without a collection between runs, what a
run leaves as cyclic garbage is frozen again by the next one, and a process of many runs grows by
it each run (a 60-step DRL training reached 16 GB). These tests check the rule (none before the
first run, then at most 1/`runs_per_cost` of the engine's seconds) and that a later run collects
what an earlier one left.
"""

from __future__ import annotations

import gc
import weakref

from simcore.engine import FROZEN_GARBAGE, FrozenGarbage


def test_no_collection_before_the_first_run_then_amortised(monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or 0)
    fg = FrozenGarbage(runs_per_cost=20.0)
    fg.before_run()
    assert calls == []  # a process's first run (a `cosim simulate`) pays nothing
    fg.after_run(0.5)
    fg.before_run()
    assert len(calls) == 1 and fg.runs == 0 and fg.run_s == 0.0  # a run ended: collected
    fg.cost_s = 0.1  # as if that collection took 0.1 s: the next after 20 × 0.1 s of runs
    for _ in range(3):
        fg.after_run(0.5)
        fg.before_run()
    assert len(calls) == 1  # 1.5 s of runs < 2 s
    fg.after_run(0.5)
    fg.before_run()
    assert len(calls) == 2 and fg.collections == 2


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_later_run_collects_the_garbage_an_earlier_one_left(monkeypatch):
    from experiments.runner import RunConfig, run

    monkeypatch.setattr(FROZEN_GARBAGE, "runs_per_cost", 0.0)  # collect before every run after the first
    cfg = RunConfig(trace="synth:philly:20", cluster="dgx-a100", cluster_nodes=1, policies=("fifo",), seed=0,
                    skip_invalid=True)
    run(cfg, None, progress=False)
    enabled = gc.isenabled()
    gc.disable()  # no young collection may take the object first: only the rule's full one
    try:
        obj = _Cycle()
        ref = weakref.ref(obj)
        del obj  # cyclic garbage now, as a dropped engine is
        before = FROZEN_GARBAGE.collections
        run(cfg, None, progress=False)
    finally:
        if enabled:
            gc.enable()
    assert FROZEN_GARBAGE.collections > before
    assert ref() is None
