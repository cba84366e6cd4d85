"""PAL: variability- and locality-aware placement under a preemptive job order (SC'24).

Jain et al., "PAL: A Variability-Aware Policy for Scheduling ML Workloads in GPU Clusters",
SC'24 (arXiv 2408.11919). Nominally identical GPUs differ in speed (power/thermal
variability; up to ~20 % for compute-bound kernels on large HPC GPU clusters, a few percent
for memory-bound ones). PAL keeps a per-GPU *performance multiplier* PM ≥ 1 per application
class (1 = the fastest GPU), clusters the GPUs of each class into variability bins
(1-D k-means), and places a synchronous data-parallel job — whose pace is its slowest GPU's —
by an L×V traversal: for each variability bin V (best first), the most local placement L
using only GPUs of bins ≤ V; the candidate with the smallest predicted iteration time
(the what-if iteration time of that placement, which carries locality, × its largest PM)
wins. PAL is a placement policy layered on a scheduling order; here a preemptive one
(`order`: LAS, SRTF or FIFO), each round re-deciding who runs.

The seeded variability model (`variability_multipliers`): per GPU one draw u ∈ [0, 1)
(a GPU slow for one class is slow for all, as PAL's measurements show), PM = 1 + spread_k·u
for class k. The engine slows GPUs only when the run sets per-GPU variability
(`cosim simulate --gpu-variability S`, `RunConfig.gpu_variability`; `simcore.perf.gpu_variability`
draws the same u_g for the same seed, and a synchronous job then computes at its slowest GPU's
pace): with S = this policy's class-0 spread and the run's `--seed` = this policy's `seed`,
PAL's class-0 multipliers are exactly the simulated ones (PAL profiles the GPUs it runs on).
Without it (the default) the multipliers steer PAL's placement but not the simulated speed.
GPU *types* of a heterogeneous cluster act as performance classes through the what-if
iteration times either way (FFT's adaptation, seeds/notes/fft.md §6).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from policies._pal_kernels import lxv_candidates
from policies.base import BasePolicy
from policies.config import PolicyConfig, param
from policies.registry import POLICIES
from policies.round import Round
from simcore.api import NEED_DURATION_ORACLE, ClusterArrays, ClusterView, Decision

ORDERS = ("las", "srtf", "fifo")
VARIABILITY = ("seeded", "none")


def variability_multipliers(num_gpus: int, spreads: tuple[float, ...], seed: int) -> np.ndarray:
    """PM[class, gpu] = 1 + spread[class] · u[gpu], u ~ U[0, 1) seeded, one draw per GPU."""
    u = np.random.default_rng(seed).random(int(num_gpus))
    return 1.0 + np.asarray(spreads, float)[:, None] * u[None, :]


def kmeans_bins(values: np.ndarray, k: int, iters: int = 50) -> np.ndarray:
    """Bin index per value by 1-D k-means (Lloyd's, centres initialised at quantiles), bins
    numbered from the smallest centre (best GPUs) up; fewer bins if fewer distinct values."""
    v = np.asarray(values, float)
    if v.size == 0:
        return np.zeros(0, np.int64)
    k = int(min(k, np.unique(v).size))
    centres = np.quantile(v, (np.arange(k) + 0.5) / k)
    lab = np.zeros(v.size, np.int64)
    for _ in range(iters):
        lab = np.abs(v[:, None] - centres[None, :]).argmin(axis=1)
        new = np.array([v[lab == i].mean() if (lab == i).any() else centres[i] for i in range(k)])
        if np.allclose(new, centres):
            break
        centres = new
    rank = np.argsort(np.argsort(centres, kind="stable"), kind="stable")
    return rank[lab]


def lxv_tables(c: ClusterArrays) -> tuple:
    """The per-type node tables of `lxv_candidates`, fixed for a cluster: (typed, gpu_local,
    type_nodes, type_leaf, every type's column array, num_leaves, num_pods).

    Row r of `type_nodes` lists the nodes holding GPUs of type r (ascending, padded with -1),
    `type_leaf` their leaves (padded with 0; `node_leaf`'s dtype, and read-only when it is, as
    in the engine's views, so `consolidate_nodes` runs at the signature `placement.place`
    compiles it with, not a second one: that would cost ~3 s of first-run compile), and
    `gpu_local[g]` the position of g's node in its type's row. Untyped (one type): one row,
    every node holding a GPU."""
    typed = len(c.gpu_type_names) > 1
    node = np.asarray(c.gpu_node, np.int64)
    n_nodes = int(c.node_num_gpus.shape[0])
    r_of = np.asarray(c.gpu_type, np.int64) if typed else np.zeros(node.size, np.int64)
    rows = max(1, len(c.gpu_type_names), int(r_of.max()) + 1 if r_of.size else 1)
    pairs, inv = np.unique(r_of * n_nodes + node, return_inverse=True)
    pr, pn = pairs // n_nodes, pairs % n_nodes
    local = np.arange(pairs.size) - np.searchsorted(pr, pr)  # position within the row
    width = max(1, int(local.max()) + 1 if local.size else 1)
    type_nodes = np.full((rows, width), -1, np.int64)
    node_leaf = np.asarray(c.node_leaf)
    type_leaf = np.zeros((rows, width), node_leaf.dtype)
    type_nodes[pr, local] = pn
    type_leaf[pr, local] = node_leaf[pn]
    type_leaf.flags.writeable = node_leaf.flags.writeable
    all_types = np.arange(len(c.gpu_type_names), dtype=np.int64) if typed else np.array([-1], np.int64)
    num_leaves = int(c.leaf_pod.shape[0])
    num_pods = int(c.leaf_pod.max()) + 1 if c.leaf_pod.size else 1
    return typed, local[inv.reshape(-1)].astype(np.int64), type_nodes, type_leaf, all_types, num_leaves, num_pods


def lxv_place(c: ClusterArrays, avail: np.ndarray, demand: int, pm: np.ndarray, bins: np.ndarray,
              cost, gpu_type: int = -1, tables=None) -> np.ndarray | None:
    """PAL's L×V traversal: for each variability bin b (best first) and each GPU type allowed,
    the consolidated (fewest nodes, then leaves) placement of `demand` GPUs among the usable
    GPUs of bins ≤ b; each candidate's predicted time is `cost(gpus)` (the iteration time,
    carrying locality) × max PM of its GPUs; the smallest wins (ties: the earlier bin, i.e.
    the better GPUs, then lower type). None if the demand fits nowhere.

    The candidates come from one numba call (`_pal_kernels.lxv_candidates`): a type's pool
    changes from bin b−1 to b only if bin b adds usable GPUs of that type, otherwise its
    placement is the one already found (a candidate counts at its first bin), so it is not
    searched again — the same candidates as a search of every (bin, type), fewer searches.
    They come in (bin, type) order, so the tie rule is "the first smallest". `tables`
    (`lxv_tables(c)`) are fixed for a cluster: a caller placing many jobs builds them once."""
    avail = np.asarray(avail, bool)
    ntypes = len(c.gpu_type_names)
    if demand <= 0 or (ntypes <= 1 and gpu_type > 0) or not bins.size:  # fewer usable GPUs than
        return None  # the demand: no type's pool reaches it, the kernel finds no candidate
    typed, gpu_local, type_nodes, type_leaf, all_types, num_leaves, num_pods = \
        lxv_tables(c) if tables is None else tables
    types = np.array([gpu_type], np.int64) if typed and gpu_type >= 0 else all_types
    gpus, worst = lxv_candidates(avail, np.asarray(bins, np.int64), types, typed, np.asarray(pm, np.float64),
                                 c.gpu_type, gpu_local, type_nodes, type_leaf, c.node_first_gpu,
                                 c.node_num_gpus, c.leaf_pod, num_leaves, num_pods, int(demand))
    best, best_key = None, 0.0
    isfinite = math.isfinite
    for g, w in zip(gpus, worst.tolist()):
        it = float(cost(g))
        if isfinite(it):  # NaN or inf: cannot run there
            key = it * w
            if best is None or key < best_key:  # strictly smaller: a later candidate has a later (bin, type)
                best, best_key = g, key
    return best


@dataclass(frozen=True)
class PalConfig(PolicyConfig):
    """PAL: every round jobs are ordered (least attained service by default) and the first ones
    that fit run, preempting the rest; each job that starts is placed by PAL's L×V search —
    among the GPUs of the best variability bins first, the most local placement — choosing
    the candidate with the smallest predicted iteration time × slowest-GPU multiplier. GPUs
    left over go to later jobs in order. Running jobs that keep their turn keep their GPUs."""

    reference: ClassVar[str] = ("Jain et al., \"PAL: A Variability-Aware Policy for Scheduling ML Workloads in GPU "
                                "Clusters\", SC'24; as FFT (seeds/notes/fft.md §6) compares against it")

    order: str = param(
        "las",
        "the preemptive order PAL's placement is layered on: las = least attained GPU-seconds first (Tiresias-"
        "like); srtf = shortest remaining time first (reads the duration oracle); fifo = arrival order",
        choices=ORDERS, source="PAL evaluates its placement under several orders; fft.md §6 [INFERRED]: LAS/SRTF")
    variability: str = param(
        "seeded",
        "seeded: per-GPU performance multipliers 1 + spread_k·u_g (u_g ~ U[0,1) from numpy default_rng(seed), one "
        "draw per GPU) steer placement; the engine slows GPUs only with `cosim simulate --gpu-variability S` (the "
        "same draw: S = the class-0 spread and --seed = seed make PAL's profile exact); none: every GPU of a type "
        "equal, PAL = type- and locality-aware placement",
        choices=VARIABILITY, source="a seeded per-GPU model from published variability ranges (simcore.perf.gpu_variability)")
    variability_spreads: tuple[float, ...] = param(
        (0.22, 0.14, 0.03),
        "largest slowdown of the slowest GPU over the fastest, per application class (class 0, 1, ...): "
        "compute-bound, mixed, memory-bound",
        unit="fraction", source="published ranges, background: ~22 % SGEMM / ~14 % ResNet-50 / a few % memory-bound "
                                "(Sinha et al. SC'22, as PAL cites); not from the seed notes")
    model_classes: tuple[str, ...] = param(
        ("*:0",),
        "application class per model, 'glob:class' patterns tried in order (first match), e.g. "
        "'resnet*:0,bert*:1,*:2'; a model matching none is class 0",
        source="PAL classifies applications offline by their variability profile; cosim: by model name")
    num_bins: int = param(4, "variability bins per class (1-D k-means over the GPUs' multipliers)", unit="bins",
                          source="PAL bins GPUs by k-means; k not stated in the notes")
    interval_s: float | None = param(360.0, "round length", source="FFT runs its baselines in 360-s rounds "
                                                                   "(fft.md §6) [INFERRED for PAL]")

    def validate(self) -> None:
        self.check("interval_s", self.interval_s is not None, "a positive number of seconds (PAL is round-based)")
        self.check("num_bins", self.num_bins >= 1, "an integer ≥ 1")
        self.check("variability_spreads", len(self.variability_spreads) >= 1
                   and all(0.0 <= s < 10.0 for s in self.variability_spreads), "fractions ≥ 0, at least one")
        for p in self.model_classes:
            ok = ":" in p and p.rsplit(":", 1)[1].strip().isdigit() \
                and int(p.rsplit(":", 1)[1]) < len(self.variability_spreads)
            self.check("model_classes", ok, "'glob:class' with class < len(variability_spreads)")


@POLICIES.register("pal")
class Pal(BasePolicy):
    """PAL (SC'24): variability- and locality-aware placement (L×V traversal over per-GPU multiplier bins) under a preemptive LAS/SRTF/FIFO order.

    - Each round: jobs in `order`; the longest prefix-greedy set whose GPU counts fit the online
      GPUs is selected; selected running jobs keep their GPUs, the others are preempted.
    - Selected waiting jobs are placed in order with `lxv_place`; a job that fits no type
      leaves its GPUs to later jobs, which then start if they fit (work-conserving).
    """

    name = "pal"
    single_type_placement = True  # L×V places a job on one type at a time (`simcore.admission`)
    Config = PalConfig

    def __init__(self, config: PalConfig) -> None:
        super().__init__(config)
        self.event_driven = False
        if config.order == "srtf":
            self.needs = frozenset({NEED_DURATION_ORACLE})
        self._pm: np.ndarray | None = None  # [class, gpu]
        self._bins: np.ndarray | None = None  # [class, gpu]
        self._tables: tuple | None = None  # (cluster arrays, type names it was built from, `lxv_tables`)
        self._class: dict[str, int] = {}

    def _model_class(self, model: str) -> int:
        k = self._class.get(model)
        if k is None:
            k = 0
            for p in self.config.model_classes:
                pat, cls = p.rsplit(":", 1)
                if fnmatch.fnmatch(model, pat.strip()):
                    k = int(cls)
                    break
            self._class[model] = k
        return k

    def profiles(self, c: ClusterArrays) -> tuple[np.ndarray, np.ndarray]:
        """(PM[class, gpu], bin[class, gpu]), built once per run."""
        if self._pm is None or self._pm.shape[1] != c.gpu_type.shape[0]:
            g = int(c.gpu_type.shape[0])
            if self.config.variability == "seeded":
                self._pm = variability_multipliers(g, self.config.variability_spreads, self.config.seed)
            else:
                self._pm = np.ones((len(self.config.variability_spreads), g))
            self._bins = np.stack([kmeans_bins(row, self.config.num_bins) for row in self._pm])
        return self._pm, self._bins

    def tables(self, c: ClusterArrays) -> tuple:
        """`lxv_tables(c)`, rebuilt only when the cluster's topology arrays are other objects."""
        key = (c.gpu_type, c.gpu_node, c.node_leaf, c.leaf_pod, c.node_first_gpu, c.node_num_gpus)
        t = self._tables
        if t is None or t[1] != c.gpu_type_names or any(a is not b for a, b in zip(t[0], key)):
            self._tables = t = (key, c.gpu_type_names, lxv_tables(c))
        return t[2]

    def order(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """`jobs` in scheduling order (ties: arrival, then index)."""
        jv = view.jobs
        sub = jv.submit_time[jobs]
        if self.config.order == "las":
            key = jv.attained_gpu_s[jobs]
        elif self.config.order == "srtf":
            r = jv.remaining_s[jobs]
            key = np.where(np.isfinite(r), r, np.inf)
        else:
            key = sub
        return jobs[np.lexsort((jobs, sub, key))]

    def decide(self, view: ClusterView, now: float) -> Decision:
        c = view.cluster
        jv = view.jobs
        pm, bins = self.profiles(c)
        tables = self.tables(c)
        jobs = self.order(view, np.asarray(view.active(), np.int64))
        dem = np.clip(jv.num_gpus[jobs], jv.min_gpus[jobs], jv.max_gpus[jobs]).astype(np.int64).tolist()
        cap = int(np.count_nonzero(c.gpu_online))
        sel = [False] * len(dem)  # greedy in order: a job that does not fit is passed over
        used = 0
        for i, d in enumerate(dem):
            if used + d <= cap:
                sel[i] = True
                used += d
        r = Round(view)
        jl = jobs.tolist()
        pos = {j: i for i, j in enumerate(jl)}
        placed: set[int] = set()
        running = set(view.running().tolist())
        alloc_count = jv.alloc_count
        for k in sorted(running):
            i = pos.get(k)
            if i is not None and sel[i] and int(alloc_count[k]) == dem[i] and r.keep(k):
                placed.add(k)
                continue
            r.release(k)
        free = int(np.count_nonzero(r.avail()))  # usable GPUs: a job needing more cannot be placed
        models, batches, reqs = jv.model, jv.global_batch, jv.gpu_type_req
        for pass_sel in (True, False):  # the selected jobs, then leftovers to the rest in order
            for i, j in enumerate(jl):
                n = dem[i]
                if sel[i] != pass_sel or n > free or j in placed:
                    continue
                k = self._model_class(str(models[j]))
                b = int(batches[j])

                def placer(jj: int, avail: np.ndarray, k=k, b=b, n=n) -> np.ndarray | None:
                    cur = view.allocation_of(jj) if jj in running else ()
                    if len(cur) == n and avail[cur].all():  # a preempted-then-refilled job stays put
                        return np.asarray(cur, np.int32)
                    return lxv_place(c, avail, n, pm[k], bins[k], lambda g: view.iteration_time(jj, g, b),
                                     int(reqs[jj]), tables)

                if r.place(j, placer) is not None:
                    placed.add(j)
                    free -= n
        return r.decision()
