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
- `batch_change_s`: same GPUs, new global batch (ONES/Pollux): default `resize_s`;
- `per_model_gpus_restart_s`: checkpoint-restart per model *and* GPU count, `{model: {n: s}}`
  (the entry with the largest count ≤ the job's new count applies; before `per_model_restart_s`
  and `restart_s`);
- `migrate_state` (migration from state size): a move is charged the restart cost plus the
  transfer of the job's model and optimizer state to every new host (`CostCharger`): bytes =
  parameters × (state bytes per parameter − gradient bytes per parameter) from the zoo — fp32
  weights + Adam's two moments = 4 × 3 = 12 B/param (SGD with momentum 8; mixed precision
  with Adam 2 + 4 + 8 = 14: fp16 weights, fp32 master and moments); gradients are recomputed,
  not moved — over the slowest link of the route from an old host to each new one (each new
  host pulls from the old host with the fastest route; the slowest of these pulls decides;
  link capacities from the topology, one direction, no sharing with other traffic). A move
  whose new hosts were all hosts of the old placement transfers nothing (same host: the state
  is already in host memory) and costs the restart alone.

Costs are set per run (`RunConfig.costs`) and per policy (`RunConfig.policy_costs`), so
policies with different mechanisms — ONES's ≈1 s in-place scaling, Optimus's
checkpoint-restart — compare in one run. A setting is a preset name, a number of seconds (flat
restart), or a table of the fields above (`resolve_costs`; `base` names the preset it edits).

The preemption's checkpoint save is folded into the restart cost (a preempted job frees its
GPUs at once), which is how all five seeds' simulators account for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

import numpy as np

from cosim.errors import InputError, UnknownNameError

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
    per_model_gpus_restart_s: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    migrate_state: bool = False  # a move also transfers model + optimizer state (module doc)

    def restart_for(self, model: str, gpus: int | None = None) -> float:
        if gpus is not None and self.per_model_gpus_restart_s:
            table = self.per_model_gpus_restart_s.get(model)
            if table:
                fit = [n for n in table if n <= gpus]
                if fit:
                    return float(table[max(fit)])
        return float(self.per_model_restart_s.get(model, self.restart_s))

    def migrate_for(self, model: str, gpus: int | None = None) -> float:
        return self.restart_for(model, gpus) if self.migrate_s is None else float(self.migrate_s)

    def resize_for(self, model: str, gpus: int | None = None) -> float:
        return self.restart_for(model, gpus) if self.resize_s is None else float(self.resize_s)

    def batch_change_for(self, model: str, gpus: int | None = None) -> float:
        return self.resize_for(model, gpus) if self.batch_change_s is None else float(self.batch_change_s)

    def to_dict(self) -> dict:
        d = {
            "restart_s": self.restart_s,
            "start_s": self.start_s,
            "migrate_s": self.migrate_s,
            "resize_s": self.resize_s,
            "batch_change_s": self.batch_change_s,
            "per_model_restart_s": dict(sorted(self.per_model_restart_s.items())),
        }
        if self.per_model_gpus_restart_s:  # only when set: outputs of older settings stay identical
            d["per_model_gpus_restart_s"] = {m: {str(n): v for n, v in sorted(t.items())}
                                             for m, t in sorted(self.per_model_gpus_restart_s.items())}
        if self.migrate_state:
            d["migrate_state"] = True
        return d


#: Named cost settings taken from the seeds.
COST_PRESETS: dict[str, ChangeCosts] = {
    "flat30": ChangeCosts(restart_s=30.0),  # Ares artifact: rescale_time = 30 s
    # Aryl (EuroSys'22): 63 s per preemption (checkpoint-restart), 0 s to scale a job in or out
    # (its elastic framework resizes in place); the paper charges nothing for scaling.
    "aryl": ChangeCosts(restart_s=63.0, resize_s=0.0),
    # Ares paper: a changed *allocation* is a stop-and-relaunch at the model's seconds; a new batch on
    # the same GPUs is not one (the Ares simulator, derived from Pollux's, charges `rescale_time` only on a
    # new placement; AdaptDL re-batches in process), so Pollux's batch changes are free, as in `pollux-sim`
    "ares-paper": ChangeCosts(restart_s=30.0, per_model_restart_s=dict(ARES_PER_MODEL_RESTART_S), batch_change_s=0.0),
    "inplace": ChangeCosts(restart_s=30.0, resize_s=1.0),  # in-place elastic resize ~1 s
    "free": ChangeCosts(restart_s=0.0),  # idealised (Ares delay-bound property mode)
    # checkpoint-restart (Optimus, Ares) with moves charged their state transfer on top
    "migrate-state": ChangeCosts(restart_s=30.0, migrate_state=True),
    # Pollux OSDI'21 simulator: rescale_time = 30 s on every new placement, the first start included
    # (simulator.py:159-168, docs/peers.md); a batch change on the same GPUs is free (its agent
    # re-chooses the batch at each epoch end without a re-scale, simulator.py:155-156)
    "pollux-sim": ChangeCosts(restart_s=30.0, start_s=30.0, batch_change_s=0.0),
}


_SECONDS = ("restart_s", "start_s", "migrate_s", "resize_s", "batch_change_s")


def resolve_costs(spec: Any, where: str = "costs") -> ChangeCosts:
    """A preset name, a number or float string ("45" → flat 45 s), a table of `ChangeCosts`
    fields (with `base`: the preset it edits, default flat30; `migrate_s = "state"` is
    `migrate_state = true`), a ChangeCosts, or None (flat 30 s). `where` names the setting
    in errors (e.g. `policy_costs.ones`)."""
    if spec is None:
        return COST_PRESETS["flat30"]
    if isinstance(spec, ChangeCosts):
        return spec
    if isinstance(spec, Mapping):
        return _from_table(spec, where)
    if isinstance(spec, bool):
        raise InputError.at(field=where, expected="a cost preset, seconds or a table", got=spec)
    if isinstance(spec, (int, float)):
        return replace(COST_PRESETS["flat30"], restart_s=_seconds(spec, where))
    if spec in COST_PRESETS:
        return COST_PRESETS[spec]
    try:
        float(spec)
    except (TypeError, ValueError):
        raise UnknownNameError("cost preset", spec, list(COST_PRESETS)) from None
    from cosim.validate import parse_number

    return replace(COST_PRESETS["flat30"], restart_s=parse_number(spec, where, minimum=0.0))


def _seconds(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InputError.at(field=where, expected="seconds ≥ 0", got=v)
    return float(v)


def _from_table(t: Mapping[str, Any], where: str) -> ChangeCosts:
    known = {f.name for f in fields(ChangeCosts)} | {"base"}
    for k in t:
        if k not in known:
            raise InputError.at(field=f"{where}.{k}", expected=f"one of {', '.join(sorted(known))}", got=k)
    base = resolve_costs(t.get("base", "flat30"), f"{where}.base")
    kw: dict[str, Any] = {}
    for k, v in t.items():
        f = f"{where}.{k}"
        if k == "base":
            continue
        if k == "migrate_s" and v == "state":
            kw["migrate_state"] = True
        elif k in _SECONDS:
            kw[k] = _seconds(v, f)
        elif k == "migrate_state":
            if not isinstance(v, bool):
                raise InputError.at(field=f, expected="true or false", got=v)
            kw[k] = v
        elif k == "per_model_restart_s":
            if not isinstance(v, Mapping):
                raise InputError.at(field=f, expected="a table model = seconds", got=v)
            kw[k] = {str(m): _seconds(x, f"{f}.{m}") for m, x in v.items()}
        else:  # per_model_gpus_restart_s
            if not isinstance(v, Mapping) or not all(isinstance(x, Mapping) for x in v.values()):
                raise InputError.at(field=f, expected="a table model = {gpus = seconds}", got=v)
            out = {}
            for m, row in v.items():
                r = {}
                for n, x in row.items():
                    try:
                        gn = int(n)
                    except (TypeError, ValueError):
                        gn = 0
                    if gn < 1:
                        raise InputError.at(field=f"{f}.{m}", expected="GPU counts ≥ 1 as keys", got=n)
                    r[gn] = _seconds(x, f"{f}.{m}.{n}")
                out[str(m)] = r
            kw[k] = out
    return replace(base, **kw)


def state_bytes(spec: Any) -> float:
    """Bytes of model + optimizer state one replica holds (see module doc): parameters ×
    (state bytes per parameter − gradient bytes per parameter) from a zoo ModelSpec; for specs
    without a parameter count, 3 × the gradient bytes (weights + Adam's two moments at the
    gradients' width)."""
    params = getattr(spec, "params", None)
    per = getattr(spec, "state_bytes_per_param", None)
    grad = float(spec.grad_bytes)
    if params and per:
        return float(params) * float(per) - grad
    return 3.0 * grad


class CostCharger:
    """Classifies a change of a running job's allocation and prices it (one run, one policy).

    `topology` (with `gpu_node`, `route`, `link_capacity_Bps`) and `zoo` are needed only for
    `migrate_state`; transfer bottlenecks are kept per (old hosts, new hosts)."""

    def __init__(self, costs: ChangeCosts, topology: Any = None, zoo: Any = None) -> None:
        self.costs, self.topo, self.zoo = costs, topology, zoo
        self._bytes: dict[str, float] = {}
        self._bottleneck: dict[tuple, float] = {}
        if costs.migrate_state:
            if topology is None or not hasattr(topology, "route") or zoo is None:
                raise InputError.at(field="costs", detail="migrate_state needs a topology with routes and a zoo")
            self._node = np.asarray(topology.gpu_node)
            self._cap = np.asarray(topology.link_capacity_Bps, np.float64)

    def change(self, model: str, old: tuple[int, ...], new: tuple[int, ...]) -> tuple[str, float]:
        """(action, seconds) of moving a running job from GPUs `old` to `new` (the engine's
        classes: rebatch, migrate, resize)."""
        c = self.costs
        old_set, new_set = set(old), set(new)
        n = len(new_set)
        if old_set == new_set:
            return "rebatch", c.batch_change_for(model, n)
        if len(old_set) != len(new_set) and (old_set <= new_set or new_set <= old_set):
            return "resize", c.resize_for(model, n)
        cost = c.migrate_for(model, n)
        if c.migrate_state:
            cost += self.transfer_s(model, old, new)
        return "migrate", cost

    def transfer_s(self, model: str, old: tuple[int, ...], new: tuple[int, ...]) -> float:
        """Seconds to bring the model + optimizer state to the hosts of `new` that are not
        hosts of `old` (0 when there are none)."""
        node = self._node
        old_n = tuple(sorted({int(node[g]) for g in old}))
        fresh = tuple(sorted({int(node[g]) for g in new} - set(old_n)))
        if not fresh or not old_n:
            return 0.0
        key = (old_n, fresh)
        bps = self._bottleneck.get(key)
        if bps is None:
            cap, route = self._cap, self.topo.route
            bps = min(max(float(cap[route(a, b)].min()) for a in old_n) for b in fresh)
            self._bottleneck[key] = bps
        nbytes = self._bytes.get(model)
        if nbytes is None:
            nbytes = self._bytes[model] = state_bytes(self.zoo.get(model))
        return nbytes / bps if bps > 0 else math.inf
