"""The PolluxAgent of Pollux (Qiao et al., OSDI'21, §3.1, §4.1): per-job goodput model and batch choice.

Each job's agent keeps a model of its own goodput = throughput × statistical efficiency:

- **throughput** (paper Eq. 7-10, `ThroughputParams`): the time of one micro-step is
  `T_grad = α_c + β_c · m` (m = per-GPU micro-batch); the all-reduce time is
  `T_sync = α_n + β_n · (r − 2)` across nodes, `α_r + β_r · (r − 2)` inside one node, ~0 for
  one replica; they overlap as `T_iter = (T_grad^γ + T_sync^γ)^(1/γ)` and an iteration with
  `s` accumulation steps costs `s · T_grad + T_iter`. The seven parameters are **fitted online**
  (`fit_throughput`) to the step times the job has observed on the configurations it ran on,
  by least squares of the log errors (over bounded parameters) with the artifact's priors (parameters fixed when
  the observations cannot identify them; optimistic network terms) — so a job that never ran
  across nodes believes it scales well there until it has tried;
- **efficiency** (Eq. 5): `E(M) = (φ + M0) / (φ + M)` with φ the gradient noise scale,
  measured at the job's current batch in its current epoch (`noise_ratio`);
- **batch choice** (`GoodputModel.optimize`): for an allocation of `r` GPUs on `n` nodes,
  the global batch `M` among 50 geometric steps in `[max(M0, r · m_min), M_max]` (gradient
  accumulation past the largest micro-batch `m_max`) with the highest modelled goodput.

`best_batch(view, j, gpus)` is the same batch choice on the engine's own what-if goodput
(true step times, true efficiency) for policies that want "Pollux's batch-size agent" without
Pollux's online fit (Aryl+TunedJobs).

Our code after the paper and the artifact's simulator (petuum/adaptdl `osdi21-artifact`,
`simulator/goodput.py`, `speedup.py`); see docs/peers.md, "Pollux".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

_EPS = 1e-8  # floor/ceil tolerance and the "no network" time of one replica (artifact's 1e-8)
#: batch sizes tried per allocation (geometric), as the artifact
NUM_CANDIDATES = 50


@dataclass(frozen=True)
class AppLimits:
    """Batch limits of an application: initial batch M0 (efficiency 1), largest global batch,
    smallest and largest per-GPU micro-batch (accumulation beyond the largest)."""

    init_batch: int
    max_batch: int
    min_local: int
    max_local: int


#: The Pollux OSDI'21 applications, keyed by cosim zoo name: M0 = the smallest and M_max the
#: largest batch with validation statistics, micro-batches the range of the measured step-time
#: tables (yolov3's largest micro-batch is 8, as the artifact declares it; its table goes to 16).
#: Source: simulator/applications.py (Application defaults and the APPLICATIONS table).
POLLUX_APPS: dict[str, AppLimits] = {
    "resnet18_cifar": AppLimits(128, 4096, 32, 1024),  # cifar10
    "neumf": AppLimits(256, 32768, 32, 32768),  # ncf
    "bert_base": AppLimits(12, 384, 4, 12),  # bert
    "resnet50": AppLimits(200, 12800, 20, 200),  # imagenet
    "deepspeech2": AppLimits(20, 640, 10, 80),  # deepspeech2
    "yolov3": AppLimits(8, 512, 4, 8),  # yolov3
}


def limits_of(model: str, batch: int) -> AppLimits:
    """The application limits of `model`; a model Pollux did not profile keeps its batch."""
    a = POLLUX_APPS.get(str(model))
    return a if a is not None else AppLimits(int(batch), int(batch), 1, int(batch))


# ---- throughput model -------------------------------------------------------------------

@dataclass(frozen=True)
class ThroughputParams:
    """Fitted throughput model (module doc): compute α_c, β_c; inter-node α_n, β_n;
    intra-node α_r, β_r; overlap γ ∈ [1, 10]."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def as_array(self) -> np.ndarray:
        return np.array([self.alpha_c, self.beta_c, self.alpha_n, self.beta_n, self.alpha_r, self.beta_r,
                         self.gamma])


def _grad_s(p: np.ndarray, micro: np.ndarray) -> np.ndarray:
    return p[0] + p[1] * micro


def _sync_s(p: np.ndarray, nodes: np.ndarray, reps: np.ndarray) -> np.ndarray:
    inter, intra = nodes > 1, reps > 1
    alpha = np.where(inter, p[2], np.where(intra, p[4], _EPS))
    beta = np.where(inter, p[3], np.where(intra, p[5], _EPS))
    return alpha + beta * np.maximum(reps - 2, _EPS)


def _log_iter_s(p: np.ndarray, grad: np.ndarray, sync: np.ndarray) -> np.ndarray:
    g = p[6]
    return np.log(grad ** g + sync ** g) / g


def iteration_s(params: ThroughputParams | np.ndarray, nodes, reps, micro, accum) -> np.ndarray:
    """Modelled seconds per iteration: `accum` extra micro-steps plus one synchronised step."""
    p = params.as_array() if isinstance(params, ThroughputParams) else params
    grad = _grad_s(p, np.asarray(micro, np.float64))
    sync = _sync_s(p, np.asarray(nodes), np.asarray(reps))
    return np.asarray(accum) * grad + np.exp(_log_iter_s(p, grad, sync))


def fit_throughput(nodes: Sequence[int], reps: Sequence[int], micro: Sequence[float],
                   grad_s: Sequence[float], iter_s: Sequence[float]) -> ThroughputParams:
    """Fit `ThroughputParams` to observed (nodes, replicas, micro-batch) → (micro-step seconds,
    synchronised-step seconds), with the artifact's priors: α_c = half the mean compute time when
    one micro-batch size was seen; network terms the data cannot identify pinned at their lower
    bound (no multi-node data: α_n, β_n; no single-node multi-GPU data: α_r, β_r; ≤ 2 replicas:
    both β); finally α_n, β_n ≥ 1.1 × α_r, β_r when no multi-node data (crossing nodes is never
    modelled faster than staying inside one)."""
    from policies.pollux._kernels import fit_z

    nodes, reps = np.asarray(nodes, np.int64), np.asarray(reps, np.int64)
    micro = np.asarray(micro, np.float64)
    grad_obs, iter_obs = np.asarray(grad_s, np.float64), np.asarray(iter_s, np.float64)
    x0 = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lo = np.array([1e-8, 1e-8] * 3 + [1.0])  # bounds: α, β ≥ 1e-8, γ ∈ [1, 10]
    fixed = np.zeros(7, bool)
    if np.unique(micro).size == 1:
        x0[0] = lo[0] = float(np.mean(grad_obs)) / 2
        fixed[0] = True
    if not np.any(nodes > 1):
        fixed[[2, 3]] = True
    if not np.any((nodes == 1) & (reps > 1)):
        fixed[[4, 5]] = True
    if not np.any(reps > 2):
        fixed[[3, 5]] = True
    x0[fixed] = lo[fixed]
    free = ~fixed
    gam = free & (np.arange(7) == 6)
    pos = free & ~gam

    # the loss (RMS log errors of both step times plus the artifact's regularisers: γ near 1, β
    # small against α) by BFGS over z: p = lo + e^z for α, β; γ = 1 + 9·sigmoid(z) (`_kernels.fit_z`)
    z0 = np.zeros(7)
    z0[pos] = np.log(np.maximum(x0[pos] - lo[pos], 1e-12))
    z0[gam] = np.log((x0[6] - 1.0) / (10.0 - x0[6]))
    z = fit_z(z0[free], x0, lo, free, nodes.astype(np.float64), reps.astype(np.float64), micro, grad_obs, iter_obs, 50)
    zz = np.zeros(7)
    zz[free] = z
    p = x0.copy()
    p[pos] = lo[pos] + np.exp(np.clip(zz[pos], -60.0, 30.0))
    p[gam] = 1.0 + 9.0 / (1.0 + np.exp(-zz[gam]))
    if not np.any(nodes > 1):
        p[2] = max(p[2], p[4] * 1.1)
        p[3] = max(p[3], p[5] * 1.1)
    return ThroughputParams(*p.tolist())


# ---- efficiency and goodput -------------------------------------------------------------

def efficiency(noise_ratio: float, init_batch: int, batch) -> np.ndarray:
    """Statistical efficiency E(M) relative to M0 for gradient variance/|gradient|² = `noise_ratio`
    (the noise scale is `noise_ratio × M0`): gain/scale with gain = (ρ + 1) / (ρ / scale + 1)."""
    scale = np.asarray(batch, np.float64) / init_batch
    if not math.isfinite(noise_ratio):  # pure noise: every sample counts (E = 1)
        return np.ones_like(scale)
    gain = (noise_ratio + 1.0) / (noise_ratio / scale + 1.0)
    return gain / scale


def noise_ratio_from(eff: float, batch: float, init_batch: int) -> float:
    """The ρ = var/sqr that gives efficiency `eff` at `batch` (inverse of `efficiency`)."""
    scale = float(batch) / init_batch
    if scale <= 1.0 + 1e-12 or eff >= 1.0:
        return math.inf if eff >= 1.0 and scale > 1.0 else 0.0
    return max((eff * scale - 1.0) / (1.0 - eff), 0.0)


def micro_batching(batch: np.ndarray, reps: np.ndarray, lim: AppLimits) -> tuple[np.ndarray, np.ndarray]:
    """(micro-batch, accumulation steps) of a global batch on `reps` GPUs, as the Pollux agent
    splits it: accumulate past `max_local`; one GPU above M0 always accumulates once (its
    gradient statistics need two micro-batches)."""
    local = batch / reps
    accum = np.ceil(local / lim.max_local - _EPS) - 1
    accum = np.where((reps == 1) & (local > lim.init_batch + _EPS), np.maximum(accum, 1), accum).astype(np.int64)
    micro = np.ceil(local / (accum + 1) - _EPS).astype(np.int64)
    return micro, accum


def batch_candidates(lim: AppLimits, reps) -> np.ndarray:
    """float64[50, K]: the global batches tried for each replica count (geometric steps from
    max(M0, r × min micro-batch) to the largest batch)."""
    reps = np.atleast_1d(np.asarray(reps, np.float64))
    lo = np.maximum(lim.init_batch, lim.min_local * reps)
    return np.geomspace(lo, np.full_like(lo, float(lim.max_batch)), NUM_CANDIDATES)


@dataclass
class GoodputModel:
    """A job's modelled goodput: fitted throughput × efficiency at noise ratio ρ."""

    params: ThroughputParams
    noise_ratio: float
    lim: AppLimits

    def optimize(self, nodes, reps) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For each (nodes, replicas): (best goodput, its global batch, micro-batch,
        accumulation steps). Goodput is in M0-samples per second (E × samples/s)."""
        nodes = np.atleast_1d(np.asarray(nodes, np.int64))
        reps = np.atleast_1d(np.asarray(reps, np.int64))
        lim = self.lim
        cand = batch_candidates(lim, reps)  # (50, K)
        micro, accum = micro_batching(cand, reps, lim)
        batch = reps * micro * (accum + 1)
        tput = batch / iteration_s(self.params, nodes, reps, micro, accum)
        good = tput * efficiency(self.noise_ratio, lim.init_batch, batch)
        good = np.where((micro >= lim.min_local) & (micro <= lim.max_local), good, 0.0)
        k = np.argmax(good, axis=0)
        cols = np.arange(reps.size)
        return good[k, cols], batch[k, cols], micro[k, cols], accum[k, cols]


@dataclass
class JobAgent:
    """One job's PolluxAgent: the configurations it has run on and its fitted throughput."""

    lim: AppLimits
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    params: ThroughputParams | None = None

    @property
    def max_profiled_replicas(self) -> int:
        return max((k[1] for k in self.profile), default=0)

    def observe(self, nodes: int, reps: int, micro: int, grad_s: float, iter_s: float) -> bool:
        """Record one configuration's (micro-step, synchronised step) seconds; refit on a new one."""
        key = (int(nodes), int(reps), int(micro))
        if key in self.profile or not (np.isfinite(grad_s) and np.isfinite(iter_s)) or grad_s <= 0 or iter_s <= 0:
            return False
        self.profile[key] = (float(grad_s), float(max(iter_s, grad_s)))
        ks = list(self.profile)
        vs = list(self.profile.values())
        self.params = fit_throughput([k[0] for k in ks], [k[1] for k in ks], [k[2] for k in ks],
                                     [v[0] for v in vs], [v[1] for v in vs])
        return True


def best_batch(view, j: int, gpus, goodput: Callable[[int], float] | None = None) -> int:
    """Pollux's batch-size choice for job j on `gpus` (a GPU count or GPU ids): the global batch
    among `batch_candidates` (the job's application limits, `POLLUX_APPS`; its reference batch for
    other models) with the highest goodput, by default the engine's what-if goodput on that
    placement (`ClusterView.goodput`: measured/modelled step time × efficiency in the job's
    current epoch); `goodput(batch)` replaces it. Ties go to the smaller batch; a placement where
    no candidate runs returns the job's reference batch."""
    jv = view.jobs
    ref = int(jv.global_batch[j])
    reps = int(gpus) if isinstance(gpus, (int, np.integer)) else int(np.asarray(gpus).size)
    lim = limits_of(jv.model[j], ref)
    if lim.init_batch == lim.max_batch:
        return ref
    cand = np.unique(np.round(batch_candidates(lim, reps)[:, 0]).astype(np.int64))
    cand = cand[cand >= reps]
    if goodput is None:
        def goodput(b: int) -> float:
            return view.goodput(j, gpus, int(b))
    vals = np.array([goodput(int(b)) for b in cand.tolist()])
    if not vals.size or not np.any(vals > 0):
        return ref
    return int(cand[int(np.argmax(vals))])
