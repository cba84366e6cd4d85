"""Train the `drl` policy network (ONES' DL2-style DRL baseline): `python -m cli.drl_train [options]`.

The algorithm is `policies.drl.train` (supervised warm start from Optimus, then REINFORCE); this
module is its command line and its simulations: each episode is one `experiments.runner.run` of a
`synth:ones` trace on the `ones-longhorn` preset with the ONES catalog's setting (20-s
checkpoint-restart per resize, ONES' convergence model `--progress batch-history`, the
`ones-artifact` speeds). After every REINFORCE step the greedy policy is also run on held-out
traces (`--heldout`, seeds trained on by neither stage): the curve shows whether training
improves the policy on traces it never saw. Defaults reproduce the committed policies/drl/data/drl_ones.npz:

    python -m cli.drl_train --curve docs/reproductions/ones/drl-training.csv \\
        --plot docs/reproductions/ones/drl-training.png
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.runner import RunConfig, real_backends, run
from policies.drl.net import Net
from policies.drl.policy import DEFAULT_WEIGHTS, Drl
from policies.drl.train import collect_teacher, heldout_jct, plot_curve, reinforce, supervised


def simulate(policy: Drl, jobs: int, nodes: int, seed: int) -> float:
    """Average JCT (s) of `policy` on `synth:ones:jobs` (trace seed `seed`) on `nodes` Longhorn nodes."""
    cfg = RunConfig(trace=f"synth:ones:{jobs}", cluster="ones-longhorn", cluster_nodes=nodes, policies=("drl",),
                    costs=20.0, seed=seed, progress="batch-history", calibration="ones-artifact")
    be = replace(real_backends(cfg), make_policy=lambda name, params: policy)
    return float(run(cfg, None, backends=be).summary["avg_jct_s"].iloc[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cli.drl_train", description=__doc__.splitlines()[0])
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
    ap.add_argument("--heldout", default="20x4x130,50x16x131",
                    help="JOBSxNODESxSEED,... held-out traces evaluated greedily after every REINFORCE step")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    net = Net(a.slots, a.hidden, seed=a.seed)
    settings = [tuple(int(v) for v in s.split("x")) for s in a.teacher_traces.split(",") if s]
    data = collect_teacher(simulate, net, settings)
    print(f"teacher: {data[2].size} actions from {len(settings)} runs ({time.perf_counter() - t0:.0f} s)")
    losses = supervised(net, data, a.sl_epochs, a.sl_lr)
    acc = float((np.argmax(net.probs(data[0], data[1])[0], 1) == data[2]).mean())
    print(f"supervised: loss {losses[0]:.3f} -> {losses[-1]:.3f}, action accuracy {acc:.3f} "
          f"({time.perf_counter() - t0:.0f} s)")
    rows = [{"stage": "supervised", "iteration": i, "loss": v, "sampled_avg_jct_s": np.nan,
             "greedy_avg_jct_s": np.nan} for i, v in enumerate(losses)]
    jobs, nodes, seed = (int(v) for v in a.rl_trace.split("x"))
    heldout = [tuple(int(v) for v in s.split("x")) for s in a.heldout.split(",") if s]
    before = heldout_jct(simulate, net, heldout)
    print(f"held-out greedy avg JCT after the supervised stage: {before:.1f} s")
    curve = reinforce(simulate, net, a.rl_iters, a.rl_episodes, a.rl_lr, jobs, nodes, seed, heldout=heldout)
    rows += [{"stage": "reinforce", "iteration": -1, "loss": np.nan, "sampled_avg_jct_s": np.nan,
              "greedy_avg_jct_s": np.nan, "heldout_greedy_avg_jct_s": before}]
    rows += [{"stage": "reinforce", "iteration": i, "loss": np.nan, "sampled_avg_jct_s": s, "greedy_avg_jct_s": g,
              "heldout_greedy_avg_jct_s": h} for i, (s, g, h) in enumerate(curve)]
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
