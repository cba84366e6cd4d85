"""One Pollux decision at Aryl's full size, which decides the `es-pollux` GA of `cosim reproduce aryl --size full`.

The full size is 443 training + 520 inference servers of 8 GPUs (963 × 8 = 7,704; here 960 × 8 = 7,680, the
policy benchmarks' leaf/pod shape) and ≈1,700 active jobs (Little's law on the 15-day stand-in: 170,309
jobs over 1.296 M s × the FIFO run's mean JCT 13,211 s). A 60-s scheduler tick over 15 days is 21,600
rounds, so CPU seconds per decision × 21,600 is this one cell's policy cost:

- `bench_pollux_aryl_full_paper_ga`: population 100 × 100 generations (Pollux's own setting; the Aryl
  paper even used 250 iterations);
- `bench_pollux_aryl_full_reduced_ga`: population 10 × 4 generations (the catalog's small/medium/full
  `es-pollux`).

Each is one warm `decide` (the GA starts from the previous call's population, agents fitted as in
`bench_pollux`); the detail gives the CPU time, the number that matters on a shared machine.

Run: ``python -m benchmarks.run --only pollux_aryl``.
"""

from __future__ import annotations

NODES, JOBS = 960, 1700
ROUNDS = 21_600  # 15 days at the 60-s tick


def _time(population: int, generations: int, name: str) -> dict:
    import benchmarks.bench_policies as bp
    from benchmarks.bench_pollux import _time as time_pollux

    nodes = bp.NODES
    bp.NODES = NODES  # build_view reads the module's cluster shape
    try:
        view = bp.build_view(n_jobs=JOBS, engine_fields=True)
    finally:
        bp.NODES = nodes
    r = time_pollux(view, name, "decides the full size's es-pollux GA (see module doc)", repeats=1,
                    population=population, generations=generations)
    cpu = float(r["detail"].rsplit("CPU ", 1)[1].rstrip(" s)"))
    r["detail"] += f"; x {ROUNDS:,} rounds = {cpu * ROUNDS / 3600:.1f} CPU h"
    return r


def bench_pollux_aryl_full_paper_ga() -> dict:
    return _time(100, 100, "pollux_aryl_full_paper_ga")


def bench_pollux_aryl_full_reduced_ga() -> dict:
    return _time(10, 4, "pollux_aryl_full_reduced_ga")


if __name__ == "__main__":
    for f in (bench_pollux_aryl_full_paper_ga, bench_pollux_aryl_full_reduced_ga):
        print(f())
