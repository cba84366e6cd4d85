"""Progress rates of running jobs, recomputed only where a change can matter.

A RUNNING job j advances at `gain_j / (W_j * t_iter_j)` of its work per second
(`simcore.work`). Its iteration time depends on its own placement and — with contention —
on the other jobs whose collectives share a link with it. Jobs without links (one GPU, or
contention off) run at their solo speed. Jobs with links form groups, the connected
components of the job–link graph; a change (start, stop, move, resize, batch change,
restart end) re-solves only the groups that contain the changed job or a link it left or
joined. Other groups keep their rates: their inputs did not change, and the contention
solver's result for a group depends on that group alone.

Running jobs with links sit in a slot table of numpy arrays holding their prepared
(checked, quantised) solver inputs (`PerfModel.prepared`; a solver without a prepared form
runs behind the same interface, so tests with fake solvers take this path too); one numba
pass (`kernels.linked_inputs`) finds the touched components and gathers their inputs, so a
re-solve costs no Python loop over the group. Once the solver has gone over to its duty-cycle
kernel (a group above `exact_max_jobs` came up: `PreparedContention.large_group_args`), one
numba call (`kernels.linked_resolve`) gathers, solves and writes the touched jobs' rates; a
re-solve that meets a group the kernel leaves to Python goes through `PreparedContention.solve`,
to the same values. Without contention every job runs solo.
"""

from __future__ import annotations

import numpy as np

from simcore import kernels
from simcore.api import JobState
from simcore.perf import Phases, PerfModel
from simcore.state import JobTable

_RUNNING = int(JobState.RUNNING)


class _LinkedJobs:
    """Slot table of the running jobs with links: prepared solver inputs as numpy arrays.

    Slots are reused (free list); the table widens when a job has more links than it has
    columns and grows when every slot is taken, so sizes follow the running set."""

    def __init__(self, num_jobs: int, num_links: int, slots: int = 64, width: int = 8) -> None:
        self.num_links = num_links
        self.slot_of = np.full(num_jobs, -1, np.int64)
        self.slot_job = np.full(slots, -1, np.int64)
        self.nlink = np.zeros(slots, np.int64)
        self.links = np.zeros((slots, width), np.int64)
        self.demand = np.zeros((slots, width))
        self.compute = np.zeros(slots)
        self.start = np.zeros(slots)
        self.comm = np.zeros(slots)
        self.free = list(range(slots - 1, -1, -1))
        self.links_of: dict[int, np.ndarray] = {}  # job → its link ids

    def add(self, j: int, inp) -> None:
        """Register job j with its prepared inputs (`PreparedContention.job`)."""
        k = inp.link_ids.shape[0]
        if k > self.links.shape[1]:
            self._resize(self.slot_job.shape[0], max(k, 2 * self.links.shape[1]))
        if not self.free:
            self._resize(2 * self.slot_job.shape[0], self.links.shape[1])
        s = self.free.pop()
        self.slot_of[j] = s
        self.slot_job[s] = j
        self.nlink[s] = k
        self.links[s, :k] = inp.link_ids
        self.demand[s, :k] = inp.link_demand_Bps
        self.compute[s] = inp.compute_s
        self.start[s] = inp.comm_start_s
        self.comm[s] = inp.comm_s
        self.links_of[j] = inp.link_ids

    def remove(self, j: int) -> np.ndarray | None:
        """Unregister job j; its links (None if it was not registered)."""
        links = self.links_of.pop(j, None)
        if links is not None:
            s = int(self.slot_of[j])
            self.slot_of[j] = -1
            self.slot_job[s] = -1
            self.free.append(s)
        return links

    def touched(self, seeds: np.ndarray):
        """`kernels.linked_inputs` over this table."""
        return kernels.linked_inputs(seeds, self.num_links, self.slot_job, self.slot_of, self.nlink, self.links,
                                     self.demand, self.compute, self.start, self.comm)

    def resolve(self, seeds: np.ndarray, jobs: JobTable, large_args: tuple) -> bool:
        """`kernels.linked_resolve` over this table, writing `jobs.rate` and `jobs.exposed_frac`."""
        return kernels.linked_resolve(seeds, self.num_links, self.slot_job, self.slot_of, self.nlink, self.links,
                                      self.demand, self.compute, self.start, self.comm, jobs.gain, jobs.work_iters,
                                      jobs.rate, jobs.exposed_frac, *large_args)

    def _resize(self, slots: int, width: int) -> None:
        old = self.slot_job.shape[0]
        w0 = self.links.shape[1]

        def grow(a: np.ndarray, fill: float) -> np.ndarray:
            shape = (slots, width) if a.ndim == 2 else (slots,)
            out = np.full(shape, fill, a.dtype)
            if a.ndim == 2:
                out[:old, :w0] = a
            else:
                out[:old] = a
            return out

        self.slot_job = grow(self.slot_job, -1)
        self.nlink = grow(self.nlink, 0)
        self.links = grow(self.links, 0)
        self.demand = grow(self.demand, 0.0)
        self.compute = grow(self.compute, 0.0)
        self.start = grow(self.start, 0.0)
        self.comm = grow(self.comm, 0.0)
        self.free[:0] = range(slots - 1, old - 1, -1)  # new slots, taken after the old free ones


class RateBook:
    """Keeps `jobs.rate` and `jobs.exposed_frac` current for the engine's running jobs.

    `phases` and `alloc` are the engine's own dicts (job → Phases / GPU ids), read, never
    written. `incremental=False` re-solves every group on every change (the reference the
    incremental path is tested against)."""

    def __init__(self, jobs: JobTable, perf: PerfModel, phases: dict[int, Phases], alloc: dict[int, np.ndarray],
                 incremental: bool = True) -> None:
        self.jobs, self.perf, self.phases, self.alloc = jobs, perf, phases, alloc
        self.incremental = incremental
        self.dirty: set[int] = set()
        prepared = perf.prepared  # None: contention off (every job solo)
        self._net = _LinkedJobs(jobs.num_jobs, prepared.num_links) if prepared is not None else None
        self._all_links = np.arange(prepared.num_links if prepared is not None else 0, dtype=np.int64)
        self._large_group_args = getattr(prepared, "large_group_args", None)  # a solver with a duty-cycle kernel

    def mark(self, j: int) -> None:
        """Job j's allocation, batch or state changed."""
        self.dirty.add(j)

    def refresh(self) -> None:
        if not self.dirty:
            return
        if self._net is None:
            self._refresh_solo()
            return
        jobs, net, dirty = self.jobs, self._net, self.dirty
        state, alloc, phases = jobs.state, self.alloc, self.phases
        seeds: list[np.ndarray] = []
        inputs = self.perf.contention_inputs
        for j in dirty:  # order is immaterial: members come back sorted
            old = net.remove(j)
            if old is not None:
                seeds.append(old)
            if j in alloc and state.item(j) == _RUNNING:
                ph = phases[j]
                if ph.link_ids.shape[0]:
                    inp = inputs(ph)
                    net.add(j, inp)
                    seeds.append(inp.link_ids)
                else:
                    self._solo(j, ph)
        dirty.clear()
        if not self.incremental:
            seed = self._all_links
        elif not seeds:
            return
        else:
            seed = seeds[0] if len(seeds) == 1 else np.concatenate(seeds)
        large = self._large_group_args() if self._large_group_args is not None else None
        if large is not None and net.resolve(seed, jobs, large):
            return  # gathered, solved and written in one kernel call
        idx, c, s, m, ptr, ids, dem = net.touched(seed)
        if idx.shape[0] == 0:
            return
        it, exposed = self.perf.prepared.solve(c, s, m, ptr, ids, dem)
        jobs.rate[idx] = jobs.gain[idx] / (jobs.work_iters[idx] * it)
        jobs.exposed_frac[idx] = exposed / it

    def _solo(self, j: int, ph: Phases) -> None:
        jobs = self.jobs
        it = ph.solo_s
        jobs.rate[j] = jobs.gain[j] / (jobs.work_iters[j] * it)
        jobs.exposed_frac[j] = (it - ph.compute_s) / it

    def _refresh_solo(self) -> None:
        """Without contention: every changed running job at its solo speed."""
        state, alloc = self.jobs.state, self.alloc
        for j in sorted(self.dirty):
            if j in alloc and state.item(j) == _RUNNING:
                self._solo(j, self.phases[j])
        self.dirty.clear()
