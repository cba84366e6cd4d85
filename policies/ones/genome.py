"""ONES' genetic operators on schedules (SC'21 §3.2, Figs. 7–10; ONES notes §2.6).

A schedule (genome) is an int32 vector with one entry per GPU slot: the index of the job whose
worker runs there, or -1 (idle; Eq. 4 read as "≤ 1 job per GPU", notes §2.11-10). A job's GPU
count is its number of genes; its batch follows from the count (`policies.ones.policy`), so
the genome is the whole decision. Every operator returns a new genome that holds only active
jobs and never more genes of job j than its limit `R[j]` (a GPU count).

- `refresh`: cleanup (finished jobs' genes → idle), R-limit scale-down (a job above R loses
  its last genes), one GPU for every new job (idle slots first, then stolen one at a time from
  the job with the largest executed time T_processed), then `fill`.
- `fill`: idle slots go to jobs that may grow (waiting, or running below R), one job at a time
  until no slot is idle or no job may grow; which job comes first is the caller's key
  (Δφ·Y with the sampled ρ, or the artifact's order) and each chosen job grows to
  min(R, count + idle).
- `crossover`: uniform — per slot, parent a's gene goes to a random child and parent b's to
  the other (swap probability ξ, Fig. 8); genes that would push a job past R are dropped.
- `mutate`: every executed job of the genome is preempted with probability θ (Fig. 9); the
  caller refills.
- `reorder`: contiguous, migration-minimising, node-aware packing (Fig. 10 / the artifact's
  DP): each job keeps its count, its genes become one contiguous run, the runs keep the order
  of the jobs' positions in the deployed schedule, and among such packings the one with the
  most slots unchanged against the deployed schedule wins, ties broken by fewest nodes
  spanned beyond the minimum (a numba DP, O(jobs × slots)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np


@dataclass
class GenomeContext:
    """What the operators need to know of the jobs (arrays indexed by job index)."""

    limit: np.ndarray  # int64[J], R_j as a GPU count (≥ 1 for active jobs)
    active: np.ndarray  # bool[J], submitted and not finished
    new: np.ndarray  # bool[J], still in the start phase (one GPU)
    executed: np.ndarray  # bool[J], may be mutated (past the start phase)
    t_processed: np.ndarray  # float64[J], executed seconds (steal order)
    slot_node: np.ndarray  # int64[G], node of each genome slot
    gpus_per_node: int = 4
    floor: np.ndarray | None = None  # int64[J], fewest GPUs a job may run on (its min_gpus); None: 1

    @property
    def num_jobs(self) -> int:
        return int(self.limit.shape[0])


def counts_of(genome: np.ndarray, num_jobs: int) -> np.ndarray:
    g = genome[genome >= 0]
    return np.bincount(g, minlength=num_jobs)


def valid(genome: np.ndarray, ctx: GenomeContext) -> bool:
    """Every gene idle or an active job, and no job above its limit."""
    g = genome[genome >= 0]
    if g.size and (g.max() >= ctx.num_jobs or not ctx.active[g].all()):
        return False
    return bool((counts_of(genome, ctx.num_jobs) <= np.where(ctx.active, ctx.limit, 0)).all())


def enforce_limits(genome: np.ndarray, ctx: GenomeContext) -> np.ndarray:
    """Cleanup and R-limit scale-down: genes of inactive jobs go idle, and a job above its limit
    keeps its first `limit` genes (scale down by c − R, as §3.2's refresh)."""
    g = genome.copy()
    occ = g >= 0
    g[occ & ~ctx.active[np.where(occ, g, 0)]] = -1
    c = counts_of(g, ctx.num_jobs)
    over = np.flatnonzero(c > ctx.limit)
    for j in over.tolist():
        pos = np.flatnonzero(g == j)
        g[pos[int(ctx.limit[j]):]] = -1
    return g


def place_new(genome: np.ndarray, ctx: GenomeContext, new_jobs: np.ndarray) -> np.ndarray:
    """One GPU for every new job without one: idle slots first, then GPUs taken one at a time
    from the job holding GPUs with the largest T_processed (never from new jobs)."""
    g = genome.copy()
    c = counts_of(g, ctx.num_jobs)
    for j in new_jobs.tolist():
        if c[j] > 0:
            continue
        idle = np.flatnonzero(g < 0)
        if idle.size:
            s = int(idle[0])
        else:
            holders = np.flatnonzero((c > 0) & ~ctx.new)
            if holders.size == 0:
                break  # every GPU holds a new job: the rest wait
            v = int(holders[np.argmax(ctx.t_processed[holders])])
            s = int(np.flatnonzero(g == v)[-1])
            c[v] -= 1
        g[s] = j
        c[j] += 1
    return g


def fill(genome: np.ndarray, ctx: GenomeContext, candidates: np.ndarray,
         key: Callable[[int, int, int], float]) -> np.ndarray:
    """Give idle slots to `candidates` (active jobs) below their limit: repeatedly the job with
    the smallest `key(j, count, new_count)` grows to new_count = min(limit, count + idle)."""
    g = genome.copy()
    idle = np.flatnonzero(g < 0)
    if idle.size == 0:
        return g
    c = counts_of(g, ctx.num_jobs)
    pool = [int(j) for j in candidates.tolist() if c[j] < ctx.limit[j]]
    fl = ctx.floor
    used = 0
    while used < idle.size and pool:
        left = idle.size - used
        best, best_k = -1, np.inf
        for j in pool:
            c2 = int(min(ctx.limit[j], c[j] + left))
            if fl is not None and c2 < fl[j]:
                continue  # cannot reach its minimum with the GPUs left
            k = key(j, int(c[j]), c2)
            if k < best_k:
                best, best_k = j, k
        if best < 0:
            break
        add = int(min(ctx.limit[best], c[best] + left) - c[best])
        g[idle[used:used + add]] = best
        used += add
        c[best] += add
        pool.remove(best)
    return g


def drop_below_floor(genome: np.ndarray, ctx: GenomeContext) -> np.ndarray:
    """Jobs holding fewer genes than their minimum (`floor`, the trace's min_gpus) do not run."""
    if ctx.floor is None:
        return genome
    c = counts_of(genome, ctx.num_jobs)
    bad = (c > 0) & (c < ctx.floor)
    if not bad.any():
        return genome
    g = genome.copy()
    occ = g >= 0
    g[occ & bad[np.where(occ, g, 0)]] = -1
    return g


def crossover(a: np.ndarray, b: np.ndarray, ctx: GenomeContext, rng: np.random.Generator,
              xi: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Uniform crossover (Fig. 8): per slot, with probability ξ the parents' genes swap children."""
    swap = rng.random(a.shape[0]) < xi
    c = np.where(swap, b, a)
    d = np.where(swap, a, b)
    return enforce_limits(c, ctx), enforce_limits(d, ctx)


def mutate(genome: np.ndarray, ctx: GenomeContext, rng: np.random.Generator, theta: float) -> np.ndarray:
    """Uniform mutation (Fig. 9): each executed job of the genome is preempted with probability θ."""
    g = genome.copy()
    occ = g >= 0
    present = np.zeros(ctx.num_jobs, bool)
    present[g[occ]] = True
    jobs = np.flatnonzero(present & ctx.executed)
    hit = np.zeros(ctx.num_jobs, bool)
    hit[jobs[rng.random(jobs.size) < theta]] = True
    g[occ & hit[np.where(occ, g, 0)]] = -1
    return g


@numba.njit(cache=True)
def _reorder_dp(counts: np.ndarray, order: np.ndarray, deployed: np.ndarray, slot_node: np.ndarray,
                per_node: int) -> np.ndarray:
    """Contiguous packing of jobs `order` (counts[job] genes each), in that order, maximising
    (G+1)·matches with `deployed` − extra nodes spanned (see module doc)."""
    G = deployed.shape[0]
    n = order.shape[0]
    big = G + 1
    neg = -(1 << 40)
    dp = np.full((n + 1, G + 1), neg, np.int64)
    take = np.zeros((n + 1, G + 1), np.bool_)
    for p in range(G + 1):
        dp[0, p] = 0
    for i in range(1, n + 1):
        j = order[i - 1]
        c = counts[j]
        need = (c + per_node - 1) // per_node
        for p in range(G + 1):
            best = dp[i, p - 1] if p > 0 else neg
            tk = False
            if p >= c and dp[i - 1, p - c] > neg:
                q = p - c
                m = 0
                nodes = 0
                last = -1
                for s in range(q, p):
                    if deployed[s] == j:
                        m += 1
                    if slot_node[s] != last:
                        nodes += 1
                        last = slot_node[s]
                v = dp[i - 1, q] + big * m - (nodes - need)
                if v > best:
                    best = v
                    tk = True
            dp[i, p] = best
            take[i, p] = tk
    out = np.full(G, -1, np.int32)
    i, p = n, G
    while i > 0:
        if take[i, p]:
            j = order[i - 1]
            c = counts[j]
            for s in range(p - c, p):
                out[s] = j
            p -= c
            i -= 1
        else:
            p -= 1
    return out


def reorder(genome: np.ndarray, deployed: np.ndarray, ctx: GenomeContext) -> np.ndarray:
    """Contiguous, migration-minimising, node-aware packing of `genome` against `deployed`."""
    c = counts_of(genome, ctx.num_jobs)
    jobs = np.flatnonzero(c > 0)
    if jobs.size == 0:
        return genome.copy()
    G = genome.shape[0]
    first = np.full(ctx.num_jobs, G, np.int64)  # first slot of each job in the deployed schedule
    dpos = np.flatnonzero(deployed >= 0)
    if dpos.size:
        np.minimum.at(first, deployed[dpos], dpos)
    own = np.full(ctx.num_jobs, G, np.int64)  # ... else in the candidate itself
    gpos = np.flatnonzero(genome >= 0)
    np.minimum.at(own, genome[gpos], gpos)
    order = jobs[np.lexsort((own[jobs], first[jobs]))]
    return _reorder_dp(c.astype(np.int64), order.astype(np.int64), deployed.astype(np.int64),
                       ctx.slot_node.astype(np.int64), int(ctx.gpus_per_node))


def migrations(genome: np.ndarray, deployed: np.ndarray) -> int:
    """Slots whose running job changes between `deployed` and `genome` (both occupied, or a job
    newly placed on a slot that another job held)."""
    return int(np.count_nonzero((genome >= 0) & (deployed >= 0) & (genome != deployed)))
