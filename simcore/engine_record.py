"""The engine's records: the occupancy timeline and, when asked, one row per decision.

A timeline row is written when occupancy changed (one per instant: the last of several
steps at one instant is kept); decision rows (`decisions.parquet`) are built only when
`EngineOptions.record_decisions` is set, so the hot paths skip building their arguments
otherwise. A mixin of `simcore.engine.Engine` (it shares the engine's state).
"""

from __future__ import annotations

import numpy as np

from simcore.state import read_only

_TIMELINE = ("busy_gpus", "online_gpus", "running", "restarting", "queued")  # columns beside time_s


class Recording:
    """Timeline and decision rows (see module doc)."""

    def _init_recording(self, record_decisions: bool) -> None:
        # timeline rows in arrays grown by doubling, one contiguous array per column so that the
        # result hands them out without a copy: 28 bytes a row (a tuple of Python numbers per row
        # would take about 200; a million-job run has about two million rows)
        self._tl_time = np.empty(1024)  # time_s of each row
        self._tl_obs = np.empty((len(_TIMELINE), 1024), np.int32)  # the `_TIMELINE` columns, one per row of this
        self._tl_n = 0
        self.decisions: dict[str, list] | None = (
            {k: [] for k in ("time_s", "job_id", "action", "num_gpus", "gpus", "batch_size", "cost_s")}
            if record_decisions else None)
        self._last_obs: tuple | None = None

    def _observe(self, t: float) -> None:
        if not self._changed:
            return
        self._changed = False
        restarting = len(self._restarting)
        held = len(self._alloc)
        obs = (self._busy, self._online, held - restarting, restarting, self._active_n - held)
        if obs == self._last_obs:
            return
        n = self._tl_n
        if n and self._tl_time[n - 1] == t:  # several steps at one instant: keep the last
            n -= 1
        elif n == self._tl_time.shape[0]:
            self._tl_time = np.concatenate([self._tl_time, np.empty(n)])
            self._tl_obs = np.concatenate([self._tl_obs, np.empty_like(self._tl_obs)], axis=1)
        self._last_obs = obs
        self._tl_time[n] = t
        self._tl_obs[:, n] = obs
        self._tl_n = n + 1

    def timeline(self) -> dict[str, np.ndarray]:
        """The timeline rows as columns: time_s (float64) and the occupancy after each change
        (int32), read-only views of the recorded rows (called once the run has ended)."""
        n = self._tl_n
        return {k: read_only(v[:n]) for k, v in zip(("time_s", *_TIMELINE), (self._tl_time, *self._tl_obs))}

    def _record(self, t: float, j: int, action: str, gpus: np.ndarray, batch: int, cost: float) -> None:
        """One row of `decisions.parquet`; callers call it only when decisions are recorded
        (the hot paths skip building its arguments otherwise)."""
        d = self.decisions
        d["time_s"].append(t)
        d["job_id"].append(str(self.jobs.job_id[j]))
        d["action"].append(action)
        d["num_gpus"].append(int(gpus.shape[0]))
        d["gpus"].append(",".join(map(str, gpus.tolist())))
        d["batch_size"].append(int(batch))
        d["cost_s"].append(float(cost))
