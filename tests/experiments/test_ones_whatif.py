"""The ONES report's what-ifs and bound (experiments.ones_whatif, cli.ones_whatif): the scalings multiply exactly the
compute and communication-start times they name, leave the all-reduce and other processes' models
alone, and the bound is the one the report quotes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cosim.errors import InputError

REPORT = Path(__file__).resolve().parents[2] / "docs" / "reproductions" / "ones" / "REPORT.md"


def test_factors():
    from experiments.ones_whatif import HOST_SLOPE, factor

    assert factor("pow", "alexnet", 16, 8) == 1.0  # at the requested size the profile's speed stands
    assert factor("pow", "resnet18_cifar", 8, 4) == pytest.approx(2 ** 0.22)
    assert factor("pow", "bert", 1, 1) == pytest.approx(0.25 ** 0.22)
    assert factor("host", "bert", 4, 4) == 1.0
    assert factor("host", "alexnet", 16, 2) == pytest.approx((1 + HOST_SLOPE) / (1 + 3 * HOST_SLOPE))
    assert 1 / factor("host", "alexnet", 1, 1) == pytest.approx(1 + 3 * HOST_SLOPE)  # one GPU 1.26× faster
    with pytest.raises(ValueError, match="ONES class"):
        factor("pow", "gpt2", 2, 2)
    with pytest.raises(ValueError, match="pow, host"):
        factor("cube", "alexnet", 2, 2)


@pytest.fixture
def perf_factory():
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, real_backends

    cfg = RunConfig(trace="synth:ones:4", cluster="ones-longhorn", calibration="ones-artifact")
    be = real_backends(cfg)
    return lambda: build_perf(be.topology(cfg), be, cfg)


@pytest.mark.parametrize("mode", ["pow", "host"])
def test_applied_scales_compute_only_inside_the_block(perf_factory, mode):
    from experiments.ones_whatif import applied, factor

    base = perf_factory()
    gpus = base.consolidated_gpus(2, -1)
    plain = base.phases("resnet18_cifar", gpus, 512)
    with applied(mode):
        scaled = perf_factory().phases("resnet18_cifar", gpus, 512)
    after = perf_factory().phases("resnet18_cifar", gpus, 512)
    m = factor(mode, "resnet18_cifar", 2, 2)
    assert m != 1.0
    assert scaled.compute_s == pytest.approx(plain.compute_s * m, rel=1e-12)
    assert scaled.comm_start_s == pytest.approx(plain.comm_start_s * m, rel=1e-12)
    assert scaled.comm_s == plain.comm_s
    assert (after.compute_s, after.comm_s) == (plain.compute_s, plain.comm_s)


def test_command_line_errors():
    from cli.ones_whatif import main

    with pytest.raises(SystemExit, match="-j 1"):
        main(["pow", "sweep", "x.toml", "-o", "out", "-j", "2"])
    with pytest.raises(SystemExit, match="usage"):
        main(["cube"])
    with pytest.raises(SystemExit, match="ROWS: expected a positive integer"):
        main(["bound", "ten"])


def test_bound_is_the_reports():
    from experiments.ones_whatif import bound

    try:
        b = bound()
    except InputError:
        pytest.skip("the shared data folder (COSIM_SHARED_DATA or ../shared/data) is not here")
    text = " ".join(REPORT.read_text().split())
    m = re.search(r"warm-up epochs on one GPU average ([\d,]+) s per job.*?from below by ([\d,]+) s.*?against "
                  r"([\d,]+) s with every job at its requested size", text)
    assert m, "the report's bound sentence"
    quoted = [float(g.replace(",", "")) for g in m.groups()]
    assert [round(b["warmup"]), round(b["ones"]), round(b["requested"])] == quoted
    assert b["warmup"] < b["requested"] < b["ones"]
