"""Workload assembly: Ares size class → model and batch, seeded; existing values kept."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_per_job_gpu_cap_options():
    from cosim.errors import InputError
    from traces.workload import ARES_ARTIFACT_MAX_GPUS

    t = _table([1, 2, 4, 48], [3600.0] * 4)
    assert assemble(t, seed=0)["max_gpus"].tolist() == [2, 4, 8, 96]  # default: 2x the request
    assert assemble(t, seed=0, max_gpus="8x")["max_gpus"].tolist() == [8, 16, 32, 384]
    art = assemble(t, seed=0, max_gpus="artifact")
    want = [max(g, ARES_ARTIFACT_MAX_GPUS[m]) for g, m in zip([1, 2, 4, 48], art["model"])]
    assert art["max_gpus"].tolist() == want  # the model's 32 or 64, never below the request
    assert {32, 64} >= set(ARES_ARTIFACT_MAX_GPUS.values())
    with pytest.raises(InputError, match="max_gpus"):
        assemble(t, seed=0, max_gpus="double")


def test_assembled_table_writes_and_reads_back(tmp_path):
    from traces.io import read_jobs, write_jobs

    out = assemble(_table([1, 2, 4], [10.0, 4000.0, 400000.0]), 0)
    write_jobs(out, tmp_path / "w.parquet")
    back = read_jobs(tmp_path / "w.parquet")
    assert back["size_class"].tolist() == ["S", "M", "XL"] and back["model"].notna().all()
    assert back["max_gpus"].tolist() == [2, 4, 8]


# ---- work: fixed-epoch training runs (Ares §5.3, §9.1) -----------------------------------------

#: ceil(epochs × samples_per_epoch / global_batch) for the fixture rows, by hand:
#: cifar10 100×50,000/2048 = 2441.4 → 2442; deepspeech2 80×7,140/320 = 1785 exactly;
#: imagenet 90×1,281,167/12800 = 9008.2 → 9009; bert 2×88,641/384 = 461.7 → 462;
#: yolov3 50×16,551/512 = 1616.3 → 1617; ncf 10×4,970,845/32768 = 1516.98 → 1517.
FIXTURE_ITERS = [2442, 1785, 9009, 462, 1617, 1517]


def test_pollux_rows_get_their_models_training_run(fixtures):
    df = load(fixtures / "pollux_workload.csv")
    out = assemble(df, 0)
    assert out["total_iterations"].tolist() == FIXTURE_ITERS
    assert out["epochs"].tolist() == [100, 80, 90, 2, 50, 10]
    assert out["epoch_size"].tolist() == [50_000, 7_140, 1_281_167, 88_641, 16_551, 4_970_845]
    assert out["dataset"].tolist()[:2] == ["CIFAR-10", "CMU-ARCTIC"]
    assert out["duration"].isna().all()  # nothing invented for the trace's own fields


def test_replay_rows_kept_unless_epochs_asked():
    df = _table([1, 4, 8], [100.0, np.nan, 500_000.0])
    df["model"] = pd.array(["resnet18_cifar", "yolov3", "resnet50"], dtype="str")
    df["global_batch"] = pd.array([2048, 256, 6400], dtype="Int32")
    out = assemble(df, 0)  # work="missing": only the row without a duration
    assert out["total_iterations"].isna().tolist() == [True, False, True]
    assert out["total_iterations"].iloc[1] == 3233  # 50 × 16,551 / 256 = 3232.6
    ep = assemble(df, 0, work="epochs")  # Ares: every record becomes its model's training run
    assert ep["total_iterations"].tolist() == [2442, 3233, math.ceil(90 * 1_281_167 / 6400)]
    assert ep["duration"].tolist()[::2] == [100.0, 500_000.0]  # the trace's duration stays, as a record
    none = assemble(df, 0, work="none")
    assert none["total_iterations"].isna().all() and "epoch_size" not in none.columns


def test_existing_work_is_never_changed():
    df = _table([2, 2, 2, 2], [np.nan] * 4)
    df["model"] = pd.array(["resnet18_cifar"] * 4, dtype="str")
    df["global_batch"] = pd.array([1000] * 4, dtype="Int32")
    df["total_iterations"] = [7.0, np.nan, np.nan, np.nan]
    df["epochs"] = [np.nan, 3.0, 5.0, np.nan]
    df["epoch_size"] = [np.nan, 2000.0, np.nan, np.nan]
    for work in ("missing", "epochs"):
        out = assemble(df, 0, work=work)
        it = out["total_iterations"].tolist()
        # row 0 has iterations, row 1 epochs × epoch_size (the engine's samples mode): both kept;
        # row 2 keeps its 5 epochs over CIFAR-10: 5×50,000/1000; row 3 is the full run: 100×50,000/1000
        assert it[0] == 7 and np.isnan(it[1]) and it[2:] == [250, 5000]
        assert out["epochs"].tolist()[1:] == [3, 5, 100] and np.isnan(out["epochs"].iloc[0])
        assert out["epoch_size"].tolist()[1:] == [2000, 50_000, 50_000] and np.isnan(out["epoch_size"].iloc[0])


def test_unknown_model_or_batch_left_without_work(caplog):
    df = _table([1, 1], [np.nan, np.nan])
    df["model"] = pd.array(["vgg16", "resnet18"], dtype="str")
    df["global_batch"] = pd.array([256, None], dtype="Int32")
    df = df.iloc[:1]  # resnet18 without a batch gets one from the map; keep the unknown model only
    with caplog.at_level("WARNING"):
        out = assemble(df, 0)
    assert out["total_iterations"].isna().all() and "1 job(s) got no training run" in caplog.text


def test_work_option_and_custom_runs(tmp_path):
    from traces.workload import TrainingRun

    df = _table([1, 1], [np.nan, np.nan])
    df["model"] = pd.array(["Toy", "resnet18"], dtype="str")
    df["global_batch"] = pd.array([10, 500], dtype="Int32")
    out = assemble(df, 0, runs={"toy": TrainingRun("toy", "toyset", 95, 2)})
    assert out["total_iterations"].iloc[0] == 19 and np.isnan(out["total_iterations"].iloc[1])
    with pytest.raises(UnknownNameError, match="work"):
        assemble(df, 0, work="duration")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["cifar10", "imagenet", "bert", "ncf", "yolov3", "deepspeech2"]),
                          st.integers(1, 100_000), st.one_of(st.none(), st.floats(1, 1e6))), min_size=1, max_size=20))
def test_iterations_cover_the_run_exactly(rows):
    """b × iterations ≥ epochs × samples > b × (iterations − 1): the last iteration is the only partial one."""
    df = _table([1] * len(rows), [np.nan if d is None else d for _, _, d in rows])
    df["model"] = pd.array([m for m, _, _ in rows], dtype="str")
    df["global_batch"] = pd.array([b for _, b, _ in rows], dtype="Int32")
    out = assemble(df, 0, work="epochs")
    need = out["epochs"].to_numpy() * out["epoch_size"].to_numpy()
    it, b = out["total_iterations"].to_numpy(), out["global_batch"].to_numpy(dtype=float)
    assert (it * b >= need - 1e-6).all() and ((it - 1) * b < need).all()
    assert (out["total_iterations"] > 0).all()


def test_work_roundtrips_through_parquet(tmp_path, fixtures):
    from traces.io import read_jobs, write_jobs

    out = assemble(load(fixtures / "pollux_workload.csv"), 0)
    write_jobs(out, tmp_path / "w.parquet")
    back = read_jobs(tmp_path / "w.parquet")
    assert back["total_iterations"].tolist() == FIXTURE_ITERS and back["dataset"].iloc[0] == "CIFAR-10"


def test_every_shared_workload_gets_work(shared_data):
    root = shared_data / "traces"
    files = [f for d in ("philly", "helios-saturn", "newtrace") for f in sorted((root / d / "workloads").glob("*.csv"))]
    assert len(files) >= 10
    for f in files:
        out = assemble(load(f), 0)
        assert (out["total_iterations"] > 0).all(), f
        assert out["dataset"].notna().all(), f
