"""The engine's timeline rows (`simcore.engine_record.Recording`): one row per change of
occupancy, the last of several at one instant kept, rows past the arrays' first capacity kept."""

from __future__ import annotations

import numpy as np

from simcore.engine_record import Recording


class _Occupancy(Recording):
    """The engine state `_observe` reads, set by hand."""

    def __init__(self) -> None:
        self._init_recording(False)
        self._restarting: set[int] = set()
        self._alloc: dict[int, object] = {}
        self._busy, self._online, self._active_n = 0, 8, 0
        self._changed = False

    def set(self, t: float, busy: int, held: int, active: int) -> None:
        self._busy, self._active_n = busy, active
        self._alloc = dict.fromkeys(range(held))
        self._changed = True
        self._observe(t)


def test_rows_one_per_change_last_of_an_instant_kept_across_growth():
    r = _Occupancy()
    want = []
    n = 3000  # past the first capacity (1,024 rows) twice
    for i in range(n):
        t = float(i)
        r.set(t, busy=i % 7, held=i % 5, active=i % 5 + 2)  # a first state at t ...
        r.set(t, busy=i % 7 + 1, held=i % 5, active=i % 5 + 3)  # ... replaced by the last one at t
        want.append((t, i % 7 + 1, 8, i % 5, 0, 3))
    r.set(float(n), busy=1, held=1, active=4)
    r.set(float(n) + 1, busy=1, held=1, active=4)  # no change of occupancy: no row
    want.append((float(n), 1, 8, 1, 0, 3))
    tl = r.timeline()
    assert list(tl) == ["time_s", "busy_gpus", "online_gpus", "running", "restarting", "queued"]
    assert tl["time_s"].dtype == np.float64 and tl["busy_gpus"].dtype == np.int32  # the file's type: no conversion
    assert all(v.flags.c_contiguous and not v.flags.writeable for v in tl.values())  # handed out without a copy
    got = list(zip(*(tl[k].tolist() for k in tl)))
    assert got == want
