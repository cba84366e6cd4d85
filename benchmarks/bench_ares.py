"""Ares policy time per decision, 64 → 2,048 GPUs (the paper's Fig. 11; target < 10 ms at 2,048).

Scenario (Ares §5.4, `../shared/seeds/notes/ares.md` §5.2): the Ares simulation cluster
(`ares-sim`: 4 RTX 2080 Ti per node) with 16·k nodes for k = 1, 2, 4, …, 32 (64 … 2,048
GPUs) and Helios-Saturn jobs arriving at 20 jobs/h per 64 GPUs — the authors' scale
workloads `helios-saturn/scale/scale_<k>x/workload-1.csv` from ../shared/data when present
(`scale_1x` = the 160-job `workloads/workload-1.csv`), else `synth:helios` at that rate.
Only the first `HOURS` of arrivals are simulated (the artifact truncates its scale runs
too, `--early_exit 480`), and the run continues until they all finish. Contention is off
(it changes iteration times, not the policy's work). Every call of `Ares.decide` is timed;
the number is the median wall time of the calls that re-ran the allocation (a job arrived or
completed), with the 25th/75th percentiles and the mean over every call in the detail.

Both readings are measured: `ares` (the paper's virtual clock) and `ares-artifact` (the fluid
GPS re-simulated at every arrival, as the authors' simulator whose runtime Fig. 11 reports).

Run: ``python -m benchmarks.bench_ares`` (or ``cosim bench --only ares``);
``COSIM_BENCH_ARES_HOURS`` sets the hours of arrivals (default 1).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np

TARGET_MS = 10.0
SCALES = (1, 2, 4, 8, 16, 32)
HOURS = float(os.environ.get("COSIM_BENCH_ARES_HOURS", "1"))
SHARED = Path(os.environ.get("COSIM_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _trace(k: int, tmp: Path) -> str:
    """The scale workload of k × 64 GPUs cut to the first HOURS of arrivals, as a CSV path."""
    import pandas as pd

    base = SHARED / "traces" / "helios-saturn"
    src = base / "workloads" / "workload-1.csv" if k == 1 else base / "scale" / f"scale_{k}x" / "workload-1.csv"
    if not src.is_file():
        return f"synth:helios:{int(20 * k * HOURS)}:{HOURS:g}h"
    df = pd.read_csv(src)
    df = df[df["time"] < HOURS * 3600.0]
    out = tmp / f"helios-scale-{k}x.csv"
    df.to_csv(out, index=False)
    return str(out)


def measure(k: int, tmp: Path, mode: str = "paper") -> dict:
    from experiments.runner import RunConfig, real_backends, run
    from policies import make

    name = "ares" if mode == "paper" else "ares-artifact"
    cfg = RunConfig(trace=_trace(k, tmp), cluster="ares-sim", cluster_nodes=16 * k, policies=(name,),
                    contention=False, costs="ares-paper")
    pol = make(name)
    calls: list[tuple[float, bool]] = []
    inner = pol.decide

    def timed(view, now):
        before = pol.decisions
        t0 = time.perf_counter()
        d = inner(view, now)
        calls.append((time.perf_counter() - t0, pol.decisions > before))
        return d

    pol.decide = timed
    be = dataclasses.replace(real_backends(cfg), make_policy=lambda n, p: pol)
    t0 = time.perf_counter()
    res = run(cfg, None, backends=be)
    wall = time.perf_counter() - t0
    dec = np.array([w for w, d in calls if d]) * 1e3
    every = np.array([w for w, _ in calls]) * 1e3
    jobs = int(res.summary["jobs"].iloc[0])
    return {
        "name": f"ares_{mode}_decision_{64 * k}gpus",
        "value": float(np.median(dec)) if dec.size else float("nan"),
        "unit": "ms",
        "target": f"< {TARGET_MS:g} ms" if k == 32 else "",
        "detail": (f"{64 * k} GPUs, {jobs} jobs ({HOURS:g} h of arrivals); {dec.size} decisions: p25 "
                   f"{np.percentile(dec, 25):.2f} / median {np.median(dec):.2f} / p75 {np.percentile(dec, 75):.2f} "
                   f"/ max {dec.max():.2f} ms; {every.size} calls, mean {every.mean():.2f} ms; run {wall:.1f} s"),
    }


def bench_ares_decision_time() -> list[dict]:
    """The paper's algorithm (`ares`: virtual clock, O(log N) per arrival)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        return [measure(k, Path(d)) for k in SCALES]


def bench_ares_artifact_decision_time() -> list[dict]:
    """The artifact's reading (`ares-artifact`: the fluid GPS re-simulated at every arrival)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        return [measure(k, Path(d), mode="artifact") for k in SCALES]


if __name__ == "__main__":
    import sys

    for r in bench_ares_decision_time() + bench_ares_artifact_decision_time():
        print(f"{r['name']:36s} {r['value']:8.3f} {r['unit']}  {r['target']:10s} {r['detail']}", file=sys.stdout)
