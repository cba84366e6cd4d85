"""FFT's per-round ILP time at the paper's scale (§6.4.1, Fig. 13a): 4,000 jobs × 8 GPU types ×
1,000 GPUs (paper: 1.53 s with cvxpy). Builds one round's costs from random Table-2-like jobs
(d ∈ {1, 2, 4, 8}, θ with per-type speed-ups 1-3×, a quarter of the jobs masked off the two
smallest-memory types, ρ and switching penalties drawn) and times `core.solve_round`
(packing ILP for K(t) + the round ILP, HiGHS). Usage: PYTHONPATH=. python benchmarks/bench_fft.py [jobs] [reps] [exact,lp_round]."""

from __future__ import annotations

import sys
import time

import numpy as np

from policies.fft import core


def instance(J: int = 4000, M: int = 8, G: int = 1000, seed: int = 0):
    rng = np.random.default_rng(seed)
    cap = np.full(M, G // M, float)
    d = rng.choice([1, 2, 4, 8], J, p=[0.4, 0.2, 0.3, 0.1]).astype(np.int64)
    speed = np.sort(rng.uniform(1.0, 3.0, M))
    theta = rng.uniform(0.05, 1.0, J)[:, None] * speed[None, :] * rng.uniform(0.9, 1.1, (J, M))
    theta[rng.random(J) < 0.25, :2] = 0.0  # memory masks
    W = rng.uniform(1, 200, J)
    a = -rng.uniform(0, 50, J)
    rho = rng.exponential(0.5, J)
    last = rng.integers(-1, M, J)
    sw = np.where((last[:, None] >= 0) & (np.arange(M)[None, :] != last[:, None]), rng.uniform(0.1, 0.5, J)[:, None], 0.0)
    return core.round_costs(0.0, a, W, W, theta, d, rho, sw), d, cap


def main() -> None:
    J = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    methods = sys.argv[3].split(",") if len(sys.argv) > 3 else ["exact", "lp_round"]
    for seed in range(reps):
        cost, d, cap = instance(J, seed=seed)
        for method in methods:
            t0 = time.perf_counter()
            choice, st = core.solve_round(cost, d, cap, method=method, lp_round_gap=5e-3)
            dt = time.perf_counter() - t0
            print(f"jobs={J} types=8 gpus={int(cap.sum())} seed={seed} method={method}: {dt:.3f} s  K={st['k']} "
                  f"busy={int(d[choice >= 0].sum())} objective={st['objective']:.2f} status={st['status']}", flush=True)


if __name__ == "__main__":
    main()
