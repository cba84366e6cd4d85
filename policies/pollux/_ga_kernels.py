"""numba kernels of Pollux's genetic algorithm (`policies.pollux.ga`): the whole NSGA-II loop.

`evolve_kernel` runs every generation — binary tournaments, single-point crossover, mutation,
repair, duplicate removal, both objectives, non-dominated sorting, crowding and truncation — over
one preallocated pool, so a round's 100 × 100 search is one call with no Python in its loop.

Individuals are stored sparse: the allocation matrix A[j, n] (GPUs of job j on node n) as rows of
(node, count) entries, node-sorted (`rp[k, j]:rp[k, j + 1]` index `en[k]`, `ev[k]`). A repaired
individual has at most one entry per GPU, so every operator costs O(J + entries + N) instead of
O(J × N): at 2,048 GPUs and 1,000 jobs the dense matrix has 256,000 cells and ~2,000 non-zeros.
`Problem`'s dense methods in `ga` convert to this form (`_sparse_kernels`) and call the same functions.

Random draws come from a SplitMix64 state (`_nsga_kernels.rng_*`, in the scratch tuple), seeded
once per call from the policy's numpy Generator: a round is a function of the policy seed. Where a draw cannot change the result it is
not made (a zero entry is not drawn for zeroing; a node order is drawn only over a job's non-zero
nodes; the 1/J and 0.1 chances over jobs are sampled by geometric skips): the same distribution
as drawing everything, with far fewer draws.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from policies.pollux._sparse_kernels import (
    _seen,
    floor_arrays,
    hash_one,
    to_dense,
    to_sparse,
)
from policies.pollux._nsga_kernels import (  # noqa: F401 (fronts, rng_seed: re-exported)
    fronts,
    rng_randint,
    rng_random,
    rng_seed,
    survive,
    tournament,
)


@njit(cache=True)
def _skip(j, prob, inv_log, st):
    """The next index after j when each index is chosen with probability `prob` (geometric skip;
    inv_log = 1 / log(1 − prob))."""
    if prob >= 1.0:
        return j + 1
    if prob <= 0.0:
        return 1 << 62
    u = rng_random(st)
    return j + 1 + int(math.floor(math.log(1.0 - u) * inv_log))  # noqa: RUF046 (numba: keep the int type explicit)


@njit(cache=True)
def _inv_log(prob):
    return 1.0 / math.log(1.0 - prob) if 0.0 < prob < 1.0 else 0.0


# ---- making one child: crossover, mutation, repair -----------------------------------------


@njit(cache=True)
def make_child(rp, en, ev, ia, ib, point, swap, mutate, fix, brp, ben, bev, node_cap, job_node_cap, max_gpus,
               min_gpus, frp, fen, fev, res, max_nodes, interference, out_rp, out_en, out_ev, slot, W):
    """Write into `slot` of (out_rp, out_en, out_ev) the child of parents ia, ib (rows j < point
    from ib when `swap`, the rest from ia), mutated when `mutate`, then repaired when `fix`. `brp, ben, bev`:
    the current allocation (row-sparse, one slot); `frp, fen, fev`: each job's pinned minimum share
(row-sparse, one slot; empty rows where none) and `res`: those shares summed per node. W: scratch (`scratch`).

    Mutation (Pollux's): (1) each job's row reset to its current allocation with probability
    0.1; (2) for 10 % of jobs, each entry zeroed with probability 0.1; (3) on each node with free
    GPUs, each job's entry raised to a uniform count in [entry, its cap on the node] with
    probability p1 + p2 − p1·p2, p1 = 1/J, p2 = 1/(jobs on the node) for jobs there, else 0 (free
    GPUs and jobs per node counted before any raise).

    Repair, job by job in priority order (each step sees only earlier jobs' final rows, so one
    pass does all, in the order of `ga`'s module doc): entries clamped to [0, the job's cap on
    the node]; interference avoidance (a distributed job loses the nodes where an earlier
    distributed job is); the job's most GPUs and most nodes over its nodes in a random order;
    node capacity left by earlier jobs; a job short of its least GPUs gets none.

    Pinned minimum shares (`ga.Problem.floor`) are served before that pass: each node's capacity
    starts reduced by the shares on it, a distributed job's share owns its nodes for interference
    avoidance, and in its own job's turn a share is merged into the row and never cut (the most GPUs
    and nodes trim only above it; a job whose share node an earlier distributed job holds keeps only
    its shares' nodes). With no shares every step and every random draw is as described above."""
    wrp, wn, wv, reset, zero, used, on, ahead, atail, anext, an, av, owner, cum, nzn, nzv, perm, nzf, st = W
    J = rp.shape[1] - 1
    N = node_cap.shape[0]
    for j in range(J):
        reset[j] = False
        zero[j] = False
        ahead[j] = -1
    for n in range(N):
        used[n] = 0
        on[n] = 0
    q10 = _inv_log(0.1)
    if mutate:
        j = _skip(-1, 0.1, q10, st)
        while j < J:
            reset[j] = True
            j = _skip(j, 0.1, q10, st)
        j = _skip(-1, 0.1, q10, st)
        while j < J:
            zero[j] = True
            j = _skip(j, 0.1, q10, st)
    # rows: crossover (+ mutation steps 1, 2)
    c = 0
    for j in range(J):
        wrp[j] = c
        if reset[j]:
            for e in range(brp[0, j], brp[0, j + 1]):
                wn[c] = ben[0, e]
                wv[c] = bev[0, e]
                c += 1
        else:
            src = ib if (swap and j < point) else ia
            for e in range(rp[src, j], rp[src, j + 1]):
                wn[c] = en[src, e]
                wv[c] = ev[src, e]
                c += 1
        if zero[j]:
            c2 = wrp[j]
            for e in range(wrp[j], c):
                if rng_random(st) < 0.1:
                    continue
                wn[c2] = wn[e]
                wv[c2] = wv[e]
                c2 += 1
            c = c2
        for e in range(wrp[j], c):
            if wv[e] > 0:
                used[wn[e]] += wv[e]
                on[wn[e]] += 1
    wrp[J] = c
    na = 0
    if mutate:  # step 3
        p1 = 1.0 / J
        q1 = _inv_log(p1)
        for j in range(J):
            for e in range(wrp[j], wrp[j + 1]):
                n = wn[e]
                x = wv[e]
                if x > 0 and node_cap[n] - used[n] > 0:
                    p2 = 1.0 / on[n]
                    if rng_random(st) < p1 + p2 - p1 * p2:
                        hi = job_node_cap[j, n]
                        if hi > x:
                            wv[e] = x + rng_randint(st, 0, hi - x + 1)
        for n in range(N):
            if node_cap[n] - used[n] <= 0:
                continue
            j = _skip(-1, p1, q1, st)
            while j < J:
                x = 0
                present = False
                for e in range(wrp[j], wrp[j + 1]):
                    if wn[e] == n:
                        x = wv[e]
                        present = True
                        break
                if x <= 0:  # not on the node (a job there had its own draw)
                    hi = job_node_cap[j, n]
                    if hi > 0:
                        v = rng_randint(st, 0, hi + 1)
                        if v > 0:
                            if present:  # a negative entry (only from a caller's raw matrix)
                                for e in range(wrp[j], wrp[j + 1]):
                                    if wn[e] == n:
                                        wv[e] = v
                            else:  # appended to the job's additions, in node order
                                an[na] = n
                                av[na] = v
                                anext[na] = -1
                                if ahead[j] < 0:
                                    ahead[j] = na
                                else:
                                    anext[atail[j]] = na
                                atail[j] = na
                                na += 1
                j = _skip(j, p1, q1, st)
    if not fix:
        o = 0
        for j in range(J):
            out_rp[slot, j] = o
            e = wrp[j]
            a = ahead[j]
            while e < wrp[j + 1] or a >= 0:
                if a < 0 or (e < wrp[j + 1] and wn[e] < an[a]):
                    out_en[slot, o] = wn[e]
                    out_ev[slot, o] = wv[e]
                    e += 1
                else:
                    out_en[slot, o] = an[a]
                    out_ev[slot, o] = av[a]
                    a = anext[a]
                o += 1
        out_rp[slot, J] = o
        return
    # repair, job by job (pinned minimum shares first: `res` and the owners of their nodes)
    for n in range(N):
        owner[n] = -1
        cum[n] = res[n]
    if interference:
        for j in range(J):
            if frp[0, j + 1] - frp[0, j] > 1:
                for f in range(frp[0, j], frp[0, j + 1]):
                    if owner[fen[0, f]] < 0:
                        owner[fen[0, f]] = j
    o = 0
    for j in range(J):
        out_rp[slot, j] = o
        c = 0  # merge the row, its additions and its share (each node-sorted), clamped, zeros dropped
        e = wrp[j]
        a = ahead[j]
        f = frp[0, j]
        while e < wrp[j + 1] or a >= 0 or f < frp[0, j + 1]:
            if e < wrp[j + 1] or a >= 0:
                nr = wn[e] if (a < 0 or (e < wrp[j + 1] and wn[e] < an[a])) else an[a]
            else:
                nr = N
            if f < frp[0, j + 1] and fen[0, f] < nr:  # a share on a node the row lacks
                n = fen[0, f]
                v = 0
                fl = fev[0, f]
                f += 1
            else:
                if a < 0 or (e < wrp[j + 1] and wn[e] < an[a]):
                    n = wn[e]
                    v = wv[e]
                    e += 1
                else:
                    n = an[a]
                    v = av[a]
                    a = anext[a]
                fl = 0
                if f < frp[0, j + 1] and fen[0, f] == n:
                    fl = fev[0, f]
                    f += 1
            v = max(min(v, job_node_cap[j, n]), fl)
            if v > 0:
                nzn[c] = n
                nzv[c] = v
                nzf[c] = fl
                c += 1
        if interference and c > 1:
            lost = False  # a share's node held by an earlier distributed job: keep the shares only
            for i in range(c):
                if nzf[i] > 0 and owner[nzn[i]] >= 0 and owner[nzn[i]] != j:
                    lost = True
            for i in range(c):
                n = nzn[i]
                if lost:
                    if nzf[i] == 0:
                        nzv[i] = 0
                elif owner[n] >= 0 and owner[n] != j:
                    nzv[i] = 0
                else:
                    owner[n] = j
        for i in range(c):
            perm[i] = i
        for i in range(c - 1, 0, -1):  # a random order of the job's nodes (Fisher-Yates)
            m = rng_randint(st, 0, i + 1)
            t = perm[i]
            perm[i] = perm[m]
            perm[m] = t
        tot = 0
        nodes = 0
        for i in range(c):
            if nzf[i] > 0:
                tot += nzf[i]
                nodes += 1
        for i in range(c):
            q = perm[i]
            v = min(nzv[q] - nzf[q], max_gpus[j] - tot)
            if v > 0:
                if nzf[q] == 0:
                    if nodes >= max_nodes:
                        v = 0
                    else:
                        nodes += 1
            else:
                v = 0
            nzv[q] = nzf[q] + v
            tot += v
        tot = 0
        for i in range(c):
            n = nzn[i]
            v = min(nzv[i], node_cap[n] - cum[n] + nzf[i])
            nzv[i] = v
            cum[n] += v - nzf[i]
            tot += v
        if tot >= min_gpus[j]:
            for i in range(c):
                if nzv[i] > 0:
                    out_en[slot, o] = nzn[i]
                    out_ev[slot, o] = nzv[i]
                    o += 1
    out_rp[slot, J] = o


def scratch(J: int, N: int):
    """The scratch arrays `make_child` takes (sized for any input: at most J × N entries), the
    random state last."""
    E = J * N + 1
    z = np.zeros
    return (z(J + 1, np.int64), z(E, np.int16), z(E, np.int16), z(J, np.bool_), z(J, np.bool_), z(N, np.int64),
            z(N, np.int64), z(J, np.int64), z(J, np.int64), z(E, np.int64), z(E, np.int16), z(E, np.int16),
            z(N, np.int64), z(N, np.int64), z(N + 1, np.int64), z(N + 1, np.int64), z(N + 1, np.int64),
            z(N + 1, np.int64), z(1, np.uint64))


# ---- objectives ----------------------------------------------------------------------------


@njit(cache=True)
def objective_one(rp, en, ev, k, speedups, brp, ben, bev, penalty, scale, p, node_cap, occ):
    """(−fitness, −utility) of individual k (formulas in `ga`'s module doc); `occ` (bool[N]) is scratch."""
    J = rp.shape[1] - 1
    N = node_cap.shape[0]
    max_n = speedups.shape[1] - 1
    max_r = speedups.shape[2] - 1
    acc = 0.0
    sp_sum = 0.0
    for n in range(N):
        occ[n] = False
    for j in range(J):
        nodes = 0
        reps = 0
        lo, hi = rp[k, j], rp[k, j + 1]
        blo, bhi = brp[0, j], brp[0, j + 1]
        changed = (hi - lo) != (bhi - blo)
        for e in range(lo, hi):
            v = ev[k, e]
            if v > 0:
                nodes += 1
                reps += v
                occ[en[k, e]] = True
            if not changed and (en[k, e] != ben[0, blo + e - lo] or v != bev[0, blo + e - lo]):
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


# ---- the loop ----------------------------------------------------------------------------


@njit(cache=True)
def _gather(rp, en, ev, PF, H, crowd, sel):
    """Move the individuals `sel` (with objectives, hashes, crowding) to the front of the pool."""
    n = sel.shape[0]
    trp, ten, tev = rp[sel], en[sel], ev[sel]  # copies: sel may read slots it also writes
    tf, th, tc = PF[sel], H[sel], crowd[sel]
    for i in range(n):
        rp[i] = trp[i]
        en[i] = ten[i]
        ev[i] = tev[i]
        PF[i] = tf[i]
        H[i] = th[i]
        crowd[i] = tc[i]
    return n


@njit(cache=True)
def evolve_kernel(init, speedups, base, penalty, scale, p, node_cap, job_node_cap, max_gpus, min_gpus, floor,
                  max_nodes, interference, pop_size, generations, crossover_prob, max_tries, seed, W):
    """NSGA-II from the dense `init` (int[K, J, N], repaired here). Returns (the population, dense
    int16[P, J, N], its objectives F[P, 2], the index of the chosen individual: least −fitness,
    then least −utility, so on the first front). `floor`: int[J, N] pinned minimum shares (zeros:
    none). W: `scratch(J, N)`."""
    st = W[18]
    rng_seed(st, seed)
    K, J, N = init.shape
    E = 1
    for n in range(N):
        E += max(node_cap[n], 0)
    cap = max(K, 2 * pop_size) + 1
    rp = np.zeros((cap, J + 1), np.int64)
    en = np.zeros((cap, E), np.int16)
    ev = np.zeros((cap, E), np.int16)
    PF = np.empty((cap, 2))
    H = np.empty(cap, np.uint64)
    crowd = np.zeros(cap)
    occ = np.zeros(N, np.bool_)
    brp = np.zeros((1, J + 1), np.int64)
    ben = np.zeros((1, J * N + 1), np.int16)
    bev = np.zeros((1, J * N + 1), np.int16)
    base3 = base.reshape((1, J, N))
    to_sparse(base3, 0, brp, ben, bev, 0)
    frp, fen, fev, res = floor_arrays(floor)
    raw_rp = np.zeros((1, J + 1), np.int64)
    raw_en = np.zeros((1, J * N + 1), np.int16)
    raw_ev = np.zeros((1, J * N + 1), np.int16)

    P = 0  # the initial population: repaired, duplicates dropped, then the best pop_size
    for i in range(K):
        to_sparse(init, i, raw_rp, raw_en, raw_ev, 0)
        make_child(raw_rp, raw_en, raw_ev, 0, 0, 0, False, False, True, brp, ben, bev, node_cap, job_node_cap,
                   max_gpus, min_gpus, frp, fen, fev, res, max_nodes, interference, rp, en, ev, P, W)
        h = hash_one(rp, en, ev, P, N)
        if _seen(H, h, rp, en, ev, P):
            continue
        H[P] = h
        PF[P, 0], PF[P, 1] = objective_one(rp, en, ev, P, speedups, brp, ben, bev, penalty, scale, p, node_cap, occ)
        P += 1
    sel = survive(PF[:P], pop_size, crowd[:P], st)
    P = _gather(rp, en, ev, PF, H, crowd, sel)

    for _g in range(generations):
        got = 0
        for _t in range(max_tries):
            m = (pop_size - got + 1) // 2
            par = tournament(PF[:P], crowd[:P], P, 2 * m, st)
            for i in range(m):
                point = rng_randint(st, 0, J)
                swap = rng_random(st) < crossover_prob
                for side in range(2):
                    if got >= pop_size:
                        break
                    a, b = (par[i], par[m + i]) if side == 0 else (par[m + i], par[i])
                    slot = P + got
                    make_child(rp, en, ev, a, b, point, swap, True, True, brp, ben, bev, node_cap, job_node_cap,
                               max_gpus, min_gpus, frp, fen, fev, res, max_nodes, interference, rp, en, ev, slot,
                               W)
                    h = hash_one(rp, en, ev, slot, N)
                    if _seen(H, h, rp, en, ev, slot):
                        continue  # dropped: the slot is reused
                    H[slot] = h
                    PF[slot, 0], PF[slot, 1] = objective_one(rp, en, ev, slot, speedups, brp, ben, bev, penalty,
                                                             scale, p, node_cap, occ)
                    got += 1
            if got >= pop_size:
                break
        sel = survive(PF[:P + got], pop_size, crowd[:P + got], st)
        P = _gather(rp, en, ev, PF, H, crowd, sel)
    best = 0
    for i in range(1, P):
        if PF[i, 0] < PF[best, 0] or (PF[i, 0] == PF[best, 0] and PF[i, 1] < PF[best, 1]):
            best = i
    pop = np.empty((P, J, N), np.int16)
    for i in range(P):
        to_dense(rp, en, ev, i, pop, i)
    return pop, PF[:P].copy(), best
