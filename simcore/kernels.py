"""Numba kernels of the engine's hot path: advancing time and finding the next completion.

They walk only the jobs holding GPUs (`held`: RUNNING or RESTARTING), so an event costs what
the running set costs, not the queue or the whole trace (queued time is accounted when a
job leaves the queue). State codes are `simcore.api.JobState` values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

QUEUED = 1
RUNNING = 2
RESTARTING = 3


@njit(cache=True)
def advance(held, dt, state, rate, progress, alloc_count, attained_gpu_s, executed_s,
            restart_s, exposed_frac, exposed_comm_s):  # pragma: no cover - compiled
    """Move every job holding GPUs `dt` seconds forward at its current constant rate.

    RUNNING jobs gain `rate * dt` progress (capped at 1), GPU-seconds and exposed
    communication; RESTARTING jobs hold GPUs without progress (time counted in `restart_s`).
    """
    for k in range(held.shape[0]):
        j = held[k]
        s = state[j]
        if s == RUNNING:
            p = progress[j] + rate[j] * dt
            progress[j] = p if p < 1.0 else 1.0
            attained_gpu_s[j] += alloc_count[j] * dt
            executed_s[j] += dt
            exposed_comm_s[j] += exposed_frac[j] * dt
        elif s == RESTARTING:
            attained_gpu_s[j] += alloc_count[j] * dt
            executed_s[j] += dt
            restart_s[j] += dt


@njit(cache=True)
def next_completion(active, state, rate, progress):  # pragma: no cover - compiled
    """(seconds until the first RUNNING job completes, its index), or (inf, -1)."""
    best = np.inf
    arg = -1
    for k in range(active.shape[0]):
        j = active[k]
        if state[j] == RUNNING and rate[j] > 0.0:
            t = (1.0 - progress[j]) / rate[j]
            if t < best:
                best = t
                arg = j
    return best, arg


@njit(cache=True)
def completed_now(active, state, rate, progress, tol_s):  # pragma: no cover - compiled
    """Indices of RUNNING jobs finishing within `tol_s` seconds (rounding of simultaneous
    completions); their progress is snapped to exactly 1."""
    out = np.empty(active.shape[0], np.int64)
    n = 0
    for k in range(active.shape[0]):
        j = active[k]
        if state[j] == RUNNING:
            left = 1.0 - progress[j]
            if left <= 0.0 or (rate[j] > 0.0 and left / rate[j] <= tol_s) or left <= 1e-12:
                progress[j] = 1.0
                out[n] = j
                n += 1
    return out[:n]


@njit(cache=True)
def merge_sorted(a, add, drop):  # pragma: no cover - compiled
    """A new ascending array: ascending `a` and ascending `add` merged, minus every value in
    ascending `drop` — one pass, one allocation (the engine's active set, per policy call)."""
    out = np.empty(a.shape[0] + add.shape[0], np.int64)
    i = k = d = n = 0
    while i < a.shape[0] or k < add.shape[0]:
        if k >= add.shape[0] or (i < a.shape[0] and a[i] < add[k]):
            v = a[i]
            i += 1
        else:
            v = add[k]
            k += 1
        while d < drop.shape[0] and drop[d] < v:
            d += 1
        if d < drop.shape[0] and drop[d] == v:
            continue
        out[n] = v
        n += 1
    return out[:n]
