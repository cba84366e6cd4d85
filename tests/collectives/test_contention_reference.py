"""The numba phase simulation against a plain-Python discrete-event reference.

The reference below shares no code with ``collectives.contention_exact``: it keeps an explicit
list of scheduled events (iteration start, communication start, compute end), derives the
communication completions from the current rates, and computes max-min rates with the
textbook bottleneck algorithm (one bottleneck link at a time, the solo cap modelled as a
private virtual link of capacity 1 per job).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from collectives.contention import initial_offsets, quantise, solo_iteration_s, solve
from collectives.contention_exact import simulate_group


def reference_rates(active, weight, demand, cap):
    """Max-min fair rates x_j (fraction of solo speed) for the jobs in ``active``.

    ``demand[j]`` maps link -> bytes/s at solo speed; ``cap`` maps link -> bytes/s.
    """
    links = {("cap", j): 1.0 for j in active}  # solo cap: x_j * 1 <= 1
    use = {("cap", j): {j: 1.0} for j in active}
    for j in active:
        for lk, d in demand[j].items():
            links.setdefault(lk, cap[lk])
            use.setdefault(lk, {})[j] = d
    rate = {}
    left = dict(links)
    while len(rate) < len(active):
        best_link, best_level = None, None
        for lk, users in use.items():
            free_weight = sum(weight[j] * d for j, d in users.items() if j not in rate)
            if free_weight == 0:
                continue
            level = left[lk] / free_weight
            if best_level is None or level < best_level:
                best_link, best_level = lk, level
        for j in use[best_link]:
            if j in rate:
                continue
            rate[j] = weight[j] * best_level
            for lk, users in use.items():
                if j in users:
                    left[lk] -= rate[j] * users[j]
    return rate


def reference_simulate(C, s, M, w, demand, cap, offsets, n_iters):
    """Iteration end times of every job until each has completed ``n_iters`` iterations."""
    n = len(C)
    scale = max(offsets[j] + C[j] + M[j] for j in range(n))
    tol = 1e-10 * scale
    events = [(offsets[j], "start", j) for j in range(n)]  # scheduled (time, kind, job)
    remaining = {}  # communicating job -> solo seconds of communication left
    rate = {}
    comm_done = [False] * n
    compute_done = [False] * n
    ends = [[] for _ in range(n)]
    t = 0.0
    while min(len(e) for e in ends) < n_iters:
        t_next = min(ev[0] for ev in events) if events else float("inf")
        for j, r in remaining.items():
            t_next = min(t_next, t + r / rate[j])
        for j in remaining:
            remaining[j] -= (t_next - t) * rate[j]
        t = t_next
        changed = True
        while changed:
            changed = False
            for ev in sorted(events):
                if ev[0] > t + tol:
                    continue
                events.remove(ev)
                changed = True
                _, kind, j = ev
                if kind == "start":
                    comm_done[j] = compute_done[j] = False
                    events.append((t + s[j], "comm", j))
                    events.append((t + C[j], "compute_end", j))
                elif kind == "comm":
                    remaining[j] = M[j]
                elif kind == "compute_end":
                    compute_done[j] = True
                    if comm_done[j]:
                        ends[j].append(t)
                        events.append((t, "start", j))
            for j in [j for j, r in remaining.items() if j in rate and r <= tol * rate[j]]:
                del remaining[j]
                comm_done[j] = True
                changed = True
                if compute_done[j]:
                    ends[j].append(t)
                    events.append((t, "start", j))
        rate = reference_rates(list(remaining), w, demand, cap) if remaining else {}
    return ends


def random_case(rng: random.Random, n_jobs: int, n_links: int):
    """A random group: every job crosses 1-3 links, demands up to the capacity."""
    C = [rng.choice([0.0, rng.uniform(0.2, 3.0)]) if rng.random() < 0.1 else rng.uniform(0.2, 3.0)
         for _ in range(n_jobs)]
    s = [c * rng.choice([0.0, 1.0, rng.random()]) for c in C]
    M = [rng.uniform(0.1, 2.0) for _ in range(n_jobs)]
    w = [1.0 if rng.random() < 0.7 else rng.uniform(0.5, 2.0) for _ in range(n_jobs)]
    cap = [rng.uniform(1.0, 4.0) for _ in range(n_links)]
    demand = []
    for j in range(n_jobs):
        links = rng.sample(range(n_links), rng.randint(1, min(3, n_links)))
        demand.append({lk: cap[lk] * rng.uniform(0.2, 1.0) for lk in links})
    q = [list(quantise(np.array(v))) for v in (C, s, M, w)]
    demand = [{lk: float(quantise(np.array([d]))[0]) for lk, d in dj.items()} for dj in demand]
    return (*q, demand, [float(c) for c in quantise(np.array(cap))])


def to_csr(demand):
    ptr = np.zeros(len(demand) + 1, np.int64)
    lids, dem = [], []
    for j, dj in enumerate(demand):
        for lk in sorted(dj):
            lids.append(lk)
            dem.append(dj[lk])
        ptr[j + 1] = len(lids)
    return ptr, np.array(lids, np.int64), np.array(dem, np.float64)


def test_reference_rates_two_jobs_one_link_share_half():
    r = reference_rates([0, 1], [1.0, 1.0], [{0: 1.0}, {0: 1.0}], [1.0])
    assert r == {0: 0.5, 1: 0.5}


def test_reference_rates_bottleneck_elsewhere_frees_capacity():
    # job 0 capped at 0.25 by link 1; job 1 then gets the rest of link 0: 1 - 0.25
    r = reference_rates([0, 1], [1.0, 1.0], [{0: 1.0, 1: 4.0}, {0: 1.0}], [1.0, 1.0])
    assert r[0] == pytest.approx(0.25) and r[1] == pytest.approx(0.75)


@pytest.mark.parametrize("seed", range(24))
def test_kernel_matches_reference_same_window(seed):
    """Same offsets, same iteration window: kernel and reference agree within 1% (in fact ~1e-9)."""
    rng = random.Random(seed)
    n_jobs = rng.randint(2, 5)
    C, s, M, w, demand, cap = random_case(rng, n_jobs, rng.randint(1, 4))
    ptr, lids, dem = to_csr(demand)
    offsets = [rng.uniform(0.0, c + m) for c, m in zip(C, M)]
    warm = 3
    mean, count, _, _ = simulate_group(np.array(C), np.array(s), np.array(M), np.array(w), ptr, lids, dem,
                                       np.array(cap), np.array(offsets), warm, 8, 0.0, 40, 10**6)
    ends = reference_simulate(C, s, M, w, demand, cap, offsets, int(count.max()))
    for j in range(n_jobs):
        k = int(count[j])
        ref = (ends[j][k - 1] - ends[j][warm - 1]) / (k - warm)
        assert mean[j] == pytest.approx(ref, rel=0.01), (j, mean, ref)
        assert mean[j] == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("seed", range(100, 112))
def test_solve_settled_matches_long_reference(seed):
    """solve()'s settled answer (staggered offsets) vs a long reference run: within 1%."""
    rng = random.Random(seed)
    n_jobs = rng.randint(2, 4)
    C, s, M, w, demand, cap = random_case(rng, n_jobs, rng.randint(1, 3))
    # one group: make every job cross link 0
    for j, dj in enumerate(demand):
        dj.setdefault(0, float(quantise(np.array([cap[0] * 0.6]))[0]))
    ptr, lids, dem = to_csr(demand)
    it, exposed = solve(np.array(C), np.array(s), np.array(M), ptr, lids, dem, np.array(cap),
                        weight=np.array(w), cache=None)
    offsets = initial_offsets("staggered", solo_iteration_s(np.array(C), np.array(s), np.array(M)))
    n_iter = 150
    ends = reference_simulate(C, s, M, w, demand, cap, list(offsets), n_iter)
    for j in range(n_jobs):
        ref = (ends[j][n_iter - 1] - ends[j][3]) / (n_iter - 4)
        assert it[j] == pytest.approx(ref, rel=0.01), (j, it, ref)
        assert exposed[j] == pytest.approx(it[j] - C[j])
