"""Aryl: capacity loaning from an inference cluster plus elastic scaling by multiple-choice knapsack.

Li et al., "Aryl: An Elastic Cluster Scheduler for Deep Learning", EuroSys'22
(`../shared/seeds/notes/aryl.md`). The inference side decides when servers are lent and how many
come back (`--load-series`, `simcore.capacity`); this policy decides *which* return
(`answer_reclaim`, Algorithm 1 in `policies.aryl.reclaim`) and schedules the training jobs:

- Phase 1, SJF with skip over inelastic jobs and elastic jobs' base demand (w_min GPUs): each
  queued job in order of its running-time estimate is placed if it fits, skipped otherwise.
  The pool is the idle GPUs plus every flexible worker's GPUs (a queued job may take them: the
  elastic job scales in, no preemption).
- Phase 2, the GPUs left go to elastic jobs' flexible workers by the MCKP (DP), value
  T^max·w/(w + w_min), T^max the *remaining* running time at w_min; re-decided every round.
  Capacity and weights count an inference GPU as a fraction of a training GPU ("normalized
  relative to training GPUs", §5.2): `worker_value=engine` (default) takes that fraction and
  T^max from the speeds the run's perf backend gives the job's model, and values a
  heterogeneous-capable job's training base plus inference workers at the backend's mixed-gang
  efficiency; `worker_value=paper` counts every inference GPU as `t4_ratio` (App. A's 1/4) and
  every worker at the same value.
- BFD placement: inelastic jobs to training servers, elastic jobs' base workers to on-loan
  servers without flexible workers, flexible workers to on-loan servers without base workers
  (the flexible group, returned first without preemption), then the rest; best fit on one
  server when one holds the gang, else the emptiest servers first.

Baselines and ablations are options of the same policy (`loaning`, `scaling`, `order`,
`special_placement`, `reclaim`), so every comparison runs one code path: FIFO (no loaning, no
elasticity) is `order=fifo scaling=none loaning=false`; Aryl+TunedJobs is
`batch_tuning=pollux` (Pollux's batch agent, `policies.pollux.best_batch`, per elastic job).
With `mix_types` (Advanced/Ideal) heterogeneous-capable jobs come last in each round
(`hetero_last`); their gangs' speed is the `linear` backend's (0.7 of summed capacity). Under
the backend's imperfect scaling (`--perf linear:imperfect_loss=0.1`, Fig. 10) the MCKP values
follow that curve (the notes' generalised T(w_min) − T(w_min + w)).

Round cost (`python -m benchmarks.bench_aryl` times a paper-size cell): the MCKP is one numba
kernel, phase 1 skips by free GPUs per type without placing, flexible/base GPU arrays are
cached per job, and only jobs whose GPUs changed are rebuilt into the decision; with
`event_driven=false` rounds run only at the tick and at capacity changes.
"""

from policies.aryl.config import ArylConfig
from policies.aryl.policy import Aryl  # registers "aryl"
from policies.aryl.reclaim import reclaim_servers

__all__ = ["Aryl", "ArylConfig", "reclaim_servers"]
