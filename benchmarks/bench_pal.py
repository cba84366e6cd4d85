"""Where PAL's decision time goes on the policy benchmark's large views (2,048 GPUs, 1,000 active jobs).

`benchmarks.bench_policies --table --only pal` gives the fresh/warm numbers the target reads
(warm call < 50 ms); this splits a warm call into the L×V candidate kernel
(`policies._pal_kernels.lxv_candidates`), the what-if iteration-time calls that score the
candidates (the view's `iteration_time`; here the benchmark's Python stand-in), and the rest
(ordering, the round toolkit, per-job glue), in CPU ms (process time) per call: the total of
unwrapped calls, the kernel's share from wrapped calls
(one process-time read around each of its ~560 calls per decision), the what-if share by
replaying the iteration-time calls of one decision on their own.

    nice -n 10 python -m benchmarks.bench_pal --types 1,8 --repeats 10
"""

from __future__ import annotations

import argparse
import dataclasses
import time


def split(types: int, repeats: int) -> dict:
    """CPU ms per warm `decide` of PAL on `hetero_view(types)`: total, kernel, cost, and counts."""
    import policies
    import policies.pal as pal_module
    from benchmarks.bench_policies import hetero_view

    view = hetero_view(types)
    acc = {"kernel": 0.0, "calls": 0, "cand": 0}
    kernel = pal_module.lxv_candidates
    it0 = view.iteration_time
    asked = []

    def timed_kernel(*a):
        t = time.process_time()
        r = kernel(*a)
        acc["kernel"] += time.process_time() - t
        acc["calls"] += 1
        acc["cand"] += r[0].shape[0]
        return r

    pol = policies.make("pal")
    pol.decide(view, view.now)  # compile / cache load, profile
    c0 = time.process_time()
    for _ in range(repeats):
        pol.decide(view, view.now)
    total = (time.process_time() - c0) / repeats
    rec = dataclasses.replace(view, iteration_time=lambda *a: asked.append(a) or it0(*a))
    pol.decide(rec, view.now)  # the what-if calls of one decision, replayed below
    pal_module.lxv_candidates = timed_kernel
    try:
        for _ in range(repeats):
            pol.decide(view, view.now)
    finally:
        pal_module.lxv_candidates = kernel
    c0 = time.process_time()
    for _ in range(repeats):
        for a in asked:
            it0(*a)
    cost = (time.process_time() - c0) / repeats
    return {"types": types, "total_ms": total * 1e3, "kernel_ms": acc["kernel"] / repeats * 1e3,
            "cost_ms": cost * 1e3, "kernel_calls": acc["calls"] // repeats, "candidates": len(asked)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", default="1,8", help="GPU-type counts of the views (comma-separated)")
    ap.add_argument("--repeats", type=int, default=10, help="warm calls timed per view")
    a = ap.parse_args(argv)
    print("view     total CPU ms  kernel ms  cost ms  rest ms  kernel calls  candidates")
    for t in (int(x) for x in a.types.split(",")):
        r = split(t, a.repeats)
        rest = r["total_ms"] - r["kernel_ms"] - r["cost_ms"]
        print(f"{t} type{'s' if t > 1 else ' '}  {r['total_ms']:12.1f}  {r['kernel_ms']:9.1f}  {r['cost_ms']:7.1f}  "
              f"{rest:7.1f}  {r['kernel_calls']:12d}  {r['candidates']:10d}")


if __name__ == "__main__":
    main()
