"""Fit per-(model, GPU type) compute-time curves from single-GPU measurements.

Input: a measurement table with `STEP_COLUMNS` (`calibration.importers`) and/or the
`cosim calibrate compute` Parquet (`model, gpu_type, local_bsz, step_time_s`). Only rows
with one GPU are used: one GPU has no gradient exchange, so its step time is the compute
phase (forward + backward + optimizer).

Curve per pair: the medians of repeated measurements at each local batch (the points), and
a least-squares line `t = t0 + k·b` fitted in relative error (weights 1/t), used beyond the
measured range. Inside the range the curve interpolates the points linearly, because
measured step times are not linear in batch (kernel selection, data loading) and the
line alone misses them by up to 25 % (YOLOv3 on T4).

Times are made non-decreasing in batch by isotonic regression (pool adjacent violators,
weighted by the number of measurements per batch): a larger batch does not take less time,
and noisy sets (Gavel K80 ResNet-18, YOLOv3 on aws: 0.45 s at batch 6, 0.33 s at 8) otherwise
make the curve dip. Pooling the violators averages the noise; a running maximum would keep
the high outlier (+38 % at YOLOv3 batch 8).

Each curve keeps its host regime (`calibration.device_model.host_regime`: the harness, and
for Pollux/Sia the platform) and its precision (``model@bf16``); `calibration.device_model`
splits them into device and host parts, fitted on all curves at once.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd

from calibration import device_model, zoo
from cosim.atomic import write_text
from cosim.errors import InputError

log = logging.getLogger(__name__)


def fit_line(b: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """(t0, k) minimising Σ((t0 + k·b − t)/t)², with t0 ≥ 0 and k ≥ 0 (one point: t0=0)."""
    b, t = np.asarray(b, float), np.asarray(t, float)
    if len(b) == 1 or np.ptp(b) == 0:
        return 0.0, float(np.mean(t / b))
    from scipy.optimize import lsq_linear

    A = np.column_stack([np.ones_like(b), b]) / t[:, None]
    res = lsq_linear(A, np.ones_like(t), bounds=([0.0, 0.0], [np.inf, np.inf]))
    return float(res.x[0]), float(res.x[1])


def isotonic(t: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Non-decreasing least-squares fit to `t` (weights `w`): pool adjacent violators."""
    t = np.asarray(t, float)
    w = np.ones_like(t) if w is None else np.asarray(w, float)
    vals, wts, sizes = [], [], []
    for x, wx in zip(t, w):
        vals.append(x)
        wts.append(wx)
        sizes.append(1)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            v2, w2, n2 = vals.pop(), wts.pop(), sizes.pop()
            vals[-1] = (vals[-1] * wts[-1] + v2 * w2) / (wts[-1] + w2)
            wts[-1] += w2
            sizes[-1] += n2
    return np.repeat(vals, sizes)


def _tagged(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with their zoo model name at their precision (``resnet50@bf16``) and host regime."""
    out = df.copy()
    prec = out["precision"].fillna("fp32").astype(str) if "precision" in out.columns else pd.Series("fp32", out.index)
    out["model"] = [zoo.with_precision(m, p) for m, p in zip(out["model"], prec)]
    plat = out["platform"] if "platform" in out.columns else pd.Series(None, out.index)
    out["host"] = [device_model.host_regime(s, p) for s, p in zip(out["source"].astype(str), plat)]
    return out


def curve_points(df: pd.DataFrame) -> dict[tuple[str, str, str], pd.Series]:
    """Median single-GPU step time per local batch, per (model[@precision], gpu_type, host regime)."""
    one = df[df["num_gpus"] == 1] if "num_gpus" in df.columns else df
    if "status" in one.columns:
        one = one[one["status"].fillna("ok") == "ok"]
    one = one[np.isfinite(one["step_time_s"].astype(float)) & (one["step_time_s"].astype(float) > 0)]
    out = {}
    for (m, g, h), d in _tagged(one).groupby(["model", "gpu_type", "host"]):
        grp = d.groupby("local_bsz")["step_time_s"]
        out[(m, g, h)] = grp.median().sort_index()
        out[(m, g, h)].attrs["counts"] = grp.size().sort_index().to_numpy(float)
    return out


def fit_curves(df: pd.DataFrame) -> dict:
    """The `compute_curves.json` document for the single-GPU rows of `df`: one measured curve
    per (model[@precision], GPU type, host regime), which `calibration.device_model` splits
    into device and host parts."""
    pts = curve_points(df)
    if not pts:
        raise InputError.at("measurements", expected="single-GPU rows (num_gpus = 1)", got="none")
    measured = []
    for (m, g, h), s in sorted(pts.items()):
        b, t = s.index.to_numpy(float), s.to_numpy(float)
        t = isotonic(t, s.attrs.get("counts"))  # a larger batch never takes less time (noise otherwise)
        t0, k = fit_line(b, t)
        measured.append(dict(model=m, gpu=g, host=h, t0_s=t0, per_sample_s=k, batches=[int(x) for x in b],
                             times_s=[float(x) for x in t]))
    return {"_doc": "fitted by calibration.compute_fit from single-GPU step times; split into device and host "
                    "parts by calibration.device_model", "measured": measured}


def compute_tables(doc: dict) -> dict[str, dict[str, dict]]:
    """A curves document as a profile's ``[compute."<model>"."<gpu>"]`` tables: the measured
    step curves (host part included: a profile brings its own machines' host)."""
    out: dict[str, dict[str, dict]] = {}
    for c in doc["measured"]:
        out.setdefault(c["model"], {})[c["gpu"]] = dict(
            t0_s=c["t0_s"], per_sample_s=c["per_sample_s"], batch_min=min(c["batches"]), batch_max=max(c["batches"]),
            batches=c["batches"], times_s=c["times_s"], source=f"measured:{c['host']}")
    return out


def write_curves(doc: dict, path) -> None:
    """Write a curves document to `path` (never the installed package's data by default:
    `cosim calibrate fit` puts curves into a profile's [compute] table instead)."""
    write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", path)


def main(argv: list[str] | None = None) -> None:
    """python -m calibration.compute_fit -o curves.json ../shared/data/profiles my_compute.parquet"""
    import argparse

    from calibration import importers

    ap = argparse.ArgumentParser(prog="python -m calibration.compute_fit", description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="measured sets (profiles folder, Pollux CSV, compute Parquet)")
    ap.add_argument("-o", "--out", required=True, help="output JSON (the compute_curves.json format)")
    args = ap.parse_args(argv)
    frames = []
    for a in args.inputs:
        d = pd.read_parquet(a) if a.endswith(".parquet") else importers.read_any(a)
        missing = [c for c in ("model", "gpu_type", "local_bsz", "step_time_s") if c not in d.columns]
        if missing:
            raise InputError.at(a, field=missing[0], expected="a compute table (model, gpu_type, local_bsz, step_time_s)")
        if "source" not in d.columns:
            d["source"] = "cosim-compute"
        frames.append(d)
    write_curves(fit_curves(pd.concat(frames, ignore_index=True)), args.out)


if __name__ == "__main__":
    main()
