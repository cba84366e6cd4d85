"""The `tiresias-pollux` preset: the Pollux OSDI'21 simulator's Tiresias parameters."""

from __future__ import annotations

from policies import make
from tests.policies.conftest import Job, build_view


def test_preset_parameters_and_rounds_only():
    pol = make("tiresias-pollux")
    c = pol.config
    assert c.thresholds_gpu_s == (57600.0,) and c.promote_knob == 0 and c.skew_models == ()
    assert pol.interval_s == 60 and pol.event_driven is False


def test_no_wake_ups_demotion_waits_for_the_round():
    # a running 4-GPU job 1 GPU-h below the 16 GPU-h threshold, a queued job waiting
    jobs = [Job(gpus=4, alloc=(0, 1, 2, 3), attained=57600.0 - 3600.0, executed=50000.0, first_start=0.0),
            Job(gpus=4, submit=5.0)]
    view = build_view(jobs, nodes=1, gpus_per_node=4, leaves=1)
    assert make("tiresias").decide(view, 100.0).wake_at is not None
    assert make("tiresias-pollux").decide(view, 100.0).wake_at is None
