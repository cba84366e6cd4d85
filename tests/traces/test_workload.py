"""Workload assembly: Ares size class → model and batch, seeded; existing values kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cosim.errors import UnknownNameError
from traces import load
from traces.io import normalize
from traces.workload import MODEL_MAPS, assemble


def _table(gpus, duration):
    n = len(gpus)
    return normalize(pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "submit_time": np.arange(n, dtype=float),
                                   "num_gpus": gpus, "duration": duration}))


def test_models_come_from_the_jobs_size_class():
    rng = np.random.default_rng(0)
    gpus = rng.choice([1, 2, 4, 8, 16], 2000)
    dur = np.exp(rng.uniform(np.log(60), np.log(3e6), 2000))
    out = assemble(_table(gpus, dur), seed=3)
    ares = MODEL_MAPS["ares"]
    for cls, models in ares.items():
        sub = out[out["size_class"] == cls]
        assert len(sub) > 0
        allowed = {c.model: set(c.batches) for c in models}
        assert set(sub["model"]) == set(allowed)  # every model of the class is drawn
        for m, b in zip(sub["model"], sub["global_batch"]):
            assert b in allowed[m]
    assert (out["min_gpus"] == 1).all() and (out["max_gpus"] == 2 * out["num_gpus"]).all()


def test_deterministic_and_seed_dependent():
    df = _table([1, 2, 4, 8] * 50, [100.0, 5000.0, 50000.0, 500000.0] * 50)
    a, b, c = assemble(df, 1), assemble(df, 1), assemble(df, 2)
    pd.testing.assert_frame_equal(a, b)
    assert not a["model"].equals(c["model"]) or not a["global_batch"].equals(c["global_batch"])


def test_existing_values_kept(fixtures):
    df = load(fixtures / "pollux_workload.csv")
    out = assemble(df, 0)
    assert out["model"].tolist() == df["model"].tolist()  # raw names kept (zoo resolves aliases)
    assert out["global_batch"].tolist() == df["global_batch"].tolist()
    missing = df.copy()
    missing["global_batch"] = pd.array([None] * len(df), dtype="Int32")
    filled = assemble(missing, 0)  # known model → larger Table-2 batch
    assert filled["global_batch"].tolist() == [4096, 640, 12800, 384, 512, 32768]


def test_no_duration_draws_from_all_models_or_named_class():
    df = _table([1] * 300, [np.nan] * 300)
    out = assemble(df, 0)
    assert set(out["model"]) == {c.model for v in MODEL_MAPS["ares"].values() for c in v}
    assert set(assemble(df, 0, unknown_class="XL")["model"]) == {"resnet50"}
    with pytest.raises(UnknownNameError):
        assemble(df, 0, unknown_class="XXL")
    with pytest.raises(UnknownNameError):
        assemble(df, 0, mapping="nope")


def test_not_elastic_pins_bounds_to_request():
    out = assemble(_table([4, 8], [10.0, 10.0]), 0, elastic=False)
    assert out["min_gpus"].tolist() == [4, 8] and out["max_gpus"].tolist() == [4, 8]


def test_assembled_table_writes_and_reads_back(tmp_path):
    from traces.io import read_jobs, write_jobs

    out = assemble(_table([1, 2, 4], [10.0, 4000.0, 400000.0]), 0)
    write_jobs(out, tmp_path / "w.parquet")
    back = read_jobs(tmp_path / "w.parquet")
    assert back["size_class"].tolist() == ["S", "M", "XL"] and back["model"].notna().all()
    assert back["max_gpus"].tolist() == [2, 4, 8]
