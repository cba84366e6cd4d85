"""GPU types as user data: a file or a cluster's [gpu_types] table extends the shipped table;
bad files are one line naming the file and field (exit 2) and nothing is written."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from calibration import zoo
from cli.app import app
from cosim.errors import InputError

L4 = """
[l4]
display = "L4 24GB"
aliases = ["NVIDIA L4"]
mem_gb = 24
peak_tflops = 30.3
tf32_tflops = 60
tensor_tflops = 121
mem_bw_GBps = 300
source = "NVIDIA L4 datasheet"
"""

CLUSTER = """
name = "l4-rig"
nodes_per_leaf = 2
leaves_per_pod = 1
[node_types.box]
gpu_type = "NVIDIA L4"
gpu_mem_gb = 24
gpus_per_node = 4
[node_types.box.intra]
kind = "pcie"
gpu_GBps = 31.5
host_bridge_GBps = 20.0
latency_us = 5.0
[node_types.box.nic]
count = 1
gbps = 100
gpudirect = false
latency_us = 5
[[groups]]
name = "g"
node_type = "box"
nodes = 2
[tiers.leaf]
port_gbps = 100
latency_us = 1
[tiers.spine]
port_gbps = 100
latency_us = 1
[tiers.core]
port_gbps = 100
latency_us = 1
"""


@pytest.fixture(autouse=True)
def _shipped_table():
    zoo.reset_gpu_types()
    yield
    zoo.reset_gpu_types()


def test_file_adds_a_type_with_its_datasheet_speed(tmp_path):
    f = tmp_path / "gpus.toml"
    f.write_text(L4)
    assert zoo.load_gpu_types(f) == ["l4"]
    g = zoo.get_gpu("NVIDIA L4")
    assert g.name == "l4" and g.mem_gb == 24 and g.speed_fp32 == 0  # no published speed given
    # never measured: its speed is its datasheet's (no residual), between a T4 and an A100
    dm = zoo.device_model()
    assert "l4" not in dm.r
    for cls in ("conv", "matmul"):
        assert dm.relative_speed("t4", cls) < dm.relative_speed("l4", cls) < dm.relative_speed("a100", cls)
    # the fitted speeds move the nearest measured curve of each model to it
    t = zoo.compute_time_s("resnet50", "l4", 64)
    assert zoo.compute_time_s("resnet50", "a100", 64) < t < zoo.compute_time_s("resnet50", "k80", 64)


def test_a_published_benchmark_sets_an_unmeasured_types_speed(tmp_path):
    """A type with a published benchmark against a measured one runs at the benchmark's ratio of
    that type's fitted speed on convolutional models (its residual from the benchmark, not 0)."""
    f = tmp_path / "gpus.toml"
    f.write_text(L4 + 'benchmark_ref = "T4"\nbenchmark_ratio = 2.5\nbenchmark_source = "a benchmark"\n')
    zoo.load_gpu_types(f)
    dm = zoo.device_model()
    assert "l4" not in dm.r and dm.residual("l4") != 0.0
    assert dm.relative_speed("l4", "conv", ref="t4") == pytest.approx(2.5)


@pytest.mark.parametrize("text, field", [
    (L4.replace('source = "NVIDIA L4 datasheet"', 'source = "x"\ncolour = "green"'), "l4.colour"),
    (L4.replace("mem_gb = 24", "mem_gb = nan"), "l4.mem_gb"),
    (L4.replace("peak_tflops = 30.3", "peak_tflops = -1"), "l4.peak_tflops"),
    (L4.replace('aliases = ["NVIDIA L4"]', 'aliases = ["Tesla T4"]'), "l4.aliases"),
    (L4.replace("mem_bw_GBps = 300\n", ""), "l4.mem_bw_GBps"),
    (L4 + 'benchmark_ref = "no-such-gpu"\nbenchmark_ratio = 1.9\n', "l4.benchmark_ref"),
    (L4 + "benchmark_ratio = 1.9\n", "l4.benchmark_ref"),
    (L4 + 'benchmark_ref = "t4"\nbenchmark_ratio = 0\n', "l4.benchmark_ratio"),
])
def test_bad_gpu_types_file_is_one_line_exit_2(tmp_path, text, field):
    f = tmp_path / "gpus.toml"
    f.write_text(text)
    with pytest.raises(InputError, match=f"gpus.toml: field '{field}'"):
        zoo.load_gpu_types(f)
    assert "l4" not in zoo.gpu_types()
    r = CliRunner().invoke(app, ["validate", "--gpu-types", str(f), "--leave-one-gpu-type-out"])
    assert r.exit_code == 2 and field in r.output and "Traceback" not in r.output


def test_cluster_file_brings_its_own_gpu_type(tmp_path):
    c = tmp_path / "rig.toml"
    c.write_text(CLUSTER)
    r = CliRunner().invoke(app, ["clusters", "show", str(c)])
    assert r.exit_code == 2 and "rig.toml: field 'node_types.box.gpu_type'" in r.output
    gpus = tmp_path / "gpus.toml"
    gpus.write_text(L4)
    r = CliRunner().invoke(app, ["clusters", "show", str(c), "--gpu-types", str(gpus)])
    assert r.exit_code == 0 and "GPU type l4" in r.output and "host regime: synthetic" in r.output
    zoo.reset_gpu_types()
    c.write_text(CLUSTER + "\n[gpu_types.l4]\n" + L4.split("[l4]", 1)[1])
    r = CliRunner().invoke(app, ["clusters", "show", str(c)])
    assert r.exit_code == 0 and "GPU type l4" in r.output


def test_engine_runs_a_cluster_with_its_own_gpu_type(tmp_path):
    import netmodel
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, perf_backends

    c = tmp_path / "rig.toml"
    c.write_text(CLUSTER + "\n[gpu_types.l4]\n" + L4.split("[l4]", 1)[1])
    cfg = RunConfig(cluster=str(c), contention=False)
    topo = netmodel.build_topology(netmodel.load_cluster(str(c)))
    perf = build_perf(topo, perf_backends(cfg), cfg)
    ph = perf.phases("resnet50", [0, 1, 2, 3], 128)
    assert ph is not None and ph.compute_s == pytest.approx(zoo.compute_time_s("resnet50", "l4", 32))


def test_compute_table_with_unknown_precision_or_gpu_is_refused(tmp_path):
    base = dict(model="resnet50", gpu_type="NVIDIA L4", num_gpus=1, local_bsz=[8, 16, 32],
                step_time_s=[0.03, 0.05, 0.09], source="cosim-compute")
    bad = tmp_path / "c.parquet"
    pd.DataFrame(dict(base, precision="fp8")).to_parquet(bad)
    out = tmp_path / "p.toml"
    r = CliRunner().invoke(app, ["calibrate", "fit", str(bad), "-o", str(out)])
    assert r.exit_code == 2 and "c.parquet: field 'precision'" in r.output and not out.exists()
    pd.DataFrame(dict(base, precision="bf16")).to_parquet(bad)
    r = CliRunner().invoke(app, ["calibrate", "fit", str(bad), "-o", str(out)])
    assert r.exit_code == 2 and "c.parquet: field 'gpu_type'" in r.output and not out.exists()
    gpus = tmp_path / "gpus.toml"
    gpus.write_text(L4)
    r = CliRunner().invoke(app, ["calibrate", "fit", str(bad), "-o", str(out), "--gpu-types", str(gpus)])
    assert r.exit_code == 0, r.output
    import tomllib

    assert list(tomllib.loads(out.read_text())["compute"]["resnet50@bf16"]) == ["l4"]  # under its own type


def test_simulate_takes_a_gpu_types_file(tmp_path):
    """`simulate --gpu-types FILE` runs a cluster whose nodes name a type only the file defines; a
    bad file is one line naming it and the field, exit 2, and no output folder."""
    c, gpus = tmp_path / "rig.toml", tmp_path / "gpus.toml"
    c.write_text(CLUSTER)
    gpus.write_text(L4.replace("mem_bw_GBps = 300", "mem_bw_GBps = -300"))
    args = ["simulate", "--cluster", str(c), "--synth", "philly:4", "--policy", "fifo", "--no-contention"]
    r = CliRunner().invoke(app, [*args, "--gpu-types", str(gpus), "--out", str(tmp_path / "bad")])
    assert r.exit_code == 2 and "gpus.toml: field 'l4.mem_bw_GBps'" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()
    gpus.write_text(L4)
    r = CliRunner().invoke(app, [*args, "--gpu-types", str(gpus), "--out", str(tmp_path / "ok")])
    assert r.exit_code == 0, r.output
    import json

    assert json.loads((tmp_path / "ok" / "config.json").read_text())["config"]["gpu_types"] == str(gpus)
