"""Training of the `drl` policy network: `python -m cli.drl_train [options]` (the command line and the
simulation wiring live in cli/drl_train.py: policies may not import the runner, so every function here
takes `simulate(policy, jobs, nodes, seed) -> (submit s, end s) per job`).

(a) Supervised warm start (DL2's offline stage): the `drl` policy runs with Optimus as its teacher
    (Optimus' round allocation turned into add-one-GPU actions, the largest deficit first, then
    stop) on `synth:ones:N` traces; every (state, action) is recorded and the network fitted by
    full-batch cross-entropy with Adam.
(b) REINFORCE (DL2's online stage, policy gradient): per step, `episodes` runs of each of
    `traces_per_step` training traces (the traces are taken in turn) with actions sampled from the
    network (seeds differ). The reward
    is −average JCT / 1000 s, written as a sum over time: −(1/N) Σ_j (time job j spends in the
    system). An action taken at time t is credited with
      - `advantage="to-go"` (default): the reward still to come after t,
        −(1/N) Σ_j (end_j − max(t, submit_j))⁺ / 1000 s (what happened before t cannot depend on it);
      - `advantage="episode"`: the whole episode's reward (every action of an episode gets the same);
    minus a baseline: the mean of the same quantity, at the same t, over the step's other episodes
    of the same trace (a time-based baseline: the expected reward-to-go at the state's time);
      - `advantage="greedy"` (self-critical training, Rennie et al. 2017; Kool et al. 2019's
        greedy-rollout baseline): the reward still to come after t minus that of one run of the
        greedy policy (the weights that sampled the step) on the same trace, at the same t;
      - `advantage="critic"` (DL2's actor-critic variant): the reward still to come after t minus
        V(s_t), a state-value network (`Critic`, `critic_hidden` tanh units, its own Adam at
        `critic_lr`). V is warmed up by `critic_warmup` full-batch Adam steps on the reward-to-go
        of the supervised stage's Optimus rollouts, and after every policy step fitted by
        `critic_epochs` full-batch steps on that step's (state, reward-to-go); each step's
        advantages use V as it was before that step's fit (so V has not learnt the very returns
        it is subtracted from).
    `horizon_s` > 0 discounts the reward τ seconds after the action by exp(−τ / horizon_s).
    `normalise` divides the step's advantages by their standard deviation; `entropy` adds
    β · H(π) to the objective (DL2 uses an entropy term to keep exploring). The gradient of
    mean(advantage × log π(a|s)) + β · mean H is followed by Adam at `lr` (its moments reset at
    the start of the stage). `update="ppo"` replaces that one Adam step by PPO's (Schulman et al.
    2017, "Proximal Policy Optimization Algorithms", Algorithm 1 with the clipped surrogate L^CLIP
    of eq. 7), which reuses the step's samples: `ppo_epochs` (K) passes over the step's actions in
    random minibatches of `ppo_minibatch`, one Adam step at `lr` each, on
    mean min(r A, clip(r, 1 − ε, 1 + ε) A) + β · H with r = π(a|s) / π_old(a|s), π_old the policy
    that sampled the episodes and ε = `ppo_clip`. ε = 0.2, K = 10 and Adam at 3e-4 are the paper's
    MuJoCo setting; its minibatch is 64 of 2,048 samples (32 per pass), and the default here, 1,024
    actions of a step's ~34,000 (8 traces × 16 episodes), keeps about that many per pass. The
    advantages are those above (the paper's generalised advantage estimation needs a critic; the
    time-aligned baseline plays its part). Defaults (`cli.drl_train`): PPO, 60 steps of 8 traces ×
    16 episodes, each step on 8 traces not seen before.
(c) Checkpoint selection: after the supervised stage and after every REINFORCE step the greedy
    policy runs on the validation traces; the weights kept are those with the lowest mean validation
    average JCT (the earliest on a tie). The test traces are run only to report the curve.

Seeded and deterministic (numpy + the deterministic engine) for a given summation order of the
matrix products (cosim.blas fixes OpenBLAS' kernels and numpy's loops on x86-64 CPUs with AVX2): another
OpenBLAS thread count or other kernels can give another curve after a few steps. Writes the weights (.npz, float32) and a
training-curve CSV (stage, iteration, loss or JCTs and the step's diagnostics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from policies.drl.net import Critic, Net
from policies.drl.policy import Drl, DrlConfig
from policies.optimus import Optimus, OptimusConfig

#: runs `policy` on `synth:ones:JOBS` (trace seed SEED) on NODES Longhorn nodes; returns per job (submit s, end s)
Simulate = Callable[[Drl, int, int, int], tuple[np.ndarray, np.ndarray]]
#: a trace setting: (jobs, nodes, trace seed)
Setting = tuple[int, int, int]
ADVANTAGES = ("to-go", "episode", "critic", "greedy")
UPDATES = ("reinforce", "ppo")


@dataclass(frozen=True)
class RlOptions:
    """REINFORCE's options (module docstring, (b)); `cli.drl_train` states their defaults."""

    iters: int = 60
    episodes: int = 16
    lr: float = 3e-4
    entropy: float = 0.01
    advantage: str = "to-go"
    normalise: bool = True
    horizon_s: float = 0.0
    traces_per_step: int = 8
    critic_hidden: int = 64
    critic_lr: float = 1e-3
    critic_epochs: int = 50
    critic_warmup: int = 200
    update: str = "ppo"
    ppo_clip: float = 0.2
    ppo_epochs: int = 10
    ppo_minibatch: int = 1024

    def problems(self) -> list[tuple[str, str]]:
        """(field, what was expected) for every value out of range; empty when all are valid."""
        need = [("iters", self.iters >= 0, "0 or more steps"),
                ("episodes", self.episodes >= 2, "at least 2 episodes (the baseline is the other episodes' mean)"),
                ("traces_per_step", self.traces_per_step >= 1, "at least 1 trace"),
                ("lr", self.lr > 0 and np.isfinite(self.lr), "a positive learning rate"),
                ("entropy", self.entropy >= 0 and np.isfinite(self.entropy), "a non-negative entropy weight"),
                ("horizon_s", self.horizon_s >= 0 and np.isfinite(self.horizon_s),
                 "0 (no discount) or positive seconds"),
                ("advantage", self.advantage in ADVANTAGES, f"one of {', '.join(ADVANTAGES)}"),
                ("critic_hidden", self.critic_hidden >= 1, "at least 1 hidden unit"),
                ("critic_lr", self.critic_lr > 0 and np.isfinite(self.critic_lr), "a positive learning rate"),
                ("critic_epochs", self.critic_epochs >= 0, "0 or more Adam steps"),
                ("critic_warmup", self.critic_warmup >= 0, "0 or more Adam steps"),
                ("update", self.update in UPDATES, f"one of {', '.join(UPDATES)}"),
                ("ppo_clip", 0 < self.ppo_clip < 1, "a clip range epsilon strictly between 0 and 1"),
                ("ppo_epochs", self.ppo_epochs >= 1, "at least 1 epoch over the step's samples"),
                ("ppo_minibatch", self.ppo_minibatch >= 1, "at least 1 sample per minibatch")]
        return [(f, what) for f, ok, what in need if not ok]


def _stack(traj: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([t[0] for t in traj]), np.array([t[1] for t in traj]), np.array([t[2] for t in traj], np.int64))


def avg_jct(episode: tuple[np.ndarray, np.ndarray]) -> float:
    submit, end = episode
    return float(np.mean(end - submit))


def collect_teacher(simulate: Simulate, net: Net, settings: list[Setting],
                    horizon_s: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(states, masks, actions, reward-to-go at each action's time) of Optimus-as-teacher runs, one
    per (jobs, nodes, seed) setting; the returns warm up the critic (`reward_to_go`, `horizon_s`)."""
    traj: list = []
    returns = [np.zeros(0)]
    for jobs, nodes, seed in settings:
        teacher = Optimus(OptimusConfig(interval_s=60.0, remaining="continuous"))
        p = Drl(DrlConfig(), net=net, teacher=teacher)
        ep = simulate(p, jobs, nodes, seed)
        traj += p.trajectory
        returns.append(reward_to_go(ep, np.array([t[3] for t in p.trajectory], float), horizon_s))
    return (*_stack(traj), np.concatenate(returns))


def supervised(net: Net, data: tuple, epochs: int, lr: float) -> list[float]:
    """Full-batch cross-entropy fit; the loss before each step."""
    x, m, a = data[:3]
    w = np.ones(a.size)
    losses = []
    for _ in range(epochs):
        g, loss = net.grads(x, m, a, w)
        losses.append(loss)
        net.adam(g, lr)
    return losses


def greedy_jcts(simulate: Simulate, net: Net, settings: list[Setting]) -> np.ndarray:
    """The greedy policy's average JCT on each (jobs, nodes, seed) trace, in order."""
    return np.array([avg_jct(simulate(Drl(DrlConfig(), net=net), j, n, s)) for j, n, s in settings], float)


def greedy_jct(simulate: Simulate, net: Net, settings: list[Setting]) -> float:
    """Mean over (jobs, nodes, seed) traces of the greedy policy's average JCT (NaN: none)."""
    if not settings:
        return float("nan")
    return float(np.mean(greedy_jcts(simulate, net, settings)))


def paired_gain(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """(mean over traces of before − after, its paired standard error std(before − after) / sqrt(n)),
    per-trace values of the same traces in the same order; positive: `after` is better. The error is
    NaN below two traces, both are NaN with none."""
    d = np.asarray(before, float) - np.asarray(after, float)
    if d.size == 0:
        return float("nan"), float("nan")
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")


def _held_out(simulate: Simulate, net: Net, val: list[Setting], test: list[Setting],
              first: dict | None) -> tuple[dict, dict]:
    """The greedy policy on the validation and test traces: (curve columns, per-trace JCTs). With
    `first` (the per-trace JCTs after the supervised stage), each set's gain over it and its paired
    standard error (`paired_gain`)."""
    per = {"val": greedy_jcts(simulate, net, val), "test": greedy_jcts(simulate, net, test)}
    row = {f"{k}_greedy_avg_jct_s": float(v.mean()) if v.size else float("nan") for k, v in per.items()}
    for k, v in per.items():
        gain, se = paired_gain(first[k], v) if first is not None else paired_gain(v, v)
        row |= {f"{k}_gain_s": gain, f"{k}_gain_se_s": se}
    return row, per


def reward_to_go(episode: tuple[np.ndarray, np.ndarray], t: np.ndarray, horizon_s: float = 0.0) -> np.ndarray:
    """−(1/N) Σ_j (end_j − max(t, submit_j))⁺ / 1000 s for each time in `t`: the part of the reward
    (−average JCT / 1000 s) accrued after t. At t ≤ every submit it is the whole episode's reward.
    `horizon_s` > 0 discounts time τ after t by exp(−(τ − t) / horizon_s) (DL2's discounted
    per-slot reward with γ = exp(−slot / horizon_s)): each job's term becomes
    horizon_s · (e^(−(a − t)/horizon_s) − e^(−(end − t)/horizon_s)) with a = max(t, submit)."""
    submit, end = episode
    t = np.asarray(t, float)[:, None]
    a = np.maximum(t, submit[None, :])
    b = np.maximum(end[None, :], a)
    if horizon_s > 0:
        kept = horizon_s * (np.exp(-(a - t) / horizon_s) - np.exp(-(b - t) / horizon_s))
        return -kept.sum(1) / (submit.size * 1000.0)
    return -(b - a).sum(1) / (submit.size * 1000.0)


def advantages(episodes: list[tuple[np.ndarray, np.ndarray]], times: list[np.ndarray], mode: str,
               horizon_s: float = 0.0) -> list[np.ndarray]:
    """Per episode, each action's return (mode "to-go": from its decision time; "episode": the
    whole episode's; discounted by `horizon_s`, `reward_to_go`) minus the mean of the other
    episodes' returns at the same time (mode "critic": `critic_advantages` instead)."""
    k = len(episodes)
    at = [np.zeros_like(t) if mode == "episode" else t for t in times]
    out = []
    for i in range(k):
        own = reward_to_go(episodes[i], at[i], horizon_s)
        others = np.mean([reward_to_go(episodes[o], at[i], horizon_s) for o in range(k) if o != i], axis=0)
        out.append(own - others)
    return out


def greedy_advantages(episodes: list[tuple[np.ndarray, np.ndarray]], times: list[np.ndarray],
                      greedy: tuple[np.ndarray, np.ndarray], horizon_s: float = 0.0) -> list[np.ndarray]:
    """Per episode, each action's reward-to-go (`reward_to_go`, `horizon_s`) minus the greedy policy's
    episode's on the same trace at the same time: the greedy rollout as the baseline (self-critical
    training, Rennie et al. 2017; Kool et al. 2019's greedy-rollout baseline with the current policy)."""
    return [reward_to_go(ep, t, horizon_s) - reward_to_go(greedy, t, horizon_s) for ep, t in zip(episodes, times)]


def critic_advantages(episodes: list[tuple[np.ndarray, np.ndarray]], times: list[np.ndarray],
                      states: list[np.ndarray], critic: Critic,
                      horizon_s: float = 0.0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per episode (reward-to-go from each action's time, that minus the critic's V(state))."""
    ret = [reward_to_go(ep, t, horizon_s) for ep, t in zip(episodes, times)]
    return ret, [r - critic.value(x) if r.size else r for r, x in zip(ret, states)]


def best_step(val: list[float]) -> int:
    """Index of the lowest validation JCT (the earliest on a tie; NaN never chosen unless all are)."""
    v = np.asarray(val, float)
    return int(np.nanargmin(v)) if np.isfinite(v).any() else 0


def _episodes(simulate: Simulate, net: Net, opt: RlOptions, setting: Setting, seed0: int,
              critic: Critic | None) -> tuple[list, list, list, list, list | None]:
    """`opt.episodes` sampled runs of one trace: (per-job (submit, end), trajectories, advantages,
    advantages within each half of the episodes, with a critic: each action's reward-to-go)."""
    jobs, nodes, seed = setting
    eps, trajs = [], []
    for e in range(opt.episodes):
        p = Drl(DrlConfig(sample=True, seed=seed0 + e), net=net)
        eps.append(simulate(p, jobs, nodes, seed))
        trajs.append(p.trajectory)
    times = [np.array([t[3] for t in tr], float) for tr in trajs]
    if critic is not None:  # the baseline is V(s), not the other episodes: the halves share it
        ret, adv = critic_advantages(eps, times, [np.array([t[0] for t in tr]) for tr in trajs], critic,
                                     opt.horizon_s)
        return eps, trajs, adv, adv, ret
    if opt.advantage == "greedy":  # the baseline is the greedy episode, not the other episodes: the halves share it
        adv = greedy_advantages(eps, times, simulate(Drl(DrlConfig(), net=net), jobs, nodes, seed), opt.horizon_s)
        return eps, trajs, adv, adv, None
    h = opt.episodes // 2  # the halves' own advantages (each half's baseline from itself) for the noise check
    if h >= 2:
        halves = (advantages(eps[:h], times[:h], opt.advantage, opt.horizon_s)
                  + advantages(eps[h:], times[h:], opt.advantage, opt.horizon_s))
    else:
        halves = [t * np.nan for t in times]
    return eps, trajs, advantages(eps, times, opt.advantage, opt.horizon_s), halves, None


def ppo_update(net: Net, x: np.ndarray, m: np.ndarray, a: np.ndarray, adv: np.ndarray, opt: RlOptions,
               seed: int) -> dict:
    """PPO's update (Schulman et al. 2017, Algorithm 1): `opt.ppo_epochs` passes over the step's
    samples in random minibatches of `opt.ppo_minibatch` actions, one Adam step at `opt.lr` on the
    clipped surrogate (`Net.ppo_grads`, clip range `opt.ppo_clip`, entropy bonus `opt.entropy`) per
    minibatch; the ratio's denominator is the policy that sampled the episodes (the weights on
    entry). Returns the fraction of samples whose ratio ends outside [1 − ε, 1 + ε], the mean
    log π_old − log π (an estimate of KL(π_old ‖ π)) and the Adam steps taken."""
    logp_old = net.log_prob(x, m, a)
    rng = np.random.default_rng(seed)
    steps = 0
    for _ in range(opt.ppo_epochs):
        order = rng.permutation(a.size)
        for s in range(0, a.size, opt.ppo_minibatch):
            b = order[s:s + opt.ppo_minibatch]
            g, _ = net.ppo_grads(x[b], m[b], a[b], adv[b], logp_old[b], opt.ppo_clip, opt.entropy)
            net.adam(g, opt.lr)
            steps += 1
    logp = net.log_prob(x, m, a)
    return {"ppo_clipped_fraction": float(np.mean(np.abs(np.exp(logp - logp_old) - 1) > opt.ppo_clip)),
            "ppo_kl": float(np.mean(logp_old - logp)), "ppo_adam_steps": steps}


def reinforce(simulate: Simulate, net: Net, opt: RlOptions, train: list[Setting], val: list[Setting],
              test: list[Setting], log=print, warmup: tuple | None = None) -> tuple[list[dict], int]:
    """REINFORCE steps (module docstring, (b)) with best-on-validation selection ((c)). Returns the
    curve (row 0: after the supervised stage; row i: after step i, with its diagnostics) and the
    selected row; `net` ends holding the selected row's weights. `warmup`: (states, reward-to-go)
    that the critic is first fitted on (`collect_teacher`'s first and last arrays; advantage
    "critic" only)."""
    held, first = _held_out(simulate, net, val, test, None)
    rows = [{"iteration": 0, **held}]
    best = {k: v.copy() for k, v in net.p.items()}
    net.reset_optimiser()  # the supervised stage's moment estimates would scale the first steps
    log(f"after supervised: validation {rows[0]['val_greedy_avg_jct_s']:.1f} s, "
        f"test {rows[0]['test_greedy_avg_jct_s']:.1f} s")
    critic = Critic(net.input_dim, opt.critic_hidden) if opt.advantage == "critic" else None
    if critic is not None and warmup is not None and warmup[1].size:
        cl = critic.fit(warmup[0], warmup[1], opt.critic_warmup, opt.critic_lr)
        if cl:
            log(f"critic warm-up on {warmup[1].size} teacher actions: squared error {cl[0]:.4f} -> {cl[-1]:.4f}")
    for it in range(1, opt.iters + 1):
        k0 = (it - 1) * opt.traces_per_step
        traces = [train[k % len(train)] for k in range(k0, k0 + opt.traces_per_step)]
        # parts, per episode: (x, mask, action, advantage, within-half advantage, first half?, reward-to-go)
        jcts, parts = [], []
        for t, setting in enumerate(traces):
            eps, trajs, adv, hadv, ret = _episodes(simulate, net, opt, setting, 1000 * it + 100 * t, critic)
            jcts += [avg_jct(ep) for ep in eps]
            parts += [(*_stack(tr), adv[i], hadv[i], i < opt.episodes // 2, None if ret is None else ret[i])
                      for i, tr in enumerate(trajs) if tr]
        if not parts:
            raise ValueError(f"REINFORCE step {it}: no episode took an action")
        x, m, a, w, wh = (np.concatenate([q[k] for q in parts]) for k in range(5))
        half = np.concatenate([np.full(q[2].size, q[5]) for q in parts])
        scale = float(w.std())
        mean_abs = float(np.abs(w).mean())
        if opt.normalise:
            w = w / (scale + 1e-8)
        agree = float((np.argmax(net.probs(x, m)[0], 1) == a).mean())
        ent = float(net.entropy(x, m).mean())
        wh = wh / (scale + 1e-8) if opt.normalise else wh
        g1, g2 = (net.grads(x[h], m[h], a[h], wh[h], entropy=opt.entropy)[0] for h in (half, ~half))
        v1, v2 = (np.concatenate([gg[k].ravel() for k in sorted(gg)]) for gg in (g1, g2))
        cos = float(v1 @ v2 / max(np.linalg.norm(v1) * np.linalg.norm(v2), 1e-300))
        g, _ = net.grads(x, m, a, w, entropy=opt.entropy)
        gnorm = float(np.sqrt(sum(float((v * v).sum()) for v in g.values())))
        if opt.update == "ppo":
            update_row = ppo_update(net, x, m, a, w, opt, seed=it)
        else:
            net.adam(g, opt.lr)
            update_row = {}
        critic_row = {}
        if critic is not None:
            r = np.concatenate([q[6] for q in parts])
            resid = float(np.var(r - critic.value(x)))  # V before this step's fit: what the advantage used
            cl = critic.fit(x, r, opt.critic_epochs, opt.critic_lr)
            critic_row = {"critic_explained_variance": 1.0 - resid / max(float(np.var(r)), 1e-300),
                          "critic_loss_after_fit": float(0.5 * np.mean((critic.value(x) - r) ** 2)) if cl else np.nan}
        row = {"iteration": it, "trace": "+".join(f"{j}x{n}x{s}" for j, n, s in traces),
               "sampled_avg_jct_s": float(np.mean(jcts)), "sampled_jct_spread_s": float(np.std(jcts)),
               "advantage_std": scale, "advantage_mean_abs": mean_abs, "grad_norm": gnorm, "grad_halves_cosine": cos,
               "sampled_greedy_agreement": agree, "entropy_nats": ent, "actions": int(a.size),
               "train_greedy_avg_jct_s": greedy_jct(simulate, net, traces),
               **_held_out(simulate, net, val, test, first)[0], **critic_row, **update_row}
        rows.append(row)
        if best_step([r["val_greedy_avg_jct_s"] for r in rows]) == it:
            best = {k: v.copy() for k, v in net.p.items()}
        log(f"step {it} ({row['trace']}): sampled {row['sampled_avg_jct_s']:.1f} s, adv std {scale:.4f}, |grad| "
            f"{gnorm:.4f} (halves' cosine {cos:.2f}), agree {agree:.3f}, H {ent:.3f}, greedy train "
            f"{row['train_greedy_avg_jct_s']:.1f} / val {row['val_greedy_avg_jct_s']:.1f} / test "
            f"{row['test_greedy_avg_jct_s']:.1f} s (gain over the supervised stage: val "
            f"{row['val_gain_s']:.1f} ± {row['val_gain_se_s']:.1f} s, test {row['test_gain_s']:.1f} ± "
            f"{row['test_gain_se_s']:.1f} s)")
    sel = best_step([r["val_greedy_avg_jct_s"] for r in rows])
    net.p = best
    return rows, sel


def plot_curve(curve_csv: Path, png: Path) -> None:
    """The training curve as a PNG: (a) supervised loss per epoch; (b) the greedy policy's average JCT
    on the validation and test traces after every REINFORCE step (step 0: after the supervised
    stage), the weights kept marked; (c) the step's training traces, sampled (mean of the episodes)
    and greedy after the step; (d), when the curve has them, each step's gain over the supervised
    stage on the validation and test traces, paired by trace, ± one standard error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.read_csv(curve_csv)
    sl, rl = df[df["stage"] == "supervised"], df[df["stage"] == "reinforce"]
    gains = "val_gain_s" in rl
    fig, axes = plt.subplots(1, 4 if gains else 3, figsize=(17 if gains else 13, 3.4))
    a, b, c = axes[:3]
    a.plot(sl["iteration"], sl["loss"])
    a.set(xlabel="Adam step (full batch)", ylabel="cross-entropy", title="(a) supervised from Optimus")
    b.plot(rl["iteration"], rl["val_greedy_avg_jct_s"], label="validation traces (mean)")
    b.plot(rl["iteration"], rl["test_greedy_avg_jct_s"], label="test traces (mean)")
    sel = rl[rl["selected"].astype(bool)]
    b.scatter(sel["iteration"], sel["val_greedy_avg_jct_s"], marker="o", color="k", zorder=3, label="weights kept")
    b.set(xlabel="policy-gradient step (0 = after the supervised stage)", ylabel="greedy avg JCT (s)",
          title="(b) held-out traces, greedy")
    b.legend(fontsize=7)
    c.plot(rl["iteration"], rl["sampled_avg_jct_s"], ".:", label="sampled (mean of the episodes)")
    c.plot(rl["iteration"], rl["train_greedy_avg_jct_s"], ".-", label="greedy after the step")
    c.set(xlabel="policy-gradient step", ylabel="avg JCT (s)", yscale="log",
          title="(c) the step's training traces (mean)")
    c.legend(fontsize=7)
    if gains:
        d = axes[3]
        for k, label, dx in (("val", "validation", -0.12), ("test", "test", 0.12)):
            d.errorbar(rl["iteration"] + dx, rl[f"{k}_gain_s"], yerr=rl[f"{k}_gain_se_s"], fmt=".", capsize=2,
                       label=f"{label} (± paired SE)")
        d.axhline(0, color="k", lw=0.6)
        d.set(xlabel="policy-gradient step", ylabel="gain over step 0 (s, + = faster)",
              title="(d) held-out gain, paired by trace")
        d.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
