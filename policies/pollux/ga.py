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

    @property
    def shape(self) -> tuple[int, int]:
        return self.base.shape

    # ---- objectives -------------------------------------------------------------------
    def job_speedups(self, X: np.ndarray) -> np.ndarray:
        """float64[P, J]: SPEEDUP_j of each individual's row j (unscaled, no penalty)."""
        nodes = np.minimum(np.count_nonzero(X, axis=2), self.speedups.shape[1] - 1)
        reps = np.minimum(X.sum(axis=2), self.speedups.shape[2] - 1)
        jj = np.broadcast_to(np.arange(X.shape[1]), nodes.shape)
        return self.speedups[jj, nodes, reps]

    def fitness(self, X: np.ndarray, sp: np.ndarray | None = None) -> np.ndarray:
        """float64[P]: the power mean of penalised, scaled speedups (module doc)."""
        sp = self.job_speedups(X) if sp is None else sp
        scaled = sp * self.scale
        changed = np.any(X != self.base, axis=2)
        scaled = np.where(changed, scaled * self.penalty, scaled)
        if self.p == 0:
            return np.exp(np.mean(np.log(np.maximum(scaled, 1e-3)), axis=1))
        return np.mean((scaled + 1e-3) ** self.p, axis=1) ** (1.0 / self.p)

    def utility(self, X: np.ndarray, sp: np.ndarray | None = None) -> np.ndarray:
        """float64[P]: Σ_j (speedup_j / GPUs_j) × GPUs_j / GPUs of the nodes in use."""
        sp = self.job_speedups(X) if sp is None else sp
        reps = X.sum(axis=2)
        total = ((X.sum(axis=1) > 0) * self.node_cap).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(reps > 0, sp / reps, 0.0)
            share = np.where(reps > 0, reps / np.maximum(total, 1)[:, None], 0.0)
        return np.sum(per * share, axis=1)

    def objectives(self, X: np.ndarray) -> np.ndarray:
        """float64[P, 2] to minimise: (−fitness, −utility)."""
        sp = self.job_speedups(X)
        return np.column_stack([-self.fitness(X, sp), -self.utility(X, sp)])

    # ---- operators --------------------------------------------------------------------
    def crossover(self, a: np.ndarray, b: np.ndarray, rng: np.random.Generator, prob: float) -> np.ndarray:
        """Two children per parent pair: rows (jobs) before a random point swapped, with probability `prob`."""
        m, J, _ = a.shape
        point = rng.integers(0, J, size=m)
        swap = (np.arange(J)[None, :] < point[:, None]) & (rng.random(m) < prob)[:, None]
        c1 = np.where(swap[:, :, None], b, a)
        c2 = np.where(swap[:, :, None], a, b)
        return np.concatenate([c1, c2])

    def mutate(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(1) a job's row reset to its current allocation (10 %); (2) 10 % of its entries zeroed
        (for 10 % of jobs); (3) entries on nodes with free GPUs raised to a random count up to
        the node's size, with probability 1/J per node plus 1/(jobs on the node) for jobs already there."""
        P, J, N = X.shape
        reset = rng.random((P, J)) < 0.1
        X = np.where(reset[:, :, None], self.base[None], X)
        pz = np.where(rng.random((P, J)) < 0.1, 0.1, 0.0)
        X = np.where(rng.random(X.shape) < pz[:, :, None], 0, X)
        free = self.node_cap[None, :] - X.sum(axis=1)  # (P, N)
        fits = np.broadcast_to((free > 0)[:, None, :], X.shape)
        p1 = fits / np.maximum(fits.sum(axis=1, keepdims=True), 1.0)
        on = (X > 0) & fits
        p2 = on / np.maximum(on.sum(axis=1, keepdims=True), 1.0)
        hit = rng.random(X.shape) < p1 + p2 - p1 * p2
        hi = self.job_node_cap[None] + 1
        r = X + np.floor(rng.random(X.shape) * np.maximum(hi - X, 1)).astype(np.int64)
        return np.where(hit, np.minimum(r, self.job_node_cap[None]), X)

    def repair(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Make every individual feasible (module doc, in that order)."""
        X = np.minimum(np.maximum(X, 0), self.job_node_cap[None]).astype(np.int64)
        if self.interference:
            dist = np.count_nonzero(X, axis=2) > 1
            on = (X > 0) & dist[:, :, None]
            X = np.where(on & (np.cumsum(on, axis=1) > 1), 0, X)
        order = np.argsort(rng.random(X.shape), axis=2)  # random node order per (individual, job)
        S = np.take_along_axis(X, order, axis=2)
        S = np.diff(np.minimum(np.cumsum(S, axis=2), self.max_gpus[None, :, None]), axis=2, prepend=0)
        used = np.cumsum(S > 0, axis=2) <= self.max_nodes
        S = np.where(used, S, 0)
        X = np.empty_like(S)
        np.put_along_axis(X, order, S, axis=2)
        X = np.diff(np.minimum(np.cumsum(X, axis=1), self.node_cap[None, None, :]), axis=1, prepend=0)
        short = X.sum(axis=2) < self.min_gpus[None, :]
        return np.where(short[:, :, None], 0, X)


# ---- NSGA-II ------------------------------------------------------------------------------

def _fronts(F: np.ndarray) -> np.ndarray:
    """Non-dominated front index of each row of F (minimisation)."""
    le = np.all(F[:, None, :] <= F[None, :, :], axis=2)
    lt = np.any(F[:, None, :] < F[None, :, :], axis=2)
    dom = le & lt  # dom[a, b]: a dominates b
    count = dom.sum(axis=0)
    rank = np.full(F.shape[0], -1, np.int64)
    k = 0
    cur = np.flatnonzero(count == 0)
    while cur.size:
        rank[cur] = k
        count = count - dom[cur].sum(axis=0)
        count[rank >= 0] = -1
        cur = np.flatnonzero(count == 0)
        k += 1
    return rank


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
            C = problem.repair(problem.mutate(C, rng), rng)
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
