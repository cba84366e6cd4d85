"""Gavel's finish-time-fairness program at 1,000 jobs × 8 GPU types (issue 14: a fresh decision < 50 ms).

The inputs are those of a fresh `gavel objective=finish_time_fairness` policy's first call on
`bench_policies.hetero_view(8)` (2,048 GPUs split into 8 types of 256, 1,000 active jobs),
captured from `gavel._inverse_rate_lp`; the benchmark then times, in CPU ms (user + sys of
this process: wall times inflate with the load of a shared machine, printed beside them):

- `solve`: `gavel._ftf_dinkelbach` on those inputs (the LPs, their build and the certificate),
  with its objective and number of LPs;
- `fresh gavel` / `fresh themis-ftf-lp`: a fresh policy's first `decide` (the LP plus one
  round: `bench_policies --table`'s "fresh" number for the 8-type rows).

    nice -n 10 python -m benchmarks.bench_ftf [--repeats 7]

Before/after a change run it alternately in both checkouts (`git worktree add /tmp/base main`):
    for i in 1 2 3; do (cd /tmp/base && python -m benchmarks.bench_ftf); python -m benchmarks.bench_ftf; done
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def capture_inputs() -> tuple[object, dict]:
    """(the 8-type view, the keyword arguments of the FTF program a fresh Gavel policy solves on it)."""
    import policies
    import policies.gavel as G
    from benchmarks.bench_policies import hetero_view

    view = hetero_view(8)
    got: dict = {}
    orig = G._inverse_rate_lp

    def spy(tput, sf, num_gpus, **kw):
        got.update(tput=tput, sf=sf, num_gpus=num_gpus, **kw)
        return orig(tput, sf, num_gpus, **kw)

    G._inverse_rate_lp = spy
    try:
        policies.make("gavel", objective="finish_time_fairness").decide(view, view.now)
    finally:
        G._inverse_rate_lp = orig
    return view, got


def _best(fn, repeats: int) -> tuple[float, float, object]:
    """(best CPU ms, best wall ms, last result) of `repeats` calls of `fn`."""
    cpu, wall, out = [], [], None
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return min(cpu) * 1e3, min(wall) * 1e3, out


def main(argv: list[str] | None = None) -> None:
    import policies
    import policies.gavel as G

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args(argv)
    view, kw = capture_inputs()
    tput, sf, num = kw["tput"], kw["sf"], kw["num_gpus"]
    fa, fc = kw["ftf"]
    cpu, wall, (_, obj, its) = _best(lambda: G._ftf_dinkelbach(tput, sf, num, fa, fc), a.repeats)
    print(f"1-min load {os.getloadavg()[0]:.2f}; {tput.shape[0]} jobs x {tput.shape[1]} types")
    print(f"solve                 CPU {cpu:6.1f} ms  wall {wall:6.1f} ms  objective {obj:.12g}  LPs {its}  "
          f"lower bound max(a+c) {float(np.max(fa + fc)):.12g}")
    for name, params in (("gavel", {"objective": "finish_time_fairness"}), ("themis-ftf-lp", {})):
        policies.make(name, **params).decide(view, view.now)  # numba kernels / caches loaded
        cpu, wall, _ = _best(lambda n=name, p=params: policies.make(n, **p).decide(view, view.now), a.repeats)
        print(f"fresh {name:<15} CPU {cpu:6.1f} ms  wall {wall:6.1f} ms")
    print(f"1-min load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
