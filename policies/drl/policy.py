"""`drl`: ONES' DRL baseline, a DL2-style scheduler (Peng et al., "DL2: A Deep Learning-driven
Scheduler for Deep Learning Clusters", TPDS'21), as ONES describes it (notes §6): "it can dynamically
determine the size of each job", "it does not stop any job during its training until it is completed",
all-reduce workers only (no parameter servers).

Each round the policy looks at up to `slots` active jobs (arrival order) and repeatedly picks one
action from its network's softmax: add one GPU to one job (starting a queued job at its `min_gpus`,
so a rigid job gets exactly its size), or stop. Running
jobs keep every GPU they hold (never preempted, never shrunk); a job grows up to its cap (Optimus'
`caps_of`: `max_gpus` and global batch // the model's smallest local batch); actions stop when the
network says so, when no GPU is free, or after `max_actions`. Training (numpy, seeded, deterministic):

    python -m cli.drl_train --out policies/drl/data/drl_ones.npz \\
        --curve docs/reproductions/ones/drl-training.csv --plot docs/reproductions/ones/drl-training.png

(a) supervised warm start: Optimus' round allocations on `synth:ones` traces become action sequences
(the largest GPU deficit first, then stop) fitted by cross-entropy; (b) policy gradient on sampled
episodes, reward = −average JCT (the objective DL2 and ONES' DRL minimise), each action credited
with the reward still to come after it minus the other episodes' at the same time, each step's
episodes reused by PPO's clipped surrogate (Schulman et al. 2017; `--rl-update reinforce` takes one
plain policy-gradient step instead); (c) the weights
kept are the best of (a) and every step of (b) on validation traces (policies/drl/train.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from policies.base import BasePolicy
from policies.config import PlacedConfig, param
from policies.drl.net import FEATURES, GLOBAL, Net
from policies.optimus import Optimus, StepTimes, apply_counts, caps_of
from policies.registry import POLICIES
from simcore.api import NEED_DURATION_ORACLE, ClusterView, Decision

#: the committed weights (trained by `python -m cli.drl_train`, command in the module docstring)
DEFAULT_WEIGHTS = Path(__file__).parent / "data" / "drl_ones.npz"


@dataclass(frozen=True)
class DrlConfig(PlacedConfig):
    """A DL2-style DRL scheduler (ONES' DRL baseline): each round, a small policy network adds GPUs
    to jobs one at a time (one action = one more GPU for one job, or stop), never preempting or
    shrinking a running job. Weights trained by `python -m cli.drl_train` (supervised from
    Optimus, then 60 policy-gradient steps on −average JCT with PPO's clipped update; the weights
    kept are the best on validation traces) on synthetic `synth:ones` traces in the ONES
    experiment's setting (`--progress batch-history`, the `ones-artifact` speeds). On 128 held-out
    test traces their greedy average JCT is 4.6 ± 0.8 % below the supervised stage's
    (docs/reproductions/ones/REPORT.md, DRL section)."""

    reference: ClassVar[str] = ("ONES SC'21 §5.1 DRL baseline, after Peng et al., \"DL2: A Deep Learning-driven "
                                "Scheduler for Deep Learning Clusters\", TPDS'21")

    weights: str = param("", "policy-network weights (.npz from `python -m cli.drl_train`); '' = the "
                             "committed policies/drl/data/drl_ones.npz",
                         source="trained here: ONES gives no network, training or reward details (notes §6)")
    interval_s: float | None = param(
        60.0, "time between rounds (arrivals and completions also trigger one)",
        source="not given by ONES (notes §5.5: 'the interval is not given'); DL2 decides per time slot")
    max_actions: int = param(
        0, "most add-one-GPU actions per round; 0 = until the network stops or no GPU is free (DL2 takes "
           "several actions per slot); 1 = ONES' 'only one job can be rescheduled at each time' read strictly",
        source="DL2: multiple actions per slot; ONES §5.1: one job rescheduled at a time")
    sample: bool = param(False, "sample actions from the softmax (training) instead of taking the most likely",
                         source="DL2 samples while training; evaluation here is greedy so runs are deterministic")
    seed: int = param(0, "seed of sampled actions")
    batch_cap: bool = param(True, "cap jobs at global batch // the model's smallest local batch, as Optimus",
                            source="same caps as the Optimus baseline (policies.optimus.caps_of)")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None and self.interval_s > 0, "a positive number of seconds")
        self.check("max_actions", self.max_actions >= 0, "0 (no limit) or a positive count")


def features(view: ClusterView, now: float, slots: list[int], g: np.ndarray, cap: np.ndarray, free: int,
             total: int, n_beyond: int, step: StepTimes) -> np.ndarray:
    """The state vector: per slot (zeros when empty) GPUs held now (tentative, this round), GPUs
    requested, epochs done, queueing s, executed s, epoch rate (epochs per executed minute), the
    speed-up of one more GPU (what-if step times; 1 for a queued job), running flag; then free
    GPUs / GPUs and the jobs beyond the slots. Observations only: no duration or progress oracle."""
    jv = view.jobs
    n_slots = len(g)
    x = np.zeros(n_slots * FEATURES + GLOBAL)
    ep = jv.epochs_done
    for i, j in enumerate(slots):
        done = float(ep[j]) if ep is not None else 0.0
        ex = float(jv.executed_s[j])
        wait = max(0.0, now - float(jv.submit_time[j]) - ex)
        gi = int(g[i])
        if gi <= 0:
            speed = 1.0
        elif gi >= cap[i]:
            speed = 0.0
        else:
            a, b = step(view, j, gi), step(view, j, gi + 1)
            speed = float(a / b - 1.0) if np.isfinite(a) and np.isfinite(b) and b > 0 else 0.0
        x[i * FEATURES:(i + 1) * FEATURES] = (gi / 16.0, float(jv.num_gpus[j]) / 16.0, np.log1p(done) / 4.0,
                                              np.log1p(wait / 60.0) / 4.0, np.log1p(ex / 60.0) / 4.0,
                                              min(done / max(ex / 60.0, 1e-9), 10.0) / 10.0 if ex > 0 else 0.0,
                                              speed, float(jv.alloc_count[j] > 0))
    x[-2] = free / max(total, 1)
    x[-1] = n_beyond / max(n_slots, 1)
    return x


@POLICIES.register("drl")
class Drl(BasePolicy):
    """ONES' DRL baseline (DL2-style): a numpy policy network adds one GPU at a time, never preempts.

    `teacher` (set by the trainer, not a config option) replaces the network's choice by Optimus'
    allocation as an action sequence and needs Optimus' duration oracle; `trajectory` records
    (state, mask, action, decision time s) of every action for training.
    """

    name = "drl"
    Config = DrlConfig

    def __init__(self, config: DrlConfig, net: Net | None = None, teacher: Optimus | None = None) -> None:
        super().__init__(config)
        self.net = net if net is not None else Net.load(Path(config.weights) if config.weights else DEFAULT_WEIGHTS)
        self.teacher = teacher
        self.needs = frozenset({NEED_DURATION_ORACLE}) if teacher is not None else frozenset()
        self.step = teacher.step if teacher is not None else StepTimes()
        self.trajectory: list[tuple[np.ndarray, np.ndarray, int, float]] = []

    def counts(self, view: ClusterView, now: float) -> tuple[np.ndarray, np.ndarray]:
        """(jobs, GPU counts) after this round's actions; running jobs never below what they hold."""
        jv = view.jobs
        active = view.active()
        jobs = active[np.lexsort((active, jv.submit_time[active]))].astype(np.int64)
        total = int(np.count_nonzero(view.cluster.gpu_online))
        held = jv.alloc_count[jobs].astype(np.int64)
        free = total - int(held.sum())
        n = self.net.slots
        slots = jobs[:n].tolist()
        cap = np.zeros(n, np.int64)
        cap[:len(slots)] = caps_of(view, jobs[:n], self.config.batch_cap, Optimus.Config().single_gpu_models)
        g = np.zeros(n, np.int64)
        g[:len(slots)] = held[:n]
        lo = np.ones(n, np.int64)  # a job's first action starts it at its minimum (a rigid job: its size)
        lo[:len(slots)] = np.maximum(1, view.jobs.min_gpus[jobs[:n]])
        target = None
        if self.teacher is not None:
            target = np.zeros(n, np.int64)
            target[:len(slots)] = self.teacher.allocate(view, jobs)[:n]
        acts = 0
        while free > 0 and (self.config.max_actions == 0 or acts < self.config.max_actions):
            mask = np.zeros(n + 1, bool)
            mask[n] = True
            nxt = np.where(g > 0, g + 1, lo)
            for i, j in enumerate(slots):
                mask[i] = nxt[i] <= cap[i] and nxt[i] - g[i] <= free and np.isfinite(self.step(view, j, int(nxt[i])))
            if not mask[:n].any():
                break
            x = features(view, now, slots, g, cap, free, total, max(0, jobs.size - n), self.step)
            if target is not None:
                d = np.where(mask[:n], target - g, 0)
                a = int(np.argmax(d)) if d.max() > 0 else n
            else:
                p, _ = self.net.probs(x[None], mask[None])
                a = int(self.rng.choice(n + 1, p=p[0])) if self.config.sample else int(np.argmax(p[0]))
            self.trajectory.append((x, mask, a, float(now)))
            if a == n:
                break
            free -= int(nxt[a] - g[a])
            g[a] = nxt[a]
            acts += 1
        out = held.copy()
        out[:len(slots)] = g[:len(slots)]
        return jobs, out

    def decide(self, view: ClusterView, now: float) -> Decision:
        jobs, counts = self.counts(view, now)
        return apply_counts(self, view, jobs, counts, self.config.placement)
