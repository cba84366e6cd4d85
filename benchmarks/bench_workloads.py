"""Baseline policies on the shared Pollux/Sia/Ares workloads, as in the Ares main simulation.

Ares (seeds/notes/ares.md §5.2) runs 160-job / 8-h Philly and Helios-Saturn samples on a
64-GPU cluster of 16 nodes × 4 RTX 2080 Ti; here that is the `ares-testbed` preset resized to
16 nodes. Each job is its model's fixed-epoch training run (`traces.workload.assemble`,
``work="missing"``: the workload rows carry no duration). The literature's ordering to check:
Tiresias's average JCT below FIFO's.

Also measured: candidates for the embedded default of `cosim simulate` (64-GPU DGX-A100), each a
160-job synthetic trace whose jobs are Ares-style training runs (``assemble(work="epochs")``),
written to Parquet and run through `experiments.runner.run`. The current default (synth philly:160,
replay work) gives every policy the same JCT: 147 of its 160 jobs use one GPU, utilisation ≈
0.2. The proposal is Helios-like jobs (4–16 GPUs, as in the Pollux/Sia/Ares workloads) arriving
4× faster than Ares' 20 jobs/h: A100s run these training runs ≈3.4× faster than the 2080 Tis
Ares simulated (SRTF avg JCT on philly/helios workload-2: 0.70 → 0.21 h, 0.67 → 0.19 h), so
80 jobs/h offers them about Ares' load.

Run: ``python -m benchmarks.bench_workloads`` (prints the per-workload table, then the
benchmark rows). Needs ../shared/data for the workload rows (NaN with a detail when absent).
"""

from __future__ import annotations

import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
SETS = {"philly": SHARED / "philly" / "workloads", "helios-saturn": SHARED / "helios-saturn" / "workloads"}
CLUSTER, NODES = "ares-testbed", 16  # 16 nodes × 4 RTX 2080 Ti = 64 GPUs, as Ares' main simulation
COLUMNS = ("avg_jct_s", "p99_jct_s", "makespan_s", "unfair_fraction", "worst_ftf", "gpu_utilization")


def workload_files(trace_set: str) -> list[Path]:
    d = SETS[trace_set]
    return sorted(d.glob("workload-*.csv"), key=lambda p: int(p.stem.split("-")[1])) if d.is_dir() else []


def compare(trace: str | Path, policies: tuple[str, ...] = (), cluster: str = CLUSTER, nodes: int | None = NODES,
            seed: int = 0) -> pd.DataFrame:
    """Summary rows (one per policy) of one trace on one cluster, in memory."""
    from experiments.runner import RunConfig, run

    cfg = RunConfig(trace=str(trace), cluster=cluster, cluster_nodes=nodes, policies=tuple(policies), seed=seed)
    return run(cfg, None).summary


def epochs_default(num_jobs: int = 160, like: str = "helios", seed: int = 0, rate_factor: float = 4.0,
                   path: Path | None = None) -> Path:
    """A default-workload candidate as Parquet: synthetic `like` jobs as fixed-epoch training runs,
    arrivals `rate_factor` × faster than the fitted rate (submit times divided by it)."""
    from traces import synth
    from traces.io import write_jobs
    from traces.workload import assemble

    df = synth.synthesize(like, num_jobs, seed)
    df["submit_time"] = df["submit_time"] / rate_factor
    df = assemble(df, seed, work="epochs")
    path = path or Path(tempfile.mkdtemp()) / f"{like}-{num_jobs}-x{rate_factor:g}-epochs.parquet"
    write_jobs(df, path)
    return path


def _ratio(trace_set: str) -> dict:
    name = f"tiresias / fifo avg JCT, {trace_set} workloads on 64 GPUs"
    files = workload_files(trace_set)
    if not files:
        return dict(name=name, value=float("nan"), unit="ratio", target="< 1",
                    detail=f"skipped: {SETS[trace_set]} not found")
    ratios = []
    for f in files:
        s = compare(f, ("fifo", "tiresias")).set_index("policy")
        ratios.append(s.loc["tiresias", "avg_jct_s"] / s.loc["fifo", "avg_jct_s"])
    worst = max(ratios)
    return dict(name=name, value=round(sum(ratios) / len(ratios), 4), unit="ratio", target="< 1",
                detail=f"{len(files)} workloads; per file {', '.join(f'{r:.3f}' for r in ratios)}; worst {worst:.3f}")


def bench_tiresias_vs_fifo_philly() -> dict:
    return _ratio("philly")


def bench_tiresias_vs_fifo_helios() -> dict:
    return _ratio("helios-saturn")


#: Default-workload candidates: label → (like, rate factor); the current default for contrast.
CANDIDATES = {"philly:160 replay (current)": None, "philly:160 epochs": ("philly", 1.0),
              "helios:160 epochs": ("helios", 1.0), "helios:160 epochs x4 rate (proposed)": ("helios", 4.0)}


def _candidate(label: str, seed: int = 0) -> str:
    spec = CANDIDATES[label]
    return "synth:philly:160" if spec is None else str(epochs_default(160, spec[0], seed, spec[1]))


def bench_default_candidates() -> list[dict]:
    """Tiresias/FIFO avg JCT on each default candidate, 64-GPU dgx-a100, seeds 0-3 (< 1: they differ)."""
    from experiments.runner import RunConfig, run

    out = []
    for label in CANDIDATES:
        ratios, walls = [], []
        for seed in range(4):
            t0 = time.perf_counter()
            s = run(RunConfig(trace=_candidate(label, seed), cluster="dgx-a100", seed=seed,
                              policies=("fifo", "fifo-backfill", "sjf", "tiresias", "gandiva")), None).summary
            walls.append(time.perf_counter() - t0)
            s = s.set_index("policy")
            ratios.append(s.loc["tiresias", "avg_jct_s"] / s.loc["fifo", "avg_jct_s"])
        out.append(dict(name=f"tiresias/fifo avg JCT, default candidate {label}", value=round(sum(ratios) / 4, 3),
                        unit="ratio", target="< 0.9 (policies differ)",
                        detail=f"seeds 0-3: {', '.join(f'{r:.2f}' for r in ratios)}; five policies "
                               f"{', '.join(f'{w:.2f}' for w in walls)} s per run (incl. load and GPS)"))
    return out


def _fmt(v: float, col: str) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return f"{v / 3600:.2f}" if col.endswith("_s") else f"{v:.2f}"


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    header = ["set", "workload", "policy", *[c.replace("_s", "_h") for c in COLUMNS]]
    print("\t".join(header))
    for trace_set in SETS:
        for f in workload_files(trace_set):
            for _, r in compare(f).iterrows():
                print("\t".join([trace_set, f.stem, r["policy"], *[_fmt(r[c], c) for c in COLUMNS]]))
    for label in CANDIDATES:
        for _, r in compare(_candidate(label), (), "dgx-a100", None).iterrows():
            print("\t".join(["dgx-a100", label, r["policy"], *[_fmt(r[c], c) for c in COLUMNS]]))
    sys.stdout.flush()
    rows = [bench_tiresias_vs_fifo_philly(), bench_tiresias_vs_fifo_helios(), *bench_default_candidates()]
    for d in rows:
        print(f"{d['name']}: {d['value']} {d['unit']} (target {d['target']}) — {d['detail']}")


if __name__ == "__main__":
    main()
