"""The engine's event queue: one heap per engine, keyed `(time, priority, seq)` here only.

Same-time order is decided by `Priority` (lower first) and then by insertion order (`seq`,
a per-queue counter, so two engines never share state and runs are reproducible). Job
completions are not stored in the heap: between events every running job advances at a
constant rate, so the engine computes the next completion directly (`kernels.step`)
and treats it as an event with priority `COMPLETION`.
"""

from __future__ import annotations

import enum
import heapq
from typing import NamedTuple


class Priority(enum.IntEnum):
    """Order of events that happen at the same simulated time (lower runs first).

    - COMPLETION: finished jobs release GPUs before anything else looks at the cluster.
    - RESTART_END: a job that finished paying its (re)start cost starts making progress.
    - ARRIVAL: newly submitted jobs enter the queue, so a round at this instant sees them.
    - CAPACITY: nodes leave (force-preempting their jobs) or join.
    - WAKE: a wake-up the policy asked for (`Decision.wake_at`: delay timers, leases).
    - ROUND: the policy's periodic scheduling round (`Policy.interval_s`).
    The policy itself is called once after all events of one instant have been accepted.
    """

    COMPLETION = 0
    RESTART_END = 1
    ARRIVAL = 2
    CAPACITY = 3
    WAKE = 4
    ROUND = 5


class Event(NamedTuple):
    """One scheduled event. `job` is the job index (-1 if none); `version` lets the engine
    drop a RESTART_END made stale by a later decision; `node`/`online` describe a capacity
    change. Immutable (a named tuple: built several times per simulated event, and a
    tuple is built several times faster than a frozen dataclass)."""

    time: float
    priority: Priority
    job: int = -1
    version: int = 0
    node: int = -1
    online: bool = True


class EventQueue:
    """A min-heap of events with the ordering key defined in exactly one place (`push`)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Event]] = []
        self._seq = 0

    def push(self, event: Event) -> None:
        heapq.heappush(self._heap, (event.time, int(event.priority), self._seq, event))
        self._seq += 1

    def peek_time(self) -> float:
        return self._heap[0][0] if self._heap else float("inf")

    def peek(self) -> Event | None:
        return self._heap[0][3] if self._heap else None

    def second_time(self) -> float:
        """Time of the event that comes out after the first (inf if none): one of the heap
        root's two children."""
        h = self._heap
        n = len(h)
        if n < 2:
            return float("inf")
        return h[1][0] if n == 2 or h[1][0] <= h[2][0] else h[2][0]

    def pop(self) -> Event:
        return heapq.heappop(self._heap)[3]

    def __len__(self) -> int:
        return len(self._heap)

    def has_other_than(self, *kinds: Priority) -> bool:
        """Whether any queued event has a priority not in `kinds` (used for stuck detection)."""
        skip = {int(k) for k in kinds}
        return any(p not in skip for _, p, _, _ in self._heap)
