"""Dally's extra REPORT.md section: Table I through the engine's default iteration model.

The runs of the paper's figures use `--perf astra` (the authors' ratio model, `simcore.perf_dally`),
whose Table I is printed by `simcore.perf_dally.table_i`. The engine's default path (`--perf
network`, what `cosim simulate` and the "beyond the paper" grid run) computes an iteration from
the zoo's compute time of the model on the preset's GPU at the job's local batch, the gradient
all-reduce of its DDP buckets on the placement's links, the overlap with the backward pass and,
where the preset ships a calibration profile, the profile's fitted step form. This module puts
that path's exposed communication (as % of compute, Table I's metric) beside the paper's for the
same 8-GPU placements (one machine, 4 + 4 in one rack, 4 + 4 across two racks), on `dally-3tier`
and on `dgx-h100`, at two local batches: the SenseTime jobs' usual one (32 per GPU, the median of
the multi-GPU jobs of every Table I model) and the authors' profiled one (512 per GPU; 256 for
VGG11 and BERT-large: the batch of their per-layer workload files).

    python -m experiments.dally_report          # prints the tables

It also breaks the average JCT of the 8-rack congested runs down by job size and into waiting
and execution (`jct_breakdown`), for Tiresias, Dally and Dally with Tiresias' offer order
(`dally-las`), from the runs' per-job tables: where the JCT gap between them comes from.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: (preset, nodes): two racks of `dally-3tier`; two 32-node scalable units of `dgx-h100`
ENGINE_CLUSTERS = (("dally-3tier", 64), ("dgx-h100", 64))
#: local batch per GPU: the trace's median for multi-GPU jobs, and the authors' profiled batch
TRACE_LOCAL_BATCH = 32
PROFILED_LOCAL_BATCH = {"vgg11": 256, "bert_large": 256}
PROFILED_DEFAULT = 512
TIERS = ("machine", "rack", "network")


def engine_table_i(preset: str, nodes: int) -> pd.DataFrame:
    """Exposed communication / compute (%) of one 8-GPU iteration of each Table I model through
    the engine's default PerfModel on `preset` resized to `nodes`, at the trace's and the
    profiled local batch, beside Table I."""
    import netmodel
    from calibration.validate import DALLY_SHAPES, DALLY_TABLE_I
    from collectives.placement import placement_gpus
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, perf_backends

    cfg = RunConfig(cluster=preset, cluster_nodes=nodes, contention=False)
    topo = netmodel.build_topology(netmodel.load_cluster(preset, num_nodes=nodes))
    perf = build_perf(topo, perf_backends(cfg), cfg)
    rows = []
    for model, paper in DALLY_TABLE_I.items():
        row: dict[str, Any] = {"model": model}
        for tier, pv in zip(TIERS, paper):
            gpus = placement_gpus(topo, DALLY_SHAPES[tier])
            row[f"{tier} paper %"] = pv
            for label, local in (("b32", TRACE_LOCAL_BATCH), ("profiled", PROFILED_LOCAL_BATCH.get(model, PROFILED_DEFAULT))):
                ph = perf.phases(model, gpus, local * len(gpus))
                row[f"{tier} {label} %"] = (float("nan") if ph is None
                                            else round(100.0 * (ph.solo_s - ph.compute_s) / ph.compute_s, 1))
        row["compute b32 ms"] = round(1e3 * perf.phases(model, placement_gpus(topo, "8"), 8 * TRACE_LOCAL_BATCH).compute_s, 1)
        row["authors compute ms"] = round(1e3 * authors_compute_s(model), 3)
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["fitted"] = perf.step is not None  # the preset ships a calibration profile with a step form
    return df


def authors_compute_s(model: str) -> float:
    """Compute seconds of one iteration of the authors' per-layer workload file of `model` with
    their calibrated `--compute-scale` (what Table I's ratios divide by)."""
    import numpy as np

    from collectives.layers import iteration_comm
    from simcore.perf_dally import read_workload

    lm = read_workload(model)
    return float(iteration_comm(lm, np.zeros(len(lm.wg_bytes)))[0])


def _section(preset: str, nodes: int) -> list[str]:
    df = engine_table_i(preset, nodes)
    profile = "the fitted step form of its shipped calibration profile" if df.attrs["fitted"] else \
        "no calibration profile: the generic form, communication from the zoo's overlap point"
    lines = [f"### `{preset}` ({nodes} nodes; {profile})", "",
             "| model | machine paper | machine b32 | machine profiled | rack paper | rack b32 | rack profiled "
             "| network paper | network b32 | network profiled | engine compute b32 | authors' compute |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.to_dict("records"):
        cells = [f"{r[f'{t} {k}']:g}" for t in TIERS for k in ("paper %", "b32 %", "profiled %")]
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {r['compute b32 ms']:g} ms | {r['authors compute ms']:g} ms |")
    return lines + [""]


#: the breakdown's policies (labels as the tables name them) and job-size classes (GPUs, inclusive)
BREAKDOWN_POLICIES = ("tiresias-dally", "dally", "dally-las")
SIZE_CLASSES = (("1 GPU", 1, 1), ("2-8 GPUs (one machine)", 2, 8), ("9-64 GPUs (one rack)", 9, 64),
                ("> 64 GPUs", 65, 1 << 30))


def jct_breakdown(cells: pd.DataFrame, out: Any, group: str, nodes: int) -> pd.DataFrame:
    """Per (size class, policy) over the finished cells of `group` (batch | poisson) at `nodes`,
    every seed's jobs pooled: jobs per sample, average JCT, its waiting (queued, also after
    preemptions) and execution (JCT − waiting: run, exposed communication included, and
    restarts) parts, exposed communication, and the class's share of the average JCT over all
    jobs (class jobs × class JCT / all jobs). Hours."""
    from pathlib import Path

    from experiments.sweep.store import cell_dir

    sel = cells[(cells["status"] == "ok") & (cells["cluster_nodes"] == nodes)
                & cells["trace"].astype(str).str.startswith(group)
                & cells["policy_label"].isin(BREAKDOWN_POLICIES) & (cells["perf"] == "astra")]
    rows = []
    for pol in BREAKDOWN_POLICIES:
        cs = sel[sel["policy_label"] == pol]
        if cs.empty:
            continue
        jobs = pd.concat([pd.read_parquet(cell_dir(Path(out) / "runs" / str(c.grid), str(c.cell_id)) / "jobs.parquet",
                                          columns=["num_gpus", "jct_s", "waiting_s", "exposed_comm_s"])
                          for c in cs.itertuples()], ignore_index=True)
        total = len(jobs)
        for label, lo, hi in SIZE_CLASSES + (("all jobs", 1, 1 << 30),):
            j = jobs[(jobs["num_gpus"] >= lo) & (jobs["num_gpus"] <= hi)]
            if j.empty:
                continue
            jct, wait = j["jct_s"].mean() / 3600, j["waiting_s"].mean() / 3600
            rows.append({"class": label, "policy": pol, "samples": len(cs), "jobs": len(j) / len(cs),
                         "avg JCT h": jct, "waiting h": wait, "execution h": jct - wait,
                         "comm h": j["exposed_comm_s"].mean() / 3600, "share of avg JCT h": jct * len(j) / total})
    return pd.DataFrame(rows)


def _breakdown_section(cells: pd.DataFrame, out: Any, nodes: int) -> list[str]:
    lines = [f"## jct-breakdown: average JCT by job size, waiting vs execution ({nodes} nodes, congested basis)", "",
             "Every job of every sample of the cell pooled (`samples` cells per policy); `dally-las` is Dally with "
             "Tiresias' least-attained-service offer order (`offer_order = \"las\"`). Waiting = time queued, also "
             "after preemptions; execution = JCT − waiting (running, exposed communication included, and restarts); "
             "share = the class's part of the average JCT over all jobs (the shares add up to it). Hours.", ""]
    for group in ("batch", "poisson"):
        df = jct_breakdown(cells, out, group, nodes)
        if df.empty:
            continue
        lines += [f"### {group}", "", "| jobs of | policy | samples | jobs per sample | avg JCT | waiting | execution "
                  "| exposed comm | share of avg JCT |", "|---|---|---|---|---|---|---|---|---|"]
        for r in df.to_dict("records"):
            lines.append(f"| {r['class']} | {r['policy']} | {r['samples']} | {r['jobs']:.0f} | {r['avg JCT h']:,.1f} | "
                         f"{r['waiting h']:,.1f} | {r['execution h']:,.1f} | {r['comm h']:,.1f} | "
                         f"{r['share of avg JCT h']:,.1f} |")
        lines.append("")
    return lines


def extra_sections(exp: Any, size: str, cells: pd.DataFrame, out: Any) -> list[list[str]]:  # noqa: ARG001
    nodes = 16 if size == "small" else 64
    lines = ["## engine-table-i: Table I through the engine's default path (`--perf network`)", "",
             "Exposed communication as % of compute for 8 GPUs: machine = one node, rack = 4 + 4 on two nodes "
             "of one rack, network = 4 + 4 on two racks (scalable units on `dgx-h100`); the engine's compute of "
             f"the model on the preset's GPU at {TRACE_LOCAL_BATCH} per GPU (b32: the SenseTime jobs' median) and at "
             f"the authors' profiled batch ({PROFILED_DEFAULT} per GPU; 256 for VGG11 and BERT-large). Computed "
             "when the report is written (`python -m experiments.dally_report`), not from the runs.", ""]
    for preset, n in ENGINE_CLUSTERS:
        lines += _section(preset, n)
    breakdown = _breakdown_section(cells, out, nodes)
    return [lines] + ([breakdown] if len(breakdown) > 4 else [])


if __name__ == "__main__":
    for preset, nodes in ENGINE_CLUSTERS:
        print("\n".join(_section(preset, nodes)))
