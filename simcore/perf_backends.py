"""Named performance backends: which iteration-time model a run uses (`--perf NAME`).

Every backend is a `simcore.perf.PerfModel` (the engine, the validator and the rate book
see one interface: `phases`, `phases_of`, `solo_iter_s`, `micro_batching`, contention
inputs), chosen per run by `RunConfig.perf`, `cosim simulate --perf` or the sweep axis
`perf`, and recorded in the outputs' metadata and in `summary.parquet`:

- `network` (default): `PerfModel` itself — compute on the placement's GPU types at the
  local batch, the collective on the placement's actual links, overlap, contention.
- `linear`: ideal data-parallel scaling (`LinearPerf`), for papers that assume it (Aryl)
  and for property tests. The iteration at n GPUs and global batch b is the `network`
  model's iteration on ONE GPU at local batch ceil(b / n) (with the zoo's memory limit and
  gradient accumulation): no communication, no contention, no host sharing. So throughput
  at a fixed local batch is exactly ∝ n. A gang over several GPU types (heterogeneous
  training, Aryl App. A) runs at `hetero_efficiency` (default 0.7, Aryl's "at most 70 % of
  the ideal") of the summed per-GPU speeds: iteration = n / (eff · Σ_t n_t / t_t), t_t the
  one-GPU iteration of type t; 1.0 gives the ideal sum. Options go after a colon:
  `linear:hetero_efficiency=0.7,imperfect_loss=0.1,imperfect_form=additive`.
  `imperfect_loss` (default 0, off) is Aryl's imperfect-scaling experiment (§7.2, Fig. 10):
  a job whose GPU count w is above the midpoint m = ceil((w_min + w_max) / 2) of its range
  loses `imperfect_loss` of its ideal throughput per GPU beyond m — `additive`
  (1 − loss·(w − m), the paper's "additional 10 % loss from the ideal performance each time
  it scales one step further"; a placement where that reaches 0 cannot run) or `compounding`
  ((1 − loss)^(w − m)). It needs the job's range, so the engine and the validator apply it
  per job through `LinearPerf.job_phases` (one worker = one GPU, Aryl's setting).
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
from cosim.errors import InputError, UnknownNameError
from simcore.perf import Phases, PerfModel, _put

#: backend names, the default first
PERF_BACKENDS = ("network", "linear", "measured", "trace", "astra", "measured-pollux-sim")
DEFAULT_PERF = "network"

_NO_IDS = np.zeros(0, np.int32)
_NO_IDS.flags.writeable = False
_NO_BYTES = np.zeros(0, np.float64)
_NO_BYTES.flags.writeable = False
_MISSING = object()


#: options of the `linear` backend (`linear:key=value,...`) and their defaults
LINEAR_OPTIONS = {"hetero_efficiency": 0.7, "imperfect_loss": 0.0, "imperfect_form": "additive"}
IMPERFECT_FORMS = ("additive", "compounding")


def parse_perf(spec: str) -> tuple[str, dict[str, Any]]:
    """(backend name, options) of a `--perf` spec: `NAME` or `linear:key=value,...`
    (`LINEAR_OPTIONS`); a bad name is `UnknownNameError`, a bad option one-line `InputError`."""
    name, _, rest = str(spec).partition(":")
    if name not in PERF_BACKENDS:
        raise UnknownNameError("perf backend", name, PERF_BACKENDS)
    opts: dict[str, Any] = {}
    if not rest:
        return name, opts
    if name != "linear":
        raise InputError.at(field="perf", expected=f"no options for backend {name!r} (only linear:key=value)",
                            got=spec)
    for item in rest.split(","):
        key, eq, val = item.partition("=")
        key = key.strip()
        if key not in LINEAR_OPTIONS or not eq:
            raise InputError.at(field="perf", expected=f"linear options key=value with key in "
                                f"{', '.join(LINEAR_OPTIONS)}", got=item)
        if key == "imperfect_form":
            if val.strip() not in IMPERFECT_FORMS:
                raise InputError.at(field="perf imperfect_form", expected=" or ".join(IMPERFECT_FORMS), got=val)
            opts[key] = val.strip()
            continue
        try:
            x = float(val)
        except ValueError:
            x = math.nan
        lo_ok = x > 0 if key == "hetero_efficiency" else x >= 0
        if not (lo_ok and x <= 1):
            raise InputError.at(field=f"perf {key}", expected="a number in (0, 1]" if key == "hetero_efficiency"
                                else "a number in [0, 1]", got=val)
        opts[key] = x
    return name, opts


def check_perf(name: str) -> str:
    """`name` if it is a backend spec (`parse_perf`), else `UnknownNameError` / `InputError`
    (one line)."""
    parse_perf(name)
    return name


def make_perf(name: str, topology: Any, zoo: Any, comm: Any, solve: Any = None, contention: bool = True,
              allow_accumulation: bool = True, tables: Any = None, step: Any = None) -> PerfModel:
    """The perf model of backend `name` (`trace` runs the network model: the trace's time
    enters through the work, see the module docstring)."""
    name, opts = parse_perf(name)
    kw = dict(contention=contention, allow_accumulation=allow_accumulation)
    if name == "linear":
        return LinearPerf(topology, zoo, comm, solve, **opts, **kw)  # ideal scaling: no fitted form
    if name in ("measured", "measured-pollux-sim"):
        from simcore.perf_measured import MeasuredPerf

        return MeasuredPerf(topology, zoo, comm, solve, tables=tables, pollux_sim=name != "measured", **kw)
    if name == "astra":  # the Dally authors' ratio model (simcore.perf_dally)
        from simcore.perf_dally import AstraRatioPerf

        return AstraRatioPerf(topology, zoo, comm, solve, **kw)
    return PerfModel(topology, zoo, comm, solve, step=step, **kw)  # step: the profile's form (calibration.stepform)


class LinearPerf(PerfModel):
    """Ideal scaling: the iteration of n GPUs at global batch b is the network model's
    one-GPU iteration at local batch ceil(b / n); a mixed-type gang runs at
    `hetero_efficiency` of its summed per-GPU speeds; `imperfect_loss` > 0 slows a job above
    the midpoint of its range (`job_phases`). See the module doc."""

    def __init__(self, *args: Any, hetero_efficiency: float = LINEAR_OPTIONS["hetero_efficiency"],
                 imperfect_loss: float = 0.0, imperfect_form: str = "additive", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hetero_efficiency = float(hetero_efficiency)
        self.imperfect_loss = float(imperfect_loss)
        self.imperfect_form = str(imperfect_form)
        self.per_job_scaling = self.imperfect_loss > 0.0
        self._lin: dict[tuple[str, bytes, int], Phases | None] = {}
        self._slowed: dict[tuple[int, float], tuple[Phases, Phases]] = {}  # (id(ph), f) -> (ph, slowed)

    def scaling_factor(self, n: int, w_min: int, w_max: int) -> float:
        """Throughput factor of a job of range [w_min, w_max] on n GPUs (1 when
        `imperfect_loss` is 0 or n is at most the midpoint)."""
        if self.imperfect_loss <= 0.0:
            return 1.0
        k = max(0, int(n) - math.ceil((int(w_min) + int(w_max)) / 2))
        if self.imperfect_form == "compounding":
            return (1.0 - self.imperfect_loss) ** k
        return max(0.0, 1.0 - self.imperfect_loss * k)

    def job_phases(self, ph: Phases | None, n: int, w_min: int, w_max: int) -> Phases | None:
        """`ph` (a placement's phases) for one job of range [w_min, w_max] on n GPUs: its
        iteration stretched by 1 / `scaling_factor` (None where the factor is 0)."""
        if ph is None or self.imperfect_loss <= 0.0:
            return ph
        f = self.scaling_factor(n, w_min, w_max)
        if f >= 1.0:
            return ph
        if f <= 0.0:
            return None
        key = (id(ph), f)
        hit = self._slowed.get(key)
        if hit is None:  # the entry keeps `ph` alive, so its id is not reused
            c = ph.compute_s / f
            hit = _put(self._slowed, key, (ph, Phases(c, c, 0.0, _NO_IDS, _NO_BYTES, ph.accumulation_steps)))
        return hit[1]

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
        kinds, counts = np.unique(tys, return_counts=True)
        worst: Phases | None = None
        speed = 0.0  # Σ_t n_t / t_t: the gang's summed per-GPU speed in local batches per second
        for t, n_t in zip(kinds.tolist(), counts.tolist()):  # one GPU of each type
            one = PerfModel.phases(self, model, gpus[np.flatnonzero(tys == t)[:1]], local)
            if one is None:
                return None
            if worst is None or one.solo_s > worst.solo_s:
                worst = one
            speed += n_t / one.solo_s
        c = worst.solo_s if kinds.shape[0] == 1 else n / (self.hetero_efficiency * speed)
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
