"""Workload samplers: time windows and job counts (as Pollux/Sia/Ares sample), filters, rescaling,
and the Ares size classes.

Pollux, Sia and Ares evaluate on short samples of a long production trace: 160 jobs submitted
within 8 h (Philly, Helios-Saturn) or 960 within 48 h (newTrace), 8 samples each, and 40 jobs
in 4 h for the testbed (`seeds/notes/ares.md` §5.2). `sample_window` reproduces that: a seeded
random window that holds at least the requested number of jobs, then a seeded uniform subset
of that many jobs, with submit times re-based to the window start.

Ares maps each record to a model by its GPU-time class (`size_class`): S < 1 h, M 1–10 h,
L 10–100 h, XL ≥ 100 h (GPU-hours = num_gpus × duration); `traces.workload.assemble` uses it.
"""

from __future__ import annotations

import logging
from typing import Iterable

import numpy as np
import pandas as pd

from cosim.errors import InputError

log = logging.getLogger(__name__)

#: Ares size classes: (name, lower bound in GPU-hours, inclusive); upper bound is the next lower.
SIZE_CLASSES: tuple[tuple[str, float], ...] = (("S", 0.0), ("M", 1.0), ("L", 10.0), ("XL", 100.0))


def gpu_hours(df: pd.DataFrame) -> np.ndarray:
    """GPU-hours per job: ``gpu_time`` when the trace has it, else num_gpus × duration (NaN if unknown)."""
    est = df["num_gpus"].to_numpy(dtype=np.float64) * df["duration"].to_numpy(dtype=np.float64)
    if "gpu_time" in df.columns:
        gt = df["gpu_time"].to_numpy(dtype=np.float64)
        est = np.where(np.isnan(gt), est, gt)
    return est / 3600.0


def size_class(df: pd.DataFrame) -> pd.Series:
    """Ares class per job by GPU-time: S [0, 1) h, M [1, 10) h, L [10, 100) h, XL ≥ 100 h (NaN: unknown)."""
    h = gpu_hours(df)
    bounds = np.array([lo for _, lo in SIZE_CLASSES[1:]])
    names = np.array([n for n, _ in SIZE_CLASSES], dtype=object)
    cls = names[np.searchsorted(bounds, np.nan_to_num(h, nan=0.0), side="right")]
    cls[np.isnan(h)] = None
    return pd.Series(cls, index=df.index, dtype="str")


def with_size_class(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` with the ``size_class`` column (extra column of the schema) filled."""
    out = df.copy()
    out["size_class"] = size_class(df)
    return out


def filter_jobs(df: pd.DataFrame, *, status: Iterable[str] | None = None, min_gpus: int | None = None,
                max_gpus: int | None = None, vc: Iterable[str] | None = None) -> pd.DataFrame:
    """Jobs whose status is in `status` (case-insensitive), GPU count in [min_gpus, max_gpus], VC in `vc`."""
    keep = np.ones(len(df), dtype=bool)
    if status is not None:
        wanted = {s.lower() for s in status}
        keep &= df["status"].str.lower().isin(wanted).to_numpy(dtype=bool)
    if min_gpus is not None:
        keep &= df["num_gpus"].to_numpy() >= min_gpus
    if max_gpus is not None:
        keep &= df["num_gpus"].to_numpy() <= max_gpus
    if vc is not None:
        keep &= df["vc"].isin(set(vc)).to_numpy(dtype=bool)
    return df[keep].reset_index(drop=True)


def rescale_gpus(df: pd.DataFrame, target_gpus: int, source_gpus: int | None = None,
                 power_of_two: bool = False) -> pd.DataFrame:
    """Scale GPU demand to a cluster of `target_gpus`.

    With `source_gpus` (the size of the trace's cluster) each demand is multiplied by
    target/source and rounded (at least 1); without it demands are only capped. Either way no
    job asks for more than the whole target cluster. `power_of_two` rounds to the nearest power
    of two (ties up), as elastic schedulers allocate. ``gpu_time`` is rescaled with the demand.
    """
    if target_gpus < 1:
        raise InputError.at(field="target_gpus", expected="a positive GPU count", got=target_gpus)
    g = df["num_gpus"].to_numpy(dtype=np.float64)
    if source_gpus is not None:
        if source_gpus < 1:
            raise InputError.at(field="source_gpus", expected="a positive GPU count", got=source_gpus)
        g = np.maximum(1.0, np.floor(g * (target_gpus / source_gpus) + 0.5))
    if power_of_two:
        g = 2.0 ** np.floor(np.log2(g) + 0.5)
    g = np.minimum(g, 2.0 ** np.floor(np.log2(target_gpus)) if power_of_two else target_gpus)
    out = df.copy()
    new = g.astype(np.int32)
    if "gpu_time" in out.columns:
        out["gpu_time"] = out["gpu_time"].to_numpy(dtype=np.float64) * new / df["num_gpus"].to_numpy()
    out["num_gpus"] = new
    return out


def sample_window(df: pd.DataFrame, *, jobs: int | None = None, window_s: float | None = None,
                  seed: int = 0, rebase: bool = True) -> pd.DataFrame:
    """A seeded sample: `jobs` jobs, all submitted within one window of `window_s` seconds.

    * window and jobs: a window start drawn uniformly among the submit times whose window holds
      ≥ `jobs` jobs, then `jobs` of those drawn uniformly without replacement (Pollux/Sia/Ares).
    * window only: every job in a random window (start drawn among submit times).
    * jobs only: `jobs` consecutive submissions from a random position.
    Submit times are re-based so the window starts at 0 (`rebase`). InputError when no window
    holds enough jobs. The same (table, arguments, seed) always gives the same rows.
    """
    if jobs is None and window_s is None:
        raise InputError.at(field="jobs/window", expected="a job count, a window, or both")
    if jobs is not None and jobs < 1:
        raise InputError.at(field="jobs", expected="a positive number of jobs", got=jobs)
    if window_s is not None and not window_s > 0:
        raise InputError.at(field="window", expected="a positive window length", got=window_s)
    rng = np.random.default_rng(seed)
    t = df["submit_time"].to_numpy(dtype=np.float64)  # normalized tables are sorted by submit_time
    if len(t) > 1 and np.any(np.diff(t) < 0):
        order = np.argsort(t, kind="stable")
        df, t = df.iloc[order].reset_index(drop=True), t[order]
    n = len(t)
    if window_s is None:
        if jobs > n:
            raise InputError.at(field="jobs", expected=f"at most {n} jobs (the trace's size)", got=jobs)
        i0 = int(rng.integers(0, n - jobs + 1))
        idx = np.arange(i0, i0 + jobs)
        t0 = t[i0]
    else:
        ends = np.searchsorted(t, t + window_s, side="left")  # window [t_i, t_i + w)
        counts = ends - np.arange(n)
        need = jobs or 1
        ok = np.flatnonzero(counts >= need)
        if len(ok) == 0:
            best = int(counts.max()) if n else 0
            raise InputError.at(field="jobs", expected=f"a window of {window_s:g} s holding ≥ {need} jobs",
                                detail=f"the busiest such window holds {best}")
        i0 = int(ok[rng.integers(0, len(ok))])
        idx = np.arange(i0, ends[i0])
        if jobs is not None:
            idx = np.sort(rng.choice(idx, size=jobs, replace=False))
        t0 = t[i0]
    out = df.iloc[idx].reset_index(drop=True)
    if rebase:
        for c in ("submit_time", "start_time", "end_time"):
            if c in out.columns:
                out[c] = out[c].to_numpy(dtype=np.float64) - t0
    log.info("sampled %d jobs from t=%.0f s (window %s)", len(out), t0, window_s)
    return out
