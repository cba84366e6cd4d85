"""Training of the `drl` policy network: `python -m policies.drl.train [options]`.

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

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from policies.drl.net import Net
from policies.drl.policy import DEFAULT_WEIGHTS, Drl, DrlConfig
from policies.optimus import Optimus, OptimusConfig


def _simulate(policy: Drl, jobs: int, nodes: int, seed: int) -> float:
    """Average JCT (s) of `policy` on `synth:ones:jobs` (trace seed `seed`) on `nodes` Longhorn nodes,
    with the catalog's setting (20 s checkpoint-restart per resize)."""
    from experiments.runner import RunConfig, real_backends, run

    cfg = RunConfig(trace=f"synth:ones:{jobs}", cluster="ones-longhorn", cluster_nodes=nodes, policies=("drl",),
                    costs=20.0, seed=seed)
    be = replace(real_backends(cfg), make_policy=lambda name, params: policy)
    res = run(cfg, None, backends=be)
    return float(res.summary["avg_jct_s"].iloc[0])


def _stack(traj: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([t[0] for t in traj]), np.array([t[1] for t in traj]), np.array([t[2] for t in traj], np.int64))


def collect_teacher(net: Net, settings: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(states, masks, actions) of Optimus-as-teacher runs, one per (jobs, nodes, seed) setting."""
    traj: list = []
    for jobs, nodes, seed in settings:
        teacher = Optimus(OptimusConfig(interval_s=60.0, remaining="continuous"))
        p = Drl(DrlConfig(), net=net, teacher=teacher)
        _simulate(p, jobs, nodes, seed)
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


def reinforce(net: Net, iters: int, episodes: int, lr: float, jobs: int, nodes: int, seed: int,
              log=print) -> list[tuple[float, float]]:
    """REINFORCE with a mean baseline; per iteration (mean sampled avg JCT, greedy avg JCT)."""
    curve = []
    for it in range(iters):
        trace_seed = seed + it % 4  # a few training traces in turn
        rets, trajs = [], []
        for e in range(episodes):
            p = Drl(DrlConfig(sample=True, seed=1000 * it + e), net=net)
            jct = _simulate(p, jobs, nodes, trace_seed)
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
        greedy = _simulate(Drl(DrlConfig(), net=net), jobs, nodes, trace_seed)
        curve.append((float(-r.mean() * 1000.0), greedy))
        log(f"reinforce {it}: sampled avg JCT {-r.mean() * 1000:.1f} s, greedy {greedy:.1f} s (trace seed {trace_seed})")
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
    b.set(xlabel="REINFORCE iteration (trace seed cycles 110-113)", ylabel="avg JCT (s)", title="(b) REINFORCE")
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m policies.drl.train", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(DEFAULT_WEIGHTS), help="weights .npz to write")
    ap.add_argument("--curve", default="", help="training-curve CSV to write ('' = none)")
    ap.add_argument("--plot", default="", help="training-curve PNG to write (needs --curve and matplotlib)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slots", type=int, default=20, help="job slots of the state")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--teacher-traces", default="12x4x100,12x4x101,20x4x102,20x8x103,30x8x104,50x16x105",
                    help="JOBSxNODESxSEED,... settings of the Optimus-teacher runs")
    ap.add_argument("--sl-epochs", type=int, default=400)
    ap.add_argument("--sl-lr", type=float, default=3e-3)
    ap.add_argument("--rl-iters", type=int, default=30)
    ap.add_argument("--rl-episodes", type=int, default=6)
    ap.add_argument("--rl-lr", type=float, default=1e-3)
    ap.add_argument("--rl-trace", default="50x16x110", help="JOBSxNODESxSEED of the REINFORCE episodes (seed "
                                                           "cycles over 4 consecutive values)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    net = Net(a.slots, a.hidden, seed=a.seed)
    settings = [tuple(int(v) for v in s.split("x")) for s in a.teacher_traces.split(",") if s]
    data = collect_teacher(net, settings)
    print(f"teacher: {data[2].size} actions from {len(settings)} runs ({time.perf_counter() - t0:.0f} s)")
    losses = supervised(net, data, a.sl_epochs, a.sl_lr)
    acc = float((np.argmax(net.probs(data[0], data[1])[0], 1) == data[2]).mean())
    print(f"supervised: loss {losses[0]:.3f} -> {losses[-1]:.3f}, action accuracy {acc:.3f} "
          f"({time.perf_counter() - t0:.0f} s)")
    rows = [{"stage": "supervised", "iteration": i, "loss": v, "sampled_avg_jct_s": np.nan,
             "greedy_avg_jct_s": np.nan} for i, v in enumerate(losses)]
    jobs, nodes, seed = (int(v) for v in a.rl_trace.split("x"))
    curve = reinforce(net, a.rl_iters, a.rl_episodes, a.rl_lr, jobs, nodes, seed)
    rows += [{"stage": "reinforce", "iteration": i, "loss": np.nan, "sampled_avg_jct_s": s, "greedy_avg_jct_s": g}
             for i, (s, g) in enumerate(curve)]
    net.save(Path(a.out), args=vars(a), teacher_accuracy=acc)
    if a.curve:
        Path(a.curve).parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(a.curve, index=False)
        if a.plot:
            plot_curve(Path(a.curve), Path(a.plot))
    print(f"wrote {a.out} ({Path(a.out).stat().st_size} bytes) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
