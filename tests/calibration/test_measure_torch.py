"""Measurement commands on CPU with gloo and a tiny model (skipped where torch is absent)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app

torch = pytest.importorskip("torch", reason="torch not installed: pip install 'cosim[gpu]' to run measurement tests")


def test_gloo_allreduce_sweep_cli(tmp_path):
    out = tmp_path / "c.parquet"
    r = CliRunner().invoke(app, ["calibrate", "collectives", "--backend", "gloo", "--gpus", "2", "--sizes", "1KB,64KB",
                                 "--ops", "all_reduce,all_gather", "--warmup", "1", "--iters", "2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    df = pd.read_parquet(out)
    assert set(df["op"]) == {"all_reduce", "all_gather"} and set(df["group_size"]) == {2}
    ar = df[df["op"] == "all_reduce"]
    assert (ar["time_s"] > 0).all()
    # nccl-tests convention: busbw = algbw * 2(n-1)/n = algbw for n = 2; algbw = bytes / time
    pd.testing.assert_series_equal(ar["busbw_GBps"], ar["algbw_GBps"], check_names=False)
    assert ar["algbw_GBps"].iloc[0] == pytest.approx(ar["nbytes"].iloc[0] / ar["time_s"].iloc[0] / 1e9)


def test_compute_tiny_model(tmp_path):
    from calibration import measure

    df = measure.measure_compute(["tiny_mlp"], [2, 8], device="cpu", warmup=1, repeats=3, gpu_type="cpu")
    assert list(df["local_bsz"]) == [2, 8] and (df["status"] == "ok").all() and (df["step_time_s"] > 0).all()
    assert (df["step_p10_s"] <= df["step_time_s"]).all() and (df["step_time_s"] <= df["step_p90_s"]).all()


def test_collectives_rejects_bad_backend():
    from calibration import measure
    from cosim.errors import InputError

    with pytest.raises(InputError, match="nccl or gloo"):
        measure.sweep_collectives("mpi", 2)


def test_compute_precisions_recorded(tmp_path):
    from calibration import measure

    df = measure.measure_compute(["tiny_mlp"], [4], device="cpu", warmup=1, repeats=2, gpu_type="cpu",
                                 precisions=["fp32", "bf16"])
    assert list(df["precision"]) == ["fp32", "bf16"] and (df["status"] == "ok").all()
    meta = measure.compute_provenance(df, 1)
    assert meta["precisions"] == ["fp32", "bf16"] and meta["torch_version"] == [torch.__version__]
