"""`cosim clusters list|show` and `cosim net allreduce` through the real CLI app."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_clusters_list_has_every_preset():
    r = run("clusters", "list")
    assert r.exit_code == 0, r.output
    for name in ("dgx-a100", "dgx-h100", "v100-nvlink", "t4-pcie", "rtx2080ti-pcie", "philly", "dally-3tier",
                 "ares-testbed", "aryl", "fft-hetero", "ones-longhorn"):
        assert name in r.output


def test_clusters_show_tiers_groups_speeds():
    r = run("clusters", "show", "aryl")
    assert r.exit_code == 0, r.output
    assert "7704 GPUs" in r.output and "V100-32GB" in r.output and "T4" in r.output
    assert "leaf" in r.output and "spine" in r.output and "core" in r.output and "100 Gb/s" in r.output
    r = run("clusters", "show", "dally-3tier", "--leaves", "2", "--json")
    d = json.loads(r.output)
    assert d["gpus"] == 128 and d["leaves"] == 2


def test_clusters_show_counts_what_is_built_and_names_profile_and_sources():
    r = run("clusters", "show", "dgx-a100", "--nodes", "2")
    assert r.exit_code == 0, r.output
    # 2 nodes fill one leaf of up to 4; the preset's 5-leaf pod size is a maximum, not a count
    assert "16 GPUs, 2 nodes, 1 leaf (2 nodes; at most 4 a leaf), 1 pod (1 leaf; at most 5 a pod)" in r.output
    assert "calibration profile: dgx-a100 (shipped dgx-a100.toml), fitted on the measured platforms dgx, dgx-ext" \
        in r.output
    assert "sources: NVIDIA DGX A100 datasheet" in r.output
    r = run("clusters", "show", "dgx-a100", "--json")
    d = json.loads(r.output)
    assert d["leaves"] == 2 and "2 leaves (4 nodes each" in d["layout"] and "1 pod (2 leaves" in d["layout"]
    assert d["profile"]["platforms"] == ["dgx", "dgx-ext"] and 0 < d["profile"]["cv_median_step_error"] < 0.2


def test_net_allreduce_json():
    r = run("net", "allreduce", "--cluster", "dgx-a100", "--placement", "8,8/8,8", "--bytes", "100MB", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["gpus"] == 32 and d["bytes"] == 1e8
    assert d["seconds"] > 0 and d["algorithm"] in ("ring", "tree", "hierarchical")
    assert d["bus_bandwidth"] == pytest.approx(1e8 / d["seconds"] * 2 * 31 / 32)
    assert "leaf0/up" in d["links"]


def test_net_allreduce_algorithms_and_sizes():
    base = ["net", "allreduce", "--cluster", "dgx-a100", "--placement", "4/4", "--json"]
    small = json.loads(run(*base, "--bytes", "1KiB").output)
    big = json.loads(run(*base, "--bytes", "1GiB").output)
    assert big["seconds"] > small["seconds"] and big["bytes"] == 2**30
    ring = json.loads(run(*base, "--bytes", "1GiB", "--algo", "ring").output)
    assert ring["algorithm"] == "ring" and ring["seconds"] >= big["seconds"]
    r = run("net", "allreduce", "--placement", "8", "--bytes", "4096")
    assert r.exit_code == 0 and "ring" in r.output


@pytest.mark.parametrize("args,needle", [
    (["--placement", "9", "--bytes", "1GB"], "at most 8 GPUs"),
    (["--placement", "8/8/8", "--bytes", "1GB"], "fits cluster 'dgx-a100'"),
    (["--placement", "8", "--bytes", "lots"], "size like"),
    (["--placement", "8", "--bytes", "1GB", "--algo", "magic"], "--algo"),
    (["--placement", "8", "--bytes", "1GB", "--cluster", "nope"], "unknown cluster preset 'nope'"),
])
def test_net_allreduce_bad_input_one_line(args, needle):
    r = run("net", "allreduce", *args)
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], r.output
