"""The contention re-solves of bench_engine's full-Philly run, recorded and solved again.

    python -m benchmarks.replay_resolves record resolves.pkl            # the run, keeping each re-solve
    python -m benchmarks.replay_resolves replay resolves.pkl            # solve them again, timed
    python -m benchmarks.replay_resolves replay resolves.pkl --no-memo  # the same without the link memo

`record` runs `_child_philly("tiresias", --jobs)` (the full `philly_jobs.csv` on the 512-GPU
fabric unless told otherwise) with every re-solve going through `PreparedContention.solve`
(the engine's one-call re-solve is held back for the recording; the outputs are the same) and
keeps each call's prepared inputs and answer, in order (about 0.5 GB for the full trace).
`replay` feeds them, in order, to a fresh `PreparedContention` on the same fabric (empty cache
and memo, so the memo evolves as in the run): CPU seconds of the solves (`time.process_time`,
after an untimed pass that loads the kernels), answers that differ from the recorded ones in
any bit, and what a re-solve holds — jobs and job-link entries, the share that repeats an
earlier one's inputs exactly, the share with one job, and per duty-cycle group the link
evaluations computed (copies from the memo not counted).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time

import numpy as np


def record(path: str, jobs: int | None) -> None:
    import collectives.contention as cc
    from benchmarks.bench_engine import _child_philly

    calls = []
    solve = cc.PreparedContention.solve

    def keep(self, c, s, m, ptr, ids, dem, stats=None):
        it, exposed = solve(self, c, s, m, ptr, ids, dem, stats)
        calls.append((c.copy(), s.copy(), m.copy(), ptr.copy(), ids.copy(), dem.copy(), it.copy()))
        return it, exposed

    cc.PreparedContention.solve = keep
    cc.PreparedContention.large_group_args = lambda self: None
    r = _child_philly("tiresias", jobs)
    with open(path, "wb") as f:
        pickle.dump(calls, f, protocol=pickle.HIGHEST_PROTOCOL)
    print(f"{len(calls)} re-solves recorded, {r['events']} events, jobs table {r['jobs_sha1']}")


def replay(path: str, memo: bool) -> None:
    import collectives.contention as cc
    from benchmarks.bench_engine import philly_512_topology
    from collectives.contention_dutycycle import LinkMemo

    with open(path, "rb") as f:
        calls = pickle.load(f)
    cap = np.asarray(philly_512_topology().link_capacity_Bps, dtype=np.float64)

    def fresh():
        cc.DEFAULT_CACHE.clear()
        pc = cc.PreparedContention(cap)
        if not memo:
            pc.memo = LinkMemo(0)
        return pc

    for timed in (False, True):
        pc, differ = fresh(), 0
        t0 = time.process_time()
        for c, s, m, ptr, ids, dem, want in calls:
            if pc.solve(c, s, m, ptr, ids, dem)[0].tobytes() != want.tobytes():
                differ += 1
        cpu = time.process_time() - t0
    pc, groups, evals, seen = fresh(), 0, 0, set()
    for c, s, m, ptr, ids, dem, _ in calls:
        stats: dict = {}
        pc.solve(c, s, m, ptr, ids, dem, stats=stats)
        groups += stats["dutycycle_groups"]
        evals += stats["link_evaluations"]
        seen.add(b"|".join(a.tobytes() for a in (c, s, m, ptr, ids, dem)))
    n = len(calls)
    print(f"{n} re-solves, {cpu:.2f} s CPU ({1e6 * cpu / n:.0f} µs each), {differ} answers differ; "
          f"{np.mean([c[0].shape[0] for c in calls]):.1f} jobs and {np.mean([c[4].shape[0] for c in calls]):.1f} "
          f"entries each; {100 * (n - len(seen)) / n:.1f} % repeat an earlier one, "
          f"{100 * sum(c[0].shape[0] == 1 for c in calls) / n:.1f} % hold one job; "
          f"{groups} duty-cycle groups, {evals / max(groups, 1):.1f} link evaluations computed per group"
          f"{'' if memo else ' (no memo)'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("record", "replay"))
    ap.add_argument("path")
    ap.add_argument("--jobs", type=int, default=0, help="record: the first N jobs of the trace (0: all)")
    ap.add_argument("--no-memo", action="store_true", help="replay: without the duty-cycle link memo")
    args = ap.parse_args(argv)
    if args.mode == "record":
        record(args.path, args.jobs or None)
    else:
        replay(args.path, not args.no_memo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
