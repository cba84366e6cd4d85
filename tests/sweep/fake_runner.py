"""A stand-in for `experiments.runner` with the same contract, for sweep tests that must not
depend on engine speed: deterministic small tables derived from a hash of the config.

Policy names starting with "boom" raise, to exercise failing cells.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from cosim.atomic import write_parquet, write_text


@dataclass(frozen=True)
class RunConfig:
    trace: str = "synth:philly:160"
    cluster: str = "dgx-a100"
    cluster_nodes: int | None = None
    policies: tuple[str, ...] = ("fifo",)
    policy_params: dict = field(default_factory=dict)
    contention: bool = True
    calibration: str | None = None
    seed: int = 0
    write_decisions: bool = False


@dataclass
class RunResult:
    summary: pd.DataFrame
    jobs: dict


def _rng(config: RunConfig, policy: str) -> np.random.Generator:
    key = json.dumps([config.trace, config.cluster, config.cluster_nodes, policy,
                      config.policy_params.get(policy, {}), config.contention, config.calibration, config.seed],
                     sort_keys=True)
    return np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:8], 16))


def run(config: RunConfig, out_dir: Path | None, progress: bool = False) -> RunResult:
    rows, jobs = [], {}
    for policy in config.policies:
        if policy.startswith("boom"):
            raise RuntimeError(f"policy {policy} exploded at t=42.0 s")
        if not config.trace.startswith("synth:"):
            pd.read_parquet(config.trace)  # a corrupt trace file fails the cell, as in the real runner
        rng = _rng(config, policy)
        n = int(config.trace.rsplit(":", 1)[-1]) if config.trace.startswith("synth:") else 20
        submit = np.sort(rng.uniform(0, 1000, n))
        queue = rng.exponential(50, n) * (2.0 if policy == "fifo" else 1.0)
        run_s = rng.exponential(300, n) * (1.2 if config.contention else 1.0)
        scale = float(config.policy_params.get(policy, {}).get("alpha", 1.0))
        run_s = run_s * scale
        end = submit + queue + run_s
        df = pd.DataFrame({
            "job_id": [f"j{i}" for i in range(n)], "submit_time": submit, "num_gpus": rng.integers(1, 9, n),
            "first_start": submit + queue, "end_time": end, "jct_s": end - submit, "queueing_delay_s": queue,
            "ftf": (end - submit) / (run_s * 1.1),
        })
        t = np.linspace(0, float(end.max()), 20)
        tl = pd.DataFrame({"time_s": t, "busy_gpus": np.minimum(64, (rng.uniform(0, 1, 20) * 64).round()),
                           "online_gpus": 64})
        jobs[policy] = df
        rows.append({
            "policy": policy, "jobs": n, "finished": n, "avg_jct_s": float(df.jct_s.mean()),
            "p99_jct_s": float(df.jct_s.quantile(0.99)), "makespan_s": float(end.max()),
            "avg_queueing_s": float(queue.mean()), "unfair_fraction": float((df.ftf > 1).mean()),
        })
        if out_dir is not None:
            d = Path(out_dir) / policy
            write_parquet(pa.Table.from_pandas(df, preserve_index=False), d / "jobs.parquet", {"seed": config.seed})
            write_parquet(pa.Table.from_pandas(tl, preserve_index=False), d / "timeline.parquet", {"seed": config.seed})
    summary = pd.DataFrame(rows)
    if out_dir is not None:
        write_parquet(pa.Table.from_pandas(summary, preserve_index=False), Path(out_dir) / "summary.parquet")
        write_text(json.dumps(asdict(config), default=str), Path(out_dir) / "config.json")
    return RunResult(summary, jobs)
