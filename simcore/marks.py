"""Progress marks: the points below completion at which a job's state must be looked at.

A job stops (in the same numba step that finds completions, `simcore.kernels.step`) at the
next of:

- the end of an epoch, for jobs whose statistical efficiency depends on the epoch (Pollux
  goodput, `simcore.goodput`: the gradient statistics change, so its gain and rate are
  refreshed there) and, when the policy declares `wants_epoch_events`, for every job with
  known epochs (`JobTable.num_epochs`: epoch k ends at k / epochs of its work);
- a fraction of its work the policy declared in `milestones`.

`JobTable.mark[j]` holds that next point (1 = completion only), so jobs without marks cost
nothing per event. A goodput job's refresh is one kernel (`kernels.refresh_hits`) reading the
gain of each epoch at the job's batch from a row built once per (application, batch) by
`work_gain`; when the marks are only such refreshes, the engine steps through them inside the
step kernel (`kernels.step_through`, `ProgressMarks.through`). Reaching a mark is exact — the instant is computed from the job's rate,
never stepped — and the events the policy asked for are handed to its next call
(`ClusterView.progress_events`), which happens at that instant.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Any

import numpy as np

from cosim.errors import PolicyError
from simcore import kernels
from simcore.api import JobState, PolicyFlags, ProgressEvent
from simcore.work import WorkMode, work_gain

_UNSCHEDULABLE = int(JobState.UNSCHEDULABLE)


class ProgressMarks:
    """Per-run mark bookkeeping for the engine (see module doc)."""

    def __init__(self, jobs: Any, flags: PolicyFlags, name: str, goodput: Any, eff: Any) -> None:
        """`flags`: the policy's (`simcore.api.PolicyFlags`): epoch events, milestones."""
        self.jobs, self.eff = jobs, eff
        self.wants_epochs = flags.wants_epoch_events
        ms = flags.milestones
        for m in ms:
            if isinstance(m, bool) or not (isinstance(m, (int, float)) and 0.0 < float(m) < 1.0):
                raise PolicyError(f"policy '{name}' declares milestone {m!r}: expected fractions in (0, 1)")
        self.milestones = np.unique(np.asarray(ms, np.float64))
        self.ms_next = np.zeros(jobs.num_jobs, np.int32) if self.milestones.size else None
        self.bounds: dict[int, np.ndarray] = {}  # job → fractions at which its epochs end (last: 1)
        self.refresh: set[int] = set()  # jobs whose gain changes at epoch ends
        self.events: list[ProgressEvent] = []
        if goodput is not None:
            modes = (int(WorkMode.EPOCHS), int(WorkMode.CONVERGENCE))
            for j in np.flatnonzero(np.asarray(goodput.app_of) >= 0).tolist():
                if int(jobs.work_mode[j]) in modes and jobs.state[j] != _UNSCHEDULABLE:
                    self.bounds[j] = goodput.epoch_bounds(j)
                    self.refresh.add(j)
        if self.wants_epochs:
            per: dict[float, np.ndarray] = {}
            ne = jobs.num_epochs
            for j in np.flatnonzero(np.isfinite(ne) & (ne >= 1)).tolist():
                if j not in self.bounds:
                    e = float(ne[j])
                    if e not in per:  # epoch k ends at k / e of the work (a partial last epoch ends at 1)
                        per[e] = np.minimum(np.arange(1, math.ceil(e) + 1, dtype=np.float64) / e, 1.0)
                    self.bounds[j] = per[e]
        if self.milestones.size:
            jobs.mark[:] = self.milestones[0]
        # the bounds as plain lists for `bisect` (the index `np.searchsorted(side="right")` gives
        # on these finite ascending floats, without a NumPy call per epoch end), one per array
        lists: dict[int, list] = {}
        self._bounds_l = {j: lists.setdefault(id(b), b.tolist()) for j, b in self.bounds.items()}
        for j in self.bounds:
            jobs.mark[j] = self.next_mark(j)
        self._tables(jobs.num_jobs, goodput is not None and eff is goodput)
        #: every mark is a goodput job's epoch end, nothing the policy hears about: the engine
        #: steps through them in one kernel call (`kernels.step_through`)
        self.through = bool(self.refresh) and not self.wants_epochs and self.ms_next is None
        self._counters: tuple = ()

    def _tables(self, n: int, per_app: bool) -> None:
        """The refresh kernel's inputs (`kernels.refresh_hits`): the epoch bounds of the goodput
        jobs, flat (each distinct array once), and per job a row of gains by epochs done at its
        current batch (`set_batch`), rows shared by the jobs of one application, batch and mode
        (`per_app`: the efficiency is the goodput model's, a function of the application)."""
        self.kb_start = np.zeros(n, np.int64)
        self.kb_len = np.zeros(n, np.int64)
        pieces, at, where = [], 0, {}
        for j in sorted(self.refresh):
            b = self.bounds[j]
            if id(b) not in where:
                where[id(b)] = at
                pieces.append(np.asarray(b, np.float64))
                at += b.shape[0]
            self.kb_start[j], self.kb_len[j] = where[id(b)], b.shape[0]
        self.kb_flat = np.concatenate(pieces) if pieces else np.zeros(1)
        self.ktab = np.zeros((n if pieces else 0, int(self.kb_len.max(initial=0)) + 1))
        self._rows: dict[tuple, np.ndarray] = {}
        self._per_app = per_app

    def bind_counters(self, s_base: np.ndarray, p_base: np.ndarray, spp: np.ndarray) -> None:
        """The engine's samples counters (`Engine._init_counters`), whose segments close at marks."""
        self._counters = (s_base, p_base, spp)

    def set_batch(self, j: int, batch: int) -> None:
        """Goodput job j now runs at global `batch`: its row of gains, `ktab[j, k]` = the gain
        after k epochs (`work_gain` at the end of epoch k, the progress the job stops at)."""
        jobs = self.jobs
        b = self.bounds[j]
        mode, ref = jobs.work_mode.item(j), jobs.global_batch.item(j)
        key = (id(b) if self._per_app else j, mode, batch, ref)
        row = self._rows.get(key)
        if row is None:
            row = np.zeros(self.ktab.shape[1])
            row[1:b.shape[0] + 1] = [work_gain(mode, batch, ref, self.eff, j, float(x)) for x in b.tolist()]
            self._rows[key] = row
        self.ktab[j] = row

    def next_mark(self, j: int) -> float:
        """The first epoch end or milestone above job j's progress (1 if none)."""
        p = self.jobs.progress.item(j)
        m = 1.0
        b = self.bounds.get(j)
        if b is not None:
            k = int(np.searchsorted(b, p, side="right"))
            if k < b.shape[0]:
                m = min(m, float(b[k]))
        if self.ms_next is not None:
            k = int(self.ms_next[j])
            if k < self.milestones.shape[0]:
                m = min(m, float(self.milestones[k]))
        return m

    def reached(self, hit: np.ndarray) -> bool:
        """Jobs at a mark (ascending): count epochs, refresh the gain of goodput jobs (new
        epoch, new gradient statistics: the gain at the current batch, the rate scaled by it,
        the samples segment closed and reopened; `kernels.refresh_hits`), note milestones, set
        each next mark. True if the policy asked for one of these."""
        jobs = self.jobs
        want = False
        kernel = self.refresh
        ms_marks: list[tuple[int, float]] = []
        if not self.through:  # what the kernel does not do: events, milestones, plain epoch counts
            progress, done, mark = jobs.progress, jobs.epochs_done, jobs.mark
            lists, ms_next = self._bounds_l, self.ms_next
            for j in hit.tolist():
                p = progress.item(j)
                mine = j in kernel
                b = lists.get(j)
                if b is not None:
                    k = bisect_right(b, p)
                    done0 = done.item(j)
                    if k > done0:
                        if self.wants_epochs:
                            self.events.extend(ProgressEvent(j, "epoch", float(e)) for e in range(done0 + 1, k + 1))
                            want = True
                        if not mine:
                            done[j] = k
                    if not mine:  # the next mark (`next_mark`, inlined: progress does not change here)
                        mark[j] = min(1.0, b[k]) if k < len(b) else 1.0
                elif ms_next is not None:
                    mark[j] = 1.0
                if kernel and not mine:  # its samples segment closes here too (`_fold`, `_segment`)
                    s_base, p_base, spp = self._counters
                    s_base[j] += (p - p_base.item(j)) * spp.item(j)
                    p_base[j] = p
                    g = jobs.gain.item(j)
                    spp[j] = jobs.work_iters.item(j) * jobs.batch_size.item(j) / g if g > 0 else 0.0
                if ms_next is not None:
                    k = int(np.searchsorted(self.milestones, p, side="right"))
                    k0 = int(ms_next[j])
                    if k > k0:
                        ms_next[j] = k
                        self.events.extend(ProgressEvent(j, "milestone", float(x)) for x in self.milestones[k0:k])
                        want = True
                    else:
                        k = k0
                    if k < self.milestones.shape[0]:
                        ms_marks.append((j, float(self.milestones[k])))
        if kernel:
            s_base, p_base, spp = self._counters
            kernels.refresh_hits(hit, hit.shape[0], jobs.progress, jobs.rate, jobs.mark, jobs.epochs_done, jobs.gain,
                                 jobs.stat_eff, jobs.batch_size, jobs.global_batch, jobs.work_iters, s_base, p_base,
                                 spp, self.kb_flat, self.kb_start, self.kb_len, self.ktab)
        for j, m in ms_marks:
            jobs.mark[j] = min(jobs.mark.item(j), m)
        return want

    def completed(self, j: int) -> None:
        b = self.bounds.get(j)
        if b is not None:
            self.jobs.epochs_done[j] = b.shape[0]

    def take_events(self) -> tuple[ProgressEvent, ...]:
        """The events gathered since the last policy call (then cleared)."""
        if not self.events:
            return ()
        out, self.events = tuple(self.events), []
        return out
