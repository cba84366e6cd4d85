"""PolluxSched's search (Qiao et al., OSDI'21, §4.2): a genetic algorithm over allocation matrices.

An individual is an int matrix `A[j, n]` = GPUs of job j on node n. Its fitness is the power
mean (p = −1: close to the harmonic mean, so starving one job costs more than it gains
elsewhere) of the jobs' speedups, each speedup scaled so that a share of one node counts 1 and
multiplied by the restart penalty when the job's row differs from its current allocation:

    FITNESS_p(A) = ( 1/J · Σ_j (SPEEDUP_j(A_j) · penalty_j + 1e-3)^p )^(1/p),
    penalty_j = max(age_j − restarts_j · δ, 0) / (age_j + δ)   (δ = restart cost, 30 s).

`SPEEDUP_j(n nodes, r GPUs)` is the job's best goodput there over its best goodput at a fair
share (one node, ⌈G / J⌉ GPUs), a table `speedups[j, n, r]` built by the caller.

The search is NSGA-II over (fitness, cluster utility) — the artifact's choice; the chosen
allocation is the fittest of the final Pareto front, so utility only keeps the population
diverse. Operators (§4.2 and the artifact's `pollux.py`): single-point crossover over jobs;
mutation that resets a job to its current allocation, zeroes some of its nodes, or raises its
count on nodes with free GPUs; repair that enforces, in this order, interference avoidance (at
most one distributed job per node, jobs earlier in priority order win), each job's most GPUs
and most nodes (surplus removed from randomly ordered nodes), node capacity (earlier jobs
first) and each job's least GPUs. The population carries over from round to round.

Our own code, numpy throughout; every random draw comes from the `numpy.random.Generator` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Problem:
    """One round's allocation problem (J jobs in priority order × N nodes).

    speedups: float64[J, N_max + 1, R + 1] (`n` nodes, `r` GPUs; 0 where r = 0);
    base: int64[J, N] current allocation; node_cap: int64[N] usable GPUs per node;
    job_node_cap: int64[J, N] most GPUs of job j on node n (type fit); max_gpus, min_gpus:
    int64[J]; max_nodes: most nodes per job; penalty: float64[J] restart factor;
    scale: the factor that makes one node's share count 1 (N / G); p: the power-mean exponent;
    interference: at most one distributed job per node.
    """

    speedups: np.ndarray
    base: np.ndarray
    node_cap: np.ndarray
    job_node_cap: np.ndarray
    max_gpus: np.ndarray
    min_gpus: np.ndarray
    penalty: np.ndarray
    scale: float
    p: float = -1.0
    max_nodes: int = 16
    interference: bool = True

    def __post_init__(self) -> None:
        for name in ("base", "node_cap", "job_node_cap", "max_gpus", "min_gpus"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), np.int64))
        self.speedups = np.ascontiguousarray(self.speedups, np.float64)

    @property
    def shape(self) -> tuple[int, int]:
        return self.base.shape

    # ---- objectives -------------------------------------------------------------------
    def fitness(self, X: np.ndarray) -> np.ndarray:
        """float64[P]: the power mean of penalised, scaled speedups (module doc)."""
        return -self.objectives(X)[:, 0]

    def utility(self, X: np.ndarray) -> np.ndarray:
        """float64[P]: Σ_j (speedup_j / GPUs_j) × GPUs_j / GPUs of the nodes in use."""
        return -self.objectives(X)[:, 1]

    def objectives(self, X: np.ndarray) -> np.ndarray:
        """float64[P, 2] to minimise: (−fitness, −utility) (`_kernels.objectives`, the same formulas)."""
        from policies.pollux._kernels import objectives

        return objectives(np.ascontiguousarray(X, np.int64), self.speedups, self.base,
                          np.ascontiguousarray(self.penalty, np.float64), float(self.scale), float(self.p),
                          self.node_cap)

    # ---- operators --------------------------------------------------------------------
    def crossover(self, a: np.ndarray, b: np.ndarray, rng: np.random.Generator, prob: float) -> np.ndarray:
        """Two children per parent pair: rows (jobs) before a random point swapped, with probability `prob`."""
        from policies.pollux._kernels import crossover

        m, J, _ = a.shape
        point = rng.integers(0, J, size=m)
        swap = rng.random(m) < prob
        return crossover(np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64), point, swap)

    def _seed(self, rng: np.random.Generator) -> int:
        return int(rng.integers(0, 2**31 - 1))

    def mutate_repair(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Mutation then repair of every individual (in place; `_kernels.mutate_repair`).

        Mutation: (1) a job's row reset to its current allocation (10 %); (2) 10 % of its entries
        zeroed (for 10 % of jobs); (3) on each node with free GPUs, each job's entry raised to a
        random count up to the node's size with probability 1/J, plus 1/(jobs on the node) for
        jobs already there."""
        from policies.pollux._kernels import mutate_repair

        X = np.ascontiguousarray(X, np.int64)
        mutate_repair(X, self.base, self.node_cap, self.job_node_cap, self.max_gpus, self.min_gpus,
                      int(self.max_nodes), bool(self.interference), self._seed(rng))
        return X

    def repair(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Make every individual feasible (module doc, in that order; `_kernels.repair`)."""
        from policies.pollux._kernels import repair

        X = np.array(X, np.int64, order="C")
        repair(X, self.node_cap, self.job_node_cap, self.max_gpus, self.min_gpus, int(self.max_nodes),
               bool(self.interference), self._seed(rng))
        return X


# ---- NSGA-II ------------------------------------------------------------------------------

def _fronts(F: np.ndarray) -> np.ndarray:
    """Non-dominated front index of each row of F[:, :2] (minimisation), O(n log n): in
    lexicographic order every earlier distinct point has f0 ≤ and, if f0 ties, f1 <, so a point
    belongs to the first front whose smallest f1 so far exceeds its f1; equal points share a front."""
    from bisect import bisect_right

    uniq, inv = np.unique(F[:, :2], axis=0, return_inverse=True)  # lexicographic order
    rank_u = np.empty(uniq.shape[0], np.int64)
    best: list[float] = []  # smallest f1 of each front so far (increasing)
    for i, f1 in enumerate(uniq[:, 1].tolist()):
        k = bisect_right(best, f1)  # an equal f1 came with a smaller f0: it dominates, so past it
        if k == len(best):
            best.append(f1)
        else:
            best[k] = f1
        rank_u[i] = k
    return rank_u[inv.ravel()]


def _crowding(F: np.ndarray) -> np.ndarray:
    n = F.shape[0]
    if n <= 2:
        return np.full(n, np.inf)
    d = np.zeros(n)
    for m in range(F.shape[1]):
        o = np.argsort(F[:, m], kind="stable")
        f = F[o, m]
        span = f[-1] - f[0]
        d[o[0]] = d[o[-1]] = np.inf
        if span > 0:
            d[o[1:-1]] += (f[2:] - f[:-2]) / span
    return d


def _survive(F: np.ndarray, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices kept (fronts in order, the last cut by crowding distance), their ranks and crowding."""
    rank = _fronts(F)
    keep, crowd = [], np.zeros(F.shape[0])
    for k in range(int(rank.max()) + 1):
        idx = np.flatnonzero(rank == k)
        c = _crowding(F[idx])
        crowd[idx] = c
        room = size - sum(x.size for x in keep)
        if idx.size > room:
            o = np.lexsort((rng.random(idx.size), -c))  # most crowding first, random ties
            idx = idx[o[:room]]
        keep.append(idx)
        if sum(x.size for x in keep) >= size:
            break
    sel = np.concatenate(keep)
    return sel, rank[sel], crowd[sel]


def _tournament(F: np.ndarray, crowd: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` winners of binary tournaments: the dominating one, else the less crowded, else random."""
    k = F.shape[0]
    picks = np.concatenate([rng.permutation(k) for _ in range(-(-2 * n // k))])[:2 * n].reshape(n, 2)
    a, b = picks[:, 0], picks[:, 1]
    fa, fb = F[a], F[b]
    a_dom = np.all(fa <= fb, axis=1) & np.any(fa < fb, axis=1)
    b_dom = np.all(fb <= fa, axis=1) & np.any(fb < fa, axis=1)
    coin = rng.random(n) < 0.5
    win_a = a_dom | (~b_dom & ((crowd[a] > crowd[b]) | ((crowd[a] == crowd[b]) & coin)))
    return np.where(win_a, a, b)


def _unique_new(C: np.ndarray, seen: set[bytes]) -> np.ndarray:
    keep = []
    for i in range(C.shape[0]):
        key = C[i].tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return C[keep]


def evolve(problem: Problem, init: np.ndarray, rng: np.random.Generator, pop_size: int = 100,
           generations: int = 100, crossover_prob: float = 0.9, max_tries: int = 10
           ) -> tuple[np.ndarray, np.ndarray]:
    """Run NSGA-II from `init` (int[K, J, N], any K ≥ 1, repaired here). Each generation makes
    `pop_size` new distinct children (up to `max_tries` batches; duplicates of the population's
    individuals are dropped), then keeps the best `pop_size` of parents and children by
    front and crowding. Returns (the fittest individual of the final first front, the final
    population to seed the next round)."""
    X = problem.repair(np.asarray(init, np.int64), rng)
    X = _unique_new(X, set())
    F = problem.objectives(X)
    sel, _, crowd = _survive(F, pop_size, rng)
    X, F = X[sel], F[sel]
    for _ in range(generations):
        kids = []
        got = 0
        seen = {X[i].tobytes() for i in range(X.shape[0])}  # duplicates of the population are dropped
        for _ in range(max_tries):
            m = -(-(pop_size - got) // 2)
            par = _tournament(F, crowd, 2 * m, rng)
            C = problem.crossover(X[par[:m]], X[par[m:]], rng, crossover_prob)
            C = problem.mutate_repair(C, rng)
            C = _unique_new(C, seen)[:pop_size - got]
            kids.append(C)
            got += C.shape[0]
            if got >= pop_size:
                break
        C = np.concatenate(kids)
        if C.shape[0]:
            X = np.concatenate([X, C])
            F = np.concatenate([F, problem.objectives(C)])
        sel, _, crowd = _survive(F, pop_size, rng)
        X, F = X[sel], F[sel]
    best = int(np.argmin(F[:, 0]))
    return X[best], X
