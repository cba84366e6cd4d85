"""What every policy shares: `BasePolicy` (config, rng, behaviour flags, memory veto, its
round workspace) and the round toolkit re-exported from `policies.round` (`Round`,
`Workspace`, `shape_key`, `demands`), plus `make_placer`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import numpy as np

from policies import placement as P
from policies.round import _STOP, Placer, Round  # noqa: F401  (re-exported: the toolkit)
from policies.workspace import Workspace, demands, demands_cached, shape_key  # noqa: F401
from simcore.api import ClusterView


class BasePolicy:
    """Common attributes and helpers; subclasses implement `decide`.

    The behaviour flags of `simcore.api.Policy` are declared here with their defaults, and a
    policy overrides the ones that hold for it (class attributes): `rounds_need_queue`,
    `completions_need_queue`, `ignores_restart_ends`, `wants_epoch_events`, `milestones`
    (see `simcore.api.Policy`).
    """

    name: ClassVar[str]
    Config: ClassVar[type]
    #: a periodic round can change nothing while no job is queued
    rounds_need_queue: ClassVar[bool] = False
    #: a job completing can change nothing while no job is queued
    completions_need_queue: ClassVar[bool] = False
    #: a job finishing its restart changes none of the policy's decisions
    ignores_restart_ends: ClassVar[bool] = False
    #: call the policy at each epoch end of a job whose epochs are known
    wants_epoch_events: ClassVar[bool] = False
    #: fractions of a job's work at which to call the policy
    milestones: ClassVar[tuple[float, ...]] = ()

    def __init__(self, config) -> None:
        self.config = config
        self.interval_s = getattr(config, "interval_s", None)
        self.event_driven = True
        self.needs: frozenset[str] = frozenset()
        self.rng = np.random.default_rng(getattr(config, "seed", 0))
        self._mem_ok: dict[tuple[int, int], bool] = {}
        self.workspace = Workspace()

    def __repr__(self) -> str:
        args = ", ".join(f"{f.name}={getattr(self.config, f.name)!r}" for f in dataclasses.fields(self.config))
        return f"{type(self).__name__}({args})"

    def round(self, view: ClusterView, demand: np.ndarray | None = None) -> "Round":
        """A `Round` on this policy's workspace, placing with its `placement` strategy, rng and
        memory veto (`demand`: GPUs per job, default the requested counts)."""
        return Round(view, self, demand=demand)

    @staticmethod
    def placement_is_deterministic(view: ClusterView, strategy: str) -> bool:
        """True when a failed placement depends only on the pool and the job's (demand, type).

        Not for the random strategy (it draws from the rng even when it fails) nor with the
        per-job memory veto of heterogeneous clusters.
        """
        return strategy != "random" and len(view.cluster.gpu_type_names) <= 1

    def accept_for(self, view: ClusterView, j: int, batch: int | None = None) -> Callable[[np.ndarray], bool] | None:
        """Memory-fit veto for jobs that accept any GPU type on a heterogeneous cluster.

        Asks the engine's what-if query once per (job, GPU type, batch); a job pinned to one
        type (or a one-type cluster) needs no check, the engine rejected impossible jobs upfront.
        """
        c = view.cluster
        if len(c.gpu_type_names) <= 1 or int(view.jobs.gpu_type_req[j]) >= 0:
            return None

        def ok(gpus: np.ndarray) -> bool:
            key = (j, int(c.gpu_type[gpus[0]])) if batch is None else (j, int(c.gpu_type[gpus[0]]), batch)
            if key not in self._mem_ok:
                self._mem_ok[key] = bool(np.isfinite(view.iteration_time(j, gpus, batch)))
            return self._mem_ok[key]

        return ok


def make_placer(policy: BasePolicy, view: ClusterView, strategy: str, dem: np.ndarray,
                max_tier: Callable[[int], int | None] | None = None) -> Placer:
    """A `Placer` using one of `placement.STRATEGIES`, the job's type requirement and memory veto."""
    c = view.cluster
    req = view.jobs.gpu_type_req

    def placer(j: int, avail: np.ndarray) -> np.ndarray | None:
        return P.place(c, avail, int(dem[j]), gpu_type=int(req[j]), strategy=strategy, rng=policy.rng,
                       accept=policy.accept_for(view, j), max_tier=None if max_tier is None else max_tier(j))

    return placer
