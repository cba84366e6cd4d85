"""Per-job and summary metrics of one engine run (pure functions of its arrays).

Definitions (Ares §7 unless noted): JCT = end − submit; queueing delay = first start −
submit; waiting = all time queued after submission (re-queueing after preemption
included); FTF = JCT / JCT under the run's fair-share reference (`simcore.gps`, fluid GPS by default); unfair fraction =
share of finished jobs with FTF > 1 + `FTF_TOLERANCE` (below); starvation = the longest total waiting of any job
(unfinished jobs count with the waiting they accumulated); GPU utilisation = busy
GPU-seconds / online GPU-seconds over [0, makespan]. Percentiles use numpy's default
linear interpolation, as the Ares artifact does.

The tables are plain columns (name → numpy array, `jobs_columns`, `timeline_columns`) that
`simcore.tables` turns into Arrow for the Parquet files without importing pandas (≈ 0.2 s of
a cached `cosim simulate`'s ≈ 1 s CPU); `jobs_frame` and
`timeline_frame` give the same tables as DataFrames. `summary_row` and the `SUMMARY_EXTRAS` read
any mapping of columns (the dict or a DataFrame).

A job counts as unfair when FTF > 1 + `FTF_TOLERANCE`: a job that ran alone has FTF 1 up to
floating-point rounding of the two simulations (~1e-10), which must not count as unfair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.api import JobState
from simcore.engine import EngineResult
from simcore.work import WORK_MODE_NAMES

if TYPE_CHECKING:
    import pandas as pd

_MODE_NAMES = np.array([WORK_MODE_NAMES[k] for k in sorted(WORK_MODE_NAMES)], dtype=object)

FTF_TOLERANCE = 1e-6

#: extra summary columns: callables (jobs columns, EngineResult, policy, type_speed, gpu_type, ftf_ref) → dict,
#: registered by the layer above (e.g. `experiments.fft_metrics`); type_speed is None unless
#: decisions were recorded
SUMMARY_EXTRAS: list = []


def summary_extras(jobs: Mapping[str, Any], res: EngineResult, policy=None, type_speed=None, gpu_type=None,
                   ftf_ref=None) -> dict:
    """The registered `SUMMARY_EXTRAS` columns of one run; `ftf_ref(name)` gives the reference
    JCTs of FTF reference `name` (`simcore.gps.FTF_REFERENCES`) for this run's jobs."""
    out: dict = {}
    for f in SUMMARY_EXTRAS:
        out.update(f(jobs, res, policy, type_speed, gpu_type, ftf_ref))
    return out


#: `unfinished_reason` of a job that was admitted but had not finished when the run ended
NOT_DONE = "not finished when the run ended"


def jobs_columns(res: EngineResult, gps_jct_s: np.ndarray, reasons: dict[int, str] | None = None) -> dict:
    """One row per job, as columns (`jobs.parquet`). `reasons`: why a job rejected before or at
    admission never ran, by job index (`simcore.prepare` invalid jobs run with skip_invalid,
    `simcore.admission`); every other unfinished job reads `NOT_DONE`, a finished one the empty
    string."""
    j = res.jobs
    finished = j.state == JobState.FINISHED
    why = np.where(finished, "", NOT_DONE).astype(object)
    for i, r in (reasons or {}).items():
        why[i] = r
    jct = np.where(finished, j.end_time - j.submit_time, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        ftf = np.where(finished & (gps_jct_s > 0), jct / gps_jct_s, np.nan)
    return {
        "job_id": j.job_id.astype(str),
        "model": j.model.astype(str),
        "num_gpus": j.num_gpus,
        "work_mode": _MODE_NAMES[j.work_mode.astype(np.int64)].astype(str),
        "submit_time_s": j.submit_time,
        "first_start_s": j.first_start,
        "end_time_s": j.end_time,
        "jct_s": jct,
        "queueing_delay_s": j.first_start - j.submit_time,
        "waiting_s": j.waiting_s,
        "gpu_s": j.attained_gpu_s,
        "executed_s": j.executed_s,
        "restart_s": j.restart_s,
        "exposed_comm_s": j.exposed_comm_s,
        "num_restarts": j.num_restarts,
        "progress": j.progress,
        "final_batch": j.batch_size,
        "epochs_done": j.epochs_done,
        "stat_efficiency": j.stat_eff,
        "gps_jct_s": gps_jct_s,
        "ftf": ftf,
        "finished": finished,
        "unschedulable": j.state == JobState.UNSCHEDULABLE,
        "unfinished_reason": why.astype(str),
    }


def jobs_frame(res: EngineResult, gps_jct_s: np.ndarray, reasons: dict[int, str] | None = None) -> "pd.DataFrame":
    """`jobs_columns` as a DataFrame (the one `RunResult.jobs` holds)."""
    from simcore.tables import arrow_table

    return arrow_table(jobs_columns(res, gps_jct_s, reasons)).to_pandas()


def _col(jobs: Mapping[str, Any], name: str, dtype: Any = None) -> np.ndarray:
    return np.asarray(jobs[name], dtype=dtype)


def _done_at(jobs: Mapping[str, Any], frac: float) -> float:
    """Time from the first arrival until `frac` of all jobs have finished (NaN if they never do)."""
    end = np.sort(_col(jobs, "end_time_s", np.float64)[_col(jobs, "finished", bool)])
    n = len(_col(jobs, "finished"))
    k = int(np.ceil(frac * n))
    if k == 0 or end.size < k:
        return float("nan")
    return float(end[k - 1] - _col(jobs, "submit_time_s").min())


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if x.size else float("nan")


def _mean(x: np.ndarray) -> float:
    """pandas' Series.mean, to the last bit: NaN skipped (counted out, summed as 0, as pandas'
    nanops do), NaN when nothing is left."""
    nan = np.isnan(x)
    count = x.size - int(np.count_nonzero(nan))
    return float(np.where(nan, 0.0, x).sum() / count) if count else float("nan")


def summary_row(policy: str, jobs: Mapping[str, Any], res: EngineResult, progress: str = "plain",
                ftf_reference: str = "gps", never_fit_one_type: int = 0) -> dict:
    """One summary row of a run's jobs columns (`jobs_columns`, or its DataFrame); `progress` and
    `ftf_reference` name the run's progress model and FTF reference (`RunConfig.progress`,
    `RunConfig.ftf_reference`) so rows say what they measure; `never_fit_one_type` the jobs
    `simcore.admission` rejected for this policy."""
    done = _col(jobs, "finished", bool)
    n, n_fin = int(done.size), int(np.count_nonzero(done))
    jct = _col(jobs, "jct_s", np.float64)[done]
    ftf = _col(jobs, "ftf", np.float64)[done]
    ftf = ftf[np.isfinite(ftf)]
    end = _col(jobs, "end_time_s", np.float64)
    waiting = _col(jobs, "waiting_s", np.float64)
    fin_waiting = waiting[done]
    comm = _col(jobs, "exposed_comm_s", np.float64)
    queueing = _col(jobs, "queueing_delay_s", np.float64)[done]
    makespan = float(np.nanmax(end)) if n_fin else float("nan")
    util = res.busy_gpu_s / res.online_gpu_s if res.online_gpu_s > 0 else float("nan")
    return {
        "policy": policy,
        "jobs": n,
        "finished": n_fin,
        "unfinished": int(n - n_fin),
        "never_fit_one_type": int(never_fit_one_type),
        "stuck": bool(res.stuck),
        "avg_jct_s": float(jct.mean()) if jct.size else float("nan"),
        "p50_jct_s": _pct(jct, 50),
        "p95_jct_s": _pct(jct, 95),
        "p99_jct_s": _pct(jct, 99),
        "makespan_s": makespan,
        "avg_queueing_s": float(np.nanmean(queueing)) if n_fin else float("nan"),
        "avg_waiting_s": _mean(fin_waiting) if n_fin else float("nan"),
        "starvation_s": float(np.nanmax(waiting)) if n and not np.isnan(waiting).all() else
        (float("nan") if n else 0.0),
        # total waiting incl. re-queueing after preemptions (Dally Fig. 8a), its tail; mean exposed
        # communication per job (Fig. 8b); when half / 90 % of the jobs are done (Fig. 12's curve)
        "p95_waiting_s": _pct(fin_waiting, 95),
        "p99_waiting_s": _pct(fin_waiting, 99),
        "avg_exposed_comm_s": _mean(comm) if n else 0.0,
        "t50_done_s": _done_at(jobs, 0.5),
        "t90_done_s": _done_at(jobs, 0.9),
        "gpu_utilization": float(util),
        "avg_ftf": float(ftf.mean()) if ftf.size else float("nan"),
        "unfair_fraction": float((ftf > 1.0 + FTF_TOLERANCE).mean()) if ftf.size else float("nan"),
        "worst_ftf": float(ftf.max()) if ftf.size else float("nan"),
        "avg_restarts": float(_col(jobs, "num_restarts").mean()) if n else 0.0,
        "exposed_comm_s": float(np.nansum(comm)),
        "gpu_s": float(np.nansum(_col(jobs, "gpu_s", np.float64))),
        "events": int(res.num_events),
        "policy_calls": int(res.num_policy_calls),
        "end_time_s": float(res.end_time),
        "progress_model": progress,
        "ftf_reference": ftf_reference,
    }


def timeline_columns(res: EngineResult) -> dict:
    """The occupancy timeline (`timeline.parquet`) as columns, with each row's utilisation."""
    tl = res.timeline
    cols = {k: np.asarray(v, dtype=np.float64 if k == "time_s" else np.int32) for k, v in tl.items()}
    busy, online = cols["busy_gpus"], cols["online_gpus"]
    with np.errstate(invalid="ignore", divide="ignore"):
        cols["utilization"] = np.where(online > 0, busy / np.maximum(online, 1), 0.0)
    return cols


def timeline_frame(res: EngineResult) -> "pd.DataFrame":
    """`timeline_columns` as a DataFrame."""
    from simcore.tables import arrow_table

    return arrow_table(timeline_columns(res)).to_pandas()


def decisions_frame(res: EngineResult) -> "pd.DataFrame | None":
    """Every allocation change (`decisions.parquet`, written with --decisions) as a DataFrame."""
    if res.decisions is None:
        return None
    import pandas as pd

    return pd.DataFrame(res.decisions).astype({"time_s": np.float64, "num_gpus": np.int32, "batch_size": np.int32,
                                               "cost_s": np.float64})
