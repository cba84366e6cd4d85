"""numba kernels of Pollux's genetic algorithm (`policies.pollux.ga`): the whole NSGA-II loop.

`evolve_kernel` runs every generation — binary tournaments, single-point crossover, mutation,
repair, duplicate removal, both objectives, non-dominated sorting, crowding and truncation — over
one preallocated pool of individuals (int16 allocation matrices), so a round's 100 × 100 search
makes no Python call and allocates nothing per generation. The operators (`crossover_pair`,
`mutate_one`, `repair_one`, `objective_one`) are also what `ga.Problem`'s methods call, so the
formulas exist once.

Random draws come from numba's generator, seeded once per call from the policy's numpy
Generator: a round is a function of the policy seed. Where a draw cannot change the result it is
not made (an entry that is already zero is not drawn for zeroing; a node order is drawn only over
a job's non-zero nodes; the 1/J "raise" chance is sampled by geometric skips): the same
distribution as drawing everything, with far fewer draws when J × N is large.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# ---- operators on one individual ---------------------------------------------------------


@njit(cache=True)
def crossover_pair(A, ia, B, ib, C, ic, point, swap):
    """C[ic] = A[ia] with rows j < point taken from B[ib] when `swap`; C[ic + 1] the mirror."""
    J, N = A.shape[1], A.shape[2]
    for j in range(J):
        x = swap and j < point
        for n in range(N):
            a = A[ia, j, n]
            b = B[ib, j, n]
            C[ic, j, n] = b if x else a
            C[ic + 1, j, n] = a if x else b


@njit(cache=True)
def _skip(j, prob):
    """The next index after j chosen with probability `prob` each (a geometric skip: one draw per
    chosen index instead of one per index)."""
    if prob >= 1.0:
        return j + 1
    if prob <= 0.0:
        return 1 << 62
    u = np.random.random()
    return j + 1 + int(math.floor(math.log(1.0 - u) / math.log(1.0 - prob)))


@njit(cache=True)
def mutate_one(X, k, base, node_cap, job_node_cap, used, on, pj, pn):
    """Pollux's mutation of X[k] in place: (1) each job's row reset to its current allocation with
    probability 0.1; (2) for 10 % of jobs, each entry zeroed with probability 0.1; (3) on each node
    with free GPUs, each job's entry raised to a uniform count in [entry, its cap on the node] with
    probability p1 + p2 − p1·p2, p1 = 1/J, p2 = 1/(jobs on the node) for jobs there, else 0
    (free GPUs and jobs per node counted before any raise). `used`, `on` (int[N]) and `pj`, `pn`
    (int[J·N]) are scratch."""
    J, N = X.shape[1], X.shape[2]
    j = _skip(-1, 0.1)
    while j < J:
        for n in range(N):
            X[k, j, n] = base[j, n]
        j = _skip(j, 0.1)
    j = _skip(-1, 0.1)
    while j < J:
        for n in range(N):
            if X[k, j, n] != 0 and np.random.random() < 0.1:
                X[k, j, n] = 0
        j = _skip(j, 0.1)
    for n in range(N):
        used[n] = 0
        on[n] = 0
    c = 0
    for j in range(J):  # the non-zero entries, row by row
        for n in range(N):
            v = X[k, j, n]
            if v > 0:
                used[n] += v
                on[n] += 1
                pj[c] = j
                pn[c] = n
                c += 1
    p1 = 1.0 / J
    for i in range(c):  # jobs on a node with free GPUs: p1 + p2 − p1·p2
        n = pn[i]
        if node_cap[n] - used[n] > 0:
            p2 = 1.0 / on[n]
            if np.random.random() < p1 + p2 - p1 * p2:
                j = pj[i]
                hi = job_node_cap[j, n]
                x = X[k, j, n]
                if hi > x:
                    X[k, j, n] = x + np.random.randint(0, hi - x + 1)
    for n in range(N):  # jobs not on it: p1
        if node_cap[n] - used[n] <= 0:
            continue
        j = _skip(-1, p1)
        while j < J:
            x = X[k, j, n]
            if x == 0:
                hi = job_node_cap[j, n]
                if hi > 0:
                    X[k, j, n] = np.random.randint(0, hi + 1)
            j = _skip(j, p1)


@njit(cache=True)
def repair_one(X, k, node_cap, job_node_cap, max_gpus, min_gpus, max_nodes, interference, seen, cum, nz):
    """Make X[k] feasible, job by job in priority order (each step sees only earlier jobs' final
    rows, so one pass does all four in the order of the module doc of `ga`): entries clamped to
    [0, the job's cap on the node]; interference avoidance (a distributed job loses the nodes where
    an earlier distributed job is); the job's most GPUs and most nodes over its nodes in a random
    order; node capacity left by earlier jobs; a job short of its least GPUs gets none."""
    J, N = X.shape[1], X.shape[2]
    for n in range(N):
        seen[n] = False
        cum[n] = 0
    for j in range(J):
        c = 0
        for n in range(N):
            v = X[k, j, n]
            if v != 0:
                if v < 0:
                    v = 0
                hi = job_node_cap[j, n]
                if v > hi:
                    v = hi
                X[k, j, n] = v
                if v > 0:
                    nz[c] = n
                    c += 1
        if interference and c > 1:
            c2 = 0
            for i in range(c):
                n = nz[i]
                if seen[n]:
                    X[k, j, n] = 0
                else:
                    seen[n] = True
                    nz[c2] = n
                    c2 += 1
            c = c2
        for i in range(c - 1, 0, -1):  # a random order of the job's nodes (Fisher-Yates)
            m = np.random.randint(0, i + 1)
            t = nz[i]
            nz[i] = nz[m]
            nz[m] = t
        tot = 0
        nodes = 0
        for i in range(c):
            n = nz[i]
            v = min(X[k, j, n], max_gpus[j] - tot)
            if v > 0:
                if nodes >= max_nodes:
                    v = 0
                else:
                    nodes += 1
            else:
                v = 0
            X[k, j, n] = v
            tot += v
        tot = 0
        for i in range(c):
            n = nz[i]
            v = min(X[k, j, n], node_cap[n] - cum[n])
            X[k, j, n] = v
            cum[n] += v
            tot += v
        if tot < min_gpus[j]:
            for i in range(c):
                X[k, j, nz[i]] = 0


@njit(cache=True)
def objective_one(X, k, speedups, base, penalty, scale, p, node_cap, occ):
    """(−fitness, −utility) of X[k] (formulas in `ga`'s module doc); `occ` (bool[N]) is scratch."""
    J, N = X.shape[1], X.shape[2]
    max_n = speedups.shape[1] - 1
    max_r = speedups.shape[2] - 1
    acc = 0.0
    sp_sum = 0.0
    for n in range(N):
        occ[n] = False
    for j in range(J):
        nodes = 0
        reps = 0
        changed = False
        for n in range(N):
            v = X[k, j, n]
            if v > 0:
                nodes += 1
                reps += v
                occ[n] = True
            if v != base[j, n]:
                changed = True
        sp = speedups[j, min(nodes, max_n), min(reps, max_r)]
        sc = sp * scale
        if changed:
            sc *= penalty[j]
        if p == -1.0:
            acc += 1.0 / (sc + 1e-3)
        elif p == 0:
            acc += math.log(max(sc, 1e-3))
        else:
            acc += (sc + 1e-3) ** p
        if reps > 0:
            sp_sum += sp
    total = 0
    for n in range(N):
        if occ[n]:
            total += node_cap[n]
    util = sp_sum / total if total > 0 else 0.0
    if p == -1.0:
        fit = J / acc
    elif p == 0:
        fit = math.exp(acc / J)
    else:
        fit = (acc / J) ** (1.0 / p)
    return -fit, -util


@njit(cache=True)
def hash_one(X, k):
    """A 64-bit hash of X[k]: Σ entry × a pseudo-random odd weight per position (mod 2^64; equal
    individuals, equal hashes; the caller compares in full on a match)."""
    h = np.uint64(0)
    J, N = X.shape[1], X.shape[2]
    i = np.uint64(0)
    for j in range(J):
        for n in range(N):
            w = ((i + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(0xBF58476D1CE4E5B9)
            h += np.uint64(X[k, j, n] + 32768) * (w | np.uint64(1))
            i += np.uint64(1)
    return h


@njit(cache=True)
def _same(X, a, Y, b):
    J, N = X.shape[1], X.shape[2]
    for j in range(J):
        for n in range(N):
            if X[a, j, n] != Y[b, j, n]:
                return False
    return True


# ---- NSGA-II selection -------------------------------------------------------------------


@njit(cache=True)
def fronts(F):
    """Non-dominated front index of each row of F[:, :2] (minimisation), O(n log n): in
    lexicographic order every earlier distinct point has f0 ≤ and, if f0 ties, f1 <, so a point
    belongs to the first front whose smallest f1 so far exceeds its f1; equal points share a front."""
    n = F.shape[0]
    o1 = np.argsort(F[:, 1], kind="mergesort")
    o = o1[np.argsort(F[o1, 0], kind="mergesort")]  # lexicographic (f0, f1)
    rank = np.empty(n, np.int64)
    best = np.empty(n)  # smallest f1 of each front so far (increasing)
    nf = 0
    prev = -1
    for i in range(n):
        r = o[i]
        if prev >= 0 and F[r, 0] == F[prev, 0] and F[r, 1] == F[prev, 1]:
            rank[r] = rank[prev]
            continue
        f1 = F[r, 1]
        lo, hi = 0, nf  # first front with best > f1 (bisect_right)
        while lo < hi:
            mid = (lo + hi) // 2
            if best[mid] <= f1:
                lo = mid + 1
            else:
                hi = mid
        best[lo] = f1
        if lo == nf:
            nf += 1
        rank[r] = lo
        prev = r
    return rank


@njit(cache=True)
def crowding(F, idx, out):
    """Crowding distance of the points F[idx] (infinite at each objective's extremes) into out[idx]."""
    m = idx.shape[0]
    for i in range(m):
        out[idx[i]] = 0.0
    if m <= 2:
        for i in range(m):
            out[idx[i]] = np.inf
        return
    for obj in range(F.shape[1]):
        vals = np.empty(m)
        for i in range(m):
            vals[i] = F[idx[i], obj]
        o = np.argsort(vals, kind="mergesort")
        span = vals[o[m - 1]] - vals[o[0]]
        out[idx[o[0]]] = np.inf
        out[idx[o[m - 1]]] = np.inf
        if span > 0:
            for i in range(1, m - 1):
                out[idx[o[i]]] += (vals[o[i + 1]] - vals[o[i - 1]]) / span


@njit(cache=True)
def survive(F, size, crowd):
    """Indices kept (fronts in order, the last one cut by crowding distance, most crowding first,
    ties at random); `crowd` receives every kept point's crowding distance within its front."""
    n = F.shape[0]
    rank = fronts(F)
    keep = np.empty(min(size, n), np.int64)
    got = 0
    k = 0
    while got < keep.shape[0]:
        c = 0
        for i in range(n):
            if rank[i] == k:
                c += 1
        idx = np.empty(c, np.int64)
        c = 0
        for i in range(n):
            if rank[i] == k:
                idx[c] = i
                c += 1
        crowding(F, idx, crowd)
        room = keep.shape[0] - got
        if c > room:
            key = np.empty(c)
            for i in range(c):
                key[i] = np.random.random()
            o = np.argsort(key)  # random ties, then most crowding first (stable)
            neg = np.empty(c)
            for i in range(c):
                neg[i] = -crowd[idx[o[i]]]
            o = o[np.argsort(neg, kind="mergesort")]
            for i in range(room):
                keep[got + i] = idx[o[i]]
            got += room
        else:
            for i in range(c):
                keep[got + i] = idx[i]
            got += c
        k += 1
    return keep


@njit(cache=True)
def _dominates(F, a, b):
    return F[a, 0] <= F[b, 0] and F[a, 1] <= F[b, 1] and (F[a, 0] < F[b, 0] or F[a, 1] < F[b, 1])


@njit(cache=True)
def tournament(F, crowd, k, n):
    """`n` winners among rows 0..k−1 of binary tournaments over concatenated random permutations:
    the dominating one, else the less crowded, else a coin."""
    reps = -(-2 * n // k)
    picks = np.empty(reps * k, np.int64)
    for r in range(reps):
        perm = np.random.permutation(k)
        picks[r * k:(r + 1) * k] = perm
    out = np.empty(n, np.int64)
    for i in range(n):
        a = picks[2 * i]
        b = picks[2 * i + 1]
        coin = np.random.random() < 0.5
        if _dominates(F, a, b):
            out[i] = a
        elif _dominates(F, b, a):
            out[i] = b
        elif crowd[a] > crowd[b] or (crowd[a] == crowd[b] and coin):
            out[i] = a
        else:
            out[i] = b
    return out


# ---- the loop ----------------------------------------------------------------------------


@njit(cache=True)
def evolve_kernel(init, speedups, base, penalty, scale, p, node_cap, job_node_cap, max_gpus, min_gpus,
                  max_nodes, interference, pop_size, generations, crossover_prob, max_tries, seed):
    """NSGA-II from `init` (repaired here). Returns (population int16[P, J, N], F[P, 2], index of
    the chosen individual: least −fitness, then least −utility, so it is on the first front)."""
    np.random.seed(seed)
    K, J, N = init.shape
    m_max = (pop_size + 1) // 2
    cap = max(K, pop_size + 2 * m_max)
    pool = np.zeros((cap, J, N), np.int16)
    PF = np.empty((cap, 2))
    H = np.empty(cap, np.uint64)
    kids = np.zeros((2 * m_max, J, N), np.int16)
    KF = np.empty((2 * m_max, 2))
    KH = np.empty(2 * m_max, np.uint64)
    crowd = np.zeros(cap)
    seen = np.zeros(N, np.bool_)
    cum = np.zeros(N, np.int64)
    nz = np.zeros(N, np.int64)
    used = np.zeros(N, np.int64)
    on = np.zeros(N, np.int64)
    occ = np.zeros(N, np.bool_)
    pj = np.zeros(J * N + 1, np.int64)
    pn = np.zeros(J * N + 1, np.int64)

    # the initial population: repaired, duplicates dropped, then the best pop_size
    P = 0
    for i in range(K):
        for j in range(J):
            for n in range(N):
                pool[P, j, n] = init[i, j, n]
        repair_one(pool, P, node_cap, job_node_cap, max_gpus, min_gpus, max_nodes, interference, seen, cum, nz)
        h = hash_one(pool, P)
        dup = False
        for q in range(P):
            if H[q] == h and _same(pool, q, pool, P):
                dup = True
                break
        if dup:
            continue
        H[P] = h
        f0, f1 = objective_one(pool, P, speedups, base, penalty, scale, p, node_cap, occ)
        PF[P, 0] = f0
        PF[P, 1] = f1
        P += 1
    sel = survive(PF[:P], pop_size, crowd[:P])
    P = _gather(pool, PF, H, crowd, sel)

    for _g in range(generations):
        got = 0
        for _t in range(max_tries):
            m = (pop_size - got + 1) // 2
            par = tournament(PF[:P], crowd[:P], P, 2 * m)
            for i in range(m):
                point = np.random.randint(0, J)
                swap = np.random.random() < crossover_prob
                crossover_pair(pool, par[i], pool, par[m + i], kids, 2 * i, point, swap)
            # children in the order (first of each pair..., second of each pair...)
            for i in range(2 * m):
                c = (2 * i) if i < m else (2 * (i - m) + 1)
                mutate_one(kids, c, base, node_cap, job_node_cap, used, on, pj, pn)
                repair_one(kids, c, node_cap, job_node_cap, max_gpus, min_gpus, max_nodes, interference, seen,
                           cum, nz)
                if got >= pop_size:
                    continue
                h = hash_one(kids, c)
                dup = False
                for q in range(P + got):
                    if H[q] == h and _same(pool, q, kids, c):
                        dup = True
                        break
                if dup:
                    continue
                slot = P + got
                for j in range(J):
                    for n in range(N):
                        pool[slot, j, n] = kids[c, j, n]
                H[slot] = h
                f0, f1 = objective_one(pool, slot, speedups, base, penalty, scale, p, node_cap, occ)
                PF[slot, 0] = f0
                PF[slot, 1] = f1
                got += 1
            if got >= pop_size:
                break
        sel = survive(PF[:P + got], pop_size, crowd[:P + got])
        P = _gather(pool, PF, H, crowd, sel)
    best = 0
    for i in range(1, P):
        if PF[i, 0] < PF[best, 0] or (PF[i, 0] == PF[best, 0] and PF[i, 1] < PF[best, 1]):
            best = i
    return pool[:P].copy(), PF[:P].copy(), best


@njit(cache=True)
def _gather(pool, PF, H, crowd, sel):
    """Move the individuals `sel` (with objectives, hashes, crowding) to the front of the pool."""
    n = sel.shape[0]
    tmp = pool[sel]  # a copy: sel may read slots it also writes
    tf = PF[sel]
    th = H[sel]
    tc = crowd[sel]
    for i in range(n):
        pool[i] = tmp[i]
        PF[i] = tf[i]
        H[i] = th[i]
        crowd[i] = tc[i]
    return n
