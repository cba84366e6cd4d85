"""Progress rates of running jobs, recomputed only where a change can matter.

A RUNNING job j advances at `gain_j / (W_j * t_iter_j)` of its work per second
(`simcore.work`). Its iteration time depends on its own placement and — with contention —
on the other jobs whose collectives share a link with it. Jobs without links (one GPU, or
contention off) run at their solo speed. Jobs with links form groups, the connected
components of the job–link graph; a change (start, stop, move, resize, batch change,
restart end) re-solves only the groups that contain the changed job or a link it left or
joined. Other groups keep their rates: their inputs did not change, and the contention
solver's result for a group depends on that group alone.
"""

from __future__ import annotations

import numpy as np

from simcore.api import JobState
from simcore.perf import Phases, PerfModel
from simcore.state import JobTable

_RUNNING = int(JobState.RUNNING)


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
        self.link_jobs: dict[int, set[int]] = {}  # link → RUNNING jobs whose collective crosses it
        self.net_links: dict[int, list[int]] = {}  # job → its links (jobs registered in link_jobs)

    def mark(self, j: int) -> None:
        """Job j's allocation, batch or state changed."""
        self.dirty.add(j)

    def refresh(self) -> None:
        dirty = self.dirty
        if not dirty:
            return
        jobs, contention = self.jobs, self.perf.contention
        link_jobs, net_links = self.link_jobs, self.net_links
        seeds: set[int] = set()
        solo: list[int] = []
        for j in sorted(dirty):
            old = net_links.pop(j, None)
            if old is not None:
                for link in old:
                    link_jobs[link].discard(j)
                seeds.update(old)
            if j in self.alloc and jobs.state[j] == _RUNNING:
                ph = self.phases[j]
                if contention and ph.link_ids.shape[0]:
                    ls = ph.link_ids.tolist()
                    net_links[j] = ls
                    for link in ls:
                        link_jobs.setdefault(link, set()).add(j)
                    seeds.update(ls)
                else:
                    solo.append(j)
        dirty.clear()
        if not self.incremental:
            seeds.update(link_jobs)
        for j in solo:
            ph = self.phases[j]
            it = ph.solo_s
            jobs.rate[j] = jobs.gain[j] / (jobs.work_iters[j] * it)
            jobs.exposed_frac[j] = (it - ph.compute_s) / it
        group = self._components(seeds)
        if not group:
            return
        todo = sorted(group)
        it, exposed = self.perf.iteration_times([self.phases[j] for j in todo])
        idx = np.asarray(todo, np.int64)
        jobs.rate[idx] = jobs.gain[idx] / (jobs.work_iters[idx] * it)
        jobs.exposed_frac[idx] = exposed / it

    def _components(self, seeds: set[int]) -> set[int]:
        """Jobs in the connected components of the job–link graph around `seeds` (links)."""
        link_jobs, net_links = self.link_jobs, self.net_links
        group: set[int] = set()
        seen = set(seeds)
        stack = list(seeds)
        while stack:
            for k in link_jobs.get(stack.pop(), ()):
                if k not in group:
                    group.add(k)
                    for link in net_links[k]:
                        if link not in seen:
                            seen.add(link)
                            stack.append(link)
        return group
