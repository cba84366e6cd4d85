"""Refit the committed synthetic-trace parameters from ../shared/data.

    python -m traces.synth_fit [SHARED_DATA_DIR] [-o traces/data]

* ``philly``: `philly/philly_jobs.csv` (82,247 jobs, Sep–Dec 2017). Hour-of-day arrival
  profile from the timestamps, GPU histogram, per-bucket duration quantiles.
* ``helios``: Helios-Saturn as Pollux/Sia/Ares sample it, the only Helios data here
  (`helios-saturn/workloads/workload-*.csv`, 6 × 160 jobs in 8-h windows). Their time of day
  is unknown, so arrivals are a flat profile at the pooled mean rate (jobs / covered hours);
  GPU histogram of ``num_replicas`` (demands already scaled to the 64-GPU Ares/Sia cluster);
  no durations (these workloads carry the work as model + batch); joint (model, global_batch).
* ``philly-sia``: the same for Philly (`philly/workloads/workload-*.csv`, 5 × 160 jobs):
  the multi-GPU training jobs Pollux/Sia/Ares drew from Philly, with model and batch.
* ``sensetime``: the union of distinct job records over `sensetime/*.json` (by job_id):
  GPU histogram (``max_parallelism``), per-bucket durations, joint (model, dataset,
  global_batch). The hour-of-day *shape* comes from the records' real ``submit_time``
  date-times; the *rate* is that of the Dally Poisson set `sense_500jobs_poisson_1proc-week`
  (≈ 59 jobs/day, `seeds/notes/dally.md` §5.2) — the records are a selection, so their own
  dates say nothing about the rate.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from traces.formats import load
from traces.synth import DATA_DIR, fit, fit_arrivals, save_params

log = logging.getLogger(__name__)


def fit_philly(shared: Path) -> dict:
    df = load(shared / "traces/philly/philly_jobs.csv", "philly-csv")
    return fit(df, "philly", fitted_on="philly/philly_jobs.csv")


def _fit_sampled_workloads(shared: Path, like: str, folder: str) -> dict:
    """Fit the Pollux/Sia/Ares-sampled workloads in `folder` (160 jobs per 8-h window each)."""
    files = sorted(glob.glob(str(shared / f"traces/{folder}/workloads/workload-*.csv")))
    frames, hours = [], 0.0
    for f in files:
        w = load(f, "pollux")
        frames.append(w)
        hours += max(np.ceil(w["submit_time"].max() / 3600.0), 1.0)  # windows are whole hours (8 h)
    df = pd.concat(frames, ignore_index=True)
    params = fit(df, like, rate_per_day=len(df) / hours * 24.0, flat_arrivals=True,
                 categorical=("model", "global_batch"),
                 fitted_on=f"{folder}/workloads/workload-1..{len(files)}.csv ({len(df)} jobs)")
    return params


def fit_helios(shared: Path) -> dict:
    return _fit_sampled_workloads(shared, "helios", "helios-saturn")


def fit_philly_sia(shared: Path) -> dict:
    """Philly as Pollux/Sia/Ares sample it (multi-GPU training jobs, models and batches)."""
    return _fit_sampled_workloads(shared, "philly-sia", "philly")


def fit_sensetime(shared: Path) -> dict:
    files = sorted(glob.glob(str(shared / "traces/sensetime/*.json")))
    frames, dates = [], {}
    for f in files:
        frames.append(load(f, "sensetime"))
        for rec in json.loads(Path(f).read_text()):
            dates.setdefault(rec["job_id"], rec["submit_time"])
    df = pd.concat(frames, ignore_index=True).drop_duplicates("job_id", keep="first").reset_index(drop=True)
    poisson = load(shared / "traces/sensetime/sense_500jobs_poisson_1proc-week.json", "sensetime")
    t = poisson["submit_time"].to_numpy()
    rate_per_day = (len(t) - 1) / ((t.max() - t.min()) / 86400.0)
    # the records' batch is per GPU: draw it jointly with model/dataset, scale by the drawn GPU count
    df["per_gpu_batch"] = (df["global_batch"] // df["num_gpus"]).astype("Int64")
    params = fit(df, "sensetime", categorical=("model", "dataset", "per_gpu_batch"),
                 fitted_on=f"sensetime/*.json: {len(df)} distinct jobs; rate from "
                           "sense_500jobs_poisson_1proc-week.json")
    when = pd.to_datetime(pd.Series([dates[j] for j in df["job_id"]]), format="ISO8601")
    sec = (when - when.dt.normalize()).dt.total_seconds().to_numpy()
    params["arrivals"] = fit_arrivals(sec, rate_per_day=rate_per_day)  # shape by hour, Dally's rate
    return params


FITTERS = {"philly": fit_philly, "philly-sia": fit_philly_sia, "helios": fit_helios, "sensetime": fit_sensetime}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shared", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("-o", "--out", default=str(DATA_DIR))
    args = ap.parse_args(argv)
    for name, fn in FITTERS.items():
        path = save_params(fn(Path(args.shared)), Path(args.out) / f"synth_{name}.json")
        log.warning("wrote %s", path)


if __name__ == "__main__":
    main()
