"""Named performance backends: which iteration-time model a run uses (`--perf NAME`).

Every backend is a `simcore.perf.PerfModel` (the engine, the validator and the rate book
see one interface: `phases`, `phases_of`, `solo_iter_s`, `micro_batching`, contention
inputs), chosen per run by `RunConfig.perf`, `cosim simulate --perf` or the sweep axis
`perf`, and recorded in the outputs' metadata and in `summary.parquet`:

- `network` (default): `PerfModel` itself — compute on the placement's GPU types at the
  local batch, the collective on the placement's actual links, overlap, contention.
- `linear`: ideal data-parallel scaling (`LinearPerf`), for papers that assume it (Aryl)
  and for property tests. The iteration at n GPUs and global batch b is the `network`
  model's iteration on ONE GPU of the placement's slowest type at local batch ceil(b / n)
  (with the zoo's memory limit and gradient accumulation): no communication, no
  contention, no host sharing. So throughput at a fixed local batch is exactly ∝ n.
- `measured`: the Pollux/Sia measured tables ("table mode", `simcore.perf_measured`).
- `measured-pollux-sim`: `measured` with the Pollux OSDI'21 simulator's two step-time quirks
  (yolov3's max local batch 8; one extra accumulation step for a one-GPU job above its initial
  batch), to compare with that simulator (`simcore.perf_measured`; off unless named).
- `trace`: the trace's own per-iteration time (`time_per_iteration`, SenseTime) scaled by
  the `network` model's placement sensitivity: job j on placement P at batch b takes

      t_j(P, b) = tpi_j * T_net(P, b) / T_net(P_j*, b_j)

  per trace iteration, P_j* the placement the trace implies — consolidated at the requested
  GPU count (`PerfModel.consolidated_gpus`), where `ref_iter_s` is computed — and b_j the
  trace's batch (the Dally authors' method, `../shared/seeds/notes/dally.md` §3.3: the trace
  gives the time, the network model only the slowdown of the actual placement). A
  consolidated placement costs what the trace says, a spread one more, and contention acts
  on `T_net`'s communication. The engine's progress rate is `gain / (W * t)`
  (`simcore.work`), so the per-job factor tpi_j / T_net(P_j*, b_j) on every iteration is,
  exactly, the same factor on the job's work; `simcore.prepare` applies it when it defines
  the work of a trace-timed job (`W = tpi × iterations / ref_iter_s`, its rule 1). The perf
  model of `trace` is therefore the `network` model, and its results equal `network`'s
  (prepare replays trace-timed jobs the same way under every backend, with that backend's
  placement ratio: 1 for `linear`, the table's for `measured`). Jobs without a positive
  `time_per_iteration` run the `network` model on their own work.

- `astra`: the Dally authors' ArtISt-sim model (`simcore.perf_dally`): trace time = compute,
  × (1 + r) with r the exposed-comm/compute ratio of the job's model on its placement shape
  (Table I's method, the per-layer workload files); no link demands (no contention).

`linear` and `measured` (either flavour) phases have no link demands, so contention does not touch them
(the measured step already contains the job's network).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from cosim.errors import UnknownNameError
from simcore.perf import Phases, PerfModel

#: backend names, the default first
PERF_BACKENDS = ("network", "linear", "measured", "trace", "astra", "measured-pollux-sim")
DEFAULT_PERF = "network"

_NO_IDS = np.zeros(0, np.int32)
_NO_IDS.flags.writeable = False
_NO_BYTES = np.zeros(0, np.float64)
_NO_BYTES.flags.writeable = False
_MISSING = object()


def check_perf(name: str) -> str:
    """`name` if it is a backend, else `UnknownNameError` (one line listing the valid ones)."""
    if name not in PERF_BACKENDS:
        raise UnknownNameError("perf backend", name, PERF_BACKENDS)
    return name


def make_perf(name: str, topology: Any, zoo: Any, comm: Any, solve: Any = None, contention: bool = True,
              allow_accumulation: bool = True, tables: Any = None, step: Any = None) -> PerfModel:
    """The perf model of backend `name` (`trace` runs the network model: the trace's time
    enters through the work, see the module docstring)."""
    check_perf(name)
    kw = dict(contention=contention, allow_accumulation=allow_accumulation)
    if name == "linear":
        return LinearPerf(topology, zoo, comm, solve, **kw)  # ideal scaling: no fitted form
    if name in ("measured", "measured-pollux-sim"):
        from simcore.perf_measured import MeasuredPerf

        return MeasuredPerf(topology, zoo, comm, solve, tables=tables, pollux_sim=name != "measured", **kw)
    if name == "astra":  # the Dally authors' ratio model (simcore.perf_dally)
        from simcore.perf_dally import AstraRatioPerf

        return AstraRatioPerf(topology, zoo, comm, solve, **kw)
    return PerfModel(topology, zoo, comm, solve, step=step, **kw)  # step: the profile's form (calibration.stepform)


class LinearPerf(PerfModel):
    """Ideal scaling: the iteration of n GPUs at global batch b is the network model's
    one-GPU iteration at local batch ceil(b / n) on the slowest GPU type of the placement."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lin: dict[tuple[str, bytes, int], Phases | None] = {}

    def phases(self, model: str, gpus: np.ndarray, batch: int) -> Phases | None:
        gpus = np.asarray(gpus, dtype=np.int32)
        key = (model, gpus.tobytes(), int(batch))
        res = self._lin.get(key, _MISSING)
        if res is _MISSING:
            res = self._linear(model, gpus, int(batch))
            if len(self._lin) > 200_000:
                self._lin.clear()
            self._lin[key] = res
        return res

    def _linear(self, model: str, gpus: np.ndarray, batch: int) -> Phases | None:
        n = int(gpus.shape[0])
        if n == 0 or batch < n:
            return None
        local = math.ceil(batch / n)
        tys = self.gpu_type[gpus]
        worst: Phases | None = None
        for t in np.unique(tys):  # one GPU of each type: the slowest sets the pace
            one = PerfModel.phases(self, model, gpus[np.flatnonzero(tys == t)[:1]], local)
            if one is None:
                return None
            if worst is None or one.solo_s > worst.solo_s:
                worst = one
        c = worst.solo_s
        return Phases(c, c, 0.0, _NO_IDS, _NO_BYTES, worst.accumulation_steps)


def table_gaps(perf: PerfModel, jobs: Any) -> dict[str, str]:
    """`measured` backend: job id → why it has no table, for every job whose model has no
    measured set on a GPU type it may run on (its required type, or every type of the
    cluster). Empty for other backends."""
    missing = getattr(perf, "missing", None)
    if missing is None:
        return {}
    out: dict[str, str] = {}
    all_types = range(len(perf.type_names))
    memo: dict[tuple[str, int], str | None] = {}
    for jid, model, req in zip(jobs.job_id, jobs.model, jobs.gpu_type_req):
        if not isinstance(model, str) or not model:
            continue
        for t in ([int(req)] if int(req) >= 0 else all_types):
            k = (model, t)
            if k not in memo:
                memo[k] = missing(model, t)
            if memo[k] is not None:
                out[str(jid)] = memo[k]
                break
    return out
