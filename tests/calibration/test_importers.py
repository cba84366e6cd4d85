"""Importers of public measured sets and nccl-tests logs: good files and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibration import importers, measure
from calibration.compute_fit import fit_curves, fit_line
from cosim.errors import InputError


def _write(tmp_path, app, name, text):
    d = tmp_path / app
    d.mkdir(parents=True, exist_ok=True)
    f = d / name
    f.write_text(text)
    return f


def test_placements_hand_example(tmp_path):
    f = _write(tmp_path, "cifar10", "placements-aws.csv",
               "placement,local_bsz,step_time,sync_time\n1,32,0.05,0.0005\n144,64,0.2,0.05\n")
    df = importers.read_pollux_placements(f)
    assert list(df["model"]) == ["resnet18_cifar", "resnet18_cifar"]
    assert list(df["preset"]) == ["t4-pcie"] * 2 and list(df["gpu_type"]) == ["t4"] * 2
    assert list(df["num_nodes"]) == [1, 3] and list(df["num_gpus"]) == [1, 9]
    np.testing.assert_allclose(df["step_time_s"], [0.05, 0.2])
    assert list(importers.placement_counts("144")) == [1, 4, 4]


def test_scalability_spreads_replicas(tmp_path):
    f = _write(tmp_path, "imagenet", "scalability-dgx.csv",
               "local_bsz,step_time,sync_time,num_nodes,num_replicas\n20,0.1,0.01,2,5\n")
    df = importers.read_pollux_placements(f)
    assert df["placement"].iloc[0] == "32" and df["num_gpus"].iloc[0] == 5 and df["preset"].iloc[0] == "dgx-a100"


@pytest.mark.parametrize(
    "app,name,text,needle",
    [("cifar10", "placements-aws.csv", "placement,local_bsz,step_time\n1,32,0.05\n", "missing sync_time"),
     ("cifar10", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n1,32,-0.05,0.1\n", "row 2"),
     ("cifar10", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n1,32,0,0.1\n", "step_time"),
     ("cifar10", "placements-tpu.csv", "placement,local_bsz,step_time,sync_time\n1,32,1,0.1\n", "platform"),
     ("alexnet2", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n1,32,1,0.1\n", "alexnet2"),
     ("cifar10", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n1x,32,1,0.1\n", "placement"),
     ("cifar10", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n", "no rows"),
     # the local batch from 1 to MAX_LOCAL_BSZ: 1e30 once wrapped to a negative batch, 0.4 rounds to none
     ("cifar10", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n1,1e30,1,0.1\n", "local_bsz"),
     ("cifar10", "placements-aws.csv", "placement,local_bsz,step_time,sync_time\n1,0.4,1,0.1\n", "local_bsz")],
)
def test_bad_pollux_files_name_file_and_problem(tmp_path, app, name, text, needle):
    f = _write(tmp_path, app, name, text)
    with pytest.raises(InputError) as e:
        importers.read_pollux_placements(f)
    msg = str(e.value)
    assert str(f) in msg and needle in msg


def test_gavel_json(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 4.0},
                                      "('ResNet-50 (batch size 64)', 2)": {"null": 7.0}}}))
    df = importers.read_gavel(f)
    assert len(df) == 1 and df["model"].iloc[0] == "resnet50" and df["local_bsz"].iloc[0] == 64
    assert df["step_time_s"].iloc[0] == pytest.approx(0.25) and df["gpu_type"].iloc[0] == "v100"
    # Gavel's ResNet-18 trains on CIFAR-10 (its job table's image_classification/cifar10)
    f.write_text(json.dumps({"k80": {"('ResNet-18 (batch size 32)', 1)": {"null": 5.0}}}))
    assert importers.read_gavel(f)["model"].tolist() == ["resnet18_cifar"]
    f.write_text(json.dumps({"v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 0.0}}}))
    with pytest.raises(InputError, match="positive throughput"):
        importers.read_gavel(f)


def test_real_profiles_import(shared_data):
    df = importers.read_any(shared_data / "profiles")
    assert set(df["platform"]) >= {"aws", "dgx", "dgx-ext", "rtx", "gavel-k80", "gavel-p100", "gavel-v100"}
    assert (df["step_time_s"] > 0).all() and (df["sync_time_s"] >= 0).all()
    assert set(df["model"]) >= {"resnet18_cifar", "resnet50", "bert_base", "deepspeech2", "yolov3", "neumf"}


NCCL_LOG = """# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on   node-a device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid   1002 on   node-a device  1 [0x2a] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0
     1048576        262144     float     sum      -1    25.00   41.94   41.94      0    24.90   42.11   42.11      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 21.0
"""


def test_import_nccl_tests(tmp_path):
    f = tmp_path / "all_reduce_perf.log"
    f.write_text(NCCL_LOG)
    df = measure.import_nccl_tests(f)
    assert list(df["nbytes"]) == [8, 1048576] and set(df["op"]) == {"all_reduce"}
    assert df["world"].iloc[0] == 2 and df["time_s"].iloc[1] == pytest.approx(25e-6)
    assert df["busbw_GBps"].iloc[1] == pytest.approx(41.94) and "A100" in df["device"].iloc[0]
    (tmp_path / "empty.log").write_text("# nothing here\n")
    with pytest.raises(InputError, match="result rows"):
        measure.import_nccl_tests(tmp_path / "empty.log")


def test_size_sweep():
    assert measure.size_sweep("8B..64B") == [8, 16, 32, 64]
    assert measure.size_sweep("1KB..4KB") == [1024, 2048, 4096]
    assert measure.size_sweep("100,1MB") == [100, 1_000_000]
    with pytest.raises(InputError):
        measure.size_sweep("64B..8B")


def test_fit_line_exact_and_curves():
    b = np.array([8.0, 16.0, 32.0])
    t0, k = fit_line(b, 0.01 + 0.002 * b)
    assert t0 == pytest.approx(0.01, rel=1e-6) and k == pytest.approx(0.002, rel=1e-6)
    import pandas as pd

    df = pd.DataFrame(dict(model="resnet50", gpu_type="t4", num_gpus=1, local_bsz=[8, 16, 16, 32],
                           step_time_s=[0.05, 0.09, 0.11, 0.17], source="x"))
    bf = df.assign(precision="bf16", source="cosim-compute", step_time_s=df["step_time_s"] / 2)
    doc = fit_curves(pd.concat([df, bf], ignore_index=True))
    c = {(d["model"], d["gpu"], d["host"]): d for d in doc["measured"]}
    assert set(c) == {("resnet50", "t4", "x"), ("resnet50@bf16", "t4", "synthetic")}
    assert c["resnet50", "t4", "x"]["batches"] == [8, 16, 32]
    assert c["resnet50", "t4", "x"]["times_s"] == pytest.approx([0.05, 0.10, 0.17])


def test_measurement_without_torch_says_what_to_install(monkeypatch, tmp_path):
    import sys

    from typer.testing import CliRunner

    from cli.app import app

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ModuleNotFoundError
    r = CliRunner().invoke(app, ["calibrate", "compute", "--models", "resnet18", "-o", str(tmp_path / "x.parquet")])
    assert r.exit_code == 2 and "pip install 'cosim[gpu]'" in r.output


def test_compute_unknown_precision_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    out = tmp_path / "x.parquet"
    r = CliRunner().invoke(app, ["calibrate", "compute", "--models", "resnet18", "--precision", "fp8", "-o", str(out)])
    assert r.exit_code == 2 and "precision" in r.output and "fp8" in r.output and not out.exists()


def test_gavel_json_nested_too_deeply_is_one_line(tmp_path):
    """A JSON document nested past the parser's stack is refused naming the file (no RecursionError)."""
    from cosim.errors import InputError
    from calibration.importers import read_gavel

    f = tmp_path / "deep.json"
    f.write_text("[" * 100_000)
    with pytest.raises(InputError, match="deep.json.*nested too deeply"):
        read_gavel(f)


@pytest.mark.parametrize("bad", ["", "abc", "40", None])
def test_step_table_with_a_bad_placement_is_one_line(tmp_path, bad):
    """A Parquet step table (`calibrate import-profiles` format) whose placement is empty, text,
    a zero-GPU node or not a string is refused naming the file, row and field."""
    import pandas as pd

    from calibration.fit import fit_files
    from cosim.errors import InputError

    row = dict(source="x", file="f", row="1", model="resnet50", app="imagenet", platform="aws", preset="t4-pcie",
               gpu_type="t4", placement="4", num_nodes=1, num_gpus=4, local_bsz=32, step_time_s=0.5, sync_time_s=0.1)
    f = tmp_path / "steps.parquet"
    pd.DataFrame([row, dict(row, placement=bad)]).to_parquet(f)
    with pytest.raises(InputError, match=r"steps\.parquet.*row 2.*placement"):
        fit_files([str(f)])


@pytest.mark.parametrize("field,value,expected", [
    ("step_time_s", 1e308, "a positive number from 1e-09 to 86400"),   # overflowed the compute fit
    ("step_time_s", 5e-324, "a positive number from 1e-09 to 86400"),  # divided the fit by ~0
    ("local_bsz", 1e308, "a positive number from 1 to 1,000,000,000"),  # failed the fit's SVD
])
def test_compute_parquet_value_out_of_range_is_one_line(tmp_path, field, value, expected):
    """A compute table's number outside its measured range (`importers.MEASURED_RANGE`) is one error
    naming the file, the row (the table's first is row 1) and the field, before any fit runs."""
    import pandas as pd

    from calibration.fit import fit_files
    from cosim.errors import InputError

    rows = [dict(model="resnet18_cifar", gpu_type="h100", local_bsz=b, step_time_s=t) for b, t in ((32, 0.01), (64, 0.018))]
    rows[1][field] = value
    f = tmp_path / "compute.parquet"
    pd.DataFrame(rows).to_parquet(f)
    with pytest.raises(InputError) as e:
        fit_files([str(f)])
    assert str(e.value).startswith(f"{f}: row 2: field '{field}': expected {expected}, got ")


def test_pollux_csv_step_time_out_of_range_is_one_line(tmp_path):
    """The same range for the Pollux/Sia CSVs, whose rows count from 2 (line 1 is the header)."""
    f = _write(tmp_path, "cifar10", "placements-aws.csv",
               "placement,local_bsz,step_time,sync_time\n1,32,0.05,0.0005\n1,32,1e300,0.0005\n")
    with pytest.raises(InputError, match=r"placements-aws\.csv: row 3: field 'step_time': expected a positive number "
                                         r"from 1e-09 to 86400, got "):
        importers.read_pollux_placements(f)
