"""`cosim reproduce aryl --size small` (the testbed configuration) end to end through the common
reproduction path (experiments/catalog/aryl.toml, hooks in experiments/aryl_metrics.py), the
stand-in workload's recorded statistics (aryl.md §5), and the `aryl:` trace specs."""

from __future__ import annotations

import pandas as pd
import pytest

from traces import aryl as W


def test_basic_workload_has_the_papers_elastic_jobs(shared_data):
    """Aryl §2.2/§7.1: ~5 % of the jobs are elastic, large multi-worker jobs holding 36 % of the
    GPU-time with an average running time of 14.2 h; up to 21 % of jobs are GPU-type-agnostic."""
    df, st = W.build(W.ArylWorkload(scale=1 / 16), shared_data)
    elastic = (df["min_gpus"] < df["max_gpus"]).to_numpy()
    gt = df["duration"] * df["num_gpus"]
    assert elastic.mean() == pytest.approx(0.05, abs=0.003) and elastic.mean() == st["elastic_job_frac"]
    assert gt[elastic].sum() / gt.sum() == pytest.approx(0.36, abs=0.02)
    assert df.loc[elastic, "duration"].mean() / 3600 == pytest.approx(14.2, abs=0.5)
    assert (df.loc[elastic, "max_gpus"] >= 2).all() and st["elastic_multi_gpu_frac"] == 1.0  # multi-worker
    assert (df.loc[elastic, "min_gpus"] == df.loc[elastic, "max_gpus"] // 2).all()
    assert df["gpu_type"].isna().mean() == pytest.approx(0.21, abs=0.005)
    assert df.loc[elastic, "gpu_type"].isna().all()  # elastic jobs may run on loaned T4 servers
    assert df["submit_time"].max() <= 15 * 86400
    _, ideal = W.build(W.ArylWorkload(scenario="ideal", scale=1 / 16), shared_data)
    assert ideal["elastic_job_frac"] == 1.0 and ideal["agnostic_frac"] == 1.0


def test_gpu_time_cut_still_serves_the_elastic_fraction_sweep(shared_data):
    w = W.parse_spec("aryl:basic:0.03125:ef0.2")
    assert w.elastic_shape == "gpu-time"
    df, st = W.build(w, shared_data)
    assert (df["min_gpus"] < df["max_gpus"]).mean() == pytest.approx(0.2, abs=0.003)


def test_advanced_draws_heterogeneous_jobs_from_multi_gpu_jobs(shared_data):
    """Advanced = Basic + 10 % heterogeneous-capable jobs (Aryl §7.1), drawn from the multi-GPU
    jobs (elastic ones included: App. A trains them on 16-32 GPUs) before any one-GPU job; they are
    the virtual cluster "hetero" (read by the policy's hetero_jobs=vc) and type-agnostic on top of
    Basic's type-agnostic set; Ideal marks every job; Basic none."""
    basic, _ = W.build(W.ArylWorkload(scale=1 / 32), shared_data)
    adv, st = W.build(W.ArylWorkload(scenario="advanced", scale=1 / 32), shared_data)
    het = (adv["vc"] == "hetero").to_numpy()
    multi = (adv["num_gpus"] > 1).to_numpy()
    elastic = (adv["min_gpus"] < adv["max_gpus"]).to_numpy()
    assert het.mean() == pytest.approx(0.10, abs=0.002) and het.mean() == st["hetero_frac"]
    assert multi.mean() < 0.10 and het[multi].all()  # every multi-GPU job, then one-GPU ones
    assert (het & elastic).sum() == elastic.sum()
    assert (adv["job_id"] == basic["job_id"]).all() and (adv["max_gpus"] == basic["max_gpus"]).all()
    agn_basic, agn_adv = basic["gpu_type"].isna().to_numpy(), adv["gpu_type"].isna().to_numpy()
    assert (agn_adv == (agn_basic | het)).all()
    assert "vc" not in basic.columns or basic["vc"].isna().all()
    ideal, _ = W.build(W.ArylWorkload(scenario="ideal", scale=1 / 32), shared_data)
    assert (ideal["vc"] == "hetero").all()


def test_testbed_workload(shared_data):
    df, st = W.testbed(shared_data)
    assert len(df) == 180 and st["elastic_jobs"] == 10
    assert df["duration"].between(120, 7200).all() and df["num_gpus"].max() <= 16
    assert df["submit_time"].max() == pytest.approx(8 * 3600)
    adv, st = W.testbed(shared_data, scenario="advanced")
    het = (adv["vc"] == "hetero").to_numpy()
    assert het.sum() == 18 and (adv["num_gpus"][het] > 1).all() and st["hetero_multi_gpu_frac"] == 1.0


@pytest.fixture(scope="module")
def small(shared_data, tmp_path_factory):
    """`cosim reproduce aryl --size small` through the common path (experiments.reproduction)."""
    from experiments.reproduction import reproduce

    return reproduce("aryl", "small", tmp_path_factory.mktemp("aryl") / "small", workers=1, shared_data=shared_data)


def test_reproduce_aryl_small(small):
    text = small.report.read_text()
    assert small.failed == 0
    for section in ("## table5-qt-mean:", "## table5-overall-usage:", "## table12-preemption:", "## table6-preemption:",
                    "## table9-jct-mean:", "## table7: Table 7"):
        assert section in text
    assert "fig13" not in text  # the elastic-fraction sweep is medium/full only
    verdict = {(v.claim.better, v.claim.worse): v.result for v in small.verdicts["table5-qt-mean"]}
    assert verdict[("basic", "baseline")] == "yes"  # the headline direction
    assert sorted(small.cells["seed"].unique()) == [0, 1]  # two testbed workloads
    cells = small.cells[small.cells["seed"] == 0].set_index("policy_label")
    assert cells.loc["baseline", "preemption_ratio"] == 0.0 and cells.loc["basic", "preemptions"] > 0
    assert (small.cells["finished"] == 180).all() and (small.cells["status"] == "ok").all()
    assert cells.loc["basic", "train_servers"] == cells.loc["basic", "inference_servers"] == 4
    # Table 7's jobs ran on inference GPUs (ids >= 32) under cl-aryl
    row = next(line for line in text.splitlines() if line.startswith("| cl-aryl | "))
    assert int(row.split(" | ")[1]) > 0


def test_cell_columns_are_the_metrics_of_the_cell_folder(small):
    """The hook's columns are `policy_metrics` of the kept run files (reclaims.parquet kept per cell), and the
    summary's own JCT and queueing means agree with them (one run, two readers)."""
    from experiments.aryl_metrics import cell_folder, overall_usage, policy_metrics

    seed0 = small.cells[small.cells["seed"] == 0].set_index("policy_label")
    c = seed0.loc["basic"]
    m = policy_metrics(cell_folder(small.out_dir, c["grid"], c["cell_id"]), 8 * 3600.0, inference_gpus=8,
                       headroom=0.05, seed=0, inference_nodes=4)  # 4 normalized servers of 2
    assert c["preemptions"] == m["preemptions"] > 0 and c["qt_p95_s"] == m["qt_p95_s"]
    assert c["overall_usage"] == pytest.approx(overall_usage(m, 32, 8))
    assert c["jct_mean_s"] == pytest.approx(c["avg_jct_s"], rel=1e-12)
    assert c["qt_mean_s"] == pytest.approx(c["avg_queueing_s"], rel=1e-12)
    assert 0 < c["training_usage"] <= 1 and c["overall_usage"] > seed0.loc[
        "baseline", "overall_usage"]


def test_aryl_trace_specs_and_bad_specs():
    from cosim.errors import InputError

    w = W.parse_spec("aryl:advanced:0.03125:ef0.2", seed=3)
    assert (w.scenario, w.scale, w.elastic_frac, w.elastic_share, w.seed) == ("advanced", 0.03125, 0.2, 1.0, 3)
    assert W.parse_spec("aryl:testbed") == ("basic", 0) and W.parse_spec("aryl:testbed:ideal", 1) == ("ideal", 1)
    assert W.servers("aryl:basic:0.03125") == (14, 16, 15 * 86400.0)  # the medium size's 14+16 servers
    assert W.servers("aryl:testbed") == (4, 4, 8 * 3600.0)
    for bad in ("aryl:", "aryl:foo:0.5", "aryl:basic", "aryl:basic:2", "aryl:basic:x", "aryl:testbed:x",
                "aryl:basic:0.5:x0.2", "aryl:basic:0.5:ef2"):
        with pytest.raises(InputError):
            W.parse_spec(bad)


def test_spec_table_is_the_one_the_earlier_parquet_path_read(shared_data, tmp_path):
    """Before the spec, the earlier Aryl driver wrote each workload to Parquet and the runner read it back; the
    spec builds it in the runner. The canonical tables are equal, so the results are too."""
    from traces.io import read_jobs

    for spec, (df, st) in (("aryl:testbed:advanced", W.testbed(shared_data, scenario="advanced")),
                           ("aryl:basic:0.015625:ef0.6",
                            W.build(W.ArylWorkload(scale=0.015625, elastic_frac=0.6, elastic_share=1.0,
                                                  elastic_shape="gpu-time"), shared_data))):
        old = read_jobs(W.write(df, st, tmp_path / "w.parquet"))
        new = W.from_spec(spec, 0, shared_data)
        cols = [c for c in old.columns if c != "source"]
        pd.testing.assert_frame_equal(old[cols].reset_index(drop=True), new[cols].reset_index(drop=True))


@pytest.mark.parametrize("preset", ["aryl-testbed-normalized", "aryl-normalized"])
def test_normalized_clusters_loan_capacity_that_keeps_running_time(preset):
    """The paper's simulator counts on-loan T4s normalized to training GPUs (§5.2, App. A: a T4
    is 1/4 of a V100) and "loaning itself does not affect job running time" (§7.2): an inference
    server is 2 GPUs (8 T4 x 1/4) of a type other than the training one (a job that requires the
    training GPU stays off it), each as fast as a training GPU under `--perf linear`, and a gang
    over both kinds runs at Advanced's 70 % of the summed speed; the physical preset's T4 is slower."""
    import numpy as np

    import netmodel
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, perf_backends

    def perf_of(name):
        cfg = RunConfig(cluster=name, perf="linear", contention=False)
        topo = netmodel.build_topology(netmodel.load_cluster(name))
        return topo, build_perf(topo, perf_backends(cfg), cfg)

    topo, perf = perf_of(preset)
    spec = netmodel.load_cluster(preset)
    train, inf = (next(g for g in spec.groups if g.name == n) for n in ("training", "inference"))
    assert (train.gpus_per_node, inf.gpus_per_node) == (8, 2) and inf.nodes == (4 if "testbed" in preset else 520)
    names = list(topo.gpu_type_names)
    t_train = np.flatnonzero(np.asarray(topo.gpu_type) == names.index("V100-32GB"))
    t_inf = np.flatnonzero(np.asarray(topo.gpu_type) != names.index("V100-32GB"))
    assert t_inf.size == 2 * inf.nodes
    one_train = perf.phases("resnet50", t_train[:1], 64).solo_s
    assert perf.phases("resnet50", t_inf[:1], 64).solo_s == pytest.approx(one_train, rel=1e-12)
    mixed = perf.phases("resnet50", np.r_[t_train[:2], t_inf[:2]], 256).solo_s
    assert mixed == pytest.approx(one_train / 0.7, rel=1e-9)  # 4 GPUs at 0.7 of 4 GPUs' speed, local batch 64
    ptopo, pperf = perf_of("aryl-testbed")
    p_inf = np.flatnonzero(np.asarray(ptopo.gpu_type) == list(ptopo.gpu_type_names).index("T4"))
    assert pperf.phases("resnet50", p_inf[:1], 64).solo_s > 2 * one_train


def test_medium_cluster_file_is_the_generated_one():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "experiments/catalog/aryl/aryl-14+16-normalized.toml").read_text()
    gen = W.cluster_toml(14, 16, normalized=True)
    body = lambda t: [ln for ln in t.splitlines() if not ln.startswith(("#", "description"))]  # noqa: E731
    assert body(text) == body(gen) and 'name = "aryl-normalized-14+16"' in text
