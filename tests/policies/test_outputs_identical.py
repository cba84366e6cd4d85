"""The baseline policies' outputs stay exactly what they were through refactors of the
engine, the round toolkit and the kernels.

Each policy runs through the real engine (`experiments.runner.run`) on two small seeded
workloads and its `jobs.parquet` table is compared with a reference committed under
`tests/fixtures/policies/`, generated from the code at the time they were committed:

- `queueing`: `synth:philly-sia:120:2h` on 3 DGX-A100 nodes (24 GPUs): long queues, so the
  walk, its skips and Tiresias/SRTF preemptions run at every call (Tiresias with three
  queues split at 0.5 and 4 GPU-hours, so that jobs cross them and preempt often);
- `skewed`: `synth:philly:120` on 3 nodes with Tiresias told that BERT and YOLOv3 are
  skewed models, so its consolidation constraint (`topo` with a tier cap) and the generic
  placer path run; the other policies see the same workload.

A difference in any decision changes start and end times far beyond the tolerance
(relative 1e-9, which only absorbs float round-off of identical decisions).

`test_pollux_workload_outputs_identical` (needs ../shared/data): Tiresias as the Pollux
simulator runs it and Optimus on the Pollux OSDI'21 workload-1 (16×4 T4, `--perf
measured-pollux-sim --progress goodput --costs pollux-sim`, `benchmarks.bench_inproc.config`),
jobs and summary compared exactly with references generated before the engine's quiet rounds,
kernel epoch refreshes and Optimus' step-time rows; `python -m benchmarks.bench_inproc dump/diff` checks workloads 1-5 the same way.

Regenerate (only when a change of outputs is intended, and say so in the commit):

    python -m tests.policies.test_outputs_identical --regenerate
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from simcore.metrics import NOT_DONE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"
#: jobs.parquet columns added after the references were generated: `unfinished_reason` (why a
#: job did not finish; `simcore.admission`), checked separately below
ADDED_COLUMNS = ("unfinished_reason",)
POLICIES = ("fifo", "fifo-backfill", "sjf", "srtf", "tiresias", "gandiva")
WORKLOADS = {
    "queueing": dict(trace="synth:philly-sia:120:2h", cluster="dgx-a100", cluster_nodes=3,
                     policy_params={"tiresias": {"thresholds_gpu_s": (1800.0, 14400.0)}}),
    "skewed": dict(trace="synth:philly:120", cluster="dgx-a100", cluster_nodes=3,
                   policy_params={"tiresias": {"skew_models": ("bert*", "yolov3*")}}),
}


def _jobs(workload: str) -> pd.DataFrame:
    from experiments.runner import RunConfig, run

    res = run(RunConfig(policies=POLICIES, seed=0, **WORKLOADS[workload]), None)
    frames = [res.jobs[p].assign(policy=p) for p in POLICIES]
    return pd.concat(frames, ignore_index=True)


def _path(workload: str) -> Path:
    return FIXTURES / f"{workload}_jobs.parquet"


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_outputs_identical_to_reference(workload):
    ref = pd.read_parquet(_path(workload))
    got = _jobs(workload)
    # columns added since the references were written (none of them changes a decision)
    assert [c for c in got.columns if c not in ADDED_COLUMNS] == list(ref.columns)
    assert (got["unfinished_reason"] == got["finished"].map({True: "", False: NOT_DONE})).all()
    got = got[list(ref.columns)]
    for p in POLICIES:
        a = got[got.policy == p].reset_index(drop=True)
        b = ref[ref.policy == p].reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, atol=0.0, obj=f"{workload}/{p}")


POLLUX_POLICIES = ("tiresias-pollux", "optimus")


def _pollux_w1() -> tuple[pd.DataFrame, pd.DataFrame]:
    from benchmarks.bench_inproc import config
    from experiments.runner import run

    jobs, sums = [], []
    for p in POLLUX_POLICIES:
        res = run(config(p, 1), None)
        jobs.append(res.jobs[p].assign(policy=p))
        sums.append(res.summary)
    return pd.concat(jobs, ignore_index=True), pd.concat(sums, ignore_index=True)


def test_pollux_workload_outputs_identical(shared_data):
    jobs, summary = _pollux_w1()
    ref_jobs = pd.read_parquet(FIXTURES / "pollux_w1_jobs.parquet")
    ref_summary = pd.read_parquet(FIXTURES / "pollux_w1_summary.parquet")
    pd.testing.assert_frame_equal(jobs, ref_jobs, check_exact=True, obj="pollux w1 jobs")
    # policy_calls included: rounds the engine answers from a policy's quiet promise count as calls
    pd.testing.assert_frame_equal(summary, ref_summary, check_exact=True, obj="pollux w1 summary")


def main(argv: list[str]) -> None:
    if argv != ["--regenerate"]:
        raise SystemExit("usage: python -m tests.policies.test_outputs_identical --regenerate")
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for w in WORKLOADS:
        _jobs(w).to_parquet(_path(w), index=False)
        print("wrote", _path(w))
    jobs, summary = _pollux_w1()  # needs ../shared/data
    jobs.to_parquet(FIXTURES / "pollux_w1_jobs.parquet", index=False)
    summary.to_parquet(FIXTURES / "pollux_w1_summary.parquet", index=False)
    print("wrote", FIXTURES / "pollux_w1_jobs.parquet")


if __name__ == "__main__":
    main(sys.argv[1:])
