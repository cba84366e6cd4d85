"""Synthetic traces statistically like a real one, at any size, with no data present.

A trace is summarised by a small parameter set (`fit`) and regenerated from it (`synthesize`):

* **Arrivals**: a non-homogeneous Poisson process whose rate is piecewise constant over the
  hours of the day (`arrivals.rate_per_h`, 24 bins, repeating daily). Sampling inverts the
  cumulative intensity Λ(t): unit-rate exponential gaps are summed and mapped through Λ⁻¹ with
  one vectorised interpolation (the time-change theorem), so N jobs cost O(N).
* **GPU counts**: the empirical histogram (counts per distinct request), sampled by inverse CDF.
* **Durations**: the empirical quantile function of log-duration on a fixed probability grid,
  dense in the tails (`duration.probs`), one per GPU-count bucket (1, 2–4, 5–8, ≥ 9 GPUs; a
  bucket with fewer than `MIN_BUCKET_JOBS` jobs is merged into the previous one) because large
  jobs run longer. Sampling interpolates log-duration linearly between grid points (a
  piecewise log-linear quantile function), which reproduces every grid quantile exactly.
* **Categorical columns** (optional): the joint empirical distribution of e.g. (model, dataset,
  global_batch), drawn independently of the rest.

Parameter files for Philly, Helios-Saturn and SenseTime live in `traces/data/synth_<like>.json`
(regenerate with ``python -m traces.synth_fit``; what each was fitted on is in its ``fitted_on``
field). `synthesize(like, ...)` also accepts a path to such a JSON file.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cosim.errors import InputError, UnknownNameError
from traces.io import arrow_str, normalize
from traces.likes import DATA_DIR, LIKES  # noqa: F401  (LIKES: the names, re-exported)

log = logging.getLogger(__name__)

PARAMS_VERSION = 1
DAY_S = 86400.0
#: probability grid of the duration quantile function (dense in both tails)
PROB_GRID: tuple[float, ...] = tuple(sorted({0.0, 0.001, 0.002, 0.005, 0.995, 0.998, 0.999, 1.0}
                                            | {round(0.01 * k, 2) for k in range(1, 100)}))
#: GPU-count buckets for durations: (lowest count, highest count)
GPU_BUCKETS: tuple[tuple[int, int], ...] = ((1, 1), (2, 4), (5, 8), (9, 1 << 30))
MIN_BUCKET_JOBS = 50



# ----------------------------------------------------------------------------------------- fit
def fit_arrivals(submit_s: np.ndarray, time_origin_s: float = 0.0, rate_per_day: float | None = None,
                 flat: bool = False) -> dict:
    """Jobs per hour for each hour of the day from absolute submit times (s since midnight of day 0).

    The rate in hour h is (jobs submitted in hour h of any day) / (number of days observed).
    `rate_per_day` rescales the profile to a given daily total (shape kept); `flat` keeps only
    the mean rate (for samples whose time of day is unknown).
    """
    t = np.sort(np.asarray(submit_s, dtype=np.float64)) + time_origin_s
    if len(t) < 2:
        raise InputError.at(field="submit_time", expected="at least 2 jobs to fit arrivals", got=len(t))
    span_days = max((t[-1] - t[0]) / DAY_S, 1.0 / 24)
    hours = np.floor((t % DAY_S) / 3600.0).astype(np.int64)
    counts = np.bincount(hours, minlength=24).astype(np.float64)
    per_day = len(t) / span_days if rate_per_day is None else float(rate_per_day)
    rate = counts / counts.sum() * per_day if not flat else np.full(24, per_day / 24)
    return {"bin_s": 3600.0, "rate_per_h": [round(float(r), 6) for r in rate],
            "jobs_per_day": round(float(per_day), 6)}


def fit_gpus(num_gpus: np.ndarray) -> dict:
    values, counts = np.unique(np.asarray(num_gpus, dtype=np.int64), return_counts=True)
    return {"values": values.tolist(), "counts": counts.tolist()}


def fit_durations(duration_s: np.ndarray, num_gpus: np.ndarray) -> dict | None:
    """Quantiles of duration (s, ≥ 1) on `PROB_GRID` per GPU bucket; None if no durations."""
    d = np.asarray(duration_s, dtype=np.float64)
    g = np.asarray(num_gpus, dtype=np.int64)
    ok = ~np.isnan(d)
    if ok.sum() < 2:
        return None
    d, g = np.maximum(d[ok], 1.0), g[ok]
    buckets: list[dict] = []
    for lo, hi in GPU_BUCKETS:
        sel = (g >= lo) & (g <= hi)
        if sel.sum() == 0:
            continue
        if buckets and (sel.sum() < MIN_BUCKET_JOBS or buckets[-1]["jobs"] < MIN_BUCKET_JOBS):
            prev = buckets.pop()  # merge a thin bucket into the previous one
            lo = prev["min_gpus"]
            sel = (g >= lo) & (g <= hi)
        q = np.exp(np.quantile(np.log(d[sel]), PROB_GRID))
        buckets.append({"min_gpus": int(lo), "max_gpus": int(min(hi, g[sel].max())), "jobs": int(sel.sum()),
                        "quantiles_s": [float(f"{x:.6g}") for x in q]})
    buckets[0]["min_gpus"] = 1
    buckets[-1]["max_gpus"] = 1 << 30
    return {"probs": list(PROB_GRID), "buckets": buckets}


def fit_categorical(df: pd.DataFrame, columns: tuple[str, ...]) -> dict | None:
    cols = [c for c in columns if c in df.columns]
    if not cols:
        return None
    sub = df[cols].astype(object).where(df[cols].notna(), None)
    joint = sub.value_counts(dropna=False, sort=False).reset_index()
    joint = joint.sort_values(cols, key=lambda s: s.astype(str), kind="stable").reset_index(drop=True)
    def plain(v: object) -> object:  # JSON-able: None, int for whole numbers, else as is
        if pd.isna(v):
            return None
        if isinstance(v, (int, np.integer, float, np.floating)) and float(v).is_integer():
            return int(v)
        return v

    rows = [[plain(v) for v in r] for r in joint[cols].itertuples(index=False)]
    return {"columns": cols, "rows": rows, "counts": joint["count"].astype(int).tolist()}


def fit(df: pd.DataFrame, like: str = "custom", *, time_origin_s: float | None = None,
        rate_per_day: float | None = None, flat_arrivals: bool = False,
        categorical: tuple[str, ...] = (), fitted_on: str = "") -> dict:
    """Fit the synthetic-trace parameters to a canonical job table.

    `time_origin_s` is the wall-clock time of submit_time 0 in seconds since some midnight
    (loaders of dated traces put it in ``df.attrs["time_origin_s"]``; default 0 = midnight).
    """
    if time_origin_s is None:
        time_origin_s = float(df.attrs.get("time_origin_s", 0.0))
    return {
        "version": PARAMS_VERSION,
        "like": like,
        "fitted_on": fitted_on,
        "jobs": int(len(df)),
        "arrivals": fit_arrivals(df["submit_time"].to_numpy(), time_origin_s % DAY_S, rate_per_day,
                                 flat_arrivals),
        "gpus": fit_gpus(df["num_gpus"].to_numpy()),
        "duration": fit_durations(df["duration"].to_numpy(dtype=np.float64), df["num_gpus"].to_numpy()),
        "categorical": fit_categorical(df, categorical) if categorical else None,
    }


# ----------------------------------------------------------------------------------- params IO
def load_params(like: str | os.PathLike) -> dict:
    """Parameters by built-in name (philly, helios, sensetime) or from a JSON file path."""
    p = Path(like)
    if isinstance(like, str) and like in LIKES:
        p = LIKES.get(like)
    elif not p.suffix == ".json" or not p.is_file():
        raise UnknownNameError("synthetic trace", str(like), LIKES.names())
    try:
        params = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError.at(p, expected="a synthetic-trace parameter JSON", detail=str(exc)[:200]) from None
    if not isinstance(params, dict) or params.get("version") != PARAMS_VERSION:
        raise InputError.at(p, field="version", expected=f"parameter file version {PARAMS_VERSION}",
                            got=params.get("version") if isinstance(params, dict) else type(params).__name__)
    return params


def _dumps(obj: object, indent: int = 0) -> str:
    """JSON with dicts indented and lists of scalars on one line (small, diff-friendly files)."""
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k)}: {_dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        return "[\n" + ",\n".join(pad + _dumps(v, indent + 1) for v in obj) + "\n" + " " * indent + "]"
    return json.dumps(obj)


def save_params(params: dict, path: str | os.PathLike) -> Path:
    """Write a parameter set as JSON atomically (deterministic text for the same numbers)."""
    from cosim.atomic import write_text

    return write_text(_dumps(params) + "\n", path)


# ------------------------------------------------------------------------------------- sample
def sample_arrivals(rng: np.random.Generator, n: int, rate_per_h: np.ndarray,
                    bin_s: float = 3600.0) -> np.ndarray:
    """n arrival times (s, from midnight of day 0) of the periodic piecewise-constant-rate process."""
    rate_s = np.asarray(rate_per_h, dtype=np.float64) / 3600.0
    rate_s = np.maximum(rate_s, rate_s.max() * 1e-9)  # keep Λ strictly increasing
    cum = np.concatenate(([0.0], np.cumsum(rate_s * bin_s)))
    per_period = cum[-1]
    period_s = bin_s * len(rate_s)
    target = np.cumsum(rng.standard_exponential(n))
    m = np.floor(target / per_period)
    rem = target - m * per_period
    within = np.interp(rem, cum, np.arange(len(cum)) * bin_s)
    return m * period_s + within


def _draw_index(rng: np.random.Generator, weights: np.ndarray, n: int) -> np.ndarray:
    cdf = np.cumsum(np.asarray(weights, dtype=np.float64))
    return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), len(cdf) - 1)


def synthesize(like: str | os.PathLike, num_jobs: int, seed: int) -> pd.DataFrame:
    """A canonical job table of `num_jobs` jobs drawn from the fitted parameters of `like`.

    Deterministic in (parameters, num_jobs, seed). Submit times start at the first arrival
    after midnight of day 0; durations are whole seconds (≥ 1); ``source`` = ``synth:<like>``.
    """
    if num_jobs < 0:
        raise InputError.at(field="jobs", expected="a non-negative number of jobs", got=num_jobs)
    params = load_params(like)
    name = params.get("like", str(like))
    rng = np.random.default_rng(seed)
    arr = params["arrivals"]
    t = sample_arrivals(rng, num_jobs, np.asarray(arr["rate_per_h"]), float(arr.get("bin_s", 3600.0)))
    gp = params["gpus"]
    gvals = np.asarray(gp["values"], dtype=np.int32)
    g = gvals[_draw_index(rng, np.asarray(gp["counts"]), num_jobs)]
    dur = np.full(num_jobs, np.nan)
    if params.get("duration"):
        probs = np.asarray(params["duration"]["probs"])
        u = rng.random(num_jobs)
        for b in params["duration"]["buckets"]:
            sel = (g >= b["min_gpus"]) & (g <= b["max_gpus"])
            logq = np.log(np.asarray(b["quantiles_s"], dtype=np.float64))
            dur[sel] = np.maximum(1.0, np.round(np.exp(np.interp(u[sel], probs, logq))))
    cols: dict[str, object] = {
        "job_id": arrow_str(pc.binary_join_element_wise(f"synth-{name}-", pa.array(np.arange(num_jobs)).cast(
            pa.string()), "")),
        "submit_time": t,
        "num_gpus": g,
        "duration": dur,
    }
    cat = params.get("categorical")
    if cat:
        idx = _draw_index(rng, np.asarray(cat["counts"]), num_jobs)
        table = np.asarray(cat["rows"], dtype=object)
        for k, col in enumerate(cat["columns"]):
            vals = table[idx, k] if num_jobs else np.array([], dtype=object)
            if col in ("global_batch", "per_gpu_batch"):
                # per_gpu_batch (fitted where the source's batch is per GPU) scales with the drawn
                # GPU count, so a job never has a global batch smaller than its GPU count
                f = np.array([np.nan if v is None else float(v) for v in table[:, k]])[idx]
                if col == "per_gpu_batch":
                    f = f * g
                cols["global_batch"] = pd.Series(pd.arrays.IntegerArray(np.nan_to_num(f).astype(np.int32),
                                                                        np.isnan(f)))
            else:
                cols[col] = pd.Series(vals, dtype="str")
    cols["source"] = arrow_str(pa.repeat(pa.scalar(f"synth:{name}", pa.large_string()), num_jobs))

    return normalize(pd.DataFrame(cols), source=f"synth:{name}")


# ------------------------------------------------------------------------------------ specs
SPEC_HELP = "synth:<like>:<jobs>[:<window>], e.g. synth:philly:160 or synth:philly-sia:160:2h"


def _ones_likes() -> tuple[str, ...]:
    from traces.ones import LIKES

    return LIKES


def from_spec(spec: str, seed: int) -> pd.DataFrame:
    """Synthesise from a spec string ``synth:<like>:<jobs>[:<window>]``.

    With a window (``8h``, ``90m``, seconds), arrival times are scaled linearly so the jobs
    arrive over exactly that span: the arrival *pattern* is the fitted one, the offered load
    is set by the window. Ares/Pollux/Sia use "160 jobs over 8 h" on 2080 Ti/T4 clusters; a
    faster cluster needs a shorter window for the same queueing (documented where used).
    """
    from cosim.units import parse_seconds

    from cosim.validate import MAX_SYNTH_JOBS, parse_number

    parts = str(spec).split(":")
    if len(parts) not in (3, 4) or parts[0] != "synth":
        raise InputError.at(field="trace", expected=SPEC_HELP, got=spec)
    n = parse_number(parts[2], "trace jobs", integer=True, minimum=1, maximum=MAX_SYNTH_JOBS)  # bounds the memory
    if parts[1] in _ones_likes():  # ONES' Table-2 workloads (traces.ones)
        from traces import ones

        df = ones.generate(parts[1], n, seed)
    elif parts[1].startswith("fft-"):  # FFT's Traces 1-9 (traces.fft): Philly-distribution, Table 2 models
        from traces import fft

        df = fft.synthesize(parts[1], n, seed)
    else:
        df = synthesize(parts[1], n, seed)
    if len(parts) == 4:
        window_s = parse_seconds(parts[3], field="trace window")
        if window_s <= 0:
            raise InputError.at(field="trace window", expected="a positive duration", got=parts[3])
        t = df["submit_time"].to_numpy(dtype=np.float64)
        if len(t):
            t0, span = t.min(), t.max() - t.min()
            df["submit_time"] = (t - t0) * (window_s / span) if span > 0 else t - t0
    return df
