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

    (_, _, a), losses = once()
    assert a.size > 5 and (a < 21).all()
    assert losses[-1] < 0.8 * losses[0]
    _, again = once()
    assert again == losses
