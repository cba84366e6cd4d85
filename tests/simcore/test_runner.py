"""The runner end to end on fake backends: outputs, determinism, invalid jobs, failures.

Golden run: `tests/fixtures/golden/trace.csv` under `fifo-test` and `random-elastic` is
diffed against the committed `tests/fixtures/golden/<policy>_jobs.parquet` and
`summary.parquet`. After an intended change to the engine, regenerate with

    python -m tests.simcore.test_runner --regenerate

and review the diff of the printed tables before committing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cosim.atomic import read_metadata
from cosim.errors import InputError, PolicyError, UnknownNameError
from experiments.runner import RunConfig, run
from tests.simcore.fakes import FifoTest
from tests.simcore.helpers import fake_backends
from cosim.columns import TIMING_FILES

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
GOLDEN_POLICIES = ("fifo-test", "random-elastic")


def golden_trace() -> pd.DataFrame:
    return pd.read_csv(GOLDEN / "trace.csv", dtype={"job_id": str})


def golden_run(out: Path | None):
    cfg = RunConfig(trace="golden", cluster="fake", policies=GOLDEN_POLICIES, seed=0, write_decisions=True,
                    costs="flat30")
    return run(cfg, out, backends=fake_backends(golden_trace()))


def test_outputs_and_metadata(tmp_path):
    res = golden_run(tmp_path)
    for p in GOLDEN_POLICIES:
        for f in ("jobs", "timeline", "decisions"):
            assert (tmp_path / p / f"{f}.parquet").is_file()
    meta = read_metadata(tmp_path / "summary.parquet")
    assert meta["seed"] == 0 and meta["version"] and meta["config"]["policies"] == list(GOLDEN_POLICIES)
    assert read_metadata(tmp_path / "fifo-test" / "jobs.parquet")["policy"] == "fifo-test"
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["config"]["costs"] == "flat30"
    s = res.summary.set_index("policy")
    assert (s["finished"] == 8).all()
    # FTF: GPS reference is shared by all policies
    a, b = (res.jobs[p]["gps_jct_s"].to_numpy() for p in GOLDEN_POLICIES)
    assert np.array_equal(a, b)


def test_same_seed_byte_identical(tmp_path):
    golden_run(tmp_path / "a")
    golden_run(tmp_path / "b")
    for f in sorted(p for p in (tmp_path / "a").rglob("*.parquet") if p.name not in TIMING_FILES):
        other = tmp_path / "b" / f.relative_to(tmp_path / "a")
        assert f.read_bytes() == other.read_bytes(), f


def test_golden_matches_reference(tmp_path):
    res = golden_run(None)
    for p in GOLDEN_POLICIES:
        ref = pd.read_parquet(GOLDEN / f"{p}_jobs.parquet")
        # jobs columns added since (`unfinished_reason`) likewise: the reference's own must match exactly
        got = res.jobs[p].reset_index(drop=True)
        assert [c for c in got.columns if c != "unfinished_reason"] == list(ref.columns)
        pd.testing.assert_frame_equal(got[list(ref.columns)], ref, check_exact=False, rtol=1e-9)
    ref = pd.read_parquet(GOLDEN / "summary.parquet")
    assert list(res.summary["perf"]) == ["network"] * len(GOLDEN_POLICIES)  # the backend column
    # summary columns added since the reference was written (e.g. the Dally metrics) are new
    # information, not changed results: the reference's own columns must match exactly
    assert set(ref.columns) <= set(res.summary.columns)
    pd.testing.assert_frame_equal(res.summary[list(ref.columns)], ref, check_exact=False, rtol=1e-9)


def test_invalid_jobs_refused_or_skipped(tmp_path):
    df = golden_trace()
    df.loc[1, "num_gpus"] = 64
    df.loc[2, "model"] = "nosuchnet"
    be = fake_backends(df)
    cfg = RunConfig(trace="t", policies=("fifo-test",))
    with pytest.raises(InputError, match=r"2 job\(s\) can never run: job g1: asks for 64 GPUs.*job g2: unknown model"):
        run(cfg, None, backends=be)
    res = run(RunConfig(trace="t", policies=("fifo-test",), skip_invalid=True), tmp_path, backends=be)
    s = res.summary.iloc[0]
    assert s["finished"] == 6 and s["unfinished"] == 2
    assert sorted(res.jobs["fifo-test"].query("unschedulable")["job_id"]) == ["g1", "g2"]
    why = res.jobs["fifo-test"].set_index("job_id")["unfinished_reason"]  # the reason it never ran
    assert why["g1"].startswith("asks for 64 GPUs") and why["g2"].startswith("unknown model")
    assert (why.drop(["g1", "g2"]) == "").all() and s["never_fit_one_type"] == 0


def test_unknown_policy_lists_valid_names():
    with pytest.raises(UnknownNameError, match="valid: fifo-test, random-elastic"):
        run(RunConfig(trace="t", policies=("nope",)), None, backends=fake_backends(golden_trace()))


class Crash(FifoTest):
    name = "crash"

    def decide(self, view, now):
        if now > 100:
            raise RuntimeError("bad state")
        return super().decide(view, now)


def test_failed_policy_leaves_no_complete_looking_output(tmp_path):
    be = fake_backends(golden_trace(), policies={"fifo-test": lambda: FifoTest(), "crash": lambda: Crash()})
    golden_run(tmp_path)  # an earlier complete run in the same folder
    with pytest.raises(PolicyError, match=r"policy 'crash' raised RuntimeError at t=300\.000s"):
        run(RunConfig(trace="t", policies=("fifo-test", "crash")), tmp_path, backends=be)
    assert not (tmp_path / "summary.parquet").exists()
    assert not (tmp_path / "crash").exists()


def regenerate() -> None:
    res = golden_run(None)
    import pyarrow as pa

    for p in GOLDEN_POLICIES:
        pq.write_table(pa.Table.from_pandas(res.jobs[p], preserve_index=False), GOLDEN / f"{p}_jobs.parquet")
        print(res.jobs[p].to_string())
    pq.write_table(pa.Table.from_pandas(res.summary, preserve_index=False), GOLDEN / "summary.parquet")
    print(res.summary.T.to_string())


if __name__ == "__main__":
    if "--regenerate" in sys.argv:
        regenerate()
    else:
        print(__doc__)
