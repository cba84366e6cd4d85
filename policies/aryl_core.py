"""Aryl's decision algorithms as pure functions: server reclaiming and the elastic knapsack.

Li et al., "Aryl: An Elastic Cluster Scheduler for Deep Learning", EuroSys'22
(`../shared/seeds/notes/aryl.md` §2.2, §2.4, App. B, App. D). The `aryl` policy
(`policies/aryl.py`) builds these inputs from the cluster view; the tests and the benchmark
call them directly with the paper's worked examples.

Reclaiming works on a *hosting map* `job → {server: GPUs of the job's preemptible workers
there}` (base and inelastic workers; flexible workers are left out, since removing them is a
scale-in, not a preemption). A job is preempted when any of its servers is returned.

- `server_cost`: the server preemption cost Σ_{j on s} 1/|S_j| (the paper's chosen
  definition, Table 1 column 4), S_j the job's servers among the on-loan candidates.
- `greedy_reclaim`: Algorithm 1 — costs once, then pick the cheapest, preempt its jobs,
  subtract their 1/|S_j| from their other servers, repeat; for N_R = 1 the exact
  fewest-preemptions server ("simply by iterating all the on-loan servers").
- `exhaustive_reclaim`: the optimum by enumeration, for tests and the harness only.
- `random_reclaim`, `scf_reclaim`: the paper's Random and SCF (smallest job count first,
  static) baselines.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from policies.solvers.knapsack import mckp, mckp_flat

Hosting = Mapping[int, Mapping[int, int]]  # job -> {server: preemptible GPUs of the job there}
TIE_BREAKS = ("gpu_fraction", "server_id", "random")


def _jobs_on(hosting: Hosting, servers: Sequence[int]) -> dict[int, set[int]]:
    on: dict[int, set[int]] = {int(s): set() for s in servers}
    for j, where in hosting.items():
        for s in where:
            if int(s) in on:
                on[int(s)].add(int(j))
    return on


def server_cost(hosting: Hosting, servers: Sequence[int], kind: str = "server_fraction") -> dict[int, float]:
    """Preemption cost of each server (paper Table 1): `server_fraction` Σ 1/|S_j| (Aryl's),
    `gpu_fraction` Σ GPUs of j on s / GPUs of j, `job_count` the number of jobs."""
    cand = {int(s) for s in servers}
    out = {int(s): 0.0 for s in servers}
    for where in hosting.values():
        here = {int(s): int(g) for s, g in where.items() if int(s) in cand}
        if not here:
            continue
        total = sum(int(g) for g in where.values())
        for s, g in here.items():
            if kind == "server_fraction":
                out[s] += 1.0 / len(here)
            elif kind == "gpu_fraction":
                out[s] += g / total
            elif kind == "job_count":
                out[s] += 1.0
            else:
                raise ValueError(f"unknown cost kind {kind!r}")
    return out


def preempted_jobs(hosting: Hosting, chosen: Sequence[int]) -> set[int]:
    """Jobs with a preemptible worker on any chosen server."""
    ch = {int(s) for s in chosen}
    return {int(j) for j, where in hosting.items() if any(int(s) in ch for s in where)}


def _order_key(tie_break: str, gpu_frac: Mapping[int, float], rank: Mapping[int, float]):
    if tie_break == "gpu_fraction":  # the notes' resolution: lower GPU-fraction sum, then server id
        return lambda s: (round(gpu_frac[s], 12), s)
    if tie_break == "server_id":
        return lambda s: (s,)
    if tie_break == "random":
        return lambda s: (rank[s],)
    raise ValueError(f"unknown tie_break {tie_break!r}; expected one of {', '.join(TIE_BREAKS)}")


def greedy_reclaim(hosting: Hosting, servers: Sequence[int], n_r: int, tie_break: str = "gpu_fraction",
                   seed: int = 0, update: bool = True) -> list[int]:
    """Algorithm 1 (App. B): the N_R on-loan servers to return, in pick order.

    Costs are Σ 1/|S_j|; ties go by `tie_break` (the paper leaves it open: `gpu_fraction`
    = lower Σ GPU fraction then lower id, `server_id`, or seeded `random`). After each pick
    the jobs there are preempted and their share leaves their other servers' costs
    (UPDATECOST); `update=False` is the no-update ("static") variant. N_R = 1 is exact.
    """
    servers = [int(s) for s in servers]
    if not 0 <= n_r <= len(servers):
        raise ValueError(f"reclaim demand {n_r} not in [0, {len(servers)}]")
    gpu_frac = server_cost(hosting, servers, "gpu_fraction") if tie_break == "gpu_fraction" else {}
    rank = (dict(zip(servers, np.random.default_rng(seed).permutation(len(servers)).tolist()))
            if tie_break == "random" else {})
    key = _order_key(tie_break, gpu_frac, rank)
    on = _jobs_on(hosting, servers)
    if n_r == 1:  # FindBestServer: fewest preempted jobs, exact
        return [min(servers, key=lambda s: (len(on[s]), *key(s)))]
    cost = server_cost(hosting, servers)
    cand = set(servers)
    span = {int(j): [int(s) for s in where if int(s) in cand] for j, where in hosting.items()}
    # a heap with lazy invalidation: costs only fall, so a stale entry is skipped when popped
    heap = [(round(cost[s], 12), *key(s), s) for s in servers]
    heapq.heapify(heap)
    left = set(servers)
    picked: list[int] = []
    while len(picked) < n_r:
        c, *_, s = heapq.heappop(heap)
        if s not in left or c != round(cost[s], 12):
            continue
        picked.append(s)
        left.discard(s)
        if not update:
            continue
        for j in list(on[s]):  # preempt j: it leaves every server it spans
            share = 1.0 / len(span[j])
            for t in span[j]:
                if t != s and j in on[t]:
                    on[t].discard(j)
                    cost[t] -= share
                    if t in left:
                        heapq.heappush(heap, (round(cost[t], 12), *key(t), t))
            on[s].discard(j)
    return picked


def exhaustive_reclaim(hosting: Hosting, servers: Sequence[int], n_r: int) -> tuple[list[int], int]:
    """The optimum (fewest preempted jobs) by enumerating every N_R-subset, lowest ids on ties:
    exponential, for tests and the optimality-gap harness only."""
    servers = sorted(int(s) for s in servers)
    if math.comb(len(servers), n_r) > 2_000_000:
        raise ValueError(f"exhaustive search over C({len(servers)}, {n_r}) subsets is too large")
    # each server's jobs as a bit set: a subset preempts the union of its servers' (`preempted_jobs`)
    bit = {int(j): 1 << i for i, j in enumerate(hosting)}
    mask = dict.fromkeys(servers, 0)
    for j, where in hosting.items():
        for s in where:
            if int(s) in mask:
                mask[int(s)] |= bit[int(j)]
    best: tuple[int, tuple[int, ...]] | None = None
    for sub in itertools.combinations(servers, n_r):
        u = 0
        for s in sub:
            u |= mask[s]
        k = u.bit_count()
        if best is None or k < best[0]:
            best = (k, sub)
            if k == 0:
                break
    assert best is not None
    return list(best[1]), best[0]


def random_reclaim(servers: Sequence[int], n_r: int, seed: int) -> list[int]:
    """The paper's Random baseline: N_R on-loan servers uniformly at random."""
    rng = np.random.default_rng(seed)
    return sorted(int(s) for s in rng.choice(np.asarray(servers, np.int64), size=n_r, replace=False))


def scf_reclaim(hosting: Hosting, servers: Sequence[int], n_r: int) -> list[int]:
    """The paper's SCF baseline: the N_R servers hosting the fewest jobs (static, id on ties)."""
    on = _jobs_on(hosting, servers)
    return sorted(sorted(on, key=lambda s: (len(on[s]), s))[:n_r])


# ---- elastic scaling (§5.2, App. D) ---------------------------------------------------------

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
