"""Trace pipeline speed: convert philly_jobs.csv (< 2 s), load it (< 0.2 s), synthesise 1M jobs (< 10 s).

Each is the best of 3 wall-clock runs in this process (imports and numba/pyarrow warm-up are
done before timing). The conversion is the whole `cosim traces convert` path: read the CSV,
validate, normalise, write Parquet atomically. Needs ../shared/data for the first two; they
report NaN with a detail saying so when it is absent.

Run: ``python -m benchmarks.bench_traces``.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "philly" / "philly_jobs.csv"


def _best(fn, repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _missing(name: str, target: str) -> dict:
    return dict(name=name, value=float("nan"), unit="s", target=target, detail=f"skipped: {PHILLY} not found")


def bench_convert_philly() -> dict:
    from traces.formats import load_with_report
    from traces.io import write_jobs

    name, target = "convert philly_jobs.csv → Parquet", "< 2 s"
    if not PHILLY.is_file():
        return _missing(name, target)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "philly.parquet"

        def run() -> None:
            df, _ = load_with_report(PHILLY)
            write_jobs(df, out)

        secs = _best(run)
        size = out.stat().st_size
    return dict(name=name, value=secs, unit="s", target=target,
                detail=f"82,247 rows; {size / 1e6:.2f} MB Parquet")


def bench_load_philly_parquet() -> dict:
    from traces.formats import load_with_report
    from traces.io import read_jobs, write_jobs

    name, target = "load philly Parquet", "< 0.2 s"
    if not PHILLY.is_file():
        return _missing(name, target)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "philly.parquet"
        write_jobs(load_with_report(PHILLY)[0], out)
        secs = _best(lambda: read_jobs(out))
    return dict(name=name, value=secs, unit="s", target=target, detail="read_jobs: read, validate, normalise")


def bench_synth_1m() -> dict:
    from traces.synth import synthesize

    synthesize("philly", 1000, seed=0)  # warm-up
    secs = _best(lambda: synthesize("philly", 1_000_000, seed=0))
    return dict(name="synthesise 1,000,000 Philly-like jobs", value=secs, unit="s", target="< 10 s",
                detail="arrivals + GPUs + durations + canonical validation")


def main() -> None:
    rows = [bench_convert_philly(), bench_load_philly_parquet(), bench_synth_1m()]
    width = max(len(r["name"]) for r in rows)
    print(f"{'benchmark':<{width}}  {'value':>9}  unit  target   detail")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['value']:9.3f}  {r['unit']:<4}  {r['target']:<7}  {r['detail']}")


if __name__ == "__main__":
    main()
