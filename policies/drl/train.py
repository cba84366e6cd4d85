"""Training of the `drl` policy network: `python -m cli.drl_train [options]` (the command line and the
simulation wiring live in cli/drl_train.py: policies may not import the runner, so every function here
takes `simulate(policy, jobs, nodes, seed) -> average JCT s`).

(a) Supervised warm start: the `drl` policy runs with Optimus as its teacher (Optimus' round
    allocation turned into add-one-GPU actions, the largest deficit first, then stop) on
    `synth:ones:N` traces; every (state, action) is recorded and the network fitted by full-batch
    cross-entropy with Adam.
(b) REINFORCE: per iteration, `episodes` runs of one training trace with actions sampled from the
    network (seeds differ); return = −average JCT / 1000 s; advantage = return − the mean of the
    iteration's returns (the baseline), scaled by their spread; gradient ascent on Σ advantage ×
    log π(a|s) over every action of the episode (DL2 uses the same estimator with a per-slot reward).

Seeded and deterministic (numpy + the deterministic engine). Training traces use seeds ≥ 100 so the
catalog's evaluation seeds (0-2) are never trained on. Writes the weights (.npz, float32) and a
training-curve CSV (stage, iteration, loss or avg JCT).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from policies.drl.net import Net
from policies.drl.policy import Drl, DrlConfig
from policies.optimus import Optimus, OptimusConfig

#: runs `policy` on `synth:ones:JOBS` (trace seed SEED) on NODES Longhorn nodes; returns the average JCT (s)
Simulate = Callable[[Drl, int, int, int], float]


def _stack(traj: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([t[0] for t in traj]), np.array([t[1] for t in traj]), np.array([t[2] for t in traj], np.int64))


def collect_teacher(simulate: Simulate, net: Net, settings: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(states, masks, actions) of Optimus-as-teacher runs, one per (jobs, nodes, seed) setting."""
    traj: list = []
    for jobs, nodes, seed in settings:
        teacher = Optimus(OptimusConfig(interval_s=60.0, remaining="continuous"))
        p = Drl(DrlConfig(), net=net, teacher=teacher)
        simulate(p, jobs, nodes, seed)
        traj += p.trajectory
    return _stack(traj)


def supervised(net: Net, data: tuple, epochs: int, lr: float) -> list[float]:
    """Full-batch cross-entropy fit; the loss before each step."""
    x, m, a = data
    w = np.ones(a.size)
    losses = []
    for _ in range(epochs):
        g, loss = net.grads(x, m, a, w)
        losses.append(loss)
        net.adam(g, lr)
    return losses


def heldout_jct(simulate: Simulate, net: Net, settings: list[tuple[int, int, int]]) -> float:
    """Mean over held-out (jobs, nodes, seed) traces of the greedy policy's average JCT (NaN: none)."""
    if not settings:
        return float("nan")
    return float(np.mean([simulate(Drl(DrlConfig(), net=net), j, n, s) for j, n, s in settings]))


def reinforce(simulate: Simulate, net: Net, iters: int, episodes: int, lr: float, jobs: int, nodes: int, seed: int,
              log=print, heldout: list[tuple[int, int, int]] = ()) -> list[tuple[float, float, float]]:
    """REINFORCE with a mean baseline; per iteration (mean sampled avg JCT, greedy avg JCT on the
    step's training trace, greedy avg JCT on the `heldout` traces)."""
    curve = []
    for it in range(iters):
        trace_seed = seed + it % 4  # a few training traces in turn
        rets, trajs = [], []
        for e in range(episodes):
            p = Drl(DrlConfig(sample=True, seed=1000 * it + e), net=net)
            jct = simulate(p, jobs, nodes, trace_seed)
            rets.append(-jct / 1000.0)
            trajs.append(p.trajectory)
        r = np.array(rets)
        adv = (r - r.mean()) / (r.std() + 1e-6)
        xs, ms, as_, ws = [], [], [], []
        for k, tr in enumerate(trajs):
            if not tr:
                continue
            x, m, a = _stack(tr)
            xs.append(x), ms.append(m), as_.append(a), ws.append(np.full(a.size, adv[k] / a.size))
        if xs and np.abs(adv).sum() > 0:
            g, _ = net.grads(np.concatenate(xs), np.concatenate(ms), np.concatenate(as_), np.concatenate(ws))
            # grads() minimises −Σ w log π; its normalisation by Σ|w| keeps the step size fixed
            net.adam(g, lr)
        greedy = simulate(Drl(DrlConfig(), net=net), jobs, nodes, trace_seed)
        held = heldout_jct(simulate, net, list(heldout))
        curve.append((float(-r.mean() * 1000.0), greedy, held))
        log(f"reinforce {it}: sampled avg JCT {-r.mean() * 1000:.1f} s, greedy {greedy:.1f} s (trace seed {trace_seed}), "
            f"held-out greedy {held:.1f} s")
    return curve


def plot_curve(curve_csv: Path, png: Path) -> None:
    """The training curve as a PNG: supervised loss per epoch, then REINFORCE's average JCTs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.read_csv(curve_csv)
    sl, rl = df[df["stage"] == "supervised"], df[df["stage"] == "reinforce"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.plot(sl["iteration"], sl["loss"])
    a.set(xlabel="Adam step (full batch)", ylabel="cross-entropy", title="(a) supervised from Optimus")
    b.plot(rl["iteration"], rl["sampled_avg_jct_s"], label="sampled (mean of episodes)")
    b.plot(rl["iteration"], rl["greedy_avg_jct_s"], label="greedy after the step")
    if "heldout_greedy_avg_jct_s" in rl:
        b.plot(rl["iteration"], rl["heldout_greedy_avg_jct_s"], label="greedy, held-out traces")
    b.set(xlabel="REINFORCE iteration (trace seed cycles 110-113)", ylabel="avg JCT (s)", title="(b) REINFORCE")
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
