"""Why REINFORCE does or does not improve the `drl` network: a few REINFORCE steps under several
settings, each from the same supervised start, with the per-step diagnostics of
`policies.drl.train.reinforce` printed side by side.

    python -m benchmarks.drl_diagnose --steps 6 \\
        --config advantage=episode,lr=1e-3,episodes=6,entropy=0 --config advantage=to-go

Each `--config` overrides `policies.drl.train.RlOptions` (keys: advantage, lr, episodes, entropy,
normalise, horizon_s, traces_per_step, critic_hidden, critic_lr, critic_epochs, critic_warmup, update,
ppo_clip, ppo_epochs, ppo_minibatch); the
supervised stage, trace sets and every other setting are `cli.drl_train`'s defaults (its options
after `--`). Per step it prints: the trace, the sampled
episodes' mean and spread of average JCT, the advantage scale before normalisation (std and mean
|A|, reward units of 1000 s), the gradient norm, the cosine between the gradients of the two halves
of the step's episodes, each half with its own baseline (near 0: the step is mostly noise), the
fraction of sampled actions the greedy policy would also take, the policy's entropy, and the greedy
policy's average JCT on the step's training trace and the validation and test sets; with
`advantage=critic`, the fraction of the reward-to-go's variance the critic explained before the
step's fit (1 − var(return − V) / var(return)); with `update=ppo`, the fraction of the step's
actions whose probability ratio ended outside the clip range and the estimated KL(π_old ‖ π).

With `--weights A.npz --weights B.npz ...` it trains nothing: it runs each weights file's greedy
policy on the validation and test traces (`cli.drl_train`'s `--val`/`--test`, after `--`) and prints
each set's mean average JCT and every file's gain over the first, paired by trace, with its
standard error (`policies.drl.train.paired_gain`): the noise floor a training step's gain is read against.

    python -m benchmarks.drl_diagnose --weights SUPERVISED.npz --weights policies/drl/data/drl_ones.npz
"""

from __future__ import annotations

import argparse
import copy
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from cli.drl_train import check, parser, simulate
from cosim.errors import CosimError, InputError
from policies.drl.net import Net
from policies.drl.train import RlOptions, collect_teacher, greedy_jcts, paired_gain, reinforce, supervised

COLUMNS = ("iteration", "trace", "sampled_avg_jct_s", "sampled_jct_spread_s", "advantage_std",
           "advantage_mean_abs", "grad_norm", "grad_halves_cosine", "sampled_greedy_agreement", "entropy_nats",
           "train_greedy_avg_jct_s", "val_greedy_avg_jct_s", "test_greedy_avg_jct_s", "critic_explained_variance",
           "ppo_clipped_fraction", "ppo_kl")


def options(base: RlOptions, text: str) -> RlOptions:
    """`key=value,...` over `base`; unknown keys or values are a one-line error."""
    kinds = {f.name: f.type for f in fields(RlOptions)}
    out = base
    for kv in (v for v in text.split(",") if v):
        k, _, v = kv.partition("=")
        if k not in kinds or k == "iters":
            raise InputError.at(field="--config", expected=f"key=value with key in {sorted(set(kinds) - {'iters'})}",
                                got=kv)
        try:
            val = {"int": int, "float": float, "bool": lambda s: {"true": True, "false": False}[s.lower()],
                   "str": str}[kinds[k]](v)
        except (KeyError, ValueError):
            raise InputError.at(field=f"--config {k}", expected=kinds[k], got=v) from None
        out = replace(out, **{k: val})
    for f, what in out.problems():
        raise InputError.at(field=f"--config {f}", expected=what, got=getattr(out, f))
    return out


def evaluate(names: list[str], nets: list[Net], sets: dict[str, list]) -> dict[str, np.ndarray]:
    """Each network's greedy average JCT on every trace of each set (printed: the set's mean, and
    each network's gain over the first, paired by trace, ± its standard error, in s and %). Returns
    per set the (networks × traces) JCTs."""
    out = {}
    for label, traces in sets.items():
        jct = np.array([greedy_jcts(simulate, net, traces) for net in nets])
        out[label] = jct
        print(f"{label} ({len(traces)} traces):", flush=True)
        for name, row in zip(names, jct):
            gain, se = paired_gain(jct[0], row)
            print(f"  {row.mean():9.1f} s  gain over the first {gain:7.1f} ± {se:5.1f} s "
                  f"({100 * gain / jct[0].mean():5.2f} ± {100 * se / jct[0].mean():4.2f} %)  {name}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.drl_diagnose", description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6, help="REINFORCE steps per config (default 6)")
    ap.add_argument("--config", action="append", default=[], help="key=value,... over cli.drl_train's defaults")
    ap.add_argument("--weights", action="append", default=[],
                    help="a weights .npz to evaluate (repeatable; gains are against the first): trains nothing")
    ap.add_argument("train_args", nargs="*", help="cli.drl_train options (after --)")
    a = ap.parse_args(argv)
    try:
        targs = parser().parse_args(a.train_args)
        base, teacher, rl, val, test = check(targs)
        configs = [options(replace(base, iters=a.steps), c) for c in (a.config or [""])]
        nets = [Net.load(Path(w)) for w in a.weights]
    except CosimError as exc:
        exc.show()
        return exc.exit_code
    if nets:
        evaluate(a.weights, nets, {"validation": val, "test": test})
        return 0
    net = Net(targs.slots, targs.hidden, seed=targs.seed)
    data = collect_teacher(simulate, net, teacher, base.horizon_s)
    losses = supervised(net, data, targs.sl_epochs, targs.sl_lr)
    print(f"supervised: cross-entropy {losses[0]:.3f} -> {losses[-1]:.3f}", flush=True)
    for opt in configs:
        print(f"\n== {opt}", flush=True)
        print(" ".join(f"{c[:12]:>12}" for c in COLUMNS), flush=True)
        rows, sel = reinforce(simulate, copy.deepcopy(net), opt, rl, val, test, log=lambda s: None,
                              warmup=(data[0], data[3]))
        for r in rows:
            print(" ".join(f"{r.get(c, np.nan):>12.4g}" if not isinstance(r.get(c), str) else f"{r[c]:>12}"
                           for c in COLUMNS))
        print(f"best on validation: step {sel}; test greedy {rows[0]['test_greedy_avg_jct_s']:.1f} s after the "
              f"supervised stage, {rows[-1]['test_greedy_avg_jct_s']:.1f} s after the last step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
