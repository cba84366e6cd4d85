"""Decision time of Themis (auction), Themis' FTF LP and PAL at 2,048 GPUs and 1,000 active jobs.

Same scenarios as `benchmarks.bench_policies`: Themis and `themis-ftf-lp` on its
heterogeneous view (four types of 512 GPUs, a throughput table; one call = a fresh policy's
first round, the heaviest), PAL on the one-type view (the view's what-if: compute split over
the GPUs plus a costlier all-reduce across nodes) with its seeded variability model. Target:
< 50 ms per call. Run: ``python -m benchmarks.bench_themis_pal``; the table of every
policy (1 and 8 types) is ``python -m benchmarks.bench_policies --table``.
"""

from __future__ import annotations

from benchmarks.bench_policies import _time_hetero_policy, _time_policy


def rows() -> list[dict]:
    out = [_time_hetero_policy("themis"), _time_hetero_policy("themis", payment="none"),
           _time_hetero_policy("themis", fairness_knob=0.0, payment="none"),
           _time_hetero_policy("themis-ftf-lp")]
    out.append(_time_policy("pal"))
    out.append(_time_policy("pal", variability="none"))
    return out


def main() -> None:
    rs = rows()
    w = max(len(r["name"]) for r in rs)
    print(f"{'name':<{w}}  {'value':>9}  unit  target      detail")
    for r in rs:
        print(f"{r['name']:<{w}}  {r['value']:9.2f}  {r['unit']:<4}  {r['target']:<10}  {r['detail']}")


if __name__ == "__main__":
    main()
