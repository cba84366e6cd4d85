"""Plain job states and event kinds for the engine's hot path, and its shared empty arrays.

Enum attribute access (and hashing an enum member) is slow on the hot path, so the engine
(`simcore.engine` and its `engine_*` parts) reads these module constants instead.
"""

from __future__ import annotations

import numpy as np

from simcore.api import JobState
from simcore.events import Priority

# job states as plain ints
QUEUED, RUNNING, RESTARTING = int(JobState.QUEUED), int(JobState.RUNNING), int(JobState.RESTARTING)
FINISHED, UNSCHEDULABLE = int(JobState.FINISHED), int(JobState.UNSCHEDULABLE)
# event kinds
ARRIVAL, CAPACITY, RESTART_END = Priority.ARRIVAL, Priority.CAPACITY, Priority.RESTART_END
WAKE, ROUND = Priority.WAKE, Priority.ROUND
# events from outside the policy (RESTART_END, ARRIVAL, CAPACITY) are the priorities in
# [RESTART_END, CAPACITY]: tested by int range compares (hashing an enum member is slow)
assert (int(RESTART_END), int(ARRIVAL), int(CAPACITY)) == (1, 2, 3)
NO_GPUS = np.zeros(0, np.int32)  # the GPUs of a job holding none
NO_GPUS.flags.writeable = False
NO_JOBS = np.zeros(0, np.int64)  # no job done / at a mark in a step
NO_JOBS.flags.writeable = False
