"""Train the `drl` policy network (ONES' DL2-style DRL baseline): `python -m cli.drl_train [options]`.

The algorithm is `policies.drl.train` (supervised warm start from Optimus, then REINFORCE with
best-on-validation checkpoint selection); this module is its command line and its simulations:
each episode is one `experiments.runner.run` of a `synth:ones` trace on the `ones-longhorn` preset
with the ONES catalog's setting (20-s checkpoint-restart per resize, ONES' convergence model
`--progress batch-history`, the `ones-artifact` speeds). Three disjoint sets of trace seeds:
training (`--teacher-traces`, `--rl-traces`), validation (`--val`: picks the weights kept) and test
(`--test`: reported only). The defaults are the command that trained the committed
policies/drl/data/drl_ones.npz (its metadata records the options). The run repeats it bit for bit
where the matrix products are summed in the same order: one OpenBLAS thread, and the OpenBLAS
kernels and numpy loops `cosim.blas` asks for on x86-64 CPUs with AVX2; another thread count or other
kernels can keep another step (docs/reproductions/ones/REPORT.md, DRL section):

    python -m cli.drl_train --curve docs/reproductions/ones/drl-training.csv \\
        --plot docs/reproductions/ones/drl-training.png
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

# cosim before numpy: importing it sets OpenBLAS' thread count and kernels and numpy's loops before
# numpy loads (cosim.blas). Training's result depends on the summation order of its matrix products:
# another thread count or other kernels give another curve after a few policy-gradient steps.
from cosim.errors import CosimError, InputError  # noqa: I001

import numpy as np
import pandas as pd

from experiments.runner import RunConfig, real_backends, run
from policies.drl.net import Net
from policies.drl.policy import DEFAULT_WEIGHTS, Drl
from policies.drl.train import ADVANTAGES, UPDATES, RlOptions, Setting, collect_teacher, plot_curve, reinforce, supervised

def _mix(seeds) -> str:
    """`seeds` as JOBSxNODESxSEED traces of the catalog's two sizes: even seeds 20 jobs on 4 nodes
    (16 GPUs), odd seeds 50 jobs on 16 (64 GPUs)."""
    return ",".join(f"20x4x{s}" if s % 2 == 0 else f"50x16x{s}" for s in seeds)


# The default trace sets: disjoint seeds; the catalog's evaluation seeds (0-2) are in none of them.
#: REINFORCE's training traces: 480 seeds (200-279, 400-559, 800-1039), 8 per step for the default
#: 60 steps, so that every step samples traces it has not seen (the same 8 traces every step fit
#: those traces only)
RL_TRACES = _mix([*range(200, 280), *range(400, 560), *range(800, 1040)])
#: validation (picks the step kept): 32 traces; test (reported only): 128 traces
VAL_TRACES = _mix(range(300, 332))
TEST_TRACES = _mix(range(600, 728))


#: the project's root: the weights' provenance names files inside it relative to it
_ROOT = Path(__file__).resolve().parents[1]


def _recorded(path: str) -> str:
    """`path` as the weights file records it: relative to the project when inside it (the default
    `--out`), so a shipped file names no folder of the machine that trained it."""
    p = Path(path).resolve()
    return p.relative_to(_ROOT).as_posix() if p.is_relative_to(_ROOT) else str(path)


def simulate(policy: Drl, jobs: int, nodes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per job (submit s, end s) of `policy` on `synth:ones:jobs` (trace seed `seed`) on `nodes` Longhorn nodes."""
    cfg = RunConfig(trace=f"synth:ones:{jobs}", cluster="ones-longhorn", cluster_nodes=nodes, policies=("drl",),
                    costs=20.0, seed=seed, progress="batch-history", calibration="ones-artifact")
    be = replace(real_backends(cfg), make_policy=lambda name, params: policy)
    jt = run(cfg, None, backends=be).jobs["drl"]
    if not jt["finished"].all():
        raise RuntimeError(f"synth:ones:{jobs} seed {seed} on {nodes} nodes: a job did not finish under `drl`")
    return jt["submit_time_s"].to_numpy(float), jt["end_time_s"].to_numpy(float)


def settings(option: str, text: str) -> list[Setting]:
    """`JOBSxNODESxSEED,...` as (jobs, nodes, seed) tuples; anything else is a one-line error."""
    out = []
    for s in (v.strip() for v in text.split(",")):
        if not s:
            continue
        parts = s.split("x")
        if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts) or min(map(int, parts[:2])) < 1:
            raise InputError.at(field=option, expected="JOBSxNODESxSEED,... with positive jobs and nodes", got=s)
        out.append(tuple(int(p) for p in parts))
    return out


def check(a: argparse.Namespace) -> tuple[RlOptions, list[Setting], list[Setting], list[Setting], list[Setting]]:
    """The options checked: (REINFORCE options, teacher, RL, validation, test settings)."""
    opt = RlOptions(iters=a.rl_iters, episodes=a.rl_episodes, lr=a.rl_lr, entropy=a.rl_entropy,
                    advantage=a.rl_advantage, normalise=a.rl_normalise, horizon_s=a.rl_horizon_s,
                    traces_per_step=a.rl_traces_per_step, critic_hidden=a.rl_critic_hidden,
                    critic_lr=a.rl_critic_lr, critic_epochs=a.rl_critic_epochs, critic_warmup=a.rl_critic_warmup,
                    update=a.rl_update, ppo_clip=a.rl_ppo_clip, ppo_epochs=a.rl_ppo_epochs,
                    ppo_minibatch=a.rl_ppo_minibatch)
    bad = [("--rl-" + f.replace("_", "-"), what, getattr(opt, f)) for f, what in opt.problems()]
    bad += [(name, what, v) for name, ok, what, v in (
        ("--sl-epochs", a.sl_epochs >= 0, "0 or more epochs", a.sl_epochs),
        ("--sl-lr", a.sl_lr > 0 and np.isfinite(a.sl_lr), "a positive learning rate", a.sl_lr)) if not ok]
    if bad:
        raise InputError.at(field=bad[0][0], expected=bad[0][1], got=bad[0][2])
    teacher, rl = settings("--teacher-traces", a.teacher_traces), settings("--rl-traces", a.rl_traces)
    val, test = settings("--val", a.val), settings("--test", a.test)
    if a.rl_iters > 0 and not rl:
        raise InputError.at(field="--rl-traces", expected="at least one JOBSxNODESxSEED when --rl-iters > 0",
                            got=a.rl_traces)
    sets = {"training (--teacher-traces, --rl-traces)": {s[2] for s in teacher + rl},
            "--val": {s[2] for s in val}, "--test": {s[2] for s in test}}
    names = list(sets)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            if sets[x] & sets[y]:
                raise InputError.at(field=y, expected=f"trace seeds disjoint from {x}",
                                    got=sorted(sets[x] & sets[y]))
    return opt, teacher, rl, val, test


def parser() -> argparse.ArgumentParser:
    d = RlOptions()
    ap = argparse.ArgumentParser(prog="python -m cli.drl_train", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(DEFAULT_WEIGHTS), help="weights .npz to write")
    ap.add_argument("--curve", default="", help="training-curve CSV to write ('' = none)")
    ap.add_argument("--plot", default="", help="training-curve PNG to write (needs --curve and matplotlib)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the network's initial weights (default 0)")
    ap.add_argument("--slots", type=int, default=20, help="job slots of the state (default 20)")
    ap.add_argument("--hidden", type=int, default=64, help="hidden units (default 64)")
    ap.add_argument("--teacher-traces", default="12x4x100,12x4x101,20x4x102,20x8x103,30x8x104,50x16x105",
                    help="JOBSxNODESxSEED,... of the Optimus-teacher runs (training set)")
    ap.add_argument("--sl-epochs", type=int, default=400, help="supervised full-batch Adam steps (default 400)")
    ap.add_argument("--sl-lr", type=float, default=3e-3, help="supervised learning rate (default 3e-3)")
    ap.add_argument("--rl-traces", default=RL_TRACES,
                    help="JOBSxNODESxSEED,... of the REINFORCE episodes, taken in turn (training set)")
    ap.add_argument("--rl-iters", type=int, default=d.iters, help=f"REINFORCE steps (default {d.iters})")
    ap.add_argument("--rl-episodes", type=int, default=d.episodes,
                    help=f"sampled episodes per trace and step (default {d.episodes})")
    ap.add_argument("--rl-traces-per-step", type=int, default=d.traces_per_step,
                    help="training traces per step, each run --rl-episodes times with its own baseline "
                         f"(default {d.traces_per_step})")
    ap.add_argument("--rl-lr", type=float, default=d.lr, help=f"REINFORCE Adam learning rate (default {d.lr:g})")
    ap.add_argument("--rl-entropy", type=float, default=d.entropy,
                    help=f"entropy bonus weight beta (default {d.entropy:g}; 0 = none)")
    ap.add_argument("--rl-advantage", choices=ADVANTAGES, default=d.advantage,
                    help="credit of an action: 'to-go' = the reward after its decision time minus the other "
                         "episodes' at that time; 'episode' = the whole episode's reward minus the other "
                         "episodes' mean; 'critic' = the reward after its decision time minus a learnt "
                         "state value V(s) (DL2's actor-critic); 'greedy' = the reward after its decision time "
                         "minus a greedy run's on the same trace at that time (self-critical baseline) "
                         f"(default {d.advantage})")
    ap.add_argument("--rl-critic-hidden", type=int, default=d.critic_hidden,
                    help=f"hidden units of the critic V(s) (--rl-advantage critic; default {d.critic_hidden})")
    ap.add_argument("--rl-critic-lr", type=float, default=d.critic_lr,
                    help=f"the critic's Adam learning rate (default {d.critic_lr:g})")
    ap.add_argument("--rl-critic-epochs", type=int, default=d.critic_epochs,
                    help="full-batch Adam steps fitting the critic to each step's reward-to-go "
                         f"(default {d.critic_epochs})")
    ap.add_argument("--rl-critic-warmup", type=int, default=d.critic_warmup,
                    help="full-batch Adam steps fitting the critic to the Optimus-teacher runs' reward-to-go "
                         f"before the first REINFORCE step (default {d.critic_warmup}; 0 = none)")
    ap.add_argument("--rl-horizon-s", type=float, default=d.horizon_s,
                    help="discount: reward tau s after an action weighs exp(-tau / this) (DL2's per-slot "
                         f"discount); 0 = undiscounted (default {d.horizon_s:g})")
    ap.add_argument("--rl-update", choices=UPDATES, default=d.update,
                    help="how a step's episodes move the weights: 'reinforce' = one Adam step along the policy "
                         "gradient; 'ppo' = PPO's clipped surrogate (Schulman et al. 2017), --rl-ppo-epochs passes "
                         f"over the step's actions in minibatches, one Adam step each (default {d.update})")
    for field, what in (("ppo_clip", "PPO's clip range epsilon of the probability ratio (the paper's)"),
                        ("ppo_epochs", "PPO's passes K over each step's actions (the paper's MuJoCo setting)"),
                        ("ppo_minibatch", "PPO's minibatch, in actions (about 34 per pass over a default step's "
                                          "~34,000 actions, as the paper's MuJoCo setting has 32 of 64 in 2,048)")):
        v = getattr(d, field)
        ap.add_argument("--rl-" + field.replace("_", "-"), type=type(v), default=v, help=f"{what}; default {v:g}")
    ap.add_argument("--rl-normalise", action=argparse.BooleanOptionalAction, default=d.normalise,
                    help="divide each step's advantages by their standard deviation (default on)")
    ap.add_argument("--val", default=VAL_TRACES,
                    help="JOBSxNODESxSEED,... validation traces: the greedy policy's mean avg JCT on them picks the "
                         "weights kept (after the supervised stage or after a REINFORCE step)")
    ap.add_argument("--test", default=TEST_TRACES, help="JOBSxNODESxSEED,... test traces, reported only")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    try:
        opt, teacher, rl, val, test = check(a)
    except CosimError as exc:
        exc.show()
        return exc.exit_code
    t0 = time.perf_counter()
    net = Net(a.slots, a.hidden, seed=a.seed)
    data = collect_teacher(simulate, net, teacher, opt.horizon_s)
    print(f"teacher: {data[2].size} actions from {len(teacher)} runs ({time.perf_counter() - t0:.0f} s)")
    losses = supervised(net, data, a.sl_epochs, a.sl_lr)
    acc = float((np.argmax(net.probs(data[0], data[1])[0], 1) == data[2]).mean())
    print(f"supervised: loss {losses[0]:.3f} -> {losses[-1]:.3f}, action accuracy {acc:.3f} "
          f"({time.perf_counter() - t0:.0f} s)")
    rows = [{"stage": "supervised", "iteration": i, "loss": v} for i, v in enumerate(losses)]
    curve, sel = reinforce(simulate, net, opt, rl, val, test, warmup=(data[0], data[3]))
    rows += [{"stage": "reinforce", **r, "selected": i == sel} for i, r in enumerate(curve)]
    k = curve[sel]
    print(f"kept the weights after REINFORCE step {sel} (0 = the supervised stage): validation "
          f"{k['val_greedy_avg_jct_s']:.1f} s, test {k['test_greedy_avg_jct_s']:.1f} s "
          f"(after the supervised stage: {curve[0]['test_greedy_avg_jct_s']:.1f} s); gain over the supervised "
          f"stage, paired by trace: validation {k['val_gain_s']:.1f} ± {k['val_gain_se_s']:.1f} s, test "
          f"{k['test_gain_s']:.1f} ± {k['test_gain_se_s']:.1f} s")
    net.save(Path(a.out), args={**vars(a), "out": _recorded(a.out)}, teacher_accuracy=acc, selected_step=sel)
    if a.curve:
        Path(a.curve).parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(a.curve, index=False)
        if a.plot:
            plot_curve(Path(a.curve), Path(a.plot))
    print(f"wrote {a.out} ({Path(a.out).stat().st_size} bytes) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
