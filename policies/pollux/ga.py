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

An optional lower bound, `Problem.floor` (`pinned_minimum`): for a started job that must not drop
below its least GPUs, that many of the GPUs it holds, on the nodes where it holds most. The repair
serves these shares before its priority-order pass (each node's capacity reduced by them, a
distributed share owning its nodes for interference avoidance) and never cuts them, so every
individual the search evaluates keeps them: a full cluster has its current allocation as one
feasible individual, which a bound served anywhere could not promise.

Our own code. The whole loop runs in numba (`policies.pollux._ga_kernels.evolve_kernel`, one call
per round); its generator is seeded from the `numpy.random.Generator` passed in, so a round is a
function of the policy seed. The `Problem` methods below call the same per-individual kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from policies.pollux import _ga_kernels as K
from policies.pollux import _sparse_kernels as S


@dataclass
class Problem:
    """One round's allocation problem (J jobs in priority order × N nodes).

    speedups: float64[J, N_max + 1, R + 1] (`n` nodes, `r` GPUs; 0 where r = 0);
    base: int64[J, N] current allocation; node_cap: int64[N] usable GPUs per node;
    job_node_cap: int64[J, N] most GPUs of job j on node n (type fit); max_gpus, min_gpus:
    int64[J]; max_nodes: most nodes per job; penalty: float64[J] restart factor;
    scale: the factor that makes one node's share count 1 (N / G); p: the power-mean exponent;
    interference: at most one distributed job per node; floor: int64[J, N] GPUs of job j that
    must stay on node n (`pinned_minimum`; None: none).
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
    floor: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("base", "node_cap", "job_node_cap", "max_gpus", "min_gpus"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), np.int64))
        self.speedups = np.ascontiguousarray(self.speedups, np.float64)

    def floors(self) -> np.ndarray:
        """int64[J, N]: the pinned minimum shares (zeros where none)."""
        return np.zeros_like(self.base) if self.floor is None else np.ascontiguousarray(self.floor, np.int64)

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
        """float64[P, 2] to minimise: (−fitness, −utility) (`_ga_kernels.objective_one`)."""
        return _objectives(_dense(X), self.speedups, self.base, np.ascontiguousarray(self.penalty, np.float64),
                           float(self.scale), float(self.p), self.node_cap)

    # ---- operators (each the kernel `evolve` runs: `_ga_kernels.make_child`) ---------------
    def _child_args(self):
        return (self.base, self.node_cap, self.job_node_cap, self.max_gpus, self.min_gpus, self.floors(),
                int(self.max_nodes), bool(self.interference))

    def crossover(self, a: np.ndarray, b: np.ndarray, rng: np.random.Generator, prob: float) -> np.ndarray:
        """Two children per parent pair: rows (jobs) before a random point swapped, with probability `prob`."""
        m, J, _ = a.shape
        point = np.asarray(rng.integers(0, J, size=m), np.int64)
        swap = np.asarray(rng.random(m) < prob, np.bool_)
        AB = np.concatenate([_dense(a), _dense(b)])
        return _children(AB, point, swap, False, False, 0, *self._child_args(), K.scratch(J, a.shape[2]))

    def _seed(self, rng: np.random.Generator) -> int:
        return int(rng.integers(0, 2**31 - 1))

    def mutate_repair(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Mutation then repair of every individual (`_ga_kernels.make_child`)."""
        X = _dense(X)
        return _children(X, np.zeros(0, np.int64), np.zeros(0, np.bool_), True, True, self._seed(rng),
                         *self._child_args(), K.scratch(X.shape[1], X.shape[2]))

    def repair(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Make every individual feasible (module doc, in that order; `_ga_kernels.make_child`)."""
        X = _dense(X)
        return _children(X, np.zeros(0, np.int64), np.zeros(0, np.bool_), False, True, self._seed(rng),
                         *self._child_args(), K.scratch(X.shape[1], X.shape[2]))


def _dense(X) -> np.ndarray:
    X = np.asarray(X)
    if X.size and (X.max() > np.iinfo(np.int16).max or X.min() < np.iinfo(np.int16).min):
        raise ValueError("allocation entries must fit int16 (GPUs of one job on one node)")
    return np.ascontiguousarray(X, np.int16)


# ---- thin numba drivers over the kernels (for the methods above and tests) ----------------

@njit(cache=True)
def _objectives(X, speedups, base, penalty, scale, p, node_cap):
    P, J, N = X.shape
    rp = np.zeros((1, J + 1), np.int64)
    en = np.zeros((1, J * N + 1), np.int16)
    ev = np.zeros((1, J * N + 1), np.int16)
    brp = np.zeros((1, J + 1), np.int64)
    ben = np.zeros((1, J * N + 1), np.int16)
    bev = np.zeros((1, J * N + 1), np.int16)
    S.to_sparse(base.reshape((1, J, N)), 0, brp, ben, bev, 0)
    occ = np.zeros(N, np.bool_)
    F = np.empty((P, 2))
    for k in range(P):
        S.to_sparse(X, k, rp, en, ev, 0)
        F[k, 0], F[k, 1] = K.objective_one(rp, en, ev, 0, speedups, brp, ben, bev, penalty, scale, p, node_cap, occ)
    return F


@njit(cache=True)
def _children(X, point, swap, mutate, fix, seed, base, node_cap, job_node_cap, max_gpus, min_gpus, floor,
              max_nodes, interference, W):
    """Pairs (X[i], X[m + i]) crossed at point[i] when len(point) = m > 0 (two children each),
    else each X[k] alone; mutated when `mutate`, repaired when `fix`. Dense int64 out."""
    K.rng_seed(W[18], seed)
    P, J, N = X.shape
    rp = np.zeros((P, J + 1), np.int64)
    en = np.zeros((P, J * N + 1), np.int16)
    ev = np.zeros((P, J * N + 1), np.int16)
    for k in range(P):
        S.to_sparse(X, k, rp, en, ev, k)
    brp = np.zeros((1, J + 1), np.int64)
    ben = np.zeros((1, J * N + 1), np.int16)
    bev = np.zeros((1, J * N + 1), np.int16)
    S.to_sparse(base.reshape((1, J, N)).astype(np.int16), 0, brp, ben, bev, 0)
    frp, fen, fev, res = S.floor_arrays(floor)
    orp = np.zeros((P, J + 1), np.int64)
    oen = np.zeros((P, J * N + 1), np.int16)
    oev = np.zeros((P, J * N + 1), np.int16)
    m = point.shape[0]
    for k in range(P):
        if m > 0:
            i = k % m
            a, b = (i, m + i) if k < m else (m + i, i)
            K.make_child(rp, en, ev, a, b, point[i], swap[i], mutate, fix, brp, ben, bev, node_cap, job_node_cap,
                         max_gpus, min_gpus, frp, fen, fev, res, max_nodes, interference, orp, oen, oev, k, W)
        else:
            K.make_child(rp, en, ev, k, k, 0, False, mutate, fix, brp, ben, bev, node_cap, job_node_cap,
                         max_gpus, min_gpus, frp, fen, fev, res, max_nodes, interference, orp, oen, oev, k, W)
    out = np.zeros((P, J, N), np.int64)
    for k in range(P):
        S.to_dense(orp, oen, oev, k, out, k)
    return out


def _fronts(F: np.ndarray) -> np.ndarray:
    """Non-dominated front index of each row of F[:, :2] (`_ga_kernels.fronts`, what `evolve` sorts with)."""
    return K.fronts(np.ascontiguousarray(np.asarray(F, np.float64)[:, :2]))


def evolve(problem: Problem, init: np.ndarray, rng: np.random.Generator, pop_size: int = 100,
           generations: int = 100, crossover_prob: float = 0.9, max_tries: int = 10
           ) -> tuple[np.ndarray, np.ndarray]:
    """Run NSGA-II from `init` (int[K, J, N], any K ≥ 1, repaired here). Each generation makes
    `pop_size` new distinct children (up to `max_tries` batches of binary-tournament parents,
    crossover, mutation and repair; children equal to an individual of the population or to an
    earlier child are dropped), then keeps the best `pop_size` of parents and children by front
    and crowding. Returns (the fittest individual of the final first front, the final population
    to seed the next round, int16). One numba call (`_ga_kernels.evolve_kernel`)."""
    pr = problem
    init = _dense(init)
    J, N = pr.base.shape
    pop, _, best = K.evolve_kernel(
        init, pr.speedups, pr.base, np.ascontiguousarray(pr.penalty, np.float64),
        float(pr.scale), float(pr.p), pr.node_cap, _dense(pr.job_node_cap), pr.max_gpus, pr.min_gpus, pr.floors(),
        int(pr.max_nodes), bool(pr.interference), int(pop_size), int(generations), float(crossover_prob),
        int(max_tries), pr._seed(rng), K.scratch(J, N))
    return pop[best].astype(np.int64), pop


def pinned_minimum(base: np.ndarray, min_gpus: np.ndarray, mark: np.ndarray, node_cap: np.ndarray,
                   job_node_cap: np.ndarray, max_nodes: int) -> np.ndarray:
    """int64[J, N]: for each marked job (in priority order), `min_gpus` of the GPUs it holds (`base`),
    taken from the nodes where it holds most (ties: the lower node), within what earlier shares
    leave of each node's capacity and its own cap there. A marked job whose minimum does not fit
    there, or would span more than `max_nodes` nodes, gets no share (the search may suspend it)."""
    base = np.asarray(base, np.int64)
    J, N = base.shape
    floor = np.zeros((J, N), np.int64)
    left = np.asarray(node_cap, np.int64).copy()
    for i in np.flatnonzero(mark).tolist():
        need = int(min_gpus[i])
        avail = np.minimum(base[i], np.minimum(left, job_node_cap[i]))
        if need <= 0 or avail.sum() < need:
            continue
        row = np.zeros(N, np.int64)
        for n in np.lexsort((np.arange(N), -avail)).tolist():
            if need == 0:
                break
            row[n] = min(int(avail[n]), need)
            need -= int(row[n])
        if np.count_nonzero(row) > max_nodes:
            continue
        floor[i] = row
        left -= row
    return floor
