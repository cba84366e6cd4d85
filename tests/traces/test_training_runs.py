"""The fixed-epoch training runs of the Ares/Pollux models (traces/data/training_runs.json)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from traces.workload import TRAINING_RUNS_FILE, TrainingRun, training_runs

#: Ares artifact max_epochs (seeds/notes/ares.md §4, §9.1) and the public training-set sizes.
EXPECTED = {
    "resnet18_cifar": (100, 50_000, "cifar10"),  # CIFAR-10 train split
    "resnet50": (90, 1_281_167, "imagenet"),  # ILSVRC 2012 train split
    "yolov3": (50, 5_011 + 11_540, None),  # VOC07 trainval + VOC12 trainval
    "neumf": (10, (1_000_209 - 6_040) * 5, "ncf"),  # ML-1M minus one held-out rating per user, 4 negatives
    "bert_base": (2, 88_641, "bert"),  # SQuAD v1.1 features at seq 384 / stride 128
    "deepspeech2": (80, 7_140, None),
}

#: Pollux/Sia application directory of each model under profiles/pollux-sia.
POLLUX_APP = {"resnet18_cifar": "cifar10", "resnet50": "imagenet", "yolov3": "yolov3", "neumf": "ncf",
              "bert_base": "bert", "deepspeech2": "deepspeech2"}


def test_builtin_runs_are_the_ares_table():
    runs = training_runs()
    canonical = {r.model for r in runs.values()}
    assert canonical == set(EXPECTED)
    for model, (epochs, samples, alias) in EXPECTED.items():
        r = runs[model]
        assert (r.epochs, r.samples_per_epoch) == (epochs, samples)
        assert r.dataset and r.source  # every run names its dataset and where the numbers come from
        if alias:
            assert runs[alias] is r
    assert runs["cifar10"].dataset == "CIFAR-10"


def test_every_run_has_a_source_comment_in_the_file():
    doc = json.loads(TRAINING_RUNS_FILE.read_text())
    for model, r in doc["runs"].items():
        assert len(r["source"]) > 40, model
        assert "ares.md" in r["source"], model  # epochs are cited to the Ares notes


def test_iterations_hand_computed():
    r = TrainingRun("resnet18", "CIFAR-10", 50_000, 100)
    assert r.iterations(2048) == 2442  # 5,000,000 / 2048 = 2441.4 → one partial iteration more
    assert r.iterations(5000) == 1000  # exact division: no extra iteration
    assert TrainingRun("neumf", "ML-1M", 4_970_845, 10).iterations(32768) == 1517


def test_public_sizes_agree_with_the_pollux_profiles(shared_data):
    """Each public size, in whole batches of the smallest profiled batch, is the per-epoch
    iteration count Pollux recorded; the profile has one row per epoch of the Ares run."""
    runs = training_runs()
    root = shared_data / "profiles" / "pollux-sia"
    for model, app in POLLUX_APP.items():
        files = sorted(root.glob(f"{app}/validation-*.csv"), key=lambda p: int(p.stem.split("-")[1]))
        b = int(files[0].stem.split("-")[1])
        val = pd.read_csv(files[0])
        r = runs[model]
        assert math.ceil(r.samples_per_epoch / b) == int(val["progress"].iloc[0]), model
        assert len(val) == r.epochs, model


def _write(tmp_path, doc) -> str:
    p = tmp_path / "runs.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(p)


@pytest.mark.parametrize("doc, field", [
    ("{not json", None),
    ({"runs": {}}, "runs"),
    ([1, 2], "runs"),
    ({"runs": {"m": {"dataset": "d", "samples_per_epoch": -5, "epochs": 3}}}, "samples_per_epoch"),
    ({"runs": {"m": {"dataset": "d", "samples_per_epoch": 5, "epochs": "many"}}}, "epochs"),
    ({"runs": {"m": {"dataset": "d", "samples_per_epoch": 5, "epochs": True}}}, "epochs"),
    ({"runs": {"m": {"dataset": "d", "samples_per_epoch": 5, "epochs": 1, "aliases": "x"}}}, "aliases"),
    ({"runs": {"m": {"samples_per_epoch": 5, "epochs": 1, "aliases": ["n"]},
               "n": {"samples_per_epoch": 5, "epochs": 1}}}, "aliases"),
    ({"runs": {"m": 3}}, "runs"),
])
def test_bad_files_name_file_and_field(tmp_path, doc, field):
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as e:
        training_runs(path)
    msg = str(e.value)
    assert "runs.json" in msg and "\n" not in msg
    if field:
        assert field in msg


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="nope.json"):
        training_runs(tmp_path / "nope.json")


def test_custom_file_replaces_builtin(tmp_path):
    path = _write(tmp_path, {"runs": {"Toy": {"dataset": "toy", "samples_per_epoch": 1000, "epochs": 3,
                                              "aliases": ["TOYNET"]}}})
    runs = training_runs(path)
    assert set(runs) == {"toy", "toynet"} and runs["toynet"].iterations(64) == math.ceil(3000 / 64)


_values = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**7), st.floats(allow_nan=True),
                    st.text(max_size=5), st.lists(st.text(max_size=3), max_size=2))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6),
                       st.dictionaries(st.sampled_from(["dataset", "samples_per_epoch", "epochs", "aliases"]),
                                       _values), max_size=3))
def test_any_document_loads_or_fails_clearly(tmp_path_factory, runs):
    path = _write(tmp_path_factory.mktemp("r"), {"runs": runs})
    try:
        table = training_runs(path)
    except InputError as e:
        assert "runs.json" in str(e)
        return
    for r in table.values():  # what loads is usable
        assert r.samples_per_epoch > 0 and r.epochs > 0 and r.iterations(1) >= 1
