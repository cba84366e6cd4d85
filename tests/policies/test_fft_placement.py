"""FFT's placement within a type (§4.3) and its ablation switches (§6.2.4): host packing and
stickiness; the placement-throughput and switch metrics of experiments/fft_metrics.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments.fft_metrics import _switches, placement_speed
from policies import make
from policies.round import Round
from tests.policies.conftest import Job, build_view
from traces.fft import larger_than_every_type


def _fft(**kw):
    return make("fft", dataset_locality=False, **kw)


def _hosts(gpus, per=4):
    return sorted({g // per for g in gpus})


def test_pack_hosts_puts_a_4gpu_job_on_one_host_and_the_ablation_spreads_it():
    """3 hosts × 4 GPUs of one type; GPU 0 (host 0) and GPUs 4, 5 (host 1) busy. FFT's packing puts a
    4-GPU job on host 2 and a 2-GPU job on the fullest host with room (host 1, best fit);
    `pack_hosts=false` takes the free GPUs in id order: 1, 2, 3, 6 over two hosts."""
    jobs = [Job(gpus=1, alloc=(0,)), Job(gpus=2, alloc=(4, 5)), Job(gpus=4), Job(gpus=2)]
    view = build_view(jobs, nodes=3, gpus_per_node=4, leaves=1)
    for pack, four, two in [(True, [8, 9, 10, 11], [6, 7]), (False, [1, 2, 3, 6], [1, 2])]:
        pol = _fft(pack_hosts=pack)
        r = Round(view, pol)
        r.keep(0)
        r.keep(1)
        assert pol.place_type(view, r, 2, 4, 0).tolist() == four
        assert pol.place_type(view, r, 3, 2, 0).tolist() == two
    assert len(_hosts([1, 2, 3, 6])) == 2


def test_sticky_keeps_hosts_and_the_ablation_replaces_every_running_job():
    """Two hosts × 4 GPUs of one type; job 0 runs on GPU 1 (host 0), job 1 on GPUs 4-6 (host 1),
    both stay on the type. Sticky FFT keeps both where they are (no move, no cost); with
    `sticky=false` both are placed anew, largest first: job 1 takes GPUs 0-2 and job 0 GPU 3."""
    jobs = [Job(gpus=1, alloc=(1,)), Job(gpus=3, alloc=(4, 5, 6))]
    view = build_view(jobs, nodes=2, gpus_per_node=4, leaves=1)
    ids = np.array([0, 1])
    choice = np.array([0, 0])
    d = np.array([1, 3])
    theta = np.ones((2, 1))
    for sticky, want in [(True, {0: (1,), 1: (4, 5, 6)}), (False, {0: (3,), 1: (0, 1, 2)})]:
        pol = _fft(sticky=sticky)
        dec = pol._place(view, ids, choice, d, theta, False, 100.0)
        got = {}
        for j in (0, 1):
            a = dec.allocations.get(j)
            got[j] = tuple(a.gpus) if a is not None else tuple(view.allocation_of(j).tolist())
        assert got == want


def test_placement_speed_is_reference_work_per_executed_second():
    """Two jobs: one did its 100 s of reference work in 100 s, the other 50 s of its 100 s (half
    done) in 100 s: 150 s of work in 200 s executed = 0.75; a job that never ran is left out."""
    jobs = SimpleNamespace(executed_s=np.array([100.0, 100.0, 0.0]), progress=np.array([1.0, 0.5, 0.0]),
                           work_iters=np.array([10.0, 20.0, 5.0]), ref_iter_s=np.array([10.0, 5.0, 1.0]))
    assert placement_speed(SimpleNamespace(jobs=jobs)) == pytest.approx(0.75)


def test_switches_count_type_changes_their_direction_and_cost():
    """GPUs 0-1 type 0 (slow), 2-3 type 1 (fast). Job a: start on 0, keep, move to type 1 (30 s),
    back to type 0 (40 s); job b: start on 2, re-placed on 3 (same type, 10 s counted), an empty
    release, and job z unknown to the run. 2 switches (a: up then down), 50 % upward,
    30 + 40 + 10 = 80 s."""
    jobs = pd.DataFrame({"job_id": ["a", "b"]})
    dec = {"job_id": ["a", "b", "a", "a", "b", "z", "a", "b"],
           "action": ["start", "start", "keep", "migrate", "migrate", "start", "migrate", "preempt"],
           "gpus": ["0", "2", "0", "2,3", "3", "1", "1", ""],
           "cost_s": [0.0, 0.0, 5.0, 30.0, 10.0, 7.0, 40.0, 0.0]}
    speed = np.array([[1.0, 2.0], [1.0, 2.0]])
    out = _switches(jobs, dec, speed, np.array([0, 0, 1, 1]))
    assert out == {"type_switches": 2.0, "upward_share": 0.5, "switching_overhead_s": 80.0}


def test_larger_than_every_type():
    assert larger_than_every_type([1, 8, 16, 13], [12, 12, 12]) == 2
    assert larger_than_every_type([1, 8], [124, 128]) == 0
    from cosim.errors import InputError

    with pytest.raises(InputError):
        larger_than_every_type([1], [])
