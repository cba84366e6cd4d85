"""The engine's side of capacity changes (`simcore.capacity`): nodes leaving and joining.

A node leaving from a `--capacity` CSV evicts its jobs. A load series' join demand brings
offline nodes of its pool back (lowest ids first); a reclaim demand is answered by the
policy (`answers_reclaims`) or by `default_answer`, checked by `check_answer`, and its nodes
leave at the answer's time, each job on them scaled in to the GPUs it keeps elsewhere (a
resize) when it may run there, else evicted. A mixin of `simcore.engine.Engine` (it shares
the engine's state).
"""

from __future__ import annotations

import time as _time

import numpy as np

from cosim.errors import CosimError, PolicyError
from simcore.api import Allocation, ReclaimDemand
from simcore.engine_constants import CAPACITY
from simcore.events import Event
from simcore.validate import Plan


class NodeChanges:
    """Node failures and returns, join and reclaim demands (see module doc)."""

    def _capacity(self, node: int, online: bool, t: float) -> None:
        gpus = self.cluster.node_gpus(node)
        was = self.cluster.gpu_online[gpus]
        if not online:
            owners = sorted({int(o) for o in self.cluster.gpu_owner[gpus] if o >= 0})
            for j in owners:  # forced preemption: the node's jobs lose all their GPUs
                self._preempt(j, t, action="evicted")
        self.cluster.set_online(gpus, online)
        self._changed = True
        self._online += int(online) * int((~was).sum()) - int(not online) * int(was.sum())

    def _capacity_demand(self, i: int, t: float) -> None:
        """Demand i of the capacity plan: nodes of its pool join (lowest ids first), or the
        policy (or `default_answer`) chooses which to give back, checked by `check_answer`."""
        from simcore.capacity import check_answer, default_answer  # runs with a load series only

        d = self._plan.demands[i]
        c = self.cluster
        t_ = c.topology
        first, num = np.asarray(t_.node_first_gpu), np.asarray(t_.node_num_gpus)
        pool = self._plan.pools.nodes(d.pool)
        online = c.gpu_online[first[pool]]
        if d.kind == "join":
            for n in pool[~online][:d.count].tolist():
                self._capacity(n, True, t)
            return
        cands = np.array([n for n in pool[online].tolist() if n not in self._promised], np.int32)
        cands.flags.writeable = False
        demand = ReclaimDemand(d.pool, min(d.count, int(cands.shape[0])), d.deadline_s, cands)
        row = self.reclaims.open(t, d, int(cands.shape[0]), self.name if self._answers_reclaims else "default")
        if demand.count == 0:  # nothing of the pool is on loan (a node failure took it): nothing to return
            self.reclaims.close(row, t, (), [], [])
            return
        if self._answers_reclaims:
            w0 = _time.perf_counter()
            try:
                answer = self.policy.answer_reclaim(self._view(t, events=False), demand)
            except CosimError:
                raise
            except Exception as exc:
                raise PolicyError(f"policy '{self.name}' raised {type(exc).__name__} answering a reclaim at "
                                  f"t={t:.3f}s: {exc}") from exc
            finally:
                self.policy_wall_s += _time.perf_counter() - w0
        else:
            answer = default_answer(demand, first, num, c.gpu_owner, self._alloc_t, self.jobs.min_gpus, t)
        nodes, at = check_answer(answer, demand, self.name, t)
        if at <= t:
            self._return_nodes(nodes, t, row)
        else:
            self._promised.update(nodes)
            self._answered[i] = (nodes, row)
            self._push(Event(at, CAPACITY, job=i, node=-1, version=1))

    def _reclaim_due(self, i: int, t: float) -> None:
        nodes, row = self._answered.pop(i)
        self._promised.difference_update(nodes)
        self._return_nodes(nodes, t, row)

    def _return_nodes(self, nodes: tuple[int, ...], t: float, row: int) -> None:
        """Give `nodes` back: each job holding GPUs there scales in to its GPUs elsewhere when
        it keeps `min_gpus` and fits there (a resize, charged as one), else is evicted; then
        the nodes go offline."""
        c = self.cluster
        gone: set[int] = set()
        for n in nodes:
            gone.update(c.node_gpus(n).tolist())
        owners = sorted({int(c.gpu_owner[g]) for g in gone if c.gpu_owner[g] >= 0})
        scaled, evicted = [], []
        for j in owners:
            keep = tuple(g for g in self._alloc_t[j] if g not in gone)
            plan = self._scale_in_plan(j, keep)
            if plan is None:
                self._preempt(j, t, action="evicted")
                evicted.append(str(self.jobs.job_id[j]))
            else:
                self._release(j)
                self._place(plan, t)
                scaled.append(str(self.jobs.job_id[j]))
        for n in nodes:
            self._capacity(n, False, t)
        self.reclaims.close(row, t, nodes, scaled, evicted)
        if self.opt.check_invariants:
            self._check_ownership()

    def _close_reclaims(self) -> None:
        """Answers still pending when the run ends: their nodes go at the end (no job holds
        GPUs any more), before their deadline."""
        for i in sorted(self._answered):
            nodes, row = self._answered.pop(i)
            self.reclaims.close(row, self.now, nodes, [], [])

    def _scale_in_plan(self, j: int, keep: tuple[int, ...]) -> Plan | None:
        """Job j on `keep` at its batch, if it may run there (≥ `min_gpus`, memory)."""
        if len(keep) < max(1, int(self.jobs.min_gpus[j])):
            return None
        gpus, _ = self.perf.placed(keep)
        batch = int(self.jobs.batch_size[j])
        ph = self.perf.phases_of(self.jobs.model[j], keep, gpus, batch)
        if self.perf.per_job_scaling:  # e.g. `LinearPerf`'s imperfect scaling
            ph = self.perf.job_phases(ph, len(keep), int(self.jobs.min_gpus[j]), int(self.jobs.max_gpus[j]))
        return None if ph is None else Plan(j, Allocation(keep), gpus, batch, ph)
