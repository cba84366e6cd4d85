"""ONES' Table-2 workload generator (traces.ones, `synth:ones:N`, `synth:ones-artifact:N`)."""

from __future__ import annotations

import numpy as np
import pytest

from cosim.errors import InputError
from traces import ones, synth


def test_paper_trace_has_each_table2_workload_once():
    df = synth.from_spec("synth:ones:50", 0)
    assert len(df) == 50
    keys = set(zip(df["model"], df["task"], df["epoch_size"].astype(int)))
    assert len(keys) == 50  # 4×6 + 3×5 + 4 + 1 + 6 distinct configurations
    assert (df["epochs"] >= df["patience"]).all()  # E ≥ 1: total = E + patience − 1
    gaps = np.diff(df["submit_time"].to_numpy())
    assert (gaps >= 0).all() and (gaps <= 60).all() and 20 < gaps.mean() < 40
    assert (df["min_gpus"] == 1).all() and (df["max_gpus"] >= df["num_gpus"]).all()
    # per-GPU base batch × requested GPUs (the artifact's class table)
    row = df[df["model"] == "resnet18_cifar"].iloc[0]
    assert row["global_batch"] == 256 * 4 and row["max_lr"] / row["lr"] == pytest.approx(16)


def test_seeds_are_deterministic_and_differ():
    a, b, c = (synth.from_spec("synth:ones:50", s) for s in (1, 1, 2))
    assert a.equals(b)
    assert not a["submit_time"].equals(c["submit_time"])


def test_artifact_mix_uses_endpoint_sizes():
    df = synth.from_spec("synth:ones-artifact:200", 0)
    sizes = set(df.loc[df["task"] == "imagenet", "epoch_size"].astype(int))
    assert sizes <= {10000, 20000}
    assert (df["model"] == "inception_v3").sum() > (df["model"] == "resnet50").sum()


def test_class_epochs_interpolate_between_measured_sizes():
    lo, hi = ones.class_total_epochs("resnet18", "cifar", 20000), ones.class_total_epochs("resnet18", "cifar", 40000)
    mid = ones.class_total_epochs("resnet18", "cifar", 30000)
    assert (lo, hi) == (36.0, 23.0) and hi < mid < lo


def test_bad_like_is_one_line_error():
    with pytest.raises(InputError):
        ones.generate("ones-x", 5, 0)
