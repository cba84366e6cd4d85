"""Summary statistics of a job table (what `cosim traces stats` prints)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from traces.sample import SIZE_CLASSES, size_class

QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)


def summarize(df: pd.DataFrame) -> dict[str, object]:
    """Job count, submit span, GPU-count histogram, duration quantiles, GPU-hours, size classes.

    GPU-hours sum num_gpus × duration over jobs with a duration; ``jobs_without_duration``
    says how many were left out of it. ``excluded`` repeats the loader's report when present.
    """
    n = len(df)
    t = df["submit_time"].to_numpy(dtype=np.float64)
    g = df["num_gpus"].to_numpy()
    d = df["duration"].to_numpy(dtype=np.float64)
    has_d = ~np.isnan(d)
    values, counts = np.unique(g, return_counts=True)
    cls = size_class(df).value_counts()
    out: dict[str, object] = {
        "jobs": n,
        "first_submit_s": float(t.min()) if n else None,
        "last_submit_s": float(t.max()) if n else None,
        "span_s": float(t.max() - t.min()) if n else 0.0,
        "gpu_histogram": {int(v): int(c) for v, c in zip(values, counts)},
        "total_gpus_requested": int(g.sum()),
        "duration_quantiles_s": ({f"p{round(q * 100):g}": float(np.quantile(d[has_d], q)) for q in QUANTILES}
                                 if has_d.any() else None),
        "gpu_hours": float((g[has_d] * d[has_d]).sum() / 3600.0),
        "jobs_without_duration": int((~has_d).sum()),
        "size_classes": {name: int(cls.get(name, 0)) for name, _ in SIZE_CLASSES},
    }
    report = df.attrs.get("load_report")
    if report:
        out["format"] = report["format"]
        out["rows_read"] = report["rows_read"]
        out["excluded"] = report["excluded"]
    return out


def _fmt_s(x: float) -> str:
    if x >= 86400:
        return f"{x / 86400:.2f} d"
    if x >= 3600:
        return f"{x / 3600:.2f} h"
    return f"{x:.0f} s"


def format_summary(s: dict[str, object], name: str = "") -> list[str]:
    """Human-readable lines of `summarize`'s result."""
    lines = []
    head = f"{name}: " if name else ""
    excl = s.get("excluded") or {}
    if "rows_read" in s:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(excl.items())) if excl else "none"
        lines.append(f"{head}{s['jobs']} jobs ({s['format']}; {s['rows_read']} rows read; "
                     f"excluded {sum(excl.values())}: {detail})")
    else:
        lines.append(f"{head}{s['jobs']} jobs")
    lines.append(f"time span: {_fmt_s(s['span_s'])} ({s['span_s']:.0f} s of submissions)")
    hist = s["gpu_histogram"]
    lines.append("GPUs per job: " + ", ".join(f"{k}: {v}" for k, v in hist.items()))
    q = s["duration_quantiles_s"]
    if q:
        lines.append("duration: " + ", ".join(f"{k} {_fmt_s(v)}" for k, v in q.items()))
    else:
        lines.append("duration: none recorded")
    extra = f" ({s['jobs_without_duration']} jobs without duration)" if s["jobs_without_duration"] else ""
    lines.append(f"GPU-hours: {s['gpu_hours']:.1f}{extra}")
    classes = ", ".join(f"{k} {v}" for k, v in s["size_classes"].items())
    lines.append(f"size classes (Ares, by GPU-time): {classes}")
    return lines
