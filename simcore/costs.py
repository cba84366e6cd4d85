"""Costs of changing a job's allocation, in seconds the job holds its GPUs without progress.

The engine classifies every change a decision makes to a running job and charges:

- `start_s`: first start (default 0 — the seeds count JCT from submission and do not charge
  a launch cost);
- `restart_s`: resuming after a preemption (checkpoint saved when preempted, loaded here).
  Ares's artifact uses a flat 30 s per reallocation, Aryl adds 63 s per preemption, Ares's
  paper measured per-model costs (ResNet-50 4 s, ResNet-18 8 s, YOLOv3 4 s, BERT 73 s,
  DeepSpeech2 1 s) — `per_model_restart_s` overrides the flat value per canonical model;
- `migrate_s`: moving to a different set of GPUs of the same size (default: `restart_s`,
  i.e. checkpoint-stop-restart as in Ares);
- `resize_s`: changing the GPU count while keeping some GPUs (elastic resize). Default
  `restart_s` (Ares: every allocation change is checkpoint-restart); set ~1 s for an
  in-place elastic framework (preset "inplace");
- `batch_change_s`: same GPUs, new global batch (ONES/Pollux): default `resize_s`.

The preemption's checkpoint save is folded into the restart cost (a preempted job frees its
GPUs at once), which is how all five seeds' simulators account for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from cosim.errors import UnknownNameError

#: Ares (paper, testbed-measured) stop-and-relaunch seconds per canonical model.
ARES_PER_MODEL_RESTART_S: Mapping[str, float] = {
    "resnet50": 4.0,
    "resnet18_cifar": 8.0,
    "yolov3": 4.0,
    "bert_base": 73.0,
    "deepspeech2": 1.0,
}


@dataclass(frozen=True)
class ChangeCosts:
    restart_s: float = 30.0
    start_s: float = 0.0
    migrate_s: float | None = None  # None = restart cost
    resize_s: float | None = None  # None = restart cost
    batch_change_s: float | None = None  # None = resize cost
    per_model_restart_s: Mapping[str, float] = field(default_factory=dict)

    def restart_for(self, model: str) -> float:
        return float(self.per_model_restart_s.get(model, self.restart_s))

    def migrate_for(self, model: str) -> float:
        return self.restart_for(model) if self.migrate_s is None else float(self.migrate_s)

    def resize_for(self, model: str) -> float:
        return self.restart_for(model) if self.resize_s is None else float(self.resize_s)

    def batch_change_for(self, model: str) -> float:
        return self.resize_for(model) if self.batch_change_s is None else float(self.batch_change_s)

    def to_dict(self) -> dict:
        return {
            "restart_s": self.restart_s,
            "start_s": self.start_s,
            "migrate_s": self.migrate_s,
            "resize_s": self.resize_s,
            "batch_change_s": self.batch_change_s,
            "per_model_restart_s": dict(sorted(self.per_model_restart_s.items())),
        }


#: Named cost settings taken from the seeds.
COST_PRESETS: dict[str, ChangeCosts] = {
    "flat30": ChangeCosts(restart_s=30.0),  # Ares artifact: rescale_time = 30 s
    "aryl": ChangeCosts(restart_s=63.0),  # Aryl: 63 s per preemption
    "ares-paper": ChangeCosts(restart_s=30.0, per_model_restart_s=dict(ARES_PER_MODEL_RESTART_S)),
    "inplace": ChangeCosts(restart_s=30.0, resize_s=1.0),  # in-place elastic resize ~1 s
    "free": ChangeCosts(restart_s=0.0),  # idealised (Ares delay-bound property mode)
    # Pollux OSDI'21 simulator: rescale_time = 30 s on every new placement, the first start included
    # (simulator.py:159-168, docs/peers.md)
    "pollux-sim": ChangeCosts(restart_s=30.0, start_s=30.0),
}


def resolve_costs(spec: str | ChangeCosts | None) -> ChangeCosts:
    """A preset name, a float string ("45" → flat 45 s), a ChangeCosts, or None (flat 30 s)."""
    if spec is None:
        return COST_PRESETS["flat30"]
    if isinstance(spec, ChangeCosts):
        return spec
    if spec in COST_PRESETS:
        return COST_PRESETS[spec]
    try:
        return replace(COST_PRESETS["flat30"], restart_s=float(spec))
    except ValueError:
        raise UnknownNameError("cost preset", spec, list(COST_PRESETS)) from None
