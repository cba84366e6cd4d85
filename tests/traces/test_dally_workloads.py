"""The Dally paper's SenseTime workloads (traces/dally.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cosim.errors import InputError
from traces import dally


def test_batch_is_the_authors_set(shared_data):
    df = dally.from_spec("dally:batch", 0, shared_data)
    assert len(df) == 500 and (df["submit_time"] == 0).all()
    hist = df["num_gpus"].value_counts().to_dict()
    assert hist == {1: 270, 8: 109, 4: 52, 16: 42, 2: 13, 32: 11, 40: 1, 48: 1, 56: 1}  # notes §5.2
    # the authors' time basis: N GPUs retire N per-GPU iterations per step
    gpu_h = float((df["time_per_iteration"] * df["total_iterations"] * df["num_gpus"]).sum()) / 3600
    assert gpu_h == pytest.approx(13054, rel=0.01)
    raw = dally.from_spec("dally:batch+duration", 0, shared_data)
    assert float((raw["time_per_iteration"] * raw["total_iterations"] * raw["num_gpus"]).sum()) / 3600 == \
        pytest.approx(82827, rel=0.01)


def test_poisson_and_seeded_samples(shared_data):
    p = dally.from_spec("dally:poisson", 0, shared_data)
    assert len(p) == 411 and (p["num_gpus"] > 1).all()
    rate = len(p) / (p["submit_time"].max() / 86400)
    assert 50 < rate < 70  # ~59 jobs/day (1proc-week)
    a = dally.from_spec("dally:batch:100", 3, shared_data)
    b = dally.from_spec("dally:batch:100", 3, shared_data)
    c = dally.from_spec("dally:batch:100", 4, shared_data)
    assert a["job_id"].tolist() == b["job_id"].tolist() != c["job_id"].tolist()
    assert set(a["model"].str.lower()) <= {"vgg", "alexnet", "mobilenetv3", "resnet18", "resnet50", "bert_large"}
    q = dally.from_spec("dally:poisson:50:100", 1, shared_data)
    assert len(q) == 50 and np.all(np.diff(q["submit_time"]) >= 0) and (q["num_gpus"] > 1).all()


@pytest.mark.parametrize("spec", ["dally:", "dally:stream", "dally:batch:x", "dally:batch:0", "dally:batch:1:2",
                                  "dally:poisson:10:-1"])
def test_bad_specs_are_one_line_errors(spec, shared_data):
    with pytest.raises(InputError):
        dally.from_spec(spec, 1, shared_data)
