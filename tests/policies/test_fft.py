"""FFT (ICS'25): the paper's worked examples and the properties the notes derive (seeds/notes/fft.md §9.2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from policies import make
from policies.fft import core
from tests.policies.fft_rounds import run_rounds

TABLE1 = np.array([[8.0, 1.0], [8.0, 1.0]])  # epochs/min on GPU0, GPU1


def test_table1_toy_fft_sum_jct_5_75_min_below_gavel_64_over_9():
    """Table 1: two 16-epoch jobs, GPU₀ 8 and GPU₁ 1 epochs/min, 1-min rounds, free migration.
    FFT runs one job on each GPU, then moves the second to GPU₀: 2 + (2 + 14/8) = 5.75 min;
    Gavel's SJF-like allocation gives 64/9 ≈ 7.11 (tests/policies/test_gavel.py)."""
    r = run_rounds([0, 0], [16, 16], [1, 1], TABLE1, [1, 1])
    assert sorted(r["jct"].tolist()) == pytest.approx([2.0, 3.75])
    assert r["jct"].sum() == pytest.approx(5.75)
    assert r["jct"].sum() < 64 / 9


def test_fig2_no_ping_pong_while_srtf_migrates_back_and_forth():
    """Fig. 2: J4 (OPT-6.7B) 14.4 min on T4, 1.6× faster on A10 (Fig. 1's lowest speed-up), a
    2-min migration; J1 5 min on A10 arriving at 0, J2 at 10 min; 5-min rounds, one GPU per type.
    Overhead-agnostic SRTF moves J4 at every event (T4 → A10 → T4 → A10); FFT never moves it."""
    theta = np.array([[5 / 9, 1.0], [2.5 / 1.6, 2.5], [5 / 14.4, 5 / 9]])  # epochs per 5-min round
    args = ([0, 2, 0], [1, 1, 1], [1, 1, 1], theta, [1, 1])
    mig = [0.1, 0.1, 0.4]
    fft = run_rounds(*args, mig=mig)
    srtf = run_rounds(*args, mig=mig, srtf=True)
    def moves(r):
        seq = [t for t in r["hist"]["type"][:, 2].tolist() if t >= 0]
        return sum(a != b for a, b in itertools.pairwise(seq))
    assert moves(fft) == 0
    assert moves(srtf) >= 2
    assert fft["jct"][2] < srtf["jct"][2]


def test_switching_cost_is_what_stops_the_move():
    """A job holding its state on T4 whose gain from A10 is smaller than the transfer: with the
    switching term FFT keeps it on T4; with w_sw = 0 it moves."""
    theta = np.array([[1.0, 1.1]])
    c_with = core.round_costs(3.0, np.zeros(1), np.ones(1) * 2, np.ones(1) * 2, theta, np.ones(1), np.zeros(1),
                              np.array([[0.0, 0.5]]))
    c_without = core.round_costs(3.0, np.zeros(1), np.ones(1) * 2, np.ones(1) * 2, theta, np.ones(1),
                                 np.zeros(1), np.array([[0.0, 0.5]]), w_sw=0.0)
    assert core.solve_round(c_with, np.ones(1, np.int64), np.array([1, 1]))[0][0] == 0
    assert core.solve_round(c_without, np.ones(1, np.int64), np.array([1, 1]))[0][0] == 1


def test_rho_dynamics():
    """Fig. 5: ρ(a_j) = 0, ρ rises while the job is starved, falls while it is served, never < 0.
    A 1-GPU cluster, a long job (arrives 0) and short jobs arriving so it waits, then runs alone."""
    theta = np.array([[1.0]] * 4)
    r = run_rounds([0, 0, 1, 2], [20, 2, 2, 2], [1, 1, 1, 1], theta, [1])
    rho, typ = r["hist"]["rho"][:, 0], r["hist"]["type"][:, 0]
    assert rho[0] == 0.0  # μ(a_j) = 0: the first round does not move ρ
    assert np.all(rho >= 0)
    waited = np.flatnonzero(typ < 0)
    served = np.flatnonzero(typ >= 0)
    assert waited.size and served.size
    assert rho[waited[-1]] > rho[waited[0]]  # rises while starved
    k = served[served > waited[-1]]
    assert np.all(rho[k] <= rho[k[0] - 1] + 1e-12)  # never rises while served at (≥) its fair rate
    # Eq. 5 directly: served above the fair rate W/(τ−a) = 2 it falls, below it rises, floor 0
    up = core.rho_update(np.array([1.0]), 4.0, np.zeros(1), np.array([10.0]), np.array([20.0]), np.array([0.0]))
    down = core.rho_update(np.array([1.0]), 4.0, np.zeros(1), np.array([10.0]), np.array([20.0]), np.array([3.0]))
    floor = core.rho_update(np.array([0.1]), 4.0, np.zeros(1), np.array([10.0]), np.array([20.0]), np.array([9.0]))
    assert up[0] == pytest.approx(1.0 + 0.4 * 2.0) and down[0] == pytest.approx(1.0 - 0.4) and floor[0] == 0.0


def test_bounded_starvation_under_a_stream_of_small_jobs():
    """Thm 4.2: a large job under a continuous stream of short jobs (one per round, 1 GPU):
    with fairness compensation it starts within a bounded time; SRSF-only (ρ ≡ 0) starves it
    for the whole stream."""
    starts = []
    for n in (60, 120):
        a = np.concatenate([[0.0], np.arange(n, dtype=float)])
        W = np.concatenate([[8.0], np.full(n, 1.0)])
        theta = np.ones((n + 1, 1))
        fair = run_rounds(a, W, np.ones(n + 1), theta, [1], rounds=300)
        srsf = run_rounds(a, W, np.ones(n + 1), theta, [1], rounds=300, w_fair=0.0)
        assert srsf["first"][0] >= n - 1  # starved until the stream ends
        starts.append(fair["first"][0])
    assert starts[0] == starts[1] < 30  # the same bound however long the stream (here 27 rounds)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 3), st.data())
def test_ilp_never_infeasible_and_keeps_k_gpus_busy(J, M, data):
    """A3: with K(t) from the packing ILP the round ILP always solves, uses ≥ K GPUs, respects
    the capacities, and K is the most GPUs any feasible assignment keeps busy."""
    d = np.array(data.draw(st.lists(st.integers(1, 8), min_size=J, max_size=J)), np.int64)
    cap = np.array(data.draw(st.lists(st.integers(0, 12), min_size=M, max_size=M)), float)
    cost = np.array(data.draw(st.lists(st.floats(-50, 50), min_size=J * M, max_size=J * M))).reshape(J, M)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=J * M, max_size=J * M))).reshape(J, M)
    mask &= d[:, None] <= cap[None, :]  # A14
    cost = np.where(mask, cost, np.inf)
    choice, stats = core.solve_round(cost, d, cap)
    used = np.zeros(M)
    for j, i in enumerate(choice.tolist()):
        if i >= 0:
            assert mask[j, i]
            used[i] += d[j]
    assert np.all(used <= cap)
    assert used.sum() >= stats["k"]
    best = 0  # brute force the most GPUs busy
    for assign in itertools.product(range(-1, M), repeat=J):
        u = np.zeros(M)
        ok = True
        for j, i in enumerate(assign):
            if i >= 0:
                ok &= bool(mask[j, i])
                u[i] += d[j]
        if ok and np.all(u <= cap):
            best = max(best, int(u.sum()))
    assert stats["k"] == best


def test_fair_rate_fills_fastest_types_first():
    """A4: 1/N of each type, one type at a time: N = 4 jobs of 1 GPU on 4 + 8 GPUs of θ = 2, 1:
    slice 1 GPU of the fast type (f = 1) → rate 2; a 4-GPU job gets f = 1/4 of fast + 1/2 slow."""
    r = core.fair_rate(np.array([[2.0, 1.0], [2.0, 1.0]]), np.array([1, 4]), np.array([4.0, 8.0]), 4)
    assert r == pytest.approx([2.0, 0.25 * 2 + 0.5 * 1])


def test_config_rejects_bad_values():
    with pytest.raises(InputError):
        make("fft", w_fair=-1.0)
    with pytest.raises(InputError):
        make("fft", work_error=1.5)
    with pytest.raises(InputError):
        make("tiresias-typed", assign="nearest")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 7), st.integers(1, 3), st.data())
def test_count_formulation_and_lp_round_match_the_binary_ilp(J, M, data):
    """The count-aggregated program (default) has the binary Eq. 6 program's optimum; lp_round's
    answer is feasible, keeps K GPUs busy and is within its gap of that optimum."""
    d = np.array(data.draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=J, max_size=J)), np.int64)
    cap = np.array(data.draw(st.lists(st.integers(0, 12), min_size=M, max_size=M)), float)
    cost = np.array(data.draw(st.lists(st.floats(-20, 50), min_size=J * M, max_size=J * M))).reshape(J, M)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=J * M, max_size=J * M))).reshape(J, M)
    cost = np.where(mask & (d[:, None] <= cap[None, :]), cost, np.inf)
    _, sb = core.solve_round(cost, d, cap, formulation="binary")
    _, sc = core.solve_round(cost, d, cap, formulation="counts")
    assert sc["k"] == sb["k"]
    assert sc["objective"] == pytest.approx(sb["objective"], abs=1e-6 + 1e-4 * abs(sb["objective"]))
    cr, sr = core.solve_round(cost, d, cap, method="lp_round", lp_round_gap=0.05)
    used = np.bincount(cr[cr >= 0], weights=d[cr >= 0], minlength=M)
    assert np.all(used <= cap) and used.sum() >= sb["k"]
    assert sr["objective"] <= sb["objective"] + 0.05 * max(abs(sb["objective"]), 1.0) + 1e-6


def test_job_larger_than_every_type_is_reported_not_silently_waiting(tmp_path):
    """fft-hetero has 12 GPUs per type: a 16-GPU job passes the whole-cluster check but no type
    can ever hold it (A14's d_j > Y_i mask). FFT declares single-type placement, so the job is
    rejected at admission (`simcore.admission`) with its reason and counted in the summary
    (`never_fit_one_type`); FFT runs the others and never sees it (`fft_never_fit` counts only
    jobs that fit no type by memory)."""
    import pandas as pd

    from experiments.runner import RunConfig, run

    df = pd.DataFrame({"job_id": ["big", "a", "b", "c"], "submit_time": [0.0, 0.0, 60.0, 120.0],
                       "num_gpus": [16, 4, 1, 8], "duration": [600.0, 900.0, 600.0, 1200.0],
                       "model": ["resnet50"] * 4, "global_batch": [256, 128, 32, 256]})
    path = tmp_path / "jobs.parquet"
    df.to_parquet(path)
    res = run(RunConfig(trace=str(path), cluster="fft-hetero", policies=["fft"], costs="migrate-state",
                        write_decisions=True), None)
    row = res.summary.iloc[0]
    assert row["finished"] == 3 and row["unfinished"] == 1
    assert row["never_fit_one_type"] == 1 and row["fft_never_fit"] == 0 and row["fft_rounds"] >= 1
    big = res.jobs["fft"].set_index("job_id").loc["big"]
    assert big["unschedulable"] and big["unfinished_reason"].startswith("never fits one GPU type")


def test_rounds_stopped_by_the_time_limit_report_their_gap():
    """A round HiGHS' time limit stops keeps its incumbent, with status "limit" and a positive
    relative gap; one solved to the end has gap 0. The timing columns count the former."""
    from benchmarks.bench_fft import instance

    cost, d, cap = instance(1000, 8, 1000, 2)
    try:
        _, st_ = core.solve_round(cost, d, cap, time_limit_s=2.0, method="exact", mip_rel_gap=1e-9)
    except Exception as exc:  # a machine too slow to find any incumbent within 2 s
        assert "Time limit" in str(exc)
    else:  # a fast machine may finish: then the gap is HiGHS' final one
        assert (st_["status"] == "limit" and st_["mip_gap"] > 0) or \
            (st_["status"] == "optimal" and st_["mip_gap"] <= 1e-9)
    _, small = core.solve_round(cost[:20], d[:20], cap, method="exact")
    assert small["status"] == "optimal" and small["mip_gap"] == pytest.approx(0.0, abs=1e-9)
    pol = make("fft")
    pol.round_log = [(0.0, 5, 8, 8, 0.1, "optimal", 0.0), (300.0, 9, 8, 8, 30.2, "limit", 0.004),
                     (600.0, 9, 8, 8, 0.2, "lp_round", 0.0), (900.0, 9, 8, 8, 30.1, "limit", 0.0125)]
    t = pol.timing_metrics()
    assert t["fft_limit_rounds"] == 2 and t["fft_limit_gap_max"] == 0.0125
    assert t["fft_solver_s_max"] == 30.2 and t["fft_solver_s_mean"] == pytest.approx(60.6 / 4)
    assert "fft_solver_s_mean" not in pol.summary_metrics() and pol.summary_metrics()["fft_rounds"] == 4
    log = pol.solver_log()
    assert list(log.columns) == ["time_s", "jobs", "k", "busy_gpus", "solve_s", "status", "mip_gap"]
    assert list(log.loc[log["status"] == "limit", "mip_gap"]) == [0.004, 0.0125]
