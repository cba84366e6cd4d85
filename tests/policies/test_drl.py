"""The DL2-style DRL baseline (`drl`, policies/drl/): committed weights load, the policy never preempts
or shrinks a job and never exceeds capacity or a job's max GPUs (any network, sampled actions), and
the trainer's supervised stage lowers its loss deterministically."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from policies.drl.net import FEATURES, GLOBAL, Net
from policies.drl.policy import DEFAULT_WEIGHTS


def test_committed_weights_load_and_are_small():
    assert DEFAULT_WEIGHTS.stat().st_size <= 200_000
    net = Net.load(DEFAULT_WEIGHTS)
    assert net.p["W1"].shape == (net.slots * FEATURES + GLOBAL, net.hidden)
    assert net.p["W2"].shape == (net.hidden, net.slots + 1)
    p = policies.make("drl")
    assert p.net.slots == net.slots and np.array_equal(p.net.p["W2"], net.p["W2"])
    assert not p.needs  # no oracle outside training


def test_masked_softmax_never_picks_an_invalid_action():
    net = Net(3, 8, seed=1)
    x = np.random.default_rng(0).normal(size=(5, net.input_dim))
    mask = np.array([[True, False, False, True]] * 5)
    pr, _ = net.probs(x, mask)
    assert np.allclose(pr.sum(1), 1.0) and (pr[:, 1:3] == 0).all()


def test_bad_weights_file_is_one_line_input_error(tmp_path):
    from cosim.errors import InputError

    bad = tmp_path / "w.npz"
    bad.write_text("not a zip")
    try:
        Net.load(bad)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        raise AssertionError("no InputError")


def _run(tmp_path, jobs: int, seed: int, params: dict):
    from experiments.runner import RunConfig, run
    from experiments.run_inputs import load_trace

    cfg = RunConfig(trace=f"synth:ones:{jobs}", cluster="ones-longhorn", cluster_nodes=4, policies=("drl",),
                    policy_params={"drl": params}, costs=20.0, seed=seed, write_decisions=True)
    res = run(cfg, tmp_path)
    return res, pd.read_parquet(tmp_path / "drl" / "decisions.parquet"), load_trace(cfg)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(jobs=st.integers(3, 10), seed=st.integers(0, 50), net_seed=st.integers(0, 1000),
       max_actions=st.sampled_from([0, 1, 3]))
def test_never_preempts_never_exceeds_capacity_or_max_gpus(tmp_path_factory, jobs, seed, net_seed, max_actions):
    tmp = tmp_path_factory.mktemp("drl")
    w = tmp / "w.npz"
    Net(20, 16, seed=net_seed).save(w)  # any network: the invariants are the policy's, not the weights'
    res, dec, trace = _run(tmp, jobs, seed, {"weights": str(w), "sample": True, "seed": net_seed,
                                             "max_actions": max_actions})
    assert res.jobs["drl"]["finished"].all()
    assert not dec["action"].isin(["preempt", "evicted"]).any()
    max_g = dict(zip(trace["job_id"], trace["max_gpus"]))
    held: dict[str, int] = {}
    for t, grp in dec.groupby("time_s", sort=True):
        for r in grp.itertuples():
            if r.action == "finish":
                held.pop(r.job_id, None)
                continue
            assert r.num_gpus >= held.get(r.job_id, 0), f"{r.job_id} shrank at {t}"
            assert r.num_gpus <= max_g[r.job_id]
            held[r.job_id] = int(r.num_gpus)
        assert sum(held.values()) <= 16, f"over capacity at {t}"


def test_supervised_stage_lowers_loss_deterministically():
    from cli.drl_train import simulate
    from policies.drl.train import collect_teacher, supervised

    def once():
        net = Net(20, 16, seed=3)
        data = collect_teacher(simulate, net, [(6, 4, 100)])
        return data, supervised(net, data, 30, 3e-3)

    (_, _, a, r), losses = once()
    assert r.shape == a.shape and (r <= 0).all()  # reward-to-go of −average JCT: never positive
    assert a.size > 5 and (a < 21).all()
    assert losses[-1] < 0.8 * losses[0]
    _, again = once()
    assert again == losses


def test_best_step_picks_the_lowest_validation_jct_earliest_on_a_tie():
    from policies.drl.train import best_step

    assert best_step([1400.0, 1390.0, 1410.0, 1385.0, 1385.0, 1500.0]) == 3
    assert best_step([1400.0, 1500.0, 1450.0]) == 0  # nothing beats the supervised stage: keep it
    assert best_step([float("nan"), 1300.0, 1200.0]) == 2


def test_reward_to_go_splits_minus_average_jct_over_time():
    from policies.drl.train import advantages, reward_to_go

    ep = (np.array([0.0, 100.0, 200.0]), np.array([1000.0, 400.0, 2200.0]))  # JCTs 1000, 300, 2000
    r = reward_to_go(ep, np.array([0.0, 150.0, 500.0, 3000.0]))
    # t=0: -(1000+300+2000)/3; t=150: -(850+250+2000)/3; t=500: -(500+0+1700)/3; after every end: 0
    assert np.allclose(r, [-3300 / 3000, -3100 / 3000, -2200 / 3000, 0.0])
    other = (ep[0], ep[1] + 30.0)
    t = [np.array([0.0, 500.0]), np.array([0.0, 500.0])]
    a_ep = advantages([ep, other], t, "episode")
    assert np.allclose(a_ep[0], -a_ep[1]) and np.allclose(a_ep[0], 0.09 / 3 * 1000 / 1000)
    a_tg = advantages([ep, other], t, "to-go")
    assert np.allclose(a_tg[0], [0.03, 0.02])  # at 500 s only two jobs are left, each 30 s shorter
    one = (np.array([50.0]), np.array([150.0]))  # discounted: 100 s in the system from t=50, horizon 100 s
    assert np.allclose(reward_to_go(one, np.array([0.0, 50.0]), 100.0),
                       [-100 * (np.exp(-0.5) - np.exp(-1.5)) / 1000, -100 * (1 - np.exp(-1)) / 1000])
    assert np.allclose(reward_to_go(ep, np.array([0.0, 150.0]), 1e9), r[:2])


def test_entropy_gradient_matches_finite_differences():
    net = Net(3, 5, seed=2)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, net.input_dim))
    mask = np.array([[True, True, False, True]] * 4)
    a = np.array([0, 1, 3, 3])
    w = rng.normal(size=4)
    g, loss = net.grads(x, mask, a, w, entropy=0.3)
    k, idx, eps = "W2", (2, 1), 1e-6
    net.p[k][idx] += eps
    _, up = net.grads(x, mask, a, w, entropy=0.3)
    net.p[k][idx] -= 2 * eps
    _, down = net.grads(x, mask, a, w, entropy=0.3)
    assert abs((up - down) / (2 * eps) - g[k][idx]) < 1e-6
    net.p[k][idx] += eps
    assert abs(net.grads(x, mask, a, w)[1] - net.entropy(x, mask).mean() * 0.3 - loss) < 1e-9


def test_training_options_bad_values_are_one_line_errors(capsys):
    from cli.drl_train import TEST_TRACES, VAL_TRACES, main

    # a test trace in the default validation set, a training trace in the default test set: each
    # must stop before any simulation (were the sets disjoint, the call would train for an hour)
    in_val, in_test = VAL_TRACES.split(",")[0], TEST_TRACES.split(",")[0]
    for argv in (["--rl-lr", "0"], ["--rl-episodes", "1"], ["--rl-entropy", "-0.1"], ["--rl-iters", "-1"],
                 ["--rl-traces-per-step", "0"], ["--rl-horizon-s", "-5"], ["--rl-critic-lr", "0"],
                 ["--rl-critic-lr", "nan"], ["--rl-critic-epochs", "-1"], ["--rl-critic-warmup", "-2"],
                 ["--rl-critic-hidden", "0"], ["--rl-ppo-clip", "0"], ["--rl-ppo-clip", "1"],
                 ["--rl-ppo-clip", "nan"], ["--rl-ppo-epochs", "0"], ["--rl-ppo-minibatch", "0"],
                 ["--val", "20x4"], ["--test", "20x0x140"], ["--test", in_val], ["--rl-traces", in_test]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err, (argv, err)
        assert argv[0] in err or "disjoint" in err, (argv, err)


def test_reinforce_keeps_the_weights_best_on_validation():
    from cli.drl_train import simulate
    from policies.drl.train import RlOptions, best_step, collect_teacher, greedy_jct, reinforce, supervised

    net = Net(20, 16, seed=4)
    supervised(net, collect_teacher(simulate, net, [(6, 4, 100)]), 60, 3e-3)  # a random network may start no job
    val = [(6, 4, 201)]
    rows, sel = reinforce(simulate, net, RlOptions(iters=3, episodes=2, lr=3e-2, traces_per_step=2,
                                                         update="reinforce"),
                          [(6, 4, 200), (5, 4, 203)], val, [(6, 4, 202)],
                          log=lambda s: None)
    assert len(rows) == 4 and sel == best_step([r["val_greedy_avg_jct_s"] for r in rows])
    assert greedy_jct(simulate, net, val) == rows[sel]["val_greedy_avg_jct_s"]
    assert all(0 <= r["sampled_greedy_agreement"] <= 1 and r["grad_norm"] > 0 for r in rows[1:])


def test_critic_gradient_matches_finite_differences_and_fit_lowers_the_error():
    from policies.drl.net import Critic

    rng = np.random.default_rng(5)
    c = Critic(7, 5, seed=3)
    c.p["b2"] = np.asarray(0.2)
    x, y = rng.normal(size=(9, 7)), rng.normal(size=9)
    g, loss = c.grads(x, y)
    assert abs(loss - 0.5 * np.mean((c.value(x) - y) ** 2)) < 1e-12
    eps = 1e-6
    for k, idx in (("W1", (3, 2)), ("b1", (4,)), ("w2", (1,)), ("b2", ())):
        c.p[k][idx] += eps
        up = c.grads(x, y)[1]
        c.p[k][idx] -= 2 * eps
        down = c.grads(x, y)[1]
        c.p[k][idx] += eps
        assert abs((up - down) / (2 * eps) - g[k][idx]) < 1e-7, k
    losses = c.fit(x, y, 200, 1e-2)
    assert losses[-1] < 0.5 * losses[0]


def test_critic_advantage_is_reward_to_go_minus_the_state_value():
    from policies.drl.net import Critic
    from policies.drl.train import critic_advantages

    c = Critic(2, 1)
    c.p = {"W1": np.array([[1.0], [0.0]]), "b1": np.zeros(1), "w2": np.array([2.0]), "b2": np.asarray(0.1)}
    ep = (np.array([0.0, 100.0, 200.0]), np.array([1000.0, 400.0, 2200.0]))  # JCTs 1000, 300, 2000
    states = [np.array([[0.0, 9.0], [np.arctanh(0.5), -3.0]]), np.zeros((0, 2))]
    times = [np.array([0.0, 500.0]), np.zeros(0)]
    ret, adv = critic_advantages([ep, ep], times, states, c)
    # V = 2·tanh(x0) + 0.1 = 0.1 and 1.1; reward-to-go at 0 s: −3300/3000, at 500 s: −2200/3000
    assert np.allclose(ret[0], [-1.1, -2200 / 3000])
    assert np.allclose(adv[0], [-1.1 - 0.1, -2200 / 3000 - 1.1])
    assert ret[1].size == 0 and adv[1].size == 0  # an episode without actions


def test_reinforce_with_the_critic_fits_it_and_reports_its_explained_variance():
    from cli.drl_train import simulate
    from policies.drl.train import RlOptions, collect_teacher, reinforce, supervised

    net = Net(20, 16, seed=4)
    data = collect_teacher(simulate, net, [(6, 4, 100)])
    supervised(net, data, 60, 3e-3)
    logs: list[str] = []
    rows, sel = reinforce(simulate, net, RlOptions(iters=2, episodes=2, lr=3e-2, advantage="critic",
                                                   critic_hidden=8, critic_warmup=20, traces_per_step=1,
                                                   update="reinforce"),
                          [(6, 4, 200)], [(6, 4, 201)], [(6, 4, 202)], log=logs.append,
                          warmup=(data[0], data[3]))
    assert any(s.startswith("critic warm-up") for s in logs)
    assert all(np.isfinite(r["critic_explained_variance"]) and r["critic_loss_after_fit"] >= 0 for r in rows[1:])


def test_update_rule_and_ppo_values_are_checked_by_rl_options():
    from policies.drl.train import RlOptions

    assert RlOptions().problems() == [] and RlOptions(update="ppo").problems() == []
    bad = RlOptions(update="sgd", ppo_clip=1.5, ppo_epochs=0, ppo_minibatch=-3).problems()
    assert [f for f, _ in bad] == ["update", "ppo_clip", "ppo_epochs", "ppo_minibatch"]
    assert "reinforce" in dict(bad)["update"] and "ppo" in dict(bad)["update"]


def _uniform_two_action_net():
    """One slot: actions "add a GPU to slot 0" and "stop"; zero output weights give π = (½, ½)."""
    net = Net(1, 2, seed=0)
    net.p["W2"][:] = 0.0
    net.p["b2"][:] = 0.0
    x = np.random.default_rng(0).normal(size=(4, net.input_dim))
    return net, x, np.ones((4, 2), bool)


def test_ppo_clipped_surrogate_hand_computed():
    net, x, mask = _uniform_two_action_net()
    a = np.array([0, 1, 0, 1])
    adv = np.array([1.0, 1.0, -1.0, -1.0])
    logp_old = np.log([0.25, 0.5, 0.25, 0.7])  # ratios r = 0.5 / π_old = 2, 1, 2, 5/7
    g, loss = net.ppo_grads(x, mask, a, adv, logp_old, clip=0.2)
    # min(rA, clip(r)A): 1.2 (clipped), 1 (r = 1), −2 (the unclipped term is smaller), −0.8 (clipped)
    assert np.isclose(loss, -(1.2 + 1.0 - 2.0 - 0.8) / 4)
    # clipped samples give no gradient; the others A·r·(π − onehot(a)) / n in the logits:
    # sample 1 (a = 1, A·r = 1): (½, −½) / 4; sample 2 (a = 0, A·r = −2): −2 · (−½, ½) / 4
    assert np.allclose(g["b2"], [0.375, -0.375])
    ref, _ = net.grads(x, mask, a, np.array([0.0, 1.0, -2.0, 0.0]))
    assert all(np.allclose(g[k], ref[k]) for k in g)
    # a clip range of [−0.5, 2.5] clips no sample: every gradient comes back, sample 0 with
    # 2 · (−½, ½) / 4 and sample 3 (a = 1, A·r = −5/7) with −5/7 · (½, −½) / 4
    g2, loss2 = net.ppo_grads(x, mask, a, adv, logp_old, clip=1.5)
    assert np.isclose(loss2, -(2.0 + 1.0 - 2.0 - 5 / 7) / 4)
    assert np.allclose(g2["b2"], [0.375 - 0.25 - 5 / 56, -0.375 + 0.25 + 5 / 56])


def test_ppo_at_the_sampling_weights_is_the_reinforce_gradient():
    net = Net(3, 5, seed=7)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, net.input_dim))
    mask = np.array([[True, True, False, True]] * 6)
    a = np.array([0, 1, 3, 3, 0, 1])
    adv = rng.normal(size=6)
    g, loss = net.ppo_grads(x, mask, a, adv, net.log_prob(x, mask, a), clip=0.2, entropy=0.05)
    ref, _ = net.grads(x, mask, a, adv, entropy=0.05)
    assert all(np.allclose(g[k], ref[k], atol=1e-12) for k in g)
    assert np.isclose(loss, -adv.mean() - 0.05 * net.entropy(x, mask).mean())


def test_ppo_gradient_matches_finite_differences_with_clipped_samples():
    net = Net(3, 5, seed=2)
    rng = np.random.default_rng(3)
    n = 40
    x = rng.normal(size=(n, net.input_dim))
    mask = np.array([[True, True, False, True]] * n)
    a = rng.choice([0, 1, 3], size=n)
    adv = rng.normal(size=n)
    logp_old = net.log_prob(x, mask, a) + rng.normal(0.0, 0.3, n)
    r = np.exp(net.log_prob(x, mask, a) - logp_old)
    clipped = np.minimum(r * adv, np.clip(r, 0.8, 1.2) * adv) != r * adv
    assert 5 <= clipped.sum() <= n - 5  # both kinds of sample are present
    assert np.abs(np.abs(r - 1) - 0.2).min() > 1e-3  # no ratio at a kink of the objective
    g, _ = net.ppo_grads(x, mask, a, adv, logp_old, 0.2, entropy=0.1)
    eps = 1e-6
    for k, idx in (("W1", (4, 2)), ("W1", (20, 0)), ("b1", (3,)), ("W2", (2, 1)), ("W2", (0, 3)), ("b2", (0,))):
        net.p[k][idx] += eps
        up = net.ppo_grads(x, mask, a, adv, logp_old, 0.2, entropy=0.1)[1]
        net.p[k][idx] -= 2 * eps
        down = net.ppo_grads(x, mask, a, adv, logp_old, 0.2, entropy=0.1)[1]
        net.p[k][idx] += eps
        assert abs((up - down) / (2 * eps) - g[k][idx]) < 1e-7, (k, idx)


def test_ppo_update_reuses_the_batch_and_raises_the_surrogate():
    from policies.drl.train import RlOptions, ppo_update

    net = Net(3, 8, seed=5)
    rng = np.random.default_rng(4)
    n = 100
    x = rng.normal(size=(n, net.input_dim))
    mask = np.ones((n, 4), bool)
    a = rng.integers(0, 4, n)
    adv = rng.normal(size=n)
    logp_old = net.log_prob(x, mask, a)
    opt = RlOptions(update="ppo", lr=1e-2, entropy=0.0, ppo_epochs=4, ppo_minibatch=32)
    d = ppo_update(net, x, mask, a, adv, opt, seed=0)
    assert d["ppo_adam_steps"] == 4 * 4  # 4 epochs × ⌈100 / 32⌉ minibatches
    _, after = net.ppo_grads(x, mask, a, adv, logp_old, 0.2)
    assert after < -adv.mean()  # the clipped surrogate rose above its value at the sampling weights
    r = np.exp(net.log_prob(x, mask, a) - logp_old)
    assert np.isclose(d["ppo_clipped_fraction"], np.mean(np.abs(r - 1) > 0.2))
    assert np.isclose(d["ppo_kl"], np.mean(logp_old - net.log_prob(x, mask, a)))


def test_reinforce_with_ppo_updates_reports_its_clipping():
    from cli.drl_train import simulate
    from policies.drl.train import RlOptions, collect_teacher, reinforce, supervised

    net = Net(20, 16, seed=4)
    supervised(net, collect_teacher(simulate, net, [(6, 4, 100)]), 60, 3e-3)
    rows, _ = reinforce(simulate, net, RlOptions(iters=2, episodes=2, lr=3e-3, update="ppo", ppo_epochs=3,
                                                 ppo_minibatch=8, traces_per_step=1),
                        [(6, 4, 200)], [(6, 4, 201)], [(6, 4, 202)], log=lambda s: None)
    assert all(0 <= r["ppo_clipped_fraction"] <= 1 and np.isfinite(r["ppo_kl"]) for r in rows[1:])
    assert all(r["ppo_adam_steps"] == 3 * -(-r["actions"] // 8) for r in rows[1:])


def test_shipped_weights_record_their_provenance_without_a_machine_folder():
    """The weights file's metadata is its provenance: the trainer's options, every path in them
    relative to the project (a shipped file names no folder of the machine that trained it)."""
    import ast

    from cli.drl_train import _recorded

    meta = ast.literal_eval(str(np.load(DEFAULT_WEIGHTS, allow_pickle=False)["meta"]))
    args = meta["args"]
    assert args["out"] == "policies/drl/data/drl_ones.npz"
    assert not any(isinstance(v, str) and v.startswith("/") for v in args.values()), args
    assert 0 <= meta["selected_step"] <= args["rl_iters"]
    assert _recorded(str(DEFAULT_WEIGHTS)) == "policies/drl/data/drl_ones.npz"
    assert _recorded("/elsewhere/w.npz") == "/elsewhere/w.npz"


def test_shipped_weights_come_from_the_trainers_default_command():
    """`python -m cli.drl_train` with no option is the command that trained the shipped weights
    (its docstring and the ONES page say so): every option the file records is the default,
    but the curve and plot files, which only say where the curve went."""
    import ast

    from cli.drl_train import parser

    meta = ast.literal_eval(str(np.load(DEFAULT_WEIGHTS, allow_pickle=False)["meta"]))
    recorded = {k: v for k, v in meta["args"].items() if k not in ("curve", "plot")}
    defaults = {k: v for k, v in vars(parser().parse_args([])).items() if k not in ("curve", "plot")}
    defaults["out"] = "policies/drl/data/drl_ones.npz"
    assert recorded == defaults
    assert meta["selected_step"] == 55


def test_paired_gain_is_the_mean_difference_and_its_standard_error():
    from policies.drl.train import paired_gain

    # differences 10, -5, 20 s: mean 25/3, sample variance ((5/3)² + (40/3)² + (35/3)²) / 2 = 950/6
    gain, se = paired_gain(np.array([100.0, 200.0, 300.0]), np.array([90.0, 205.0, 280.0]))
    assert np.isclose(gain, 25 / 3) and np.isclose(se, np.sqrt(950 / 6 / 3))
    assert paired_gain(np.array([5.0]), np.array([4.0]))[0] == 1.0 and np.isnan(paired_gain([5.0], [4.0])[1])
    assert all(np.isnan(paired_gain(np.zeros(0), np.zeros(0))))


def test_reinforce_curve_reports_each_steps_gain_over_the_supervised_stage_paired_by_trace():
    from cli.drl_train import simulate
    from policies.drl.train import RlOptions, collect_teacher, greedy_jcts, paired_gain, reinforce, supervised

    net = Net(20, 16, seed=4)
    supervised(net, collect_teacher(simulate, net, [(6, 4, 100)]), 60, 3e-3)
    val, test = [(6, 4, 201), (5, 4, 205)], [(6, 4, 202), (5, 4, 207)]
    first = {"val": greedy_jcts(simulate, net, val), "test": greedy_jcts(simulate, net, test)}
    rows, sel = reinforce(simulate, net, RlOptions(iters=2, episodes=2, lr=3e-2, traces_per_step=1,
                                                   update="reinforce"),
                          [(6, 4, 200)], val, test, log=lambda s: None)
    assert rows[0]["val_gain_s"] == 0 and rows[0]["test_gain_se_s"] == 0
    last = {"val": greedy_jcts(simulate, net, val), "test": greedy_jcts(simulate, net, test)}  # kept weights
    for k in ("val", "test"):
        assert (rows[sel][f"{k}_gain_s"], rows[sel][f"{k}_gain_se_s"]) == paired_gain(first[k], last[k])
        assert np.isclose(rows[sel][f"{k}_gain_s"],
                          rows[0][f"{k}_greedy_avg_jct_s"] - rows[sel][f"{k}_greedy_avg_jct_s"])


def test_greedy_advantage_is_reward_to_go_minus_the_greedy_episodes_at_the_same_time():
    from policies.drl.train import ADVANTAGES, RlOptions, greedy_advantages

    ep = (np.array([0.0, 100.0, 200.0]), np.array([1000.0, 400.0, 2200.0]))  # JCTs 1000, 300, 2000
    greedy = (ep[0], ep[1] + 30.0)  # every job 30 s longer under the greedy policy
    adv = greedy_advantages([ep, greedy], [np.array([0.0, 500.0]), np.array([150.0])], greedy)
    # at 0 s the three jobs are each 30 s shorter (0.09 / 3 in 1000 s); at 500 s two jobs are left
    assert np.allclose(adv[0], [0.03, 0.02]) and np.allclose(adv[1], [0.0])
    one = (np.array([50.0]), np.array([150.0]))
    assert np.allclose(greedy_advantages([one], [np.array([0.0])], (one[0], one[1] + 100.0), 100.0),
                       [100 * (np.exp(-1.5) - np.exp(-2.5)) / 1000])  # discounted like reward_to_go
    assert "greedy" in ADVANTAGES and RlOptions(advantage="greedy").problems() == []
    assert RlOptions(advantage="greed").problems()[0][0] == "advantage"


def test_reinforce_with_the_greedy_baseline_runs_one_greedy_episode_per_trace_and_step():
    from cli.drl_train import simulate
    from policies.drl.train import RlOptions, collect_teacher, reinforce, supervised

    calls: list[bool] = []

    def counted(policy, jobs, nodes, seed):
        calls.append(policy.config.sample)
        return simulate(policy, jobs, nodes, seed)

    net = Net(20, 16, seed=4)
    supervised(net, collect_teacher(simulate, net, [(6, 4, 100)]), 60, 3e-3)
    opt = RlOptions(iters=2, episodes=3, lr=3e-2, traces_per_step=2, advantage="greedy", update="reinforce")
    rows, _ = reinforce(counted, net, opt, [(6, 4, 200), (5, 4, 203)], [(6, 4, 201)], [(6, 4, 202)],
                        log=lambda s: None)
    # per step: 2 traces × (3 sampled + 1 greedy baseline) + 2 greedy on the step's traces + validation + test
    assert calls.count(True) == 2 * 2 * 3 and calls.count(False) == 2 + 2 * (2 + 2 + 1 + 1)
    assert all(r["grad_norm"] > 0 and np.isfinite(r["advantage_std"]) for r in rows[1:])


def test_drl_diagnose_weights_evaluates_files_paired_by_trace(tmp_path, capsys):
    from benchmarks.drl_diagnose import main
    from cli.drl_train import simulate
    from policies.drl.train import collect_teacher, greedy_jcts, supervised

    a, b = Net(20, 16, seed=4), Net(20, 16, seed=5)
    for net, epochs in ((a, 60), (b, 20)):  # a random network may start no job
        supervised(net, collect_teacher(simulate, net, [(6, 4, 100)]), epochs, 3e-3)
    a.save(tmp_path / "a.npz")
    b.save(tmp_path / "b.npz")
    sets = ["--", "--val", "6x4x1901,5x4x1903", "--test", "6x4x1902"]  # seeds in none of the default sets
    assert main(["--weights", str(tmp_path / "a.npz"), "--weights", str(tmp_path / "b.npz"), *sets]) == 0
    out = capsys.readouterr().out
    va, vb = (greedy_jcts(simulate, Net.load(tmp_path / f), [(6, 4, 1901), (5, 4, 1903)]) for f in ("a.npz", "b.npz"))
    assert "validation (2 traces):" in out and f"gain over the first {va.mean() - vb.mean():7.1f}" in out
    assert main(["--weights", str(tmp_path / "missing.npz"), *sets]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing.npz" in err and "\n" not in err
