"""FFT's evaluation metrics (ICS'25 §6.1.5, seeds/notes/fft.md §7) added to every run's summary.

Registered into `simcore.metrics.SUMMARY_EXTRAS` on import (`experiments.wiring.install`):

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
- from the policy, if it reports them (`summary_metrics()`: FFT's solver time per round).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simcore import metrics as M


def fft_extras(jobs: pd.DataFrame, res, policy=None, type_speed: np.ndarray | None = None,
               gpu_type: np.ndarray | None = None, ftf_ref=None) -> dict:
    fin = jobs[jobs["finished"]]
    ftf = fin["ftf"].to_numpy(float)
    ftf = ftf[np.isfinite(ftf)]
    start = jobs["first_start_s"].to_numpy(float)
    sub = jobs["submit_time_s"].to_numpy(float)
    starve = np.where(np.isnan(start), float(res.end_time) - sub, start - sub)
    out = {
        "ftf_share_below_1": float((ftf < 1.0).mean()) if ftf.size else float("nan"),
        "max_starvation_s": float(np.nanmax(starve)) if starve.size else 0.0,
        "max_jct_s": float(fin["jct_s"].max()) if len(fin) else float("nan"),
        "type_switches": float("nan"), "upward_share": float("nan"), "switching_overhead_s": float("nan"),
    }
    if ftf_ref is not None:  # FFT's T_id: 1/N of every GPU type (notes A13), whatever the run's reference
        ref = np.asarray(ftf_ref("hetero-1-over-n"), float)
        ok = jobs["finished"].to_numpy(bool) & (ref > 0) & np.isfinite(ref)
        rho = jobs["jct_s"].to_numpy(float)[ok] / ref[ok]
        out.update(ftf_hetero_mean=float(rho.mean()) if rho.size else float("nan"),
                   ftf_hetero_max=float(rho.max()) if rho.size else float("nan"),
                   ftf_hetero_share_below_1=float((rho < 1.0).mean()) if rho.size else float("nan"))
    dec = res.decisions
    if dec is not None and gpu_type is not None:
        ids = {jid: k for k, jid in enumerate(jobs["job_id"].tolist())}
        last: dict[int, int] = {}
        n_sw, n_up, cost = 0, 0, 0.0
        for jid, act, gpus, c in zip(dec["job_id"], dec["action"], dec["gpus"], dec["cost_s"]):
            if not gpus:
                continue
            j = ids.get(str(jid))
            t = int(gpu_type[int(str(gpus).split(",")[0])])
            if j is None:
                continue
            if j in last and last[j] != t:
                n_sw += 1
                cost += float(c)
                if type_speed is not None and type_speed[j, t] > type_speed[j, last[j]]:
                    n_up += 1
            elif j in last:
                cost += float(c) if act not in ("start", "keep") else 0.0
            last[j] = t
        out.update(type_switches=float(n_sw), upward_share=(n_up / n_sw) if n_sw else float("nan"),
                   switching_overhead_s=cost)
    extra = getattr(policy, "summary_metrics", None)
    if callable(extra):
        out.update(extra())
    return out


def install() -> None:
    if fft_extras not in M.SUMMARY_EXTRAS:
        M.SUMMARY_EXTRAS.append(fft_extras)
