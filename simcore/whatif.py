"""What-if queries a policy may ask of the engine: iteration time, throughput and goodput of
job j for a hypothetical (GPU count or placement, global batch, GPU type), and a throughput
matrix jobs × GPU types (Gavel, FFT and AlloX rank jobs by it).

All answers come from the one performance model the engine runs jobs with (`PerfModel.phases`,
alone on the network: no cross-job contention), so a what-if for a job's current placement
and batch equals the iteration time the engine gives it when nothing else shares its links
(tests/simcore/test_whatif.py). Answers are kept per (model, GPU count, GPU type, batch) —
keys independent of the job, shared by every policy of a run through the perf model — so a
policy can ask per job per round: a repeated query is a dict lookup (benchmarks/bench_whatif.py).

Placement forms:

- a GPU count `n` (int): `n` GPUs consolidated (fewest nodes, `PerfModel.consolidated_gpus`)
  of `gpu_type` (index or name); without `gpu_type`, the job's required type, else the type
  of its latest allocation, else any type (big nodes first, as `ref_iter_s` is defined);
- explicit GPU ids (a sequence or array): those GPUs (`gpu_type` must then be None).

A placement the job cannot use (a required other type, too few GPUs of the type, memory) has
iteration time inf, throughput 0 (NaN in the matrix). Goodput is throughput × the Pollux
statistical efficiency of the batch (`simcore.goodput`, relative to the application's initial
batch, in the job's current epoch) when the run's progress is goodput and the job has a
profiled application, else throughput × 1.

Bad input — a job index outside the trace, a GPU id outside the cluster, an unknown GPU type,
a batch ≤ 0 or a GPU count ≤ 0 — is a `PolicyError` naming the policy, the job and the time.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Sequence

import numpy as np

from cosim.errors import CosimError, PolicyError

# per perf model: (model, n, type, batch) → iteration s; (model, gpus tuple, batch) → s;
# ("row", model, n, req, batch) → row index in the matrix table
_CACHES: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_TABLES: "weakref.WeakKeyDictionary[Any, list]" = weakref.WeakKeyDictionary()
_MAX_ENTRIES = 500_000  # bound memory on very long runs with many batch sizes


def _cache_of(perf: Any) -> dict:
    c = _CACHES.get(perf)
    if c is None:
        c = _CACHES[perf] = {}
    return c


class WhatIf:
    """The what-if queries of one engine run (see module doc). `now` is set by the engine
    before each policy call (errors name it); `last_type` is the engine's per-job array of
    the latest allocation's GPU type."""

    def __init__(self, jobs: Any, perf: Any, policy_name: str, goodput: Any = None,
                 last_type: np.ndarray | None = None) -> None:
        self.jobs, self.perf, self.name, self.gp = jobs, perf, policy_name, goodput
        self.now = 0.0
        self.num_jobs = int(jobs.num_jobs)
        self.num_gpus = int(np.asarray(perf.gpu_type).shape[0])
        self.type_names = tuple(perf.type_names)
        self.num_types = len(self.type_names)
        self.last_type = last_type
        self._cache = _cache_of(perf)

    # ---- errors and arguments -------------------------------------------------------
    def _fail(self, j: Any, what: str) -> PolicyError:
        return PolicyError(f"policy '{self.name}' at t={self.now:.3f}s: what-if for job {j!r}: {what}")

    def _job(self, j: Any) -> int:
        if type(j) is not int:
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, (int, np.integer)):
                raise self._fail(j, "expected a job index (int)")
            j = int(j)
        if not 0 <= j < self.num_jobs:
            raise self._fail(j, f"no such job (indices 0..{self.num_jobs - 1})")
        return j

    def _batch(self, j: int, batch: Any) -> int:
        if batch is None:
            return self.jobs.batch_size.item(j)
        if isinstance(batch, (bool, np.bool_)) or not isinstance(batch, (int, np.integer)):
            raise self._fail(j, f"batch size must be a positive int, got {batch!r}")
        b = int(batch)
        if b <= 0:
            raise self._fail(j, f"batch size must be positive, got {b}")
        return b

    def _type(self, j: int, gpu_type: Any) -> int:
        """The GPU type index a count-form query uses (-1: any)."""
        if gpu_type is None:
            req = self.jobs.gpu_type_req.item(j)
            if req >= 0:
                return req
            if self.last_type is not None:
                lt = self.last_type.item(j)
                if lt >= 0:
                    return lt
            return -1
        if isinstance(gpu_type, str):
            if gpu_type not in self.type_names:
                raise self._fail(j, f"no GPU type {gpu_type!r} (types: {', '.join(self.type_names)})")
            return self.type_names.index(gpu_type)
        if isinstance(gpu_type, (bool, np.bool_)) or not isinstance(gpu_type, (int, np.integer)) \
                or not 0 <= int(gpu_type) < self.num_types:
            raise self._fail(j, f"no GPU type {gpu_type!r} (indices 0..{self.num_types - 1})")
        return int(gpu_type)

    # ---- queries --------------------------------------------------------------------
    def iteration_time(self, j: Any, placement: Any, batch: Any = None, gpu_type: Any = None) -> float:
        """Seconds per iteration of job j on `placement` (a GPU count or GPU ids) at global
        batch `batch` (None: its current one), alone on the network; inf if it cannot run."""
        j = self._job(j)
        b = self._batch(j, batch)
        model = self.jobs.model[j]
        if isinstance(placement, (int, np.integer)) and not isinstance(placement, (bool, np.bool_)):
            t = self._type(j, gpu_type)
            n = int(placement)
            key = (model, n, t, b)
            v = self._cache.get(key)
            if v is None:
                if n <= 0:
                    raise self._fail(j, f"GPU count must be positive, got {n}")
                v = self._store(key, self._count_s(model, n, t, b))
            req = self.jobs.gpu_type_req.item(j)
            return math.inf if req >= 0 and t >= 0 and t != req else v
        if gpu_type is not None:
            raise self._fail(j, "gpu_type applies to a GPU count, not to explicit GPU ids")
        if type(placement) is tuple:
            gt = placement
        elif isinstance(placement, np.ndarray):
            gt = tuple(placement.ravel().tolist())
        else:
            gt = self._ids(j, placement)
        req = self.jobs.gpu_type_req.item(j)
        key = (model, gt, b, req)
        v = self._cache.get(key)
        if v is None:  # first time: check the ids, then compute (a cached key was checked)
            gt = self._ids(j, gt)
            v = self._ids_s(j, model, gt, b)
            if req >= 0 and v < math.inf and (np.asarray(self.perf.gpu_type)[list(gt)] != req).any():
                v = math.inf  # not the job's required type
            self._store(key, v)
        return v

    def throughput(self, j: Any, placement: Any, batch: Any = None, gpu_type: Any = None) -> float:
        """Training samples per second of job j there (batch / iteration time; 0 if it cannot run)."""
        jj = self._job(j)
        b = self._batch(jj, batch)
        it = self.iteration_time(jj, placement, b, gpu_type)
        return b / it if it < math.inf else 0.0

    def efficiency(self, j: Any, batch: Any = None) -> float:
        """Statistical efficiency of job j at `batch` now (1 unless the run's progress is goodput
        and the job has a profiled application; see module doc)."""
        jj = self._job(j)
        b = self._batch(jj, batch)
        gp = self.gp
        if gp is None:
            return 1.0
        return gp.efficiency(jj, b, self.jobs.progress.item(jj))  # its rows are kept per (application, batch)

    def goodput(self, j: Any, placement: Any, batch: Any = None, gpu_type: Any = None) -> float:
        """Useful samples per second: throughput × statistical efficiency (Pollux's goodput)."""
        jj = self._job(j)
        b = self._batch(jj, batch)
        return self.throughput(jj, placement, b, gpu_type) * self.efficiency(jj, b)

    def scaling_factor(self, n: int, w_min: int, w_max: int) -> float:
        """Throughput factor of a job of GPU range [w_min, w_max] on n GPUs under the run's
        perf backend (`PerfModel.scaling_factor`: 1 unless it has a per-job scaling loss, 0 for
        a size that cannot run) — the shape of the scaling curve, as the backend runs it."""
        return float(self.perf.scaling_factor(int(n), int(w_min), int(w_max)))

    @property
    def per_job_scaling(self) -> bool:
        """Whether the run's perf backend has a per-job scaling loss (`scaling_factor` ≠ 1)."""
        return bool(self.perf.per_job_scaling)

    def model_facts(self, j: Any) -> tuple[float, str]:
        """(parameter count, dataset name) of job j's model from the zoo the run uses: what a
        policy needs to price a state transfer or keep data local, without reaching into the
        engine. NaN parameters / the model's name when the zoo does not say."""
        jj = self._job(j)
        model = str(self.jobs.model[jj])
        try:
            spec = self.perf.zoo.get(model)
        except (CosimError, LookupError, ValueError, AttributeError):
            return math.nan, model
        params = getattr(spec, "params", None)
        return (float(params) if params else math.nan), str(getattr(spec, "dataset", None) or model)

    def throughput_matrix(self, jobs: Any, batch: Any = None) -> np.ndarray:
        """float64[len(jobs), T]: samples/s of each job with its requested GPU count
        consolidated on each GPU type, at `batch` (None: each job's current batch; an int or
        one per job); NaN where it cannot run there."""
        idx = np.asarray(jobs)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise self._fail(jobs, "expected a 1-d array of job indices")
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_jobs):
            bad = int(idx[(idx < 0) | (idx >= self.num_jobs)][0])
            raise self._fail(bad, f"no such job (indices 0..{self.num_jobs - 1})")
        jt = self.jobs
        if batch is None:
            bs = jt.batch_size[idx]
        else:
            bs = np.broadcast_to(np.asarray(batch), idx.shape)
            if bs.size and (bs.dtype.kind not in "iu" or bs.min() <= 0):
                k = int(np.flatnonzero(bs <= 0)[0]) if bs.dtype.kind in "iu" else 0
                raise self._fail(int(idx[k]) if idx.size else None,
                                 f"batch size must be a positive int, got {bs.flat[k]!r}")
        table = _TABLES.get(self.perf)
        if table is None:
            table = _TABLES[self.perf] = [np.zeros((0, self.num_types))]
        cache = self._cache
        rows = np.empty(idx.shape[0], np.int64)
        model, ng, req = jt.model, jt.num_gpus, jt.gpu_type_req
        pending: list[np.ndarray] = []
        base = table[0].shape[0]
        for i, (j, b) in enumerate(zip(idx.tolist(), bs.tolist())):
            key = ("row", model[j], ng.item(j), req.item(j), b)
            r = cache.get(key)
            if r is None:
                r = cache[key] = base + len(pending)
                pending.append(self._row(model[j], ng.item(j), req.item(j), b))
            rows[i] = r
        if pending:
            table[0] = np.vstack([table[0], *pending])
        return table[0][rows]

    # ---- uncached computations ------------------------------------------------------
    def _store(self, key: tuple, v: float) -> float:
        if len(self._cache) > _MAX_ENTRIES:
            self._cache.clear()  # matrix rows stay in the table; their keys are re-made on use
        self._cache[key] = v
        return v

    def _count_s(self, model: str, n: int, t: int, b: int) -> float:
        place = self.perf.consolidated_gpus(n, t)
        return math.inf if place is None else float(self.perf.solo_iter_s(model, place, b))

    def _ids(self, j: int, placement: Any) -> tuple[int, ...]:
        if isinstance(placement, tuple):
            gt = placement
        else:
            try:
                gt = tuple(np.asarray(placement).ravel().tolist())
            except Exception:
                raise self._fail(j, f"placement must be a GPU count or GPU ids, got {placement!r}") from None
        if not gt:
            raise self._fail(j, "empty placement")
        for g in gt:
            if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 0 <= g < self.num_gpus:
                raise self._fail(j, f"no GPU {g!r} (ids 0..{self.num_gpus - 1})")
        if len(set(gt)) != len(gt):
            raise self._fail(j, "a GPU listed twice in the placement")
        return gt

    def _ids_s(self, j: int, model: str, gt: tuple[int, ...], b: int) -> float:
        return float(self.perf.solo_iter_s(model, np.sort(np.asarray(gt, np.int32)), b))

    def _row(self, model: str, n: int, req: int, b: int) -> np.ndarray:
        out = np.full(self.num_types, np.nan)
        for t in range(self.num_types):
            if req >= 0 and t != req:
                continue
            key = (model, n, t, b)
            v = self._cache.get(key)
            if v is None:
                v = self._store(key, self._count_s(model, n, t, b))
            if v < math.inf:
                out[t] = b / v
        return out


def placement_type(gpu_type: np.ndarray, gpus: Sequence[int]) -> int:
    """The GPU type of a placement (-2 when it mixes types): `JobsView.last_gpu_type`."""
    tys = gpu_type[np.asarray(gpus, np.int64)]
    return int(tys[0]) if (tys == tys[0]).all() else -2
