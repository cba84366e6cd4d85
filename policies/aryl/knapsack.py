"""Aryl's elastic scaling (§5.2, App. D): flexible workers by a multiple-choice knapsack (MCKP).

Li et al., "Aryl: An Elastic Cluster Scheduler for Deep Learning", EuroSys'22
(`../shared/seeds/notes/aryl.md` §2.4). Each elastic job is one MCKP group whose items are
1 … w_max − w_min extra workers, valued at the JCT reduction T^max·w/(w + w_min) (or the notes'
generalised T(w_min) − T(w_min + w) on a non-linear scaling curve) and weighted by the GPUs
they take; the DP (`policies.solvers.knapsack`) picks at most one item per group within the
GPUs left after phase 1. The pure functions (items, allocation, the two-job arithmetic of
Tables 3–4, the imperfect-scaling factor of Fig. 10) are called directly by the tests;
`Knapsack` sizes the items from the cluster view for the `aryl` policy (`worker_value`,
`literal_weights`, `t4_ratio`, `scaling`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from policies.solvers.knapsack import mckp, mckp_flat
from simcore.api import ClusterView

def mckp_items(t_max_s: float, w_min: int, w_max: int, gpus_per_worker: int = 1,
               literal_weights: bool = False) -> tuple[list[int], list[float]]:
    """One MCKP group: items w = 1 … w_max − w_min extra workers, value T^max·w/(w + w_min)
    (the JCT reduction over the running time at w_min under linear scaling), weight w·D_j
    GPUs (the notes' resolution; `literal_weights`: Algorithm 2 line 17's (w + w_min)·D_j)."""
    ws = list(range(1, max(0, int(w_max) - int(w_min)) + 1))
    weights = [((w + w_min) if literal_weights else w) * int(gpus_per_worker) for w in ws]
    values = [float(t_max_s) * w / (w + w_min) for w in ws]
    return weights, values


def mckp_items_flat(t_max_s: np.ndarray, w_min: np.ndarray, span: np.ndarray,
                    literal_weights: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`mckp_items` for many groups at once (1 GPU per worker): (weights, values, offsets),
    group g's items at offs[g]:offs[g + 1], element for element the same numbers."""
    span = np.asarray(span, np.int64)
    offs = np.zeros(span.shape[0] + 1, np.int64)
    np.cumsum(span, out=offs[1:])
    w = np.arange(int(offs[-1]), dtype=np.int64) - np.repeat(offs[:-1], span) + 1
    wmin = np.repeat(np.asarray(w_min, np.int64), span)
    values = np.repeat(np.asarray(t_max_s, float), span) * w / (w + wmin)
    return (w + wmin if literal_weights else w), values, offs


def generalised_items(time_at: Sequence[float], w_min: int, gpus_per_worker: int = 1,
                      literal_weights: bool = False) -> tuple[list[int], list[float]]:
    """The notes' generalised value T(w_min) − T(w_min + w) from running times at each worker
    count `time_at[k]` = T(w_min + k), k = 0 … w_max − w_min (non-linear scaling)."""
    base = float(time_at[0])
    ws = list(range(1, len(time_at)))
    weights = [((w + w_min) if literal_weights else w) * int(gpus_per_worker) for w in ws]
    return weights, [base - float(time_at[w]) for w in ws]


def allocate_flexible(groups: Sequence[tuple[list[int], list[float]]], capacity: int) -> list[int]:
    """Phase 2: the MCKP by DP (`policies.solvers.mckp`); the extra workers per group (0: none)."""
    if not groups:
        return []
    res = mckp(groups, max(0, int(capacity)))
    return [int(k) + 1 if k >= 0 else 0 for k in res.choice.tolist()]


def allocate_flexible_flat(offs: np.ndarray, weights: np.ndarray, values: np.ndarray, capacity: int) -> list[int]:
    """`allocate_flexible` on flattened groups (`mckp_items_flat`)."""
    if offs.shape[0] <= 1:
        return []
    res = mckp_flat(offs, weights, values, max(0, int(capacity)))
    return [int(k) + 1 if k >= 0 else 0 for k in res.choice.tolist()]


def median(x: np.ndarray) -> float:
    """`np.median` of a non-empty 1-D float array without NaNs, bit for bit (the middle value, or
    the two middle values' sum halved), without its per-call overhead: the engine worker value
    sizes the knapsack's capacity by the median inference speed every round."""
    n = x.shape[0]
    lo = x.min()
    if n == 1 or lo == x.max():  # one value, or all equal (the normalized clusters: every ratio 1)
        return float(lo)
    s = np.sort(x)
    m = n // 2
    return float(s[m]) if n % 2 else float((s[m - 1] + s[m]) / 2)


def imperfect_factor(w: int, w_min: int, w_max: int, loss: float = 0.1, form: str = "additive") -> float:
    """Throughput factor of the imperfect-scaling experiment (§8, Fig. 10): each step beyond
    the midpoint of [w_min, w_max] loses `loss` more of the ideal (`additive` 1 − loss·k or
    `compounding` (1 − loss)^k; the paper does not say which)."""
    k = max(0, int(w) - math.ceil((w_min + w_max) / 2))
    return max(0.0, 1.0 - loss * k) if form == "additive" else (1.0 - loss) ** k


def two_job_jct(work: Sequence[float], alloc: Sequence[int], w_max: Sequence[int]) -> tuple[float, float]:
    """JCTs of two jobs under linear scaling (§5.1, Tables 3–4): each runs at its initial
    allocation; when one finishes, the other scales at once to its w_max."""
    (la, lb), (ga, gb) = work, alloc
    ta, tb = la / ga, lb / gb
    if ta <= tb:
        return ta, ta + (lb - ta * gb) / w_max[1]
    return tb + (la - tb * ga) / w_max[0], tb


def inference_speeds(whatif, models: Sequence[str], jobs: np.ndarray, gpus: np.ndarray, train_type: str | None,
                     inf_type: str | None, cache: dict) -> np.ndarray:
    """Per job: the speed of `gpus[k]` inference GPUs relative to as many training GPUs for its
    model, from the run's what-if API (1 without one or without two GPU types); `cache` keeps
    (model, GPUs) → ratio across rounds."""
    r = np.ones(jobs.shape[0])
    if whatif is None or train_type is None or inf_type is None or train_type == inf_type:
        return r
    for k, (j, n) in enumerate(zip(jobs.tolist(), gpus.tolist())):
        key = (models[j], int(n))
        hit = cache.get(key)
        if hit is None:
            a = whatif.iteration_time(j, int(n), gpu_type=train_type)
            b = whatif.iteration_time(j, int(n), gpu_type=inf_type)
            hit = cache[key] = a / b if np.isfinite(a) and np.isfinite(b) and b > 0 else 1.0
        r[k] = hit
    return r


def running_times(t_max: float, w_min: int, w_max: int, factor=lambda n: 1.0, speed: float = 1.0,
                  eff: float = 1.0) -> list[float]:
    """T(n) for n = w_min … w_max from T(w_min) = `t_max`: linear in n times the scaling
    `factor(n)`; with `speed` < 1 or `eff` < 1 the n − w_min added workers run at `speed` of a
    base worker in a mixed gang at `eff` of the summed speed (the linear backend's rule)."""
    out = [t_max * w_min / (w_min * max(factor(w_min), 1e-9))]  # the base alone: one GPU type
    for n in range(w_min + 1, w_max + 1):
        out.append(t_max * w_min / (eff * (w_min + speed * (n - w_min)) * max(factor(n), 1e-9)))
    return out


class Knapsack:
    """The `aryl` policy's phase 2: extra workers per elastic job from the cluster view (mixed
    into `policies.aryl.policy.Aryl`)."""

    def _scaling_loss(self, view: ClusterView):
        """The run's per-job scaling factor (`WhatIf.scaling_factor`), if its perf backend has
        an imperfect-scaling loss (Fig. 10), else None."""
        w = view.whatif
        return w.scaling_factor if w is not None and w.per_job_scaling else None

    def _flexible(self, view: ClusterView, elastic: list[int], avail: np.ndarray, inf: np.ndarray,
                  pending: bool) -> list[int]:
        """Extra workers per elastic job (1 GPU per worker): Aryl's MCKP or Gandiva's rule."""
        cfg, jobs, c = self.config, view.jobs, view.cluster
        if not elastic or cfg.scaling == "none":
            return [0] * len(elastic)
        el = np.asarray(elastic, np.int64)
        spans = jobs.max_gpus[el].astype(np.int64) - jobs.min_gpus[el].astype(np.int64)
        span = spans.tolist()
        if cfg.scaling == "gandiva":  # under-utilised = free GPUs and no pending job
            if pending:
                return [0] * len(elastic)
            left, out = int(avail.sum()), []
            for s in span:
                out.append(min(s, left))
                left -= out[-1]
            return out
        on_inf = inf[c.gpu_node]
        loss = self._scaling_loss(view)
        wmins = jobs.min_gpus[el].astype(np.int64)
        t_maxs = self._estimates(view, el, wmins)
        first = self._first[el]  # each base's first GPU in its set's iteration order
        n_tr, n_inf = int((avail & ~on_inf).sum()), int((avail & on_inf).sum())
        if cfg.worker_value == "engine":
            units, r, mixed, eff = 20, *self._engine_speeds(view, el, wmins, first, on_inf)
            cap = int(units * (n_tr + median(r) * n_inf))
            t_maxs = t_maxs / np.where(on_inf[first], r, 1.0)  # T^max at the base's GPU type
            scales = np.maximum(1, np.rint(units * np.where(on_inf[first] | mixed, r, 1.0))).astype(np.int64)
        else:
            units, r, mixed, eff = 4, None, np.zeros(len(elastic), bool), 1.0  # capacity in quarter training-GPUs
            cap = int(units * (n_tr + cfg.t4_ratio * n_inf))
            inf_scale = max(1, int(round(units * cfg.t4_ratio)))
            scales = np.where(on_inf[first], inf_scale, units).astype(np.int64)  # a base's first GPU's kind
        if cap <= 0:
            return [0] * len(elastic)
        if loss is None and not mixed.any():  # every group's items at once: mckp_items, flattened
            w, v, offs = mckp_items_flat(t_maxs, wmins, spans, cfg.literal_weights)
            return allocate_flexible_flat(offs, w * np.repeat(scales, spans), v, cap)
        groups = []
        for k, (s, wmin, t_max, scale) in enumerate(zip(span, wmins.tolist(), t_maxs.tolist(), scales.tolist())):
            # the notes' generalised value T(w_min) − T(w_min + w) on the run's scaling curve
            wmax = wmin + s
            f = (lambda n: loss(n, wmin, wmax)) if loss is not None else (lambda n: 1.0)
            t_at = running_times(t_max, wmin, wmax, f, *((r[k], eff) if mixed[k] else (1.0, 1.0)))
            w, v = generalised_items(t_at, wmin, 1, cfg.literal_weights)
            groups.append(([x * scale for x in w], [max(0.0, x) for x in v]))
        return allocate_flexible(groups, cap)

    def _engine_speeds(self, view: ClusterView, el: np.ndarray, wmins: np.ndarray, first: np.ndarray,
                       on_inf: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(`inference_speeds` per job, jobs whose flexible workers join a training base on
        inference GPUs (heterogeneous-capable with a training base), the backend's mixed-gang
        efficiency) from the run's perf backend."""
        c, w = view.cluster, view.whatif
        inf = self._inference_nodes(view)
        hit = self._kind_types  # the GPU type of each server kind: fixed per topology
        if hit is None or hit[0] is not c.gpu_type or hit[1] is not inf:
            names = tuple(c.gpu_type_names[int(c.gpu_type[c.node_first_gpu[np.flatnonzero(m)[0]]])]
                          if m.any() else None for m in (~inf, inf))
            hit = self._kind_types = (c.gpu_type, inf, names)
        names = hit[2]
        r = inference_speeds(w, view.jobs.model, el, wmins, names[0], names[1], self._speed)
        mixed = self._mix[el] & ~on_inf[first] if self.config.mix_types else np.zeros(el.shape[0], bool)
        return r, mixed, float(getattr(getattr(w, "perf", None), "hetero_efficiency", 1.0))
