"""Perf backends (`simcore.perf_backends`, `simcore.perf_measured`): each backend's defining
property, table mode exact at measured points and continuous between them, the trace
backend's placement ratio, `--perf` end to end, and `perf` as a sweep axis."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calibration import zoo
from cli.app import app
from cosim.atomic import read_metadata
from cosim.errors import InputError, UnknownNameError
from simcore.api import Allocation, ClusterView, Decision
from simcore.perf import PerfModel
from simcore.perf_backends import PERF_BACKENDS, LinearPerf, check_perf, make_perf, table_gaps
from simcore.perf_measured import MeasuredPerf, MeasuredTables, placement_key
from simcore.prepare import build_jobs
from experiments.runner import RunConfig, run
from tests.simcore.fakes import FakeComm, FakeZoo, FifoTest, fake_solve, fake_topology
from tests.simcore.helpers import fake_backends, frame

cli = CliRunner()

CIFAR = zoo.resolve("cifar10")  # the zoo's name of Pollux/Sia's cifar10 application

# ---- names -------------------------------------------------------------------------------


def test_names_and_unknown_backend():
    assert PERF_BACKENDS[0] == "network" and set(PERF_BACKENDS) == {"network", "linear", "measured", "trace", "astra",
                                                                       "measured-pollux-sim"}
    with pytest.raises(UnknownNameError, match="unknown perf backend 'nope'; valid: astra, linear, measured, "
                                               "measured-pollux-sim, network, trace"):
        check_perf("nope")
    topo = fake_topology()
    assert type(make_perf("network", topo, FakeZoo(), FakeComm(topo), fake_solve)) is PerfModel
    assert type(make_perf("trace", topo, FakeZoo(), FakeComm(topo), fake_solve)) is PerfModel


def test_cli_unknown_backend_one_line_exit_2():
    res = cli.invoke(app, ["simulate", "--synth", "philly:5", "--policy", "fifo", "--perf", "nope"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and ("unknown perf backend 'nope'; valid: astra, linear, measured, measured-pollux-sim, "
                                "network, trace") in lines[0]


# ---- linear ------------------------------------------------------------------------------


def _pm(cls=PerfModel, topo=None, **kw):
    topo = topo or fake_topology()
    return cls(topo, FakeZoo(), FakeComm(topo), fake_solve, **kw)


def test_linear_is_one_gpu_time_at_local_batch_so_throughput_scales_with_gpus():
    lin, net = _pm(LinearPerf), _pm()
    local = 16
    one = net.solo_iter_s("big", np.array([0]), local)
    assert one == pytest.approx(0.01 + 0.001 * local)  # the fake zoo's type-A time
    for gpus in ([0], [0, 1], [0, 1, 2, 3], [0, 4, 8, 12], list(range(16))):  # consolidated or spread
        n = len(gpus)
        ph = lin.phases("big", np.array(gpus), n * local)
        assert ph.comm_s == 0.0 and ph.link_ids.shape[0] == 0
        assert ph.solo_s == pytest.approx(one)  # same time at the same local batch …
        assert (n * local) / ph.solo_s == pytest.approx(n * local / one)  # … so throughput ∝ n
    # the network model charges the inter-node all-reduce of the big model; linear does not
    assert net.solo_iter_s("big", np.array([0, 4, 8, 12]), 4 * local) > lin.solo_iter_s("big", np.array([0, 4, 8, 12]), 4 * local)
    # ceil(b / n) local batch
    assert lin.solo_iter_s("small", np.array([0, 1, 2]), 100) == pytest.approx(0.01 + 0.001 * 34)


def test_linear_slowest_type_and_zoo_memory_limit():
    topo = fake_topology(nodes=2, types=(0, 1))  # type B: twice as slow, 8 GB (local batch ≤ 70)
    lin = _pm(LinearPerf, topo)
    # a mixed gang runs at 0.7 of its summed speeds (Aryl App. A), not at the slow type's pace:
    # A takes t, B 2t, so 2 GPUs give 0.7 * (1/t + 1/(2t)) local batches per second
    t = 0.01 + 0.001 * 32
    assert lin.solo_iter_s("small", np.array([0, 4]), 64) == pytest.approx(2 / (0.7 * 1.5 / t))
    ideal = _pm(LinearPerf, topo, hetero_efficiency=1.0)
    assert ideal.solo_iter_s("small", np.array([0, 4]), 64) == pytest.approx(2 / (1.5 / t))
    assert lin.solo_iter_s("small", np.array([4, 5]), 64) == pytest.approx(2 * t)  # one type: no loss
    # local batch 100 does not fit type B: accumulation as the network model's one-GPU run
    ph = lin.phases("small", np.array([4, 5]), 200)
    assert ph.accumulation_steps == 2 and ph.solo_s == pytest.approx(2 * 2 * (0.01 + 0.001 * 50))
    strict = _pm(LinearPerf, topo, allow_accumulation=False)
    assert strict.phases("small", np.array([4, 5]), 200) is None
    assert lin.phases("small", np.array([0, 1, 2]), 2) is None  # batch smaller than the GPU count


def test_linear_hetero_throughput_is_fraction_of_summed_capacity():
    """Paper Table 10's arithmetic: 12 V100 + 4 T4 at T4 = 1/4 V100 is 13 V100s of capacity;
    the gang gets hetero_efficiency of it (0.7 default)."""
    topo = fake_topology(nodes=4, types=(0, 0, 0, 1))
    for eff in (0.7, 1.0, 0.35):
        lin = _pm(LinearPerf, topo, hetero_efficiency=eff)
        ta = lin.solo_iter_s("small", np.array([0]), 8)
        tb = lin.solo_iter_s("small", np.array([12]), 8)
        gpus = np.array(list(range(12)) + [12, 13, 14, 15])
        thr = 16 * 8 / lin.solo_iter_s("small", gpus, 16 * 8)
        assert thr == pytest.approx(eff * (12 * 8 / ta + 4 * 8 / tb))


def test_linear_imperfect_scaling_and_spec_options():
    from simcore.perf_backends import make_perf, parse_perf

    assert parse_perf("linear") == ("linear", {})
    assert parse_perf("linear:imperfect_loss=0.1,hetero_efficiency=1") == (
        "linear", {"imperfect_loss": 0.1, "hetero_efficiency": 1.0})
    for bad in ("linear:imperfect_loss=2", "linear:foo=1", "linear:hetero_efficiency=0", "network:x=1",
                "linear:imperfect_form=square", "linear:imperfect_loss"):
        with pytest.raises(InputError):
            parse_perf(bad)
    with pytest.raises(UnknownNameError):
        parse_perf("linearx:imperfect_loss=0.1")
    topo = fake_topology()
    lin = make_perf("linear:imperfect_loss=0.1", topo, FakeZoo(), FakeComm(topo), fake_solve)
    assert lin.imperfect_loss == 0.1 and lin.hetero_efficiency == 0.7
    # range [4, 8]: midpoint 6; 7 GPUs lose 10 %, 8 GPUs 20 % of the ideal throughput
    assert [lin.scaling_factor(n, 4, 8) for n in (4, 6, 7, 8)] == pytest.approx([1, 1, 0.9, 0.8])
    ph = lin.phases("small", np.arange(8), 64)
    assert lin.job_phases(ph, 6, 4, 8) is ph
    assert lin.job_phases(ph, 8, 4, 8).solo_s == pytest.approx(ph.solo_s / 0.8)
    assert lin.job_phases(ph, 8, 4, 8) is lin.job_phases(ph, 8, 4, 8)  # cached
    assert lin.job_phases(ph, 16, 2, 16).solo_s == pytest.approx(ph.solo_s / 0.3)  # 7 steps past 9
    assert lin.job_phases(ph, 24, 2, 24) is None  # 11 steps past 13: no throughput left
    comp = make_perf("linear:imperfect_loss=0.1,imperfect_form=compounding", topo, FakeZoo(), FakeComm(topo),
                     fake_solve)
    assert comp.scaling_factor(8, 4, 8) == pytest.approx(0.81)
    off = make_perf("linear", topo, FakeZoo(), FakeComm(topo), fake_solve)
    assert off.job_phases(ph, 8, 4, 8) is ph  # off by default


def test_linear_contention_has_nothing_to_share():
    lin = _pm(LinearPerf)
    phs = [lin.phases("big", np.array(g), 64) for g in ([0, 4], [1, 5], [2, 6])]
    it, exposed = lin.iteration_times(phs)
    assert np.allclose(it, [p.solo_s for p in phs]) and np.all(exposed == 0.0)


# ---- measured ------------------------------------------------------------------------------

APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
LBS = (8, 16, 32, 64, 128)
PLACEMENTS = ("1", "2", "4", "8", "11", "14", "44", "88", "18")
SCAL = ((2, 2), (2, 4), (2, 8), (2, 16), (4, 4), (4, 16), (4, 32))


def _step(nodes: int, gpus: int, lbs: int, k: float) -> tuple[float, float]:
    """A made-up, non-linear measured set (different per app through k)."""
    sync = k * (0.002 * (nodes - 1) + 0.001 * math.log2(gpus)) if gpus > 1 else 0.0002 * k
    return k * (0.01 + 0.002 * lbs ** 0.8) + sync, sync


def write_tables(root, platforms=("aws", "dgx", "rtx"), apps=APPS):
    """Pollux/Sia-format files under root/pollux-sia/<app>/ (CSV, the artifacts' columns)."""
    for a, app_name in enumerate(apps):
        d = root / "pollux-sia" / app_name
        d.mkdir(parents=True)
        k = 1.0 + 0.5 * a
        for plat in platforms:
            rows = []
            for p in PLACEMENTS:
                c = [int(x) for x in p]
                for lb in LBS:
                    s, y = _step(len(c), sum(c), lb, k)
                    rows.append(dict(local_bsz=lb, step_time=s, sync_time=y, placement=p))
            pd.DataFrame(rows).to_csv(d / f"placements-{plat}.csv", index=False)
            rows = []
            for nodes, reps in SCAL:
                for lb in LBS:
                    s, y = _step(nodes, reps, lb, k * 1.1)
                    rows.append(dict(local_bsz=lb, step_time=s, sync_time=y, num_nodes=nodes, num_replicas=reps))
            pd.DataFrame(rows).to_csv(d / f"scalability-{plat}.csv", index=False)
    return root


def _measured_topo(nodes=4, gpn=8, type_name="T4"):
    return replace(fake_topology(nodes=nodes, gpus_per_node=gpn), gpu_type_names=(type_name, "B"))


def _gpus_for(counts, gpn=8):
    """GPU ids with counts[i] GPUs on node i."""
    return np.array([node * gpn + g for node, c in enumerate(counts) for g in range(c)], np.int32)


@pytest.fixture
def tables(tmp_path):
    return MeasuredTables(write_tables(tmp_path))


def test_placement_key_is_smallest_rotation():
    assert placement_key(np.array([4, 0, 1, 4])) == "144" and placement_key(np.array([4, 1])) == "14"
    assert placement_key(np.array([2, 2])) == "22" and placement_key(np.array([12])) == ""


def test_measured_exact_at_every_measured_point(tables):
    perf = _pm(MeasuredPerf, _measured_topo(), tables=tables)
    raw = pd.read_csv(tables.root / "cifar10" / "placements-aws.csv", dtype={"placement": str})
    for p, lb, step, sync in zip(raw["placement"], raw["local_bsz"], raw["step_time"], raw["sync_time"]):
        counts = [int(x) for x in p]
        for order in (counts, counts[::-1]):  # a rotation is the same placement
            g = _gpus_for(order)
            ph = perf.phases(CIFAR, g, len(g) * int(lb))
            assert ph.accumulation_steps == 1 and ph.link_ids.shape[0] == 0
            assert ph.solo_s == pytest.approx(step, rel=1e-12) and ph.comm_s == pytest.approx(sync, rel=1e-12)
            assert ph.solo_s - ph.compute_s == pytest.approx(sync)  # exposed communication = measured sync
    # an unmeasured placement at a scalability point is that point (2 nodes × 2 GPUs = '22')
    s, _ = _step(2, 4, 32, 1.5 * 1.1)
    assert perf.solo_iter_s(CIFAR, _gpus_for([2, 2]), 4 * 32) == pytest.approx(s, rel=1e-9)


def test_measured_continuous_between_points(tables):
    perf = _pm(MeasuredPerf, _measured_topo(), tables=tables)
    for counts in ([1, 4], [2, 2], [3, 3, 2]):  # measured, scalability-only, interpolated in 3-D
        g = _gpus_for(counts)
        n = len(g)
        t = np.array([perf.solo_iter_s(CIFAR, g, n * lb) for lb in range(8, 129)])
        assert np.all(np.isfinite(t)) and np.all(t > 0)
        assert np.max(np.abs(np.diff(t))) < 0.02 * (t.max() - t.min()) + 1e-12  # no jumps, lb step 1
        if counts == [1, 4]:  # piecewise linear between measured local batches
            assert t[48 - 8] == pytest.approx((t[32 - 8] + t[64 - 8]) / 2, rel=1e-12)


def test_measured_accumulation_and_clamps(tables):
    perf = _pm(MeasuredPerf, _measured_topo(), tables=tables)
    s, y = _step(1, 4, 128, 1.5)
    ph = perf.phases(CIFAR, _gpus_for([4]), 4 * 256)  # local 256 > largest measured 128: 2 micro-steps
    assert ph.accumulation_steps == 2 and ph.solo_s == pytest.approx(s + (s - y), rel=1e-12)
    strict = _pm(MeasuredPerf, _measured_topo(), tables=tables, allow_accumulation=False)
    assert strict.phases(CIFAR, _gpus_for([4]), 4 * 256) is None
    s4, _ = _step(1, 4, 8, 1.5)
    assert perf.solo_iter_s(CIFAR, _gpus_for([4]), 4 * 2) == pytest.approx(s4)  # below the range: its end
    big = perf.solo_iter_s(CIFAR, _gpus_for([8, 8, 8, 8]), 32 * 64)  # beyond the set's scale: capped
    assert math.isfinite(big) and big > 0


def test_pollux_sim_yolov3_max_local_batch_8(tables):
    """Quirk 1: the Pollux simulator caps yolov3's local batch at 8, so 16 per GPU accumulates."""
    yolo, topo = zoo.resolve("yolov3"), _measured_topo()
    plain = make_perf("measured", topo, FakeZoo(), FakeComm(topo), fake_solve, tables=tables)
    sim = make_perf("measured-pollux-sim", topo, FakeZoo(), FakeComm(topo), fake_solve, tables=tables)
    g = _gpus_for([4])
    k = 1.0 + 0.5 * APPS.index("yolov3")
    s16, _ = _step(1, 4, 16, k)
    s8, y8 = _step(1, 4, 8, k)
    assert plain.max_local_batch(yolo, 0) == 128 and sim.max_local_batch(yolo, 0) == 8
    ph = plain.phases(yolo, g, 4 * 16)
    assert ph.accumulation_steps == 1 and ph.solo_s == pytest.approx(s16, rel=1e-12)
    ph = sim.phases(yolo, g, 4 * 16)  # 2 micro-steps of 8, one synchronisation
    assert ph.accumulation_steps == 2 and ph.solo_s == pytest.approx(s8 + (s8 - y8), rel=1e-12)
    assert sim.solo_iter_s(CIFAR, g, 4 * 16) == plain.solo_iter_s(CIFAR, g, 4 * 16)  # other apps untouched


def test_pollux_sim_one_gpu_extra_accumulation_step(tables):
    """Quirk 2: one GPU above the initial batch (smallest validation file) runs 2 micro-steps."""
    for b in (16, 64):
        (tables.root / "cifar10" / f"validation-{b}.csv").write_text("progress,grad_sqr,grad_var\n1,1,1\n")
    topo = _measured_topo()
    plain = make_perf("measured", topo, FakeZoo(), FakeComm(topo), fake_solve, tables=tables)
    sim = make_perf("measured-pollux-sim", topo, FakeZoo(), FakeComm(topo), fake_solve, tables=tables)
    one, four = _gpus_for([1]), _gpus_for([4])
    s32, _ = _step(1, 1, 32, 1.5)
    s16, y16 = _step(1, 1, 16, 1.5)
    assert plain.solo_iter_s(CIFAR, one, 32) == pytest.approx(s32, rel=1e-12)
    ph = sim.phases(CIFAR, one, 32)  # 32 > initial batch 16: 2 micro-steps of 16
    assert ph.accumulation_steps == 2 and ph.solo_s == pytest.approx(s16 + (s16 - y16), rel=1e-12)
    assert sim.phases(CIFAR, one, 16).accumulation_steps == 1  # at the initial batch: no extra step
    assert sim.solo_iter_s(CIFAR, four, 4 * 32) == plain.solo_iter_s(CIFAR, four, 4 * 32)  # several GPUs: none
    assert sim.phases(CIFAR, one, 512).accumulation_steps == plain.phases(CIFAR, one, 512).accumulation_steps == 4


def test_measured_platform_by_gpu_type_and_missing_tables(tmp_path):
    tables = MeasuredTables(write_tables(tmp_path, platforms=("dgx",), apps=("cifar10",)))
    a100 = _pm(MeasuredPerf, _measured_topo(type_name="A100-80GB"), tables=tables)
    assert a100.type_platform[0] == "dgx" and a100.missing(CIFAR, 0) is None
    assert "no measured table for model resnet50 on platform dgx" in a100.missing("resnet50", 0)
    assert "GPU type B" in a100.missing(CIFAR, 1)
    t4 = _pm(MeasuredPerf, _measured_topo(type_name="T4"), tables=tables)
    assert t4.type_platform[0] == "aws" and "platform aws" in t4.missing(CIFAR, 0)
    df = pd.DataFrame({"job_id": ["a", "b"], "model": [CIFAR, "resnet50"], "gpu_type_req": [0, 0]})
    gaps = table_gaps(a100, df.assign(gpu_type_req=df["gpu_type_req"].to_numpy()))
    assert list(gaps) == ["b"] and "resnet50" in gaps["b"]
    assert table_gaps(_pm(), df) == {}  # other backends time every model


def test_measured_real_tables_exact(shared_data):
    """The shipped Pollux/Sia sets: every measured (placement, local batch) of two files."""
    tables = MeasuredTables(shared_data / "profiles")
    from calibration.importers import read_pollux_placements

    for app_name, model, gpu, gpn in (("imagenet", "resnet50", "A100-80GB", 8), ("bert", "bert_base", "T4", 4)):
        plat = "dgx" if gpu.startswith("A100") else "aws"
        raw = read_pollux_placements(tables.root / app_name / f"placements-{plat}.csv")
        nodes = int(raw["num_nodes"].max())
        perf = _pm(MeasuredPerf, _measured_topo(nodes=nodes, gpn=gpn, type_name=gpu), tables=tables)
        lmax = int(raw["local_bsz"].max())
        for p, lb, step in zip(raw["placement"], raw["local_bsz"], raw["step_time_s"]):
            g = _gpus_for([int(x) for x in p], gpn)
            assert perf.solo_iter_s(model, g, len(g) * int(lb)) == pytest.approx(step, rel=1e-12), (p, lb)
        assert perf.max_local_batch(model, 0) == lmax


# ---- trace ---------------------------------------------------------------------------------


def test_trace_time_per_iteration_on_implied_and_spread_placements():
    """Per trace iteration: tpi on the implied (consolidated) placement, tpi × the network
    ratio elsewhere — through the work `simcore.prepare` defines for trace-timed jobs."""
    topo = fake_topology()
    perf = make_perf("trace", topo, FakeZoo(), FakeComm(topo), fake_solve)
    df = frame([dict(submit_time=0.0, num_gpus=4, model="big", total_iterations=100, time_per_iteration=0.5)])
    jobs, bad = build_jobs(df, perf, FakeZoo())
    assert not bad
    implied, spread = perf.consolidated_gpus(4), np.array([0, 4, 8, 12], np.int32)
    per_trace_iter = lambda g: jobs.work_iters[0] * perf.solo_iter_s("big", g, 64) / 100  # noqa: E731
    assert per_trace_iter(implied) == pytest.approx(0.5)
    ratio = perf.solo_iter_s("big", spread, 64) / perf.solo_iter_s("big", implied, 64)
    assert ratio > 1.5 and per_trace_iter(spread) == pytest.approx(0.5 * ratio)


@dataclass
class Spread:
    """Every queued job on one GPU per node (the worst placement for the fake comm model)."""

    name: ClassVar[str] = "spread"
    interval_s: float | None = None
    event_driven: bool = True
    needs: frozenset = field(default_factory=frozenset)

    def decide(self, view: ClusterView, now: float) -> Decision:
        keep = view.keep_running()
        for j in view.queued():
            n = int(view.jobs.num_gpus[j])
            keep[int(j)] = Allocation(tuple(int(4 * i) for i in range(n)))
            break
        return Decision(keep)


def _trace_run(perf, rows, policy="fifo-test"):
    pols = {"fifo-test": lambda **kw: FifoTest(), "spread": lambda **kw: Spread()}
    cfg = RunConfig(trace="t", cluster="fake", policies=(policy,), costs="free", perf=perf)
    return run(cfg, None, backends=fake_backends(frame(rows), policies=pols))


def test_trace_backend_through_the_runner():
    rows = [dict(submit_time=0.0, num_gpus=4, model="big", total_iterations=100, time_per_iteration=0.5)]
    cons = _trace_run("trace", rows).jobs["fifo-test"]
    assert cons["jct_s"].iloc[0] == pytest.approx(50.0)  # consolidated: exactly the trace's time
    spread = _trace_run("trace", rows, "spread").jobs["spread"]
    assert spread["jct_s"].iloc[0] > 50.0 * 1.5  # spread over 4 nodes costs more
    net = _trace_run("network", rows, "spread").jobs["spread"]
    netc = _trace_run("network", rows).jobs["fifo-test"]
    # the trace backend keeps the network model's placement sensitivity
    assert spread["jct_s"].iloc[0] / 50.0 == pytest.approx(net["jct_s"].iloc[0] / netc["jct_s"].iloc[0], rel=1e-9)
    assert netc["jct_s"].iloc[0] == pytest.approx(50.0)  # prepare replays trace time under network too
    no_tpi = [dict(submit_time=0.0, num_gpus=4, model="big", total_iterations=100)]  # falls back to network
    net_own = _trace_run("network", no_tpi).jobs["fifo-test"]["jct_s"].iloc[0]
    assert _trace_run("trace", no_tpi).jobs["fifo-test"]["jct_s"].iloc[0] == pytest.approx(net_own)
    assert net_own != pytest.approx(50.0)  # the zoo's own time, not a trace's


def test_summary_and_metadata_record_the_backend(tmp_path):
    rows = [dict(submit_time=0.0, num_gpus=2, model="small", total_iterations=10)]
    cfg = RunConfig(trace="t", cluster="fake", policies=("fifo-test",), costs="free", perf="linear")
    res = run(cfg, tmp_path, backends=fake_backends(frame(rows)))
    s = pd.read_parquet(tmp_path / "summary.parquet")
    assert list(s["perf"]) == ["linear"] and list(res.summary.columns[:2]) == ["policy", "perf"]
    assert read_metadata(tmp_path / "summary.parquet")["perf"] == "linear"
    assert read_metadata(tmp_path / "fifo-test" / "jobs.parquet")["config"]["perf"] == "linear"


# ---- end to end on the real packages -------------------------------------------------------


# `astra` times only Dally's six models from the shared per-layer files: its end-to-end run is
# tests/experiments/test_dally_reproduce.py (and tests/simcore/test_perf_dally.py)
@pytest.mark.parametrize("backend", [b for b in PERF_BACKENDS if b != "astra"])
def test_cli_every_backend_end_to_end(backend, tmp_path, monkeypatch):
    write_tables(tmp_path / "profiles")
    monkeypatch.setenv("COSIM_SHARED_DATA", str(tmp_path))
    out = tmp_path / "out"
    res = cli.invoke(app, ["simulate", "--synth", "philly:12", "--nodes", "4", "--policy", "fifo", "--perf", backend,
                           "--out", str(out)])
    assert res.exit_code == 0, res.output
    s = pd.read_parquet(out / "summary.parquet")
    assert list(s["perf"]) == [backend] and int(s["finished"].iloc[0]) == 12
    assert read_metadata(out / "fifo" / "jobs.parquet")["perf"] == backend
    if backend in ("linear", "measured"):
        assert s["exposed_comm_s"].iloc[0] >= 0.0
        if backend == "linear":
            assert s["exposed_comm_s"].iloc[0] == 0.0


def test_measured_missing_model_fails_before_the_run(tmp_path, monkeypatch):
    write_tables(tmp_path / "profiles", apps=("cifar10",))
    monkeypatch.setenv("COSIM_SHARED_DATA", str(tmp_path))
    res = cli.invoke(app, ["simulate", "--synth", "philly:12", "--nodes", "4", "--policy", "fifo", "--perf",
                           "measured"])
    assert res.exit_code == 2
    assert "--perf measured: no measured table for model" in res.output and "on platform dgx" in res.output
    res = cli.invoke(app, ["simulate", "--synth", "philly:12", "--nodes", "4", "--policy", "fifo", "--perf",
                           "measured", "--skip-invalid"])
    assert res.exit_code == 0, res.output


# ---- sweeps ----------------------------------------------------------------------------------


def test_sweep_perf_axis(tmp_path, monkeypatch):
    from experiments.sweep.cell import default_runner, run_config_for
    from experiments.sweep.config import parse_sweep

    runner_mod = default_runner()

    base = {"traces": ["synth:philly:6"], "policies": ["fifo"], "clusters": [{"preset": "dgx-a100", "nodes": 2}]}
    one = parse_sweep(base).cells()
    two = parse_sweep(dict(base, perf=["network", "linear"])).cells()
    assert [c.perf for c in two] == ["network", "linear"]
    assert two[0].cell_id == one[0].cell_id and two[1].cell_id != one[0].cell_id  # default keeps old ids
    assert "perf" in parse_sweep(dict(base, perf=["network", "linear"])).swept_axes()
    assert run_config_for(runner_mod, two[1], "synth:philly:6", False).perf == "linear"
    with pytest.raises(InputError, match=r"perf\[1\]"):
        parse_sweep(dict(base, perf=["network", "fast"]))
    from experiments.sweep import run_sweep

    run_sweep(parse_sweep(dict(base, perf=["network", "linear"])), tmp_path / "sweep")
    s = pd.read_parquet(tmp_path / "sweep" / "summary.parquet")
    assert list(s["perf"]) == ["network", "linear"] and (s["status"] == "ok").all(), s["error"].tolist()
    assert s["exposed_comm_s"].iloc[1] == 0.0
