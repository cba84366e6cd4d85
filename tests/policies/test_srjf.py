"""SRJF (the Ares artifact's Lucid stand-in): shortest remaining first at the requested count."""

from __future__ import annotations

from policies import make
from tests.policies.conftest import Job, build_view, gpus_of
from tests.policies.minisim import simulate


def _view(**kw):
    # 16 GPUs; job 0 runs on 8 with a long remaining time; trace durations unknown (NaN) as in
    # the Pollux/Sia/Ares workloads
    jobs = [
        Job(gpus=8, submit=0.0, alloc=tuple(range(8)), remaining=5000.0),
        Job(gpus=8, submit=1.0, remaining=1000.0),  # FIFO would start this one
        Job(gpus=4, submit=2.0, remaining=5.0),
        Job(gpus=8, submit=3.0, remaining=10.0),
        Job(gpus=4, submit=4.0, remaining=20.0),
    ]
    return build_view(jobs, **kw)


def _started(d, view):
    return sorted(j for j in d.allocations if gpus_of(d, j) and not view.jobs.alloc_count[j])


def test_ranks_by_remaining_not_arrival_and_blocks():
    view = _view()
    d = make("srjf").decide(view, 100.0)
    assert _started(d, view) == [2]  # 5 s first; the 8-GPU 10-s job blocks the rest
    assert len(gpus_of(d, 2)) == 4


def test_skip_variant_fills_behind_a_blocked_job():
    view = _view()
    d = make("srjf", blocking=False).decide(view, 100.0)
    assert _started(d, view) == [2, 4]


def test_sjf_degrades_to_fifo_where_srjf_does_not():
    view = _view()
    d = make("sjf").decide(view, 100.0)
    assert _started(d, view) == [1]  # NaN durations: arrival order


def test_non_preemptive_keeps_long_running_job():
    d = make("srjf").decide(_view(), 100.0)
    assert 0 not in d.allocations or gpus_of(d, 0) == tuple(range(8))


def test_preemptive_variant_drops_long_running_job():
    view = _view()
    d = make("srjf", preemptive=True).decide(view, 100.0)
    assert gpus_of(d, 0) == ()  # preempted: 5 + 10 s jobs take 12 GPUs, the 20-s one 4 more
    assert sorted(j for j in d.allocations if gpus_of(d, j)) == [2, 3, 4]


def test_runs_shortest_first_to_completion():
    # one 4-GPU node: all arrive at 0 and run one at a time, shortest first
    end, _ = simulate(make("srjf"), [0, 0, 0], [4, 4, 4], [30.0, 10.0, 20.0], nodes=1, leaves=1)
    assert end.tolist() == [60.0, 10.0, 30.0]
