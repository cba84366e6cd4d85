"""Aryl's metrics (`../shared/seeds/notes/aryl.md` §7) from one policy's run outputs, and the
hooks of `experiments/catalog/aryl.toml` (`hooks = "experiments.aryl_metrics"`) that put them
on the common reproduction path: `cell_metrics` adds these columns to every cell of the
reproduction (from the cell folder, with the `[settings]` headroom), `extra_sections` writes
Table 7 and the Figs. 13-14 gains.

Definitions (the paper leaves several open; each choice is named here):

- queueing time = first start − submit (`queueing_delay_s`); JCT = end − submit; mean, median,
  p75, p95, p99 over finished jobs.
- training usage = time-averaged busy / online GPUs over the submission window (on-loan GPUs
  in numerator and denominator: the paper's "changing denominator" reading).
- overall usage = (training GPU-s busy on any server + inference GPU-s busy) / (GPU-s of both
  clusters) over the window, inference busy = the load series' utilisation × inference GPUs
  (`simcore.capacity.diurnal_series`: u ≈ nodes_needed / N − headroom), GPU counts of the run's
  cluster (on the `*-normalized` clusters an inference server counts as its 2 training-GPU
  equivalents, the unit the paper normalizes on-loan GPUs to).
- preemption ratio = jobs evicted by reclaims / jobs submitted (footnote 2's denominator).
- scaling operations = `resize` rows of decisions.parquet (flexible workers added or removed).
- Table 7's "jobs that ran on on-loan servers": jobs with a start/resume/resize onto a GPU of an
  inference server (GPU id ≥ 8 × training servers: the preset lists training servers first).
- the usage window is the workload's submission window (`traces.aryl.servers`: 15 days for the
  Philly stand-in, 8 h for the testbed), and the inference load is the seeded diurnal series
  with the experiment's headroom, for runs without loaning too (inference keeps its servers,
  busy as the same load says).
- evicted GPUs per returned GPU: Σ GPUs of evicted jobs / GPUs returned (the cluster's GPUs per
  inference server × servers), per reclaim event
  with a demand, averaged (a proxy of collateral damage: it counts the evicted jobs' GPUs on
  the returned servers too, since the logs do not split them).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from cosim.errors import InputError

PCTS = (("mean", None), ("median", 50), ("p75", 75), ("p95", 95), ("p99", 99))


def _stats(x: np.ndarray, prefix: str) -> dict:
    out = {}
    for name, q in PCTS:
        out[f"{prefix}_{name}_s"] = float(np.mean(x)) if q is None else float(np.percentile(x, q)) if x.size else math.nan
    return out


def _time_avg(t: np.ndarray, v: np.ndarray, end: float) -> float:
    """Average of a step function (value v[i] from t[i]) over [0, end]."""
    if t.size == 0:
        return math.nan
    keep = t < end
    t, v = t[keep], v[keep]
    dt = np.diff(np.append(t, end))
    return float((v * dt).sum() / max(dt.sum(), 1e-9))


def policy_metrics(run_dir: Path, window_s: float, inference_gpus: int = 0, headroom: float = 0.0,
                   seed: int = 0, inference_nodes: int = 0) -> dict:
    """Aryl's table columns for one policy folder (jobs/timeline/reclaims Parquet)."""
    run_dir = Path(run_dir)
    jobs = pd.read_parquet(run_dir / "jobs.parquet")
    done = jobs[jobs["finished"]]
    out: dict = {"jobs": len(jobs), "finished": int(len(done))}
    out.update(_stats(done["queueing_delay_s"].to_numpy(float), "qt"))
    out.update(_stats(done["jct_s"].to_numpy(float), "jct"))
    tl = pd.read_parquet(run_dir / "timeline.parquet")
    t = tl["time_s"].to_numpy(float)
    busy = tl["busy_gpus"].to_numpy(float)
    online = tl["online_gpus"].to_numpy(float)
    out["training_usage"] = _time_avg(t, busy / np.maximum(online, 1), window_s)
    dec_p = run_dir / "decisions.parquet"
    if dec_p.is_file():
        dec = pd.read_parquet(dec_p, columns=["action"])
        out["scaling_ops"] = int((dec["action"] == "resize").sum())
    rec_p = run_dir / "reclaims.parquet"
    per_server = inference_gpus / inference_nodes if inference_gpus and inference_nodes else 8.0
    evicted = 0
    cd: list[float] = []
    if rec_p.is_file():
        rec = pd.read_parquet(rec_p)
        size = dict(zip(jobs["job_id"].astype(str), jobs["num_gpus"].astype(int)))
        for _, r in rec.iterrows():
            ev = [x for x in str(r["jobs_evicted"]).split(",") if x]
            evicted += len(ev)
            if int(r["demanded"]) > 0:
                cd.append(sum(size.get(x, 0) for x in ev) / (per_server * int(r["demanded"])))
        out["reclaim_events"] = int(len(rec))
        out["servers_reclaimed"] = int(rec["demanded"].sum())
    out["preemptions"] = evicted
    out["preemption_ratio"] = evicted / max(len(jobs), 1)
    out["evicted_gpus_per_returned_gpu"] = float(np.mean(cd)) if cd else 0.0
    if inference_gpus and inference_nodes:
        from simcore.capacity import diurnal_series

        s = diurnal_series("inference", inference_nodes, headroom, window_s, seed)
        u = np.clip(s["nodes_needed"].to_numpy(float) / inference_nodes - headroom, 0, 1)
        inf_busy = _time_avg(s["time_s"].to_numpy(float), u * inference_gpus, window_s)
        out["inference_busy_gpus"] = inf_busy
        out["training_busy_gpus"] = _time_avg(t, busy, window_s)
    return out


@functools.lru_cache(maxsize=None)
def inference_gpus_per_server(cluster: str) -> int:
    """GPUs of one inference server in a run's cluster (a preset name, or a TOML path, which the
    catalog gives relative to experiments/catalog/): 8 T4 on the physical presets, 2 training-GPU
    equivalents on the normalized ones."""
    import netmodel

    path = Path(__file__).resolve().parent / "catalog" / cluster
    spec = netmodel.load_cluster(str(path) if path.is_file() else cluster)
    return next((g.gpus_per_node for g in spec.groups if g.name == "inference"), 8)


def overall_usage(m: dict, training_gpus: int, inference_gpus: int) -> float:
    """(training busy + inference busy) / (both clusters' GPUs), time-averaged over the window."""
    if "inference_busy_gpus" not in m:
        return math.nan
    return (m["training_busy_gpus"] + m["inference_busy_gpus"]) / (training_gpus + inference_gpus)


def onloan_jobs(run_dir: Path, training_gpus: int) -> set[str]:
    """Jobs placed at least once on an inference (on-loan) server's GPU."""
    dec = pd.read_parquet(Path(run_dir) / "decisions.parquet", columns=["job_id", "action", "gpus"])
    dec = dec[dec["action"].isin(["start", "resume", "resize", "migrate"])]
    hit = dec["gpus"].astype(str).map(lambda s: any(int(x) >= training_gpus for x in s.split(",") if x))
    return set(dec.loc[hit, "job_id"].astype(str))


def subset_stats(run_dir: Path, job_ids: set[str]) -> dict:
    """Queueing and JCT statistics of the given jobs in one run."""
    jobs = pd.read_parquet(Path(run_dir) / "jobs.parquet")
    sel = jobs[jobs["job_id"].astype(str).isin(job_ids) & jobs["finished"]]
    out = {"jobs": int(len(sel))}
    out.update(_stats(sel["queueing_delay_s"].to_numpy(float), "qt"))
    out.update(_stats(sel["jct_s"].to_numpy(float), "jct"))
    return out


#: per-cell columns `cell_metrics` adds (the summary's own `jobs`/`finished` are left as they are)
CELL_COLUMNS = ("qt_mean_s", "qt_median_s", "qt_p75_s", "qt_p95_s", "qt_p99_s", "jct_mean_s", "jct_median_s",
                "jct_p75_s", "jct_p95_s", "jct_p99_s", "training_usage", "overall_usage", "preemption_ratio",
                "preemptions", "scaling_ops", "reclaim_events", "servers_reclaimed", "evicted_gpus_per_returned_gpu",
                "train_servers", "inference_servers")


def cell_folder(out: Path, grid: str, cell_id: str) -> Path:
    """Where the reproduction keeps one cell's Parquet files (`experiments.sweep.store.cell_dir`)."""
    from experiments.sweep.store import cell_dir

    return cell_dir(Path(out) / "runs" / grid, cell_id)


def cell_metrics(cells: pd.DataFrame, out: Path, exp, size: str, traces: dict) -> pd.DataFrame:
    """Hook: Aryl's columns (CELL_COLUMNS) for every finished cell, from its folder."""
    from traces import aryl as W

    headroom = float(exp.settings.get("headroom", 0.0))
    for g in traces:  # the usage metrics' inference load is the one the loaning runs got
        series = exp.grid(g, size).get("load_series", "")
        if isinstance(series, str) and series.startswith("diurnal:") and float(series[8:]) != headroom:
            raise InputError.at(exp.source, field="settings.headroom", expected=f"the headroom of grid {g}'s {series}",
                                got=headroom)
    spec = {(g, t.name): t.spec for g, ts in traces.items() for t in ts}
    rows = []
    for _, c in cells.iterrows():
        if c["status"] != "ok":
            rows.append({})
            continue
        tr, inf, window = W.servers(spec[(c["grid"], c["trace"])])
        ig = inference_gpus_per_server(str(c["cluster"])) * inf
        m = policy_metrics(cell_folder(out, c["grid"], c["cell_id"]), window, inference_gpus=ig,
                           headroom=headroom, seed=int(c["seed"]), inference_nodes=inf)
        m.update(overall_usage=overall_usage(m, 8 * tr, ig), train_servers=tr, inference_servers=inf)
        rows.append({k: m.get(k, math.nan) for k in CELL_COLUMNS})
    extra = pd.DataFrame(rows, index=cells.index, columns=list(CELL_COLUMNS))
    return pd.concat([cells.drop(columns=[k for k in CELL_COLUMNS if k in cells.columns]), extra], axis=1)


def _fmt(v, col: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.0f}"


def _cell(cells: pd.DataFrame, grid: str, variant: str, row: str | None = None) -> pd.Series | None:
    sel = cells[(cells["grid"] == grid) & (cells["policy_label"] == variant) & (cells["status"] == "ok")]
    if row is not None:
        sel = sel[sel["group"] == row]
    return sel.iloc[0] if len(sel) else None


def table7(cells: pd.DataFrame, out: Path, cfg: dict) -> list[str]:
    """Table 7: the jobs that ran on on-loan servers in `cfg.run`, and the same jobs in `cfg.baseline`."""
    lines = [f"## {cfg.get('title', 'Table 7')}", ""]
    run = _cell(cells, cfg["grid"], cfg["run"])
    base = _cell(cells, cfg["baseline_grid"], cfg["baseline"])
    if run is None or base is None:
        return lines + [f"(needs the {cfg['run']} and {cfg['baseline']} runs)", ""]
    ids = onloan_jobs(cell_folder(out, run["grid"], run["cell_id"]), 8 * int(run["train_servers"]))
    cols = ("qt_mean_s", "qt_median_s", "qt_p95_s", "jct_mean_s", "jct_median_s", "jct_p95_s")
    lines += [f"{len(ids)} jobs ran on on-loan servers under {cfg['run']}; cells read `paper / cosim` (s).", "",
              "| | jobs | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
    for name, c in ((cfg["baseline"], base), (cfg["run"], run)):
        m = subset_stats(cell_folder(out, c["grid"], c["cell_id"]), ids)
        p = cfg.get("paper", {}).get(name, {})
        lines.append(f"| {name} | {m['jobs']} | " +
                     " | ".join(f"{_fmt(p.get(k), k)} / {_fmt(m.get(k), k)}" for k in cols) + " |")
    return lines + [""]


def gains(cells: pd.DataFrame, cfg: dict) -> list[str]:
    """Figs. 13-14 analog: each variant's mean queueing and JCT gain over `cfg.baseline`, per row."""
    lines = [f"## {cfg.get('title', 'Gains over the baseline')}", ""]
    g = cells[(cells["grid"] == cfg["grid"]) & (cells["status"] == "ok")]
    variants = [v for v in dict.fromkeys(g["policy_label"]) if v != cfg["baseline"]]
    lines += ["| row | " + " | ".join(f"{v} QT gain / JCT gain" for v in variants) + " |",
              "|---" * (len(variants) + 1) + "|"]
    for row in dict.fromkeys(g["group"]):
        base = _cell(cells, cfg["grid"], cfg["baseline"], row)
        out = []
        for v in variants:
            m = _cell(cells, cfg["grid"], v, row)
            if m is None or base is None:
                out.append("—")
                continue
            out.append(f"{base['qt_mean_s'] / max(m['qt_mean_s'], 1e-9):.2f}× / "
                       f"{base['jct_mean_s'] / max(m['jct_mean_s'], 1e-9):.2f}×")
        lines.append(f"| {row} | " + " | ".join(out) + " |")
    note = cfg.get("paper_note")
    return lines + ([""] + [f"Paper: {note}"] if note else []) + [""]


def extra_sections(exp, size: str, cells: pd.DataFrame, out: Path) -> list[list[str]]:
    """Hook: Table 7 and the gains tables named in `[settings.extra_tables]` (each its sizes)."""
    secs = []
    for name, cfg in exp.settings.get("extra_tables", {}).items():
        if size not in cfg.get("sizes", [size]):
            continue
        if cfg.get("kind") == "onloan":
            secs.append(table7(cells, out, cfg))
        elif cfg.get("kind") == "gains":
            secs.append(gains(cells, cfg))
        else:
            raise InputError.at(exp.source, field=f"settings.extra_tables.{name}.kind", expected="onloan or gains",
                                got=cfg.get("kind"))
    return secs
