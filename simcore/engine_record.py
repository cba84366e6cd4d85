"""The engine's records: the occupancy timeline and, when asked, one row per decision.

A timeline row is written when occupancy changed (one per instant: the last of several
steps at one instant is kept); decision rows (`decisions.parquet`) are built only when
`EngineOptions.record_decisions` is set, so the hot paths skip building their arguments
otherwise. A mixin of `simcore.engine.Engine` (it shares the engine's state).
"""

from __future__ import annotations

import numpy as np

_TIMELINE = ("busy_gpus", "online_gpus", "running", "restarting", "queued")  # columns beside time_s


class Recording:
    """Timeline and decision rows (see module doc)."""

    def _init_recording(self, record_decisions: bool) -> None:
        self._rows: list[tuple] = []  # timeline rows (time_s, *_TIMELINE), columns at the end (`timeline`)
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
        rows = self._rows
        if rows and rows[-1][0] == t:  # several steps at one instant: keep the last
            rows.pop()
        self._last_obs = obs
        rows.append((t, *obs))

    def timeline(self) -> dict[str, list]:
        """The timeline rows as columns: time_s and the occupancy after each change."""
        cols = list(zip(*self._rows)) if self._rows else [()] * (1 + len(_TIMELINE))
        return {k: list(c) for k, c in zip(("time_s",) + _TIMELINE, cols)}

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
