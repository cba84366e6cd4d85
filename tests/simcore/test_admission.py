"""Admission under single-type placement (`simcore.admission`): a job larger than every GPU type
is rejected with its reason for policies that keep one type per job, and only for them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from simcore.admission import NEVER_FIT, reject_never_fit, type_capacity
from simcore.api import JobState, PolicyFlags
from simcore.metrics import NOT_DONE


class _Typed:
    name = "typed-test"
    single_type_placement = True


class _Any:
    name = "any-test"


def _jobs(num_gpus, req=None, state=None):
    n = len(num_gpus)
    return SimpleNamespace(num_gpus=np.asarray(num_gpus, np.int32),
                           gpu_type_req=np.asarray(req if req is not None else [-1] * n, np.int16),
                           state=np.asarray(state if state is not None else [JobState.QUEUED] * n, np.int8))


def test_flag_is_declared_and_read_through_policy_flags():
    assert PolicyFlags.of(_Typed()).single_type_placement is True
    assert PolicyFlags.of(_Any()).single_type_placement is False


def test_rejects_only_jobs_above_the_largest_type():
    # 12 T4 + 8 A10 + 12 V100: the largest type has 12
    gpu_type = np.repeat([0, 1, 2], [12, 8, 12])
    assert type_capacity(gpu_type, 3).tolist() == [12, 8, 12]
    jobs = _jobs([16, 12, 13, 32, 20], req=[-1, -1, -1, 1, -1],
                 state=[JobState.QUEUED] * 4 + [JobState.UNSCHEDULABLE])
    why = reject_never_fit(jobs, _Typed(), gpu_type, ["t4", "a10", "v100"])
    # 12 fits one type; a job that requires a type is prepare's business; an invalid one stays as it was
    assert sorted(why) == [0, 2]
    assert jobs.state.tolist()[:4] == [JobState.UNSCHEDULABLE, JobState.QUEUED, JobState.UNSCHEDULABLE,
                                       JobState.QUEUED]
    assert why[0].startswith(NEVER_FIT) and "16 GPUs" in why[0] and "(t4) has 12" in why[0]
    assert "typed-test places a job on one type" in why[0]


def test_no_rejection_without_the_flag_or_on_one_type():
    gpu_type = np.repeat([0, 1], [4, 4])
    jobs = _jobs([6])
    assert reject_never_fit(jobs, _Any(), gpu_type, ["a", "b"]) == {}
    assert reject_never_fit(jobs, _Typed(), np.zeros(8, np.int64), ["a"]) == {}
    assert jobs.state.tolist() == [JobState.QUEUED]


@pytest.mark.parametrize("policy", ["gavel", "themis-ftf-lp", "tiresias-typed", "allox", "pal", "fft", "fifo",
                                    "fifo-backfill", "sjf", "srtf", "tiresias", "tiresias-pollux", "srjf"])
def test_single_type_policies_declare_the_flag(policy):
    import policies

    assert PolicyFlags.of(policies.make(policy)).single_type_placement


def test_run_reports_never_fit_jobs_per_policy(tmp_path):
    """fft-hetero (12 T4 + 12 A10 + 12 V100): the 16-GPU job is rejected under Gavel, FFT and FIFO
    with its reason in jobs.parquet and counted in the summary (before, FIFO's queue stayed behind
    it until the run ended); Optimus, which declares nothing (it may run a job on fewer GPUs than
    its request), keeps it."""
    from experiments.runner import RunConfig, run

    df = pd.DataFrame({"job_id": ["big", "a", "b"], "submit_time": [0.0, 0.0, 60.0],
                       "num_gpus": [16, 4, 1], "duration": [600.0, 900.0, 600.0],
                       "model": ["resnet50"] * 3, "global_batch": [256, 128, 32]})
    path = tmp_path / "jobs.parquet"
    df.to_parquet(path)
    res = run(RunConfig(trace=str(path), cluster="fft-hetero", policies=["gavel", "fft", "fifo", "optimus"]),
              tmp_path / "o")
    s = res.summary.set_index("policy")
    for p in ("gavel", "fft", "fifo"):
        assert s.loc[p, "never_fit_one_type"] == 1 and s.loc[p, "unfinished"] == 1 and s.loc[p, "finished"] == 2
        j = res.jobs[p].set_index("job_id")
        assert bool(j.loc["big", "unschedulable"]) and j.loc["big", "unfinished_reason"].startswith(NEVER_FIT)
        assert np.isnan(j.loc["big", "first_start_s"])
        assert (j.loc[["a", "b"], "unfinished_reason"] == "").all()
    assert s.loc["fft", "fft_never_fit"] == 0  # rejected before FFT ever saw it
    assert s.loc["optimus", "never_fit_one_type"] == 0
    assert not res.jobs["optimus"].set_index("job_id").loc["big", "unschedulable"]
    # the column is written with its unit and description
    import pyarrow.parquet as pq

    meta = pq.read_schema(tmp_path / "o" / "gavel" / "jobs.parquet").field("unfinished_reason").metadata
    assert meta and b"label" in meta[b"unit"]
    assert NOT_DONE not in set(res.jobs["gavel"]["unfinished_reason"])
