"""Admission under single-type placement: jobs that no one GPU type can ever hold.

`simcore.prepare` rejects, before any run, a job that asks for more GPUs than the cluster (of its
required type) ever has: a whole-cluster count. A policy that keeps each job on one GPU type
(Gavel's LP over job × type, AlloX's type matching, PAL's per-type L×V placement, FFT's
one-type-per-job ILP, Tiresias with per-type queues) can never place a job whose request is
larger than every single type's GPU count on a heterogeneous cluster (`fft-hetero`: 12 T4 +
12 A10 + 12 V100, so a 16-GPU job), and such a job used to wait until the run ended — a
silent "unfinished" that each policy explained differently, or not at all (FFT logged it and
counted `fft_never_fit`).

Policies declare this with the `PolicyFlags.single_type_placement` flag. For them,
`reject_never_fit` marks such jobs `UNSCHEDULABLE` at admission (they never arrive, hold no
GPUs and are reported unfinished) and returns the reason per job, which `jobs.parquet` gives
in `unfinished_reason`; the summary counts them (`never_fit_one_type`). The count is the
type's GPUs in the topology, all nodes (a node that is offline at first may join later), so
only jobs that can *never* fit are rejected. Demand is the job's requested count
(`num_gpus`): the single-type policies above run a job at its request. Jobs that require a
type are left to `simcore.prepare` (it already counts that type alone).
"""

from __future__ import annotations

import numpy as np

from simcore.api import JobState, PolicyFlags

#: the reason's prefix in `jobs.parquet`'s `unfinished_reason` (summary: `never_fit_one_type`)
NEVER_FIT = "never fits one GPU type"


def type_capacity(gpu_type: np.ndarray, num_types: int) -> np.ndarray:
    """GPUs of each type in the topology (all nodes)."""
    return np.bincount(np.asarray(gpu_type, np.int64), minlength=num_types)[:num_types]


def reject_never_fit(jobs, policy: object, gpu_type: np.ndarray, type_names) -> dict[int, str]:
    """Mark the jobs `policy` can never place as `UNSCHEDULABLE` (in place) and return
    {job index: reason}. Empty unless the policy declares `single_type_placement` and the
    cluster has more than one GPU type (on one type the whole-cluster check is the same)."""
    names = list(type_names)
    if not PolicyFlags.of(policy).single_type_placement or len(names) < 2:
        return {}
    cap = type_capacity(gpu_type, len(names))
    largest = int(cap.max(initial=0))
    best = names[int(np.argmax(cap))] if cap.size else "?"
    cand = (jobs.state != JobState.UNSCHEDULABLE) & (jobs.gpu_type_req < 0) & (jobs.num_gpus > largest)
    out: dict[int, str] = {}
    for j in np.flatnonzero(cand).tolist():
        jobs.state[j] = JobState.UNSCHEDULABLE
        out[j] = (f"{NEVER_FIT}: asks for {int(jobs.num_gpus[j])} GPUs, the largest GPU type ({best}) has "
                  f"{largest}, and {policy.name} places a job on one type")
    return out
