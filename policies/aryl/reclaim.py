"""Aryl's server reclaiming (§5.1, App. B): which on-loan servers go back when inference wants them.

Li et al., "Aryl: An Elastic Cluster Scheduler for Deep Learning", EuroSys'22
(`../shared/seeds/notes/aryl.md` §2.2). The pure functions work on a *hosting map*
`job → {server: GPUs of the job's preemptible workers there}` (base and inelastic workers;
flexible workers are left out, since removing them is a scale-in, not a preemption). A job is
preempted when any of its servers is returned. The tests and the benchmark call them directly
with the paper's worked examples.

- `server_cost`: the server preemption cost Σ_{j on s} 1/|S_j| (the paper's chosen
  definition, Table 1 column 4), S_j the job's servers among the on-loan candidates.
- `greedy_reclaim`: Algorithm 1 — costs once, then pick the cheapest, preempt its jobs,
  subtract their 1/|S_j| from their other servers, repeat; for N_R = 1 the exact
  fewest-preemptions server ("simply by iterating all the on-loan servers").
- `exhaustive_reclaim`: the optimum by enumeration, for tests and the harness only.
- `random_reclaim`, `scf_reclaim`: the paper's Random and SCF (smallest job count first,
  static) baselines.
- `reclaim_servers`: the policy's full answer (idle, then flexible-only servers, then
  Algorithm 1); `Reclaiming` builds the hosting map from the cluster view and answers the
  engine's reclaim demands for the `aryl` policy (its `reclaim` option picks the rule).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from simcore.api import ClusterView, ReclaimAnswer, ReclaimDemand

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


class Reclaiming:
    """The `aryl` policy's reclaim side: the hosting map from the cluster view and the answer
    to a reclaim demand (mixed into `policies.aryl.policy.Aryl`)."""

    def hosting(self, view: ClusterView, candidates: np.ndarray) -> tuple[dict[int, dict[int, int]], list[int]]:
        """(job → {candidate node: its preemptible GPUs there}, nodes holding only flexible GPUs)."""
        c = view.cluster
        host: dict[int, dict[int, int]] = {}
        flex_only: list[int] = []
        for n in candidates.tolist():
            f = int(c.node_first_gpu[n])
            owners = c.gpu_owner[f:f + int(c.node_num_gpus[n])]
            pre = 0
            for g, o in enumerate(owners.tolist()):
                if o < 0:
                    continue
                b = self.base.get(o)
                if b is None or (f + g) in b:  # a base or inelastic worker: losing it preempts
                    host.setdefault(o, {}).setdefault(n, 0)
                    host[o][n] += 1
                    pre += 1
            if pre == 0 and (owners >= 0).any():
                flex_only.append(n)
        return host, flex_only

    def answer_reclaim(self, view: ClusterView, demand: ReclaimDemand) -> ReclaimAnswer:
        """Which on-loan servers go back (see `reclaim`); solver time kept in `reclaim_stats`."""
        cfg, c = self.config, view.cluster
        cand = np.asarray(demand.candidates, np.int64)
        t0 = time.perf_counter()
        self._sync_base(view, view.running())
        host, flex_only = self.hosting(view, cand)
        if cfg.reclaim == "random":
            chosen = random_reclaim(cand, demand.count, int(self.rng.integers(1 << 31)))
        elif cfg.reclaim == "scf":
            chosen = scf_reclaim(host, cand, demand.count)
        else:
            chosen = reclaim_servers(host, cand, flex_only, c, demand.count, cfg.tie_break, cfg.seed,
                                     update=cfg.reclaim == "aryl")
        self.reclaim_stats.append(dict(t=view.now, n_r=demand.count, solver_s=time.perf_counter() - t0,
                                       preempted=len(preempted_jobs(host, chosen))))
        return ReclaimAnswer(tuple(sorted(int(n) for n in chosen)), None)



def reclaim_servers(host: Hosting, cand: np.ndarray, flex_only: list[int], cluster, n_r: int,
                    tie_break: str = "gpu_fraction", seed: int = 0, update: bool = True) -> list[int]:
    """Aryl's full reclaim: idle servers first, then flexible-only ones (fewest busy GPUs
    first; a scale-in, no preemption), then Algorithm 1 on the rest."""
    busy = {int(n): int((cluster.gpu_owner[cluster.node_first_gpu[n]:cluster.node_first_gpu[n]
                                           + cluster.node_num_gpus[n]] >= 0).sum()) for n in cand.tolist()}
    hosted = {n for w in host.values() for n in w}
    free = sorted((n for n in cand.tolist() if n not in hosted), key=lambda n: (busy[n], n))
    chosen = free[:n_r]
    rest = n_r - len(chosen)
    if rest > 0:
        others = [n for n in cand.tolist() if n in hosted]
        chosen += greedy_reclaim(host, others, rest, tie_break, seed, update)
    return chosen
