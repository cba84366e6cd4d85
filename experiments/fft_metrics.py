"""FFT's evaluation metrics (ICS'25 §6.1.5, seeds/notes/fft.md §7) added to every run's summary.

Registered into `simcore.metrics.SUMMARY_EXTRAS` by `experiments.runner.policy_factory`:

- `ftf_share_below_1`: share of finished jobs with FTF ρ = T_sh/T_id < 1 (the run's FTF
  reference; FFT's T_id is `--ftf-reference hetero-1-over-n`, notes A13), beside the summary's
  `avg_ftf` (mean) and `worst_ftf` (max);
- `max_starvation_s`: FFT's starvation, the longest first start − arrival (a job never started
  counts to the end of the run); the summary's `starvation_s` is total waiting instead;
- `ftf_hetero_mean`, `ftf_hetero_max`, `ftf_hetero_share_below_1`: the same with FFT's T_id
  (1/N of every GPU type, `hetero-1-over-n`) whatever reference the run uses;
- `max_jct_s` (notes A12: the paper's §2.3 "makespan"; `makespan_s` is §6.2.1's);
- from decisions (runs with `write_decisions`): `type_switches` (a job restarting on another
  GPU type than its last), `upward_share` (share of those to a type where the job runs
  faster), `switching_overhead_s` (Σ restart/migration cost charged);
- `placement_speed` (§6.2.4's training throughput under placement): reference-run seconds of
  work per second executed, all jobs together (1 = every job as fast as on its consolidated
  reference placement);
- from the policy, if it reports them (`summary_metrics()`: FFT's solver time per round).
"""

from __future__ import annotations

import numpy as np

from simcore import metrics as M


def fft_extras(jobs, res, policy=None, type_speed: np.ndarray | None = None,
               gpu_type: np.ndarray | None = None, ftf_ref=None) -> dict:
    """The columns of one run; `jobs`: its jobs columns (`simcore.metrics.jobs_columns`, or the DataFrame)."""
    done = np.asarray(jobs["finished"], bool)
    ftf = np.asarray(jobs["ftf"], float)[done]
    ftf = ftf[np.isfinite(ftf)]
    start = np.asarray(jobs["first_start_s"], float)
    sub = np.asarray(jobs["submit_time_s"], float)
    starve = np.where(np.isnan(start), float(res.end_time) - sub, start - sub)
    fin_jct = np.asarray(jobs["jct_s"], float)[done]
    out = {
        "ftf_share_below_1": float((ftf < 1.0).mean()) if ftf.size else float("nan"),
        "max_starvation_s": float(np.nanmax(starve)) if starve.size else 0.0,
        "max_jct_s": float(np.nanmax(fin_jct)) if fin_jct.size and not np.isnan(fin_jct).all() else float("nan"),
        "type_switches": float("nan"), "upward_share": float("nan"), "switching_overhead_s": float("nan"),
    }  # the last three from decisions (runs that record them)
    if ftf_ref is not None:  # FFT's T_id: 1/N of every GPU type (notes A13), whatever the run's reference
        ref = np.asarray(ftf_ref("hetero-1-over-n"), float)
        ok = done & (ref > 0) & np.isfinite(ref)
        rho = np.asarray(jobs["jct_s"], float)[ok] / ref[ok]
        out.update(ftf_hetero_mean=float(rho.mean()) if rho.size else float("nan"),
                   ftf_hetero_max=float(rho.max()) if rho.size else float("nan"),
                   ftf_hetero_share_below_1=float((rho < 1.0).mean()) if rho.size else float("nan"))
    out["placement_speed"] = placement_speed(res)
    dec = res.decisions
    if dec is not None and gpu_type is not None:
        out.update(_switches(jobs, dec, type_speed, np.asarray(gpu_type)))
    extra = getattr(policy, "summary_metrics", None)
    if callable(extra):
        out.update(extra())
    return out


def placement_speed(res) -> float:
    """§6.2.4's "training throughput under placement": reference-run seconds of work done per
    second executed, over all jobs (Σ progress·work_iters·ref_iter_s / Σ executed_s). 1 = every
    job ran as fast as on its reference placement (consolidated, on the reference type); below
    1 = spread placements (and contention) slowed it. Compare on one GPU type (the ablation's
    A10-only cluster): on a mixed cluster faster types raise it too."""
    j = res.jobs
    ex = np.asarray(j.executed_s, float)
    work = np.asarray(j.progress, float) * np.asarray(j.work_iters, float) * np.asarray(j.ref_iter_s, float)
    ok = (ex > 0) & np.isfinite(work)
    return float(work[ok].sum() / ex[ok].sum()) if ok.any() else float("nan")


def _switches(jobs, dec, type_speed, gpu_type: np.ndarray) -> dict:
    """Type switches, their upward share and the switching overhead, from the decisions: per job,
    in decision order, a restart on another GPU type than its last is a switch (its cost counts);
    a later action on the same type counts its cost unless it is a start or a keep."""
    import pandas as pd

    d = pd.DataFrame({"job_id": pd.Series(dec["job_id"], dtype=object).astype(str),
                      "action": pd.Series(dec["action"], dtype=object).astype(str),
                      "gpus": pd.Series(dec["gpus"], dtype=object), "cost_s": np.asarray(dec["cost_s"], float)})
    job_ids = np.asarray(jobs["job_id"]).astype(str)
    ids = pd.Series(np.arange(job_ids.size), index=job_ids)
    d = d[d["gpus"].notna() & (d["gpus"].astype(str) != "")]
    d = d.assign(j=d["job_id"].map(ids))
    d = d[d["j"].notna()]
    if d.empty:
        return {"type_switches": 0.0, "upward_share": float("nan"), "switching_overhead_s": 0.0}
    j = d["j"].to_numpy(np.int64)
    t = gpu_type[d["gpus"].astype(str).str.partition(",")[0].astype(np.int64).to_numpy()]
    order = np.argsort(j, kind="stable")  # per job, decision order kept
    prev = np.full(j.size, -1, np.int64)
    same = np.zeros(j.size, bool)
    same[order[1:]] = j[order[1:]] == j[order[:-1]]
    prev[order[1:]] = np.where(same[order[1:]], t[order[:-1]], -1)
    sw = same & (t != prev)
    other = same & ~sw & ~d["action"].isin(("start", "keep")).to_numpy()
    cost = sum(d["cost_s"].to_numpy()[sw | other].tolist(), 0.0)  # row order, as the engine logged them
    n_sw = int(sw.sum())
    n_up = int((type_speed[j[sw], t[sw]] > type_speed[j[sw], prev[sw]]).sum()) if type_speed is not None else 0
    return {"type_switches": float(n_sw), "upward_share": (n_up / n_sw) if n_sw else float("nan"),
            "switching_overhead_s": cost}


def install() -> None:
    if fft_extras not in M.SUMMARY_EXTRAS:
        M.SUMMARY_EXTRAS.append(fft_extras)
