"""ONES (SC'21): genetic operators' invariants, reorder's migration minimum on hand-built cases,
the Beta predictor recovering known parameters, and a small end-to-end run through the runner."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.ones.genome import (
    GenomeContext,
    counts_of,
    crossover,
    enforce_limits,
    fill,
    migrations,
    mutate,
    place_new,
    reorder,
    valid,
)
from policies.ones.predictor import BetaPredictor, FitOptions


def ctx_of(limit, active, new=None, t=None, G=8, per_node=4) -> GenomeContext:
    limit = np.asarray(limit, np.int64)
    active = np.asarray(active, bool)
    new = np.zeros_like(active) if new is None else np.asarray(new, bool)
    t = np.arange(limit.size, dtype=np.float64) if t is None else np.asarray(t, np.float64)
    return GenomeContext(limit=limit, active=active, new=new & active, executed=active & ~new, t_processed=t,
                         slot_node=np.arange(G, dtype=np.int64) // per_node, gpus_per_node=per_node)


@st.composite
def cases(draw):
    J = draw(st.integers(1, 10))
    G = draw(st.sampled_from([4, 8, 12, 16]))
    limit = draw(st.lists(st.integers(1, G), min_size=J, max_size=J))
    active = draw(st.lists(st.booleans(), min_size=J, max_size=J))
    new = draw(st.lists(st.booleans(), min_size=J, max_size=J))
    genome = np.array(draw(st.lists(st.integers(-1, J - 1), min_size=G, max_size=G)), np.int32)
    other = np.array(draw(st.lists(st.integers(-1, J - 1), min_size=G, max_size=G)), np.int32)
    seed = draw(st.integers(0, 2 ** 16))
    ctx = ctx_of(limit, active, new, G=G)
    ctx.limit[ctx.new] = 1
    return ctx, genome, other, seed


def refresh(genome, ctx, deployed, rng):
    jobs = np.flatnonzero(ctx.active)
    g = place_new(enforce_limits(genome, ctx), ctx, jobs[ctx.new[jobs]])
    g = fill(g, ctx, jobs, lambda j, c, c2: float(rng.random()))
    return reorder(g, deployed, ctx)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_operators_keep_genomes_valid_and_within_limits(case):
    ctx, genome, other, seed = case
    rng = np.random.default_rng(seed)
    deployed = enforce_limits(other, ctx)
    g = refresh(genome, ctx, deployed, rng)
    assert valid(g, ctx)
    # refresh: every new job holds a GPU when there are enough GPUs for all new jobs
    new_jobs = np.flatnonzero(ctx.new)
    if new_jobs.size <= g.size:
        assert (counts_of(g, ctx.num_jobs)[new_jobs] >= 1).all()
    # fill: no idle GPU while an active job is below its limit
    c = counts_of(g, ctx.num_jobs)
    if (g < 0).any():
        assert not (ctx.active & (c < ctx.limit)).any()
    h = refresh(other, ctx, deployed, rng)
    for child in crossover(g, h, ctx, rng, 0.5):
        assert valid(child, ctx)
        # every gene of a child comes from one of the parents at that slot (or was dropped)
        assert ((child == g) | (child == h) | (child < 0)).all()
    m = mutate(g, ctx, rng, 0.5)
    assert valid(m, ctx)
    kept = (m == g) | (m < 0)
    assert kept.all()
    lost = np.unique(g[(m < 0) & (g >= 0)])
    assert ctx.executed[lost].all()  # only executed jobs are mutated, and whole jobs at a time
    assert not np.isin(lost, m).any()
    r = reorder(g, deployed, ctx)
    assert (counts_of(r, ctx.num_jobs) == counts_of(g, ctx.num_jobs)).all()
    for j in np.unique(r[r >= 0]):  # contiguous
        pos = np.flatnonzero(r == j)
        assert pos[-1] - pos[0] + 1 == pos.size
    assert reorder(r, r, ctx).tolist() == r.tolist()  # a packed schedule against itself stays put


def test_reorder_keeps_a_permuted_deployed_schedule_in_place():
    ctx = ctx_of([2, 2, 2], [True] * 3, G=8)
    deployed = np.array([0, 0, 1, 1, 2, 2, -1, -1], np.int32)
    cand = np.array([2, -1, 1, 0, 2, 1, 0, -1], np.int32)  # same counts, scrambled
    out = reorder(cand, deployed, ctx)
    assert out.tolist() == deployed.tolist()
    assert migrations(out, deployed) == 0


def test_reorder_minimises_migrations_when_counts_change():
    # job 1 grows 2 → 3 and job 2 shrinks 4 → 3 on two 4-GPU nodes: the best contiguous packing
    # moves one slot (slot 4: job 2 → job 1); any other order moves at least two
    ctx = ctx_of([2, 3, 3], [True] * 3, G=8)
    deployed = np.array([0, 0, 1, 1, 2, 2, 2, 2], np.int32)
    cand = np.array([1, 2, 0, 1, 2, 0, 1, 2], np.int32)
    out = reorder(cand, deployed, ctx)
    assert out.tolist() == [0, 0, 1, 1, 1, 2, 2, 2]
    assert migrations(out, deployed) == 1


def test_reorder_is_node_aware():
    # nothing deployed: a 4-GPU job after a 2-GPU job is placed on one node, not across two
    ctx = ctx_of([2, 4], [True, True], G=8)
    out = reorder(np.array([0, 1, 0, 1, 1, 1, -1, -1], np.int32), np.full(8, -1, np.int32), ctx)
    pos = np.flatnonzero(out == 1)
    assert len(set((pos // 4).tolist())) == 1


def test_place_new_steals_from_the_largest_t_processed():
    ctx = ctx_of([4, 4, 1], [True, True, True], new=[False, False, True], t=[10.0, 500.0, 0.0], G=8)
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int32)
    out = place_new(g, ctx, np.array([2]))
    c = counts_of(out, 3)
    assert c.tolist() == [4, 3, 1]


def test_enforce_limits_scales_down_by_c_minus_r():
    ctx = ctx_of([2, 8], [True, True], G=8)
    out = enforce_limits(np.array([0, 0, 0, 0, 0, 1, 1, 1], np.int32), ctx)
    assert counts_of(out, 2).tolist() == [2, 3]


def test_predictor_recovers_known_beta_parameters():
    """Synthetic data from ρ ~ Be(α, β(x)) with β linear in x: the fitted β(x) matches the truth."""
    rng = np.random.default_rng(3)
    n = 3000
    x = np.column_stack([np.log(rng.uniform(5e3, 4e4, n)), rng.uniform(0.7, 3.0, n), rng.uniform(0, 30, n),
                         rng.uniform(0, 0.9, n), rng.uniform(0.1, 0.9, n)])
    true_beta = 2.0 + 1.5 * x[:, 1] + 8.0 * (0.9 - x[:, 3]) + 3.0 * x[:, 4]
    alpha = np.maximum(x[:, 2], 1.0)
    rho = rng.beta(alpha, true_beta)
    p = BetaPredictor(FitOptions(kind="linear", lr=0.05, epochs=800, seed=0))
    p.fit(x, rho)
    fitted = p.beta_of(x)
    rel = np.abs(fitted - true_beta) / true_beta
    assert np.median(rel) < 0.08, np.median(rel)
    # and a constant predictor would be far off: the test can fail
    assert np.median(np.abs(true_beta.mean() - true_beta) / true_beta) > 0.15


def test_predictor_mlp_fits_and_samples_in_unit_interval():
    rng = np.random.default_rng(1)
    x = np.column_stack([np.full(400, 10.0), np.full(400, 2.3), rng.uniform(1, 20, 400), rng.uniform(0, 0.9, 400),
                         rng.uniform(0.1, 0.9, 400)])
    rho = rng.beta(np.maximum(x[:, 2], 1), 5.0)
    p = BetaPredictor(FitOptions(kind="mlp", lr=1e-3, epochs=5, seed=0))
    nll = p.fit(x, rho)
    assert np.isfinite(nll)
    s = p.sample(x, rng)
    assert ((s > 0) & (s < 1)).all()
    assert (p.beta_of(x) >= 1.0).all()


def test_ones_runs_end_to_end_without_oracles(tmp_path):
    from experiments.runner import RunConfig, run

    cfg = RunConfig(trace="synth:ones:10", cluster="ones-longhorn", cluster_nodes=4, policies=("ones",),
                    policy_params={"ones": {"warm_start": "prior", "population": 8}},
                    policy_costs={"ones": "inplace"}, costs=20.0, write_decisions=True)
    res = run(cfg, tmp_path)
    jobs = res.jobs["ones"]
    assert len(jobs) == 10 and jobs["finished"].all()
    dec = __import__("pandas").read_parquet(tmp_path / "ones" / "decisions.parquet")
    assert (dec["num_gpus"] <= 16).all()
    # elastic: some job ran on more than one GPU, and a new job's first start is on one GPU
    assert dec["num_gpus"].max() > 1
    first = dec[dec["action"] == "start"].groupby("job_id").first()
    assert (first["num_gpus"] == 1).all()


def test_fill_and_floor_respect_min_gpus():
    from policies.ones.genome import drop_below_floor

    ctx = ctx_of([4, 4], [True, True], G=8)
    ctx.floor = np.array([3, 1], np.int64)
    g = np.array([0, 0, 1, -1, -1, -1, -1, -1], np.int32)
    assert counts_of(drop_below_floor(g, ctx), 2).tolist() == [0, 1]
    # with 2 idle GPUs job 0 (floor 3, limit 4) cannot start from 0; job 1 grows instead
    g2 = np.array([1, 1, 1, -1, -1, 1, 1, 1], np.int32)
    ctx2 = ctx_of([4, 8], [True, True], G=8)
    ctx2.floor = np.array([3, 1], np.int64)
    out = fill(g2, ctx2, np.array([0, 1]), lambda j, c, c2: float(j == 1))
    assert counts_of(out, 2).tolist() == [0, 8]


def test_warm_start_history_is_the_shared_file_from_any_working_folder(tmp_path, monkeypatch):
    """The predictor's history is looked up like every shared file (COSIM_SHARED_DATA, else
    ../shared/data beside the checkout): a run from another folder gives the same result; a
    missing file stops the run with one line naming it."""
    import dataclasses

    import pandas as pd
    import pytest

    from cosim.errors import InputError
    from cosim.paths import shared_file
    from experiments.runner import RunConfig, run
    from policies.registry import make

    try:
        shared_file("traces/ones/job_history.csv", "the ONES history")
    except InputError:
        pytest.skip("the shared data folder (COSIM_SHARED_DATA or ../shared/data) is not here")
    pol = make("ones")
    assert pol.train_x == [] and pol.stats["refits"] == 0  # building it reads nothing
    pol._warm_start(pol.config.history_file)
    assert len(pol.train_x) == 590 and pol.stats["refits"] == 1  # every row of the history
    cfg = RunConfig(trace="synth:ones:6", cluster="ones-longhorn", cluster_nodes=4, policies=("ones",),
                    policy_params={"ones": {"population": 8}}, policy_costs={"ones": "inplace"}, costs=20.0,
                    progress="batch-history")
    here = run(cfg, None).jobs["ones"]
    monkeypatch.chdir(tmp_path)
    there = run(cfg, None).jobs["ones"]
    assert here["finished"].all()
    pd.testing.assert_frame_equal(here, there)
    bad = dataclasses.replace(cfg, policy_params={"ones": {"history_file": str(tmp_path / "nope.csv")}})
    with pytest.raises(InputError, match=r"nope\.csv.*history_file"):
        run(bad, None)


def test_new_jobs_start_on_free_gpus_when_the_schedule_cannot_move_yet(tmp_path):
    """start_on_free: a job the best schedule runs starts on idle GPUs at once instead of waiting
    for GPUs held by jobs behind the epoch gate (off: the artifact's rule leaves them idle). Jobs
    that mutation preempted and the schedule leaves out still wait (ONES' own choice)."""
    from experiments.runner import RunConfig, run

    first_wait = {}
    for flag in (True, False):
        cfg = RunConfig(trace="synth:ones:14", cluster="ones-longhorn", cluster_nodes=4, policies=("ones",),
                        policy_params={"ones": {"warm_start": "prior", "population": 8, "start_on_free": flag}},
                        policy_costs={"ones": "inplace"}, costs=20.0, progress="batch-history")
        jobs = run(cfg, None).jobs["ones"]
        assert jobs["finished"].all()
        first_wait[flag] = float(jobs["queueing_delay_s"].sum())  # submission to first start
    assert first_wait[True] < 0.5 * first_wait[False]
