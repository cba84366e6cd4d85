"""Themis: ρ by hand, the proportional-fair auction's winner and hidden payment on a small case,
the fairness knob, leftover hand-out, invariants of a round, and the FTF-LP variant's path."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make
from policies.themis import hidden_payments, leftover, pf_auction, rho_table
from simcore.api import NEED_DURATION_ORACLE
from tests.policies.conftest import Job, typed_view


def test_rho_by_hand():
    """Arrived 100 s ago, 1000 samples left, 10 or 5 samples/s on the two types, isolated
    finish time 200 s, 360-s lease: ρ = (100 + 100)/200 = 1 on type 0, (100 + 200)/200 = 1.5
    on type 1, and (100 + 360 + 100)/200 = 2.8 if it waits the lease; a type it cannot run on: inf."""
    rho, rho0 = rho_table(np.array([100.0]), np.array([1000.0]), np.array([[10.0, 5.0, 0.0]]), np.array([200.0]),
                          360.0)
    assert rho[0, :2] == pytest.approx([1.0, 1.5])
    assert math.isinf(rho[0, 2])
    assert rho0 == pytest.approx([2.8])


def test_auction_winner_and_hidden_payment_by_hand():
    """One GPU, two one-GPU bidders. A: ρ 1.0 if it wins, 2.0 if not; B: 1.5 if it wins, 4.5
    if not. ∏ 1/ρ: A wins → 1/(1.0·4.5) = 0.222; B wins → 1/(2.0·1.5) = 0.333: B wins.
    Hidden payment of B: the others' product with B present, 1/ρ_A(∅) = 1/2, over the
    others' best without B, 1/ρ_A(win) = 1: c_B = 0.5."""
    rho = np.array([[1.0], [1.5]])
    rho0 = np.array([2.0, 4.5])
    sf = np.array([1, 1])
    choice, total = pf_auction(rho, rho0, sf, np.array([1]))
    assert choice.tolist() == [-1, 0]
    assert total == pytest.approx(math.log(2.0) + math.log(1.5))
    c = hidden_payments(rho, rho0, sf, np.array([1]), choice, total)
    assert c == pytest.approx([1.0, 0.5])
    # with two GPUs nobody is displaced: both win and pay nothing
    choice2, total2 = pf_auction(rho, rho0, sf, np.array([2]))
    assert choice2.tolist() == [0, 0]
    assert hidden_payments(rho, rho0, sf, np.array([2]), choice2, total2) == pytest.approx([1.0, 1.0])


def test_auction_prefers_product_over_sum():
    """Two GPUs of one type; A needs both (ρ 1 vs 10 without), B and C one each (ρ 1 vs 3.5).
    A alone: Σ log ρ = log 3.5 + log 3.5 = 2.51; B and C: log 10 = 2.30 — B and C win,
    though A's own ρ falls most."""
    rho = np.array([[1.0], [1.0], [1.0]])
    rho0 = np.array([10.0, 3.5, 3.5])
    choice, _ = pf_auction(rho, rho0, np.array([2, 1, 1]), np.array([2]))
    assert choice.tolist() == [-1, 0, 0]


def test_leftover_is_work_conserving_worst_first():
    rho = np.array([[2.0, 1.0], [1.0, 3.0], [1.0, 1.0]])
    chosen = np.array([-1, -1, -1])
    left = np.array([1, 1])
    leftover(np.array([0, 1, 2]), rho, np.array([1, 1, 1]), left, chosen)
    assert chosen.tolist() == [1, 0, -1] and left.tolist() == [0, 0]


def test_fairness_knob_sets_the_number_of_participants():
    jobs = [Job(gpus=1, submit=float(i), remaining=100.0 * (i + 1)) for i in range(10)]
    tput = np.ones((10, 2))
    for f, k in ((0.0, 10), (0.8, 2), (0.95, 1)):
        pol = make("themis", fairness_knob=f)
        pol.decide(typed_view(tput, jobs, now=1000.0), 1000.0)
        assert pol.last["participants"].size == k
    assert NEED_DURATION_ORACLE in make("themis").needs


def test_worst_off_waiting_job_is_served_first():
    """8 GPUs busy with 8 running one-GPU jobs; a 9th job waited 5000 s: its ρ (lease wait
    included) is the largest, so with f = 0.95 it alone bids and wins a GPU, payment 1
    (the displaced job's loss is not counted: it is no participant)."""
    jobs = [Job(gpus=1, submit=4000.0, alloc=(i,), remaining=50.0) for i in range(8)]
    jobs.append(Job(gpus=1, submit=0.0, remaining=50.0))
    pol = make("themis", fairness_knob=0.95)
    d = pol.decide(typed_view(np.ones((9, 2)), jobs, now=5000.0), 5000.0)
    assert pol.last["participants"].tolist() == [8]
    assert len(d.allocations[8].gpus) == 1
    assert sum(len(a.gpus) for a in d.allocations.values()) == 8


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_round_invariants(data):
    """Any mix of jobs: no GPU twice, each job at exactly its requested count on one type, at
    most the cluster's GPUs, and a job runs only on a type it can run on."""
    n = data.draw(st.integers(1, 9))
    jobs, held = [], set()
    for i in range(n):
        g = data.draw(st.sampled_from([1, 2, 4]))
        alloc = ()
        if data.draw(st.booleans()):
            start = data.draw(st.sampled_from([0, 4]))
            cand = tuple(range(start, start + g))
            if not held & set(cand):
                alloc = cand
                held |= set(cand)
        jobs.append(Job(gpus=g, submit=data.draw(st.floats(0, 900)), alloc=alloc,
                        remaining=data.draw(st.floats(1, 1e4))))
    tput = np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.5]), min_size=2, max_size=2),
                                       min_size=n, max_size=n)))
    for jb, row in zip(jobs, tput):
        if jb.alloc and row[0 if jb.alloc[0] < 4 else 1] == 0:
            row[0 if jb.alloc[0] < 4 else 1] = 1.0
    pol = make("themis", fairness_knob=data.draw(st.sampled_from([0.0, 0.5, 0.8])),
               payment=data.draw(st.sampled_from(["probabilistic", "none"])))
    d = pol.decide(typed_view(tput, jobs, now=1000.0), 1000.0)
    used = [g for a in d.allocations.values() for g in a.gpus]
    assert len(used) == len(set(used)) and len(used) <= 8
    for j, a in d.allocations.items():
        if a.gpus:
            assert len(a.gpus) == jobs[j].gpus
            types = {0 if g < 4 else 1 for g in a.gpus}
            assert len(types) == 1 and tput[j, types.pop()] > 0


def test_ftf_lp_variant_is_gavel_with_the_ftf_objective():
    """`themis-ftf-lp` is the `gavel` policy with objective finish_time_fairness: the same decisions."""
    jobs = [Job(gpus=1, submit=float(10 * i), remaining=100.0 * (i + 1)) for i in range(12)]
    tput = np.tile([[1.0, 3.0]], (12, 1))
    a, b = make("themis-ftf-lp"), make("gavel", objective="finish_time_fairness")
    assert a.config.objective == "finish_time_fairness" and NEED_DURATION_ORACLE in a.needs
    da, db = a.decide(typed_view(tput, jobs, now=400.0), 400.0), b.decide(typed_view(tput, jobs, now=400.0), 400.0)
    assert {j: x.gpus for j, x in da.allocations.items()} == {j: x.gpus for j, x in db.allocations.items()}


def test_config_checks():
    from cosim.errors import InputError

    with pytest.raises(InputError):
        make("themis", fairness_knob=1.0)
    with pytest.raises(InputError):
        make("themis", payment="vcg")
    with pytest.raises(InputError):
        make("themis-ftf-lp", objective="max_min_fairness")


def test_themis_and_pal_run_a_heterogeneous_workload_through_the_engine():
    """The real engine on the FFT heterogeneous cluster (T4/A10/V100): every job finishes under
    each policy; Themis' lease rounds restart jobs, PAL's keep running jobs in place."""
    from experiments.runner import RunConfig, run

    pols = ("themis", "themis-ftf-lp", "pal")
    res = run(RunConfig(policies=pols, seed=0, trace="synth:philly:30", cluster="fft-hetero"), None)
    for p in pols:
        jobs = res.jobs[p]
        assert len(jobs) == 30 and jobs["finished"].all() and jobs["end_time_s"].notna().all(), p


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(1, 3))
def test_hidden_payments_equal_the_per_winner_re_auctions(seed, n, nt):
    """Random bids on 1-3 types, scarce or plentiful GPUs: the payments (with the uncontended
    shortcut) equal exp(W_{-i} - (W - log rho_i)) from one re-auction per winner."""
    rng = np.random.default_rng(seed)
    rho = rng.uniform(1.0, 4.0, (n, nt))
    rho[rng.random((n, nt)) < 0.2] = np.inf
    rho0 = rho.min(axis=1, initial=np.inf, where=np.isfinite(rho)) * rng.uniform(1.0, 2.0, n)
    rho0[~np.isfinite(rho0)] = 5.0
    sf = rng.integers(1, 4, n)
    free = rng.integers(1, 3 * n + 2, nt)
    choice, total = pf_auction(rho, rho0, sf, free)
    got = hidden_payments(rho, rho0, sf, free, choice, total)
    want = np.ones(n)
    for i in np.flatnonzero(choice >= 0).tolist():
        _, w_minus = pf_auction(rho, rho0, sf, free, exclude=i)
        want[i] = math.exp(min(0.0, w_minus - (total - math.log(rho[i, choice[i]]))))
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
