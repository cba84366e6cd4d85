"""Aryl's metrics (`../shared/seeds/notes/aryl.md` §7) from one policy's run outputs.

Definitions (the paper leaves several open; each choice is named here):

- queueing time = first start − submit (`queueing_delay_s`); JCT = end − submit; mean, median,
  p75, p95, p99 over finished jobs.
- training usage = time-averaged busy / online GPUs over the submission window (on-loan GPUs
  in numerator and denominator: the paper's "changing denominator" reading).
- overall usage = (training GPU-s busy on any server + inference GPU-s busy) / (GPU-s of both
  clusters) over the window, inference busy = the load series' utilisation × inference GPUs
  (`simcore.capacity.diurnal_series`: u ≈ nodes_needed / N − headroom), raw GPU counts.
- preemption ratio = jobs evicted by reclaims / jobs submitted (footnote 2's denominator).
- scaling operations = `resize` rows of decisions.parquet (flexible workers added or removed).
- Table 7's "jobs that ran on on-loan servers": jobs with a start/resume/resize onto a GPU of an
  inference server (GPU id ≥ 8 × training servers: the preset lists training servers first).
- evicted GPUs per returned GPU: Σ GPUs of evicted jobs / GPUs returned, per reclaim event
  with a demand, averaged (a proxy of collateral damage: it counts the evicted jobs' GPUs on
  the returned servers too, since the logs do not split them).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

PCTS = (("mean", None), ("median", 50), ("p75", 75), ("p95", 95), ("p99", 99))


def _stats(x: np.ndarray, prefix: str) -> dict:
    out = {}
    for name, q in PCTS:
        out[f"{prefix}_{name}_s"] = float(np.mean(x)) if q is None else float(np.percentile(x, q)) if x.size else math.nan
    return out


def _time_avg(t: np.ndarray, v: np.ndarray, end: float) -> float:
    """Average of a step function (value v[i] from t[i]) over [0, end]."""
    if t.size == 0:
        return math.nan
    keep = t < end
    t, v = t[keep], v[keep]
    dt = np.diff(np.append(t, end))
    return float((v * dt).sum() / max(dt.sum(), 1e-9))


def policy_metrics(run_dir: Path, window_s: float, inference_gpus: int = 0, headroom: float = 0.0,
                   seed: int = 0, inference_nodes: int = 0) -> dict:
    """Aryl's table columns for one policy folder (jobs/timeline/reclaims Parquet)."""
    run_dir = Path(run_dir)
    jobs = pd.read_parquet(run_dir / "jobs.parquet")
    done = jobs[jobs["finished"]]
    out: dict = {"jobs": len(jobs), "finished": int(len(done))}
    out.update(_stats(done["queueing_delay_s"].to_numpy(float), "qt"))
    out.update(_stats(done["jct_s"].to_numpy(float), "jct"))
    tl = pd.read_parquet(run_dir / "timeline.parquet")
    t = tl["time_s"].to_numpy(float)
    busy = tl["busy_gpus"].to_numpy(float)
    online = tl["online_gpus"].to_numpy(float)
    out["training_usage"] = _time_avg(t, busy / np.maximum(online, 1), window_s)
    dec_p = run_dir / "decisions.parquet"
    if dec_p.is_file():
        dec = pd.read_parquet(dec_p, columns=["action"])
        out["scaling_ops"] = int((dec["action"] == "resize").sum())
    rec_p = run_dir / "reclaims.parquet"
    evicted = 0
    cd: list[float] = []
    if rec_p.is_file():
        rec = pd.read_parquet(rec_p)
        size = dict(zip(jobs["job_id"].astype(str), jobs["num_gpus"].astype(int)))
        for _, r in rec.iterrows():
            ev = [x for x in str(r["jobs_evicted"]).split(",") if x]
            evicted += len(ev)
            if int(r["demanded"]) > 0:
                cd.append(sum(size.get(x, 0) for x in ev) / (8.0 * int(r["demanded"])))
        out["reclaim_events"] = int(len(rec))
        out["servers_reclaimed"] = int(rec["demanded"].sum())
    out["preemptions"] = evicted
    out["preemption_ratio"] = evicted / max(len(jobs), 1)
    out["evicted_gpus_per_returned_gpu"] = float(np.mean(cd)) if cd else 0.0
    if inference_gpus and inference_nodes:
        from simcore.capacity import diurnal_series

        s = diurnal_series("inference", inference_nodes, headroom, window_s, seed)
        u = np.clip(s["nodes_needed"].to_numpy(float) / inference_nodes - headroom, 0, 1)
        inf_busy = _time_avg(s["time_s"].to_numpy(float), u * inference_gpus, window_s)
        out["inference_busy_gpus"] = inf_busy
        out["training_busy_gpus"] = _time_avg(t, busy, window_s)
    return out


def overall_usage(m: dict, training_gpus: int, inference_gpus: int) -> float:
    """(training busy + inference busy) / (both clusters' GPUs), time-averaged over the window."""
    if "inference_busy_gpus" not in m:
        return math.nan
    return (m["training_busy_gpus"] + m["inference_busy_gpus"]) / (training_gpus + inference_gpus)


def onloan_jobs(run_dir: Path, training_gpus: int) -> set[str]:
    """Jobs placed at least once on an inference (on-loan) server's GPU."""
    dec = pd.read_parquet(Path(run_dir) / "decisions.parquet", columns=["job_id", "action", "gpus"])
    dec = dec[dec["action"].isin(["start", "resume", "resize", "migrate"])]
    hit = dec["gpus"].astype(str).map(lambda s: any(int(x) >= training_gpus for x in s.split(",") if x))
    return set(dec.loc[hit, "job_id"].astype(str))


def subset_stats(run_dir: Path, job_ids: set[str]) -> dict:
    """Queueing and JCT statistics of the given jobs in one run."""
    jobs = pd.read_parquet(Path(run_dir) / "jobs.parquet")
    sel = jobs[jobs["job_id"].astype(str).isin(job_ids) & jobs["finished"]]
    out = {"jobs": int(len(sel))}
    out.update(_stats(sel["queueing_delay_s"].to_numpy(float), "qt"))
    out.update(_stats(sel["jct_s"].to_numpy(float), "jct"))
    return out
