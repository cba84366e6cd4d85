"""Ares' fairness metrics under the two references the Ares work defines, added to every run's summary.

The run's own FTF reference (`RunConfig.ftf_reference`, `simcore.gps`; default `gps`, each job
capped at its request) gives the summary's `unfair_fraction` and `worst_ftf`. The Ares paper and
its artifact use other references, so every run also reports, whatever its own reference:

- `unfair_fraction_paper`, `worst_ftf_paper`: against `gps-uncapped`, the paper's GPS (§2.3,
  Eq. 2-3: every active job gets M / N_t of the cluster, no per-job cap);
- `unfair_fraction_artifact`, `worst_ftf_artifact`: against `gps-artifact`, the artifact's GPS
  (each job capped at its model's largest profiled count, 32-64).

Unfair: FTF > 1 + `simcore.metrics.FTF_TOLERANCE`, over finished jobs with a reference, as the
summary's own columns. Registered into `simcore.metrics.SUMMARY_EXTRAS` by
`experiments.runner.policy_factory`.
"""

from __future__ import annotations

import numpy as np

from simcore import metrics as M

#: summary column suffix → FTF reference
REFERENCES = {"paper": "gps-uncapped", "artifact": "gps-artifact"}


def ares_extras(jobs, res, policy=None, type_speed=None, gpu_type=None, ftf_ref=None) -> dict:
    """`unfair_fraction_<ref>` and `worst_ftf_<ref>` for each of `REFERENCES` (NaN without references)."""
    out = {}
    done = np.asarray(jobs["finished"], bool)
    jct = np.asarray(jobs["jct_s"], float)
    for tag, name in REFERENCES.items():
        if ftf_ref is None:
            out[f"unfair_fraction_{tag}"] = out[f"worst_ftf_{tag}"] = float("nan")
            continue
        ref = np.asarray(ftf_ref(name), float)
        ok = done & np.isfinite(ref) & (ref > 0)
        ftf = jct[ok] / ref[ok]
        out[f"unfair_fraction_{tag}"] = float((ftf > 1.0 + M.FTF_TOLERANCE).mean()) if ftf.size else float("nan")
        out[f"worst_ftf_{tag}"] = float(ftf.max()) if ftf.size else float("nan")
    return out


def install() -> None:
    if ares_extras not in M.SUMMARY_EXTRAS:
        M.SUMMARY_EXTRAS.append(ares_extras)
