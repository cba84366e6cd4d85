"""`cosim reproduce aryl`: Aryl's tables on the Philly stand-in, paper numbers beside cosim's.

The experiment is `experiments/catalog/aryl/aryl.toml`: its sizes, its variants (the `aryl`
policy with options, or another policy, with or without the inference load) and its tables
with the paper's numbers and ordering claims. For each table the needed variants run once
each (`simcore.runner.run`, `--perf linear`, `aryl` costs) on the size's workload
(`traces.aryl`), in a process pool, resuming finished runs in OUT; then `aryl_metrics` makes
each row, and OUT/REPORT.md gets paper | cosim per cell and each claim's verdict.
"""

from __future__ import annotations

import json
import math
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from cosim.errors import InputError
from experiments.aryl_metrics import onloan_jobs, overall_usage, policy_metrics, subset_stats
from experiments.spec import shared_data_dir
from traces import aryl as W

CATALOG = Path(__file__).resolve().parent / "catalog" / "aryl" / "aryl.toml"
COLUMNS = ("qt_mean_s", "qt_median_s", "qt_p95_s", "qt_p99_s", "jct_mean_s", "jct_median_s", "jct_p95_s",
           "jct_p99_s", "training_usage", "overall_usage", "preemption_ratio")


def load_catalog(path: Path = CATALOG) -> dict:
    return tomllib.loads(Path(path).read_text())


def _workload(cat: dict, size: str, scenario: str, shared: Path, out: Path, extra: dict | None = None):
    """(trace path, train servers, inference servers, window s) of a scenario at `size`."""
    sz = cat["sizes"][size]
    tag = scenario + ("" if not extra else "-" + "-".join(f"{k}{v}" for k, v in sorted(extra.items())))
    path = out / "traces" / f"{tag}.parquet"
    if sz["workload"] == "testbed":
        tr, inf, window = 4, 4, 8 * 3600.0
        if not path.is_file():
            df, st = W.testbed(shared, scenario=scenario)
            W.write(df, st, path)
    else:
        w = W.ArylWorkload(scenario=scenario, scale=float(sz["scale"]), **(extra or {}))
        tr = max(1, int(round(w.train_servers * w.scale)))
        inf = max(1, int(round(w.inference_servers * w.scale)))
        window = w.window_days * 86400.0
        if not path.is_file():
            df, st = W.build(w, shared)
            W.write(df, st, path)
    return path, tr, inf, window


def _one(job: dict) -> dict:
    """One variant run (in a worker process): outputs in job['dir'], metrics returned."""
    from experiments.runner import RunConfig, run

    d = Path(job["dir"])
    done = d / "metrics.json"
    if done.is_file():
        return json.loads(done.read_text())
    cfg = RunConfig(trace=job["trace"], cluster=job["cluster"], policies=(job["policy"],),
                    policy_params={job["policy"]: job["params"]}, contention=False, seed=job["seed"],
                    costs=job["costs"], perf=job["perf"], load_series=job["series"], write_decisions=True)
    t0 = time.perf_counter()
    run(cfg, d)
    wall = time.perf_counter() - t0
    m = policy_metrics(d / job["policy"], job["window"], inference_gpus=8 * job["inf"], headroom=job["headroom"],
                       seed=job["seed"], inference_nodes=job["inf"] if job["diurnal"] else 0)
    if job["diurnal"]:
        m["overall_usage"] = overall_usage(m, 8 * job["tr"], 8 * job["inf"])
    else:  # no loaning: inference keeps its servers, busy as its load says (the same diurnal load)
        m2 = policy_metrics(d / job["policy"], job["window"], inference_gpus=8 * job["inf"], headroom=job["headroom"],
                            seed=job["seed"], inference_nodes=job["inf"])
        m["overall_usage"] = overall_usage(m2, 8 * job["tr"], 8 * job["inf"])
    m.update(variant=job["variant"], wall_s=wall, train_servers=job["tr"], inference_servers=job["inf"])
    done.write_text(json.dumps(m))
    return m


def plan(cat: dict, size: str, shared: Path, out: Path, seed: int = 0) -> list[dict]:
    """Every run the size's tables need (variant × workload)."""
    if size not in cat["sizes"]:
        raise InputError.at(CATALOG, field="--size", expected=f"one of {', '.join(cat['sizes'])}", got=size)
    sz = cat["sizes"][size]
    want: dict[str, dict | None] = {}
    for t in sz["tables"]:
        tab = cat["tables"][t]
        if t == "fig13":
            for f in tab["fractions"]:
                for v in tab["rows"]:
                    want[f"{v}@ef{f}"] = dict(elastic_frac=f, elastic_share=1.0)
        else:
            for v in tab["rows"]:
                want[v] = None
    jobs = []
    for key, extra in want.items():
        name = key.split("@")[0]
        var = cat["variants"][name]
        trace, tr, inf, window = _workload(cat, size, var.get("scenario", "basic"), shared, out, extra)
        cluster = out / "traces" / f"cluster-{tr}+{inf}.toml"
        if not cluster.is_file():
            cluster.write_text(W.cluster_toml(tr, inf))
        diurnal = var.get("series", "diurnal") == "diurnal"
        if diurnal:
            series = f"diurnal:{cat['headroom']}"
        else:
            series = str(out / "traces" / f"no-loan-{inf}.csv")
            pd.DataFrame({"time_s": [0.0], "pool": ["inference"], "nodes_needed": [inf]}).to_csv(series, index=False)
        jobs.append(dict(variant=key, dir=str(out / "runs" / key), trace=str(trace), cluster=str(cluster),
                         policy=var.get("policy", "aryl"), params=dict(var.get("params", {})), seed=seed,
                         costs=cat["costs"], perf=cat["perf"], series=series, window=window, tr=tr, inf=inf,
                         headroom=float(cat["headroom"]), diurnal=diurnal))
    return jobs


def _fmt(v, col: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if col in ("training_usage", "overall_usage"):
        return f"{v:.2f}"
    if col == "preemption_ratio":
        return f"{100 * v:.2f}%"
    return f"{v:.0f}"


def report(cat: dict, size: str, metrics: dict[str, dict], out: Path, command: str, wall_s: float) -> Path:
    """OUT/REPORT.md: per table, paper / cosim per cell, and each ordering claim's verdict."""
    lines = [f"# {cat['title']}", "", f"Paper: {cat['paper']}", "",
             f"Size `{size}`: {cat['sizes'][size]['desc']}.", "",
             f"Command: `{command}` — {wall_s:.0f} s wall on this machine.", "",
             ("Cells read `paper / cosim` (times in s). Workload, cluster and metric definitions: "
              "traces/aryl.py, experiments/aryl_metrics.py."), ""]
    for t in cat["sizes"][size]["tables"]:
        tab = cat["tables"][t]
        lines += [f"## {tab['title']}", ""]
        if t == "fig13":
            lines += _fig13(tab, metrics)
            continue
        if t == "table7":
            lines += _table7(tab, metrics, out)
            continue
        paper = tab.get("paper", {})
        cols = [c for c in COLUMNS if any(c in paper.get(r, {}) for r in tab["rows"])] or list(COLUMNS[:8])
        lines.append("| variant | " + " | ".join(cols) + " |")
        lines.append("|---" * (len(cols) + 1) + "|")
        for r in tab["rows"]:
            m, p = metrics.get(r, {}), paper.get(r, {})
            lines.append(f"| {r} | " + " | ".join(f"{_fmt(p.get(c), c)} / {_fmt(m.get(c), c)}" for c in cols) + " |")
        lines.append("")
        for better, worse, col in tab.get("claims", []):
            b, w = metrics.get(better, {}).get(col), metrics.get(worse, {}).get(col)
            hi = col in ("overall_usage", "training_usage")
            ok = None if b is None or w is None else (b > w if hi else b < w)
            verdict = "n/a" if ok is None else ("yes" if ok else "tie" if b == w else "no")
            lines.append(f"- {better} {'>' if hi else '<'} {worse} on {col}: {verdict} "
                         f"({_fmt(b, col)} vs {_fmt(w, col)})")
        lines.append("")
    path = out / "REPORT.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _table7(tab: dict, metrics: dict[str, dict], out: Path) -> list[str]:
    """Jobs that ran on on-loan servers under `cl-aryl`, and the same jobs under Baseline."""
    a, b = metrics.get("cl-aryl"), metrics.get("baseline")
    if not a or not b:
        return ["(needs the cl-aryl and baseline runs)", ""]
    ids = onloan_jobs(out / "runs" / "cl-aryl" / "aryl", 8 * int(a["train_servers"]))
    cols = ("qt_mean_s", "qt_median_s", "qt_p95_s", "jct_mean_s", "jct_median_s", "jct_p95_s")
    lines = [f"{len(ids)} jobs ran on on-loan servers under cl-aryl.", "",
             "| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, run in (("baseline", "baseline"), ("aryl", "cl-aryl")):
        m = subset_stats(out / "runs" / run / "aryl", ids)
        p = tab["paper"][name]
        lines.append(f"| {name} | " + " | ".join(f"{_fmt(p.get(c), c)} / {_fmt(m.get(c), c)}" for c in cols) + " |")
    return lines + [""]


def _fig13(tab: dict, metrics: dict[str, dict]) -> list[str]:
    lines = ["| elastic fraction | " + " | ".join(f"{r} QT gain / JCT gain" for r in tab["rows"][1:]) + " |",
             "|---" * len(tab["rows"]) + "|"]
    for f in tab["fractions"]:
        base = metrics.get(f"baseline@ef{f}", {})
        cells = []
        for r in tab["rows"][1:]:
            m = metrics.get(f"{r}@ef{f}", {})
            if not m or not base:
                cells.append("—")
                continue
            cells.append(f"{base['qt_mean_s'] / max(m['qt_mean_s'], 1e-9):.2f}× / "
                         f"{base['jct_mean_s'] / max(m['jct_mean_s'], 1e-9):.2f}×")
        lines.append(f"| {f:.0%} | " + " | ".join(cells) + " |")
    return lines + [""]


def reproduce_aryl(size: str, out: Path | None, workers: int, shared: Path | None = None) -> tuple[Path, float]:
    """Run the size's tables and write OUT/REPORT.md; (report path, wall s)."""
    t0 = time.perf_counter()
    cat = load_catalog()
    out = Path(out or f"reproduce/aryl-{size}")
    (out / "traces").mkdir(parents=True, exist_ok=True)
    jobs = plan(cat, size, shared or shared_data_dir(), out)
    if workers <= 1:
        results = [_one(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as ex:
            results = list(ex.map(_one, jobs))
    metrics = {m["variant"]: m for m in results}
    pd.DataFrame(results).to_parquet(out / "metrics.parquet")
    wall = time.perf_counter() - t0
    cmd = f"cosim reproduce aryl --size {size}"
    return report(cat, size, metrics, out, cmd, wall), wall


__all__ = ["load_catalog", "plan", "report", "reproduce_aryl"]
