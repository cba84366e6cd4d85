"""ONES' evaluation metrics (SC'21 §5, Fig. 15, Table 4; ONES notes §7) over cosim's per-job outputs.

Per job: JCT, execution time (seconds it held GPUs) and queueing time = JCT − execution (so time
spent preempted counts as queueing, as the artifact computes it). Per policy: averages, the
fraction of jobs with JCT ≤ 200 s, the % reduction of ONES against each baseline
((baseline − ONES) / baseline), and paired Wilcoxon signed-rank tests on per-job JCT (scipy):
two-sided, `alternative='greater'` (what the paper's "one-sided negative test" p ≈ 1 is: p_one =
1 − p_two/2 when ONES is smaller) and the conventional `alternative='less'` (p ≈ p_two/2).

Per class (the requested GPUs tell Table 2's classes apart: 16 ImageNet, 8 BERT SST-2, 4 CIFAR-10,
2 BERT CoLA/MRPC): jobs, average JCT, execution, queueing and GPUs held while executing
(GPU-seconds / execution seconds), what tells a policy's queueing from its execution.

Per run: idle GPU-seconds from its timeline.parquet, split by whether a job was queued at the time
(idle beside a queue: the policy left a waiting job out; idle with nothing queued: every job present
runs and none may take more GPUs, e.g. ONES' batch-size limits R).

`python -m experiments.ones_metrics RUN_DIR [RUN_DIR …]` prints the tables (and the idle GPUs) for run folders
(`<dir>/<policy>/jobs.parquet`, as `cosim simulate --out` and each sweep cell write them);
several folders (seeds) are pooled job by job for the tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from cosim.errors import InputError

#: the paper's numbers (Fig. 15, Table 4; implied baseline averages from the reductions)
PAPER = {
    "avg_jct_s": {"ones": 244.97, "drl": 335.1, "tiresias": 450.3, "optimus": 420.2},
    "jct_reduction_pct": {"drl": 26.9, "tiresias": 45.6, "optimus": 41.7},
    "queue_reduction_pct": {"drl": 31.3, "tiresias": 19.1, "optimus": 56.6},
    "exec_reduction_pct": {"tiresias": 53.9},
    "frac_jct_le_200s": {"ones": 0.86},
    "wilcoxon_two_sided": {"drl": 5.17e-4, "tiresias": 4.53e-8, "optimus": 7.55e-10},
}


def per_job(jobs: pd.DataFrame) -> pd.DataFrame:
    """job_id, jct_s, exec_s, queue_s of the finished jobs of one policy's jobs.parquet, with
    requested_gpus and held_gpus (GPU-seconds / execution seconds) where it has them."""
    need = ("job_id", "jct_s", "executed_s")
    for c in need:
        if c not in jobs.columns:
            raise InputError.at(field=c, expected="a column of jobs.parquet")
    done = jobs[jobs["finished"]] if "finished" in jobs.columns else jobs
    out = pd.DataFrame({"job_id": done["job_id"].astype(str).to_numpy(), "jct_s": done["jct_s"].to_numpy(float),
                        "exec_s": done["executed_s"].to_numpy(float)})
    out["queue_s"] = out["jct_s"] - out["exec_s"]
    if "num_gpus" in done.columns:
        out["requested_gpus"] = done["num_gpus"].to_numpy(np.int64)
    if "gpu_s" in done.columns:
        out["held_gpus"] = np.divide(done["gpu_s"].to_numpy(float), out["exec_s"].to_numpy(),
                                     out=np.full(len(out), np.nan), where=out["exec_s"].to_numpy() > 0)
    return out


def by_class(per: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (policy, requested GPUs): jobs, average JCT, execution, queueing and GPUs held."""
    rows = []
    for p, d in per.items():
        if "requested_gpus" not in d.columns:
            continue
        for g, c in d.groupby("requested_gpus"):
            rows.append({"policy": p, "requested_gpus": int(g), "jobs": len(c), "avg_jct_s": c.jct_s.mean(),
                         "avg_exec_s": c.exec_s.mean(), "avg_queue_s": c.queue_s.mean(),
                         "held_gpus": c["held_gpus"].mean() if "held_gpus" in c.columns else float("nan")})
    return pd.DataFrame(rows)


def summary(per: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per policy: averages, max, medians and the fraction of JCT ≤ 200 s."""
    rows = []
    for p, d in per.items():
        rows.append({"policy": p, "jobs": len(d), "avg_jct_s": d.jct_s.mean(), "median_jct_s": d.jct_s.median(),
                     "max_jct_s": d.jct_s.max(), "avg_exec_s": d.exec_s.mean(), "max_exec_s": d.exec_s.max(),
                     "avg_queue_s": d.queue_s.mean(), "max_queue_s": d.queue_s.max(),
                     "frac_jct_le_200s": float((d.jct_s <= 200.0).mean())})
    return pd.DataFrame(rows)


def reduction_pct(ones: float, base: float) -> float:
    """(baseline − ONES) / baseline, in %."""
    return 100.0 * (base - ones) / base if base else float("nan")


def paired_wilcoxon(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Wilcoxon signed-rank on paired samples a (ONES) vs b (baseline): two-sided, 'greater', 'less'."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.size < 2 or np.allclose(a, b):
        return {"two_sided": float("nan"), "greater": float("nan"), "less": float("nan"), "n": int(a.size)}
    return {"two_sided": float(wilcoxon(a, b).pvalue), "greater": float(wilcoxon(a, b, alternative="greater").pvalue),
            "less": float(wilcoxon(a, b, alternative="less").pvalue), "n": int(a.size)}


def compare(per: dict[str, pd.DataFrame], ref: str = "ones") -> pd.DataFrame:
    """ONES against every other policy: % reductions (JCT, exec, queue) and paired Wilcoxon on JCT."""
    if ref not in per:
        raise InputError.at(field="policy", expected=f"a run of {ref!r}", got=sorted(per))
    o = per[ref].set_index("job_id")
    rows = []
    for p, d in per.items():
        if p == ref:
            continue
        m = o.join(d.set_index("job_id").add_suffix("_b"), how="inner")
        w = paired_wilcoxon(m["jct_s"].to_numpy(), m["jct_s_b"].to_numpy())
        rows.append({"baseline": p, "paired_jobs": len(m),
                     "jct_reduction_pct": reduction_pct(m.jct_s.mean(), m.jct_s_b.mean()),
                     "exec_reduction_pct": reduction_pct(m.exec_s.mean(), m.exec_s_b.mean()),
                     "queue_reduction_pct": reduction_pct(m.queue_s.mean(), m.queue_s_b.mean()),
                     "wilcoxon_two_sided": w["two_sided"], "wilcoxon_greater": w["greater"],
                     "wilcoxon_less": w["less"]})
    return pd.DataFrame(rows)


def idle_gpus(timeline: pd.DataFrame, last_arrival_s: float | None = None) -> dict[str, float]:
    """Capacity and idle GPU-seconds of one run's timeline.parquet (each row's state holds until
    the next row), the idle ones split by whether a job was queued; idle_share = idle / capacity.
    With the run's `last_arrival_s`, also the idle GPU-seconds after it while one job is left
    (running, restarting or queued): the tail where one job's width sets the utilisation."""
    for c in ("time_s", "busy_gpus", "online_gpus", "queued"):
        if c not in timeline.columns:
            raise InputError.at(field=c, expected="a column of timeline.parquet")
    t = timeline["time_s"].to_numpy(float)
    dt = np.diff(t)
    online = timeline["online_gpus"].to_numpy(float)[:-1]
    idle = (online - timeline["busy_gpus"].to_numpy(float)[:-1]) * dt
    queued = timeline["queued"].to_numpy()[:-1] > 0
    cap = float((online * dt).sum())
    out = {"capacity_gpu_s": cap, "idle_gpu_s": float(idle.sum()), "idle_no_queue_gpu_s": float(idle[~queued].sum()),
           "idle_queued_gpu_s": float(idle[queued].sum())}
    out["idle_share"] = out["idle_gpu_s"] / cap if cap > 0 else float("nan")
    if last_arrival_s is not None:
        left = sum(timeline[c].to_numpy()[:-1] for c in ("running", "restarting", "queued") if c in timeline.columns)
        tail = (t[:-1] >= last_arrival_s) & (left == 1)
        out["idle_last_job_gpu_s"] = float(idle[tail].sum())
    return out


def cdf(values: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Cumulative fraction of `values` ≤ each of `points` (the paper's CF curves)."""
    v = np.sort(np.asarray(values, float))
    return np.searchsorted(v, np.asarray(points, float), side="right") / max(v.size, 1)


def load_runs(dirs: list[Path]) -> dict[str, pd.DataFrame]:
    """Per-policy per-job tables pooled over run folders: `cosim simulate --out` folders
    (`<dir>/<policy>/jobs.parquet`) or sweep cells (`<cell>/jobs.parquet` + config.json). Job ids
    are prefixed by the run's (seed, trace, nodes) so the same job pairs across policies."""
    import json

    per: dict[str, list[pd.DataFrame]] = {}
    for i, d in enumerate(dirs):
        d = Path(d)
        cfg_path = d / "config.json"
        cfg = json.loads(cfg_path.read_text()).get("config", {}) if cfg_path.is_file() else {}
        key = f"{cfg.get('seed', i)}:{cfg.get('trace', '')}:{cfg.get('cluster_nodes', '')}"
        found = [(d / "jobs.parquet", _label(cfg, d.name))] if (d / "jobs.parquet").is_file() \
            else [(jp, jp.parent.name) for jp in sorted(d.glob("*/jobs.parquet"))]
        for jp, pol in found:
            t = per_job(pd.read_parquet(jp))
            t["job_id"] = key + ":" + t["job_id"]
            per.setdefault(pol, []).append(t)
    if not per:
        raise InputError.at(str(dirs[0]) if dirs else "run folder", expected="jobs.parquet (or <policy>/jobs.parquet)")
    return {p: pd.concat(v, ignore_index=True) for p, v in per.items()}


def _label(cfg: dict, default: str) -> str:
    """A sweep cell's policy as it is told apart from the same policy with other parameters:
    `name`, or `name(k=v)` for a parameter that is not the policy's default in the catalog
    (the DRL baseline at both decision intervals: `drl(interval_s=600)`); Optimus keeps its
    plain name (its catalog interval is the paper's only one)."""
    name = (cfg.get("policies") or [default])[0]
    params = (cfg.get("policy_params") or {}).get(name) or {}
    if name == "drl" and params.get("interval_s") not in (None, 60.0):
        return f"drl(interval_s={params['interval_s']:g})"
    return name


def idle_table(dirs: list[Path]) -> pd.DataFrame:
    """`idle_gpus` of every run folder's timeline.parquet (a sweep cell's, or each policy's of a
    `cosim simulate --out` folder), one row per run."""
    import json

    rows = []
    for d in map(Path, dirs):
        cfg_path = d / "config.json"
        cfg = json.loads(cfg_path.read_text()).get("config", {}) if cfg_path.is_file() else {}
        found = [(d / "timeline.parquet", _label(cfg, d.name))] if (d / "timeline.parquet").is_file() \
            else [(tp, tp.parent.name) for tp in sorted(d.glob("*/timeline.parquet"))]
        for tp, pol in found:
            jobs = tp.parent / "jobs.parquet"
            last = float(pd.read_parquet(jobs, columns=["submit_time_s"])["submit_time_s"].max()) if jobs.is_file() else None
            rows.append({"run": d.name, "policy": pol, "seed": cfg.get("seed"), **idle_gpus(pd.read_parquet(tp), last)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from cosim.errors import CosimError

    ap = argparse.ArgumentParser(prog="python -m experiments.ones_metrics", description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                    help="a `cosim simulate --out` folder or a sweep cell; several (seeds) are pooled job by job")
    a = ap.parse_args(argv)
    try:
        _print_tables([Path(d) for d in a.run_dirs])
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
    except CosimError as exc:
        exc.show()
        return exc.exit_code
    except BrokenPipeError:  # the reader stopped (`… | head`): nothing left to deliver, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


def _print_tables(dirs: list[Path]) -> None:
    per = load_runs(dirs)
    pd.set_option("display.width", 200)
    print(summary(per).round(3).to_string(index=False))
    cls = by_class(per)
    if len(cls):
        print(cls.round(2).to_string(index=False))
    if "ones" in per:
        print(compare(per).to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    idle = idle_table(dirs)
    if len(idle):
        print(idle.round(3).to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())

