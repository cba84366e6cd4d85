"""Iteration time of a job on a placement: compute, communication, overlap, contention.

One iteration of job j on GPUs P at global batch b is the phase model of the contract
(`docs/architecture.md`, collectives → simcore):

- local batch `l = ceil(b / |P|)`; if `l` does not fit in the smallest GPU memory of P,
  gradient accumulation runs `a = ceil(l / l_max)` micro-batches of `ceil(l / a)` (option
  `allow_accumulation`; off → the placement is infeasible);
- compute `C = a * zoo.compute_time_s(model, slowest GPU type of P, micro-batch)` (a
  synchronous data-parallel job waits for its slowest worker);
- communication `M = CommModel.allreduce(P, grad_bytes, bucket_bytes).seconds`, starting
  `s = overlap_start_frac * C` into the iteration (backward overlap);
- sharded models (`calibration.sharding`: ZeRO-1/2/3 = FSDP, tensor parallel degree t): memory
  per GPU depends on |P| (the limit `l_max` is per GPU count), the local batch is per
  data-parallel rank `ceil(b / (|P|/t))`, compute per GPU is the replica's divided by t plus
  the tensor-parallel all-reduces of activations among each group of t consecutive GPUs of P
  (`(4 + 2·ckpt)·L` per micro-batch of `micro·s·h·bytes`, same `CommModel.allreduce`, on the
  critical path), and the data-parallel collective carries `grad_bytes × 1.5` under ZeRO-3
  (parameter all-gathers in forward and backward + gradient reduce-scatter) and `× 1.0`
  otherwise; with t > 1 the whole model's gradients still leave each node once (t rings of
  1/t each), so the same all-reduce over P is charged; none when |P| = t;
- alone on the network `t = max(C, s + M)`; exposed communication `t - C`;
- with contention, every running job's `(C, s, M, link demands)` goes to
  `collectives.contention.solve`, which gives each job's iteration time when jobs whose
  communication overlaps on a link share it max-min fairly. The solver caches by group
  signature, so only groups a change touched are recomputed. The solver's prepared form
  (`solve.prepared`, the real one has it) checks and quantises each placement's contention
  inputs once (`contention_inputs`) instead of on every solve; a solver without one runs
  behind the same interface (`_AsPrepared`), so there is one contention path.

Per-GPU performance variability (`gpu_slowdown`, off unless set; `RunConfig.gpu_variability`,
`cosim simulate --gpu-variability`): nominally identical GPUs differ in speed (power and
thermal variability, PAL SC'24). With a per-GPU compute-time multiplier m_g ≥ 1 set, a
synchronous job's compute phase on placement P runs at its slowest GPU's pace,
`C·max_{g∈P} m_g` (the communication start `s` with it; the collective is unchanged), in
`phases_of`, the one call through which the engine (and `cosim validate` on placed
allocations) gets phases, so every backend is slowed the same way. The what-if queries
(`solo_iter_s`) stay nominal: a policy learns about variability only from its own model
(PAL's profile). The seeded model is `gpu_variability`.

The zoo and the comm model are injected (`zoo`, `comm`, `solve`), so tests use small fakes
and the runner uses `calibration.zoo` and `collectives`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol

import numpy as np

#: Largest local batch searched when finding the memory limit.
MAX_LOCAL_BATCH = 1 << 16
_MISSING = object()  # cache sentinel (None is a cached answer: the placement cannot run)
#: entries a placement-keyed cache may hold; the one eviction rule (`_put`)
CACHE_MAX_ENTRIES = 200_000


def _put(cache: dict, key: Any, value: Any) -> Any:
    """Store `value` under `key`, first emptying a cache past `CACHE_MAX_ENTRIES` (bounds memory
    on very long runs; entries are recomputed on demand, to the same values). Returns `value`."""
    if len(cache) > CACHE_MAX_ENTRIES:
        cache.clear()
    cache[key] = value
    return value


def gpu_variability(num_gpus: int, spread: float, seed: int) -> np.ndarray:
    """Per-GPU compute-time multipliers `1 + spread·u_g`, u_g ~ U[0, 1) from
    `numpy.random.default_rng(seed).random(num_gpus)` (one draw per GPU, in GPU-id order):
    the slowest GPU is up to `spread` slower than the fastest. Published ranges (PAL SC'24,
    after Sinha et al. SC'22): ~0.22 for compute-bound kernels (SGEMM), ~0.14 for ResNet-50,
    a few percent for memory-bound ones. PAL's seeded profile (`policies.pal`) draws the same
    u_g for the same seed, so with `spread` = its class-0 spread it knows these multipliers."""
    if not spread >= 0.0:
        raise ValueError(f"gpu variability spread must be >= 0, got {spread!r}")
    return 1.0 + float(spread) * np.random.default_rng(int(seed)).random(int(num_gpus))


class ZooLike(Protocol):
    """What the engine needs from `calibration.zoo` (the module satisfies it)."""

    def resolve(self, name: str) -> str: ...
    def get(self, name: str) -> Any: ...
    def compute_time_s(self, model: str, gpu_type: str, local_batch: int) -> float: ...


class CommLike(Protocol):
    def allreduce(self, gpus: np.ndarray, nbytes: float, bucket_bytes: np.ndarray | None = None) -> Any: ...


SolveFn = Callable[..., tuple[np.ndarray, np.ndarray]]


_NO_IDS = np.zeros(0, np.int32)  # the links of a one-GPU placement (none), shared read-only
_NO_IDS.flags.writeable = False
_NO_BYTES = np.zeros(0, np.float64)
_NO_BYTES.flags.writeable = False


@dataclass(frozen=True)
class Phases:
    """One iteration of one job on one placement, alone on the network."""

    compute_s: float
    comm_start_s: float
    comm_s: float
    link_ids: np.ndarray  # int32[k]
    link_bytes: np.ndarray  # float64[k]
    accumulation_steps: int

    @property
    def solo_s(self) -> float:
        return max(self.compute_s, self.comm_start_s + self.comm_s)


@dataclass(frozen=True)
class ModelFacts:
    grad_bytes: float
    bucket_bytes: np.ndarray | None
    overlap_start_frac: float
    model_parallel: int = 1  # tensor-parallel degree (`calibration.sharding`)
    sharded: bool = False  # memory per GPU depends on the GPU count (ZeRO/FSDP, tensor parallel)


def _memory_gb(spec: Any, local_batch: int) -> float:
    """Memory footprint (GB) of one replica at `local_batch`, from a zoo ModelSpec."""
    for name in ("memory_gb", "memory_footprint_gb", "mem_gb"):
        fn = getattr(spec, name, None)
        if callable(fn):
            return float(fn(local_batch))
    fn = getattr(spec, "memory_bytes", None)
    if callable(fn):
        return float(fn(local_batch)) / 1e9
    raise AttributeError(f"model spec {spec!r} has no memory footprint method")


class JobInputs(NamedTuple):
    """One job's contention inputs as `_AsPrepared.job` keeps them (the fields of
    `collectives.contention.JobInputs`)."""

    compute_s: float
    comm_start_s: float
    comm_s: float
    link_ids: np.ndarray  # int64
    link_demand_Bps: np.ndarray  # float64


class _AsPrepared:
    """A contention solver without a prepared form, behind the prepared interface
    (`collectives.contention.PreparedContention`): `job` keeps a job's inputs as given, and
    `solve` calls the solver on the gathered CSR inputs (int32 link ids, as `solve` takes them)."""

    def __init__(self, solve: SolveFn, link_capacity_Bps: np.ndarray) -> None:
        self._solve = solve
        self.link_capacity_Bps = link_capacity_Bps
        self.num_links = int(link_capacity_Bps.shape[0])

    def job(self, compute_s: float, comm_start_s: float, comm_s: float, link_ids: np.ndarray,
            link_demand_Bps: np.ndarray) -> JobInputs:
        return JobInputs(float(compute_s), float(comm_start_s), float(comm_s),
                         np.ascontiguousarray(link_ids, np.int64), np.ascontiguousarray(link_demand_Bps, np.float64))

    def solve(self, c: np.ndarray, s: np.ndarray, m: np.ndarray, ptr: np.ndarray, link_ids: np.ndarray,
              demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        it, exposed = self._solve(c, s, m, ptr, link_ids.astype(np.int32), demand, self.link_capacity_Bps)
        return np.asarray(it, np.float64), np.asarray(exposed, np.float64)


class PerfModel:
    """Compute/communication phases and iteration times for (model, placement, batch)."""

    #: whether a job's phases also depend on its own GPU range [w_min, w_max] (a backend with a
    #: per-job scaling loss, `LinearPerf`'s `imperfect_loss`): then the engine and the validator
    #: pass every placement's phases through `job_phases`
    per_job_scaling: bool = False

    def scaling_factor(self, n: int, w_min: int, w_max: int) -> float:  # noqa: ARG002
        """Throughput factor of a job of range [w_min, w_max] on n GPUs (0: a size that cannot
        run); 1 unless the backend has a per-job scaling loss."""
        return 1.0

    def job_phases(self, ph: Phases | None, n: int, w_min: int, w_max: int) -> Phases | None:  # noqa: ARG002
        """`ph` (a placement's phases) for one job of range [w_min, w_max] on n GPUs; unchanged
        unless the backend has a per-job scaling loss (`per_job_scaling`)."""
        return ph

    def __init__(
        self,
        topology: Any,
        zoo: ZooLike,
        comm: CommLike,
        solve: SolveFn | None = None,
        contention: bool = True,
        allow_accumulation: bool = True,
        step: Any = None,
    ) -> None:
        self.topo = topology
        self.zoo = zoo
        self.comm = comm
        self._solve = solve
        self.contention = bool(contention and solve is not None)
        self.allow_accumulation = allow_accumulation
        #: the fitted iteration form's parameters (`calibration.stepform.StepParams`, from the
        #: preset's calibration profile); None: the generic form, comm starts at s·C
        self.step = step
        self.type_names = tuple(topology.gpu_type_names)
        _check_gpu_types(zoo, getattr(topology, "spec", None), self.type_names)
        #: GPU types as the zoo's compute curves take them: ``type+host`` on a preset that names
        #: a host regime (its machines' per-step host part, `calibration.device_model`)
        host = getattr(getattr(topology, "spec", None), "host", "synthetic") or "synthetic"
        self._compute_names = tuple(n if host == "synthetic" else f"{n}+{host}" for n in self.type_names)
        self.type_mem_gb = np.asarray(topology.gpu_type_mem_gb, dtype=np.float64)
        self.gpu_type = np.asarray(topology.gpu_type)
        self.link_capacity_Bps = np.asarray(topology.link_capacity_Bps, dtype=np.float64)
        self._facts: dict[str, ModelFacts] = {}
        self._max_local: dict[tuple[str, int, int], int] = {}
        self._compute: dict[tuple[str, int, int], float] = {}
        #: the placement cache: (model, GPU ids as a tuple, global batch) → phases (None: cannot
        #: run), of this class's `phases` (a backend's `phases` calls it for sub-placements)
        self._phases: dict[tuple[str, tuple[int, ...], int], Phases | None] = {}
        #: `phases_of`'s answers, whatever class: the same key (the allocation's own tuple)
        self._phases_t: dict[tuple[str, tuple[int, ...], int], Phases | None] = {}
        self._comm_cache: dict[tuple[str, bytes], Any] = {}
        #: the solver's prepared form (None: contention off); a solver without one (a test
        #: fake, a wrapped solver) behind the same interface (`_AsPrepared`), so the engine has
        #: one contention path and tests take it too
        self.prepared = None
        if self.contention:
            factory = getattr(solve, "prepared", None)
            self.prepared = (factory(self.link_capacity_Bps) if factory is not None
                             else _AsPrepared(solve, self.link_capacity_Bps))
        self._inputs: dict[int, tuple[Phases, Any]] = {}  # id(Phases) → (Phases, prepared inputs)
        self._placed: dict[tuple[int, ...], tuple[np.ndarray, int]] = {}  # allocation tuple → (GPUs, type)
        self._compute_part: dict[tuple[str, int, int, int], tuple[float, float, int] | None] = {}
        #: the fitted step form's answers (`StepForm.phases`, a pure function of these inputs):
        #: placements of one shape share them, and each costs ~70 us of small numpy operations
        self._step_phases: dict[tuple[str, float, float, int, int, int], tuple[float, float, float, float]] = {}
        #: per-GPU compute-time multipliers ≥ 1 (`gpu_variability`), applied in `phases_of`;
        #: None: every GPU of a type equally fast (the default, results unchanged)
        self.gpu_slowdown: np.ndarray | None = None

    # ---- per-model facts -------------------------------------------------------------
    def facts(self, model: str) -> ModelFacts:
        f = self._facts.get(model)
        if f is None:
            spec = self.zoo.get(model)
            buckets = getattr(spec, "bucket_bytes", None)
            mult = float(getattr(spec, "dp_comm_multiplier", 1.0))  # ZeRO-3/FSDP: 1.5 (calibration.sharding)
            f = ModelFacts(
                grad_bytes=float(spec.grad_bytes) * mult,
                bucket_bytes=None if buckets is None else np.asarray(buckets, dtype=np.float64) * mult,
                overlap_start_frac=float(getattr(spec, "overlap_start_frac", 0.0)),
                model_parallel=int(getattr(spec, "model_parallel", 1)),
                sharded=bool(getattr(spec, "sharded", False)),
            )
            self._facts[model] = f
        return f

    def max_local_batch(self, model: str, type_idx: int, n_gpus: int = 1) -> int:
        """Largest local batch whose memory footprint fits one GPU of this type (0: none), the
        job running on `n_gpus` (only sharded models' memory depends on it)."""
        n = int(n_gpus) if self.facts(model).sharded else 1
        key = (model, int(type_idx), n)
        v = self._max_local.get(key)
        if v is None:
            spec = self.zoo.get(model)
            cap = float(self.type_mem_gb[type_idx])
            own = getattr(spec, "max_local_batch", None)
            if callable(own):  # the zoo's own rule (usable-memory fraction included)
                v = int(own(cap, n)) if n > 1 else int(own(cap))
            elif _memory_gb(spec, 1) > cap:
                v = 0
            else:
                lo, hi = 1, 2
                while hi <= MAX_LOCAL_BATCH and _memory_gb(spec, hi) <= cap:
                    lo, hi = hi, hi * 2
                hi = min(hi, MAX_LOCAL_BATCH + 1)
                while hi - lo > 1:  # invariant: lo fits, hi does not (or is past the search cap)
                    mid = (lo + hi) // 2
                    if _memory_gb(spec, mid) <= cap:
                        lo = mid
                    else:
                        hi = mid
                v = lo
            measured = getattr(self.zoo, "measured_max_batch", None)  # a profile's measured curve
            if callable(measured):  # ran at that batch on this GPU type: it fits, whatever the estimate
                v = max(v, int(measured(model, self.type_names[type_idx])))
            self._max_local[key] = v
        return v

    def compute_s(self, model: str, type_idx: int, local_batch: int) -> float:
        key = (model, int(type_idx), int(local_batch))
        v = self._compute.get(key)
        if v is None:
            v = float(self.zoo.compute_time_s(model, self._compute_names[type_idx], int(local_batch)))
            self._compute[key] = v
        return v

    def micro_batching(self, model: str, types: np.ndarray | list[int], local_batch: int,
                       n_gpus: int = 1) -> tuple[int, int] | None:
        """(accumulation steps, micro-batch) for `local_batch` on GPU types `types` (the job on
        `n_gpus`), or None."""
        limit = min(self.max_local_batch(model, int(t), n_gpus) for t in types)
        if limit <= 0:
            return None
        if local_batch <= limit:
            return 1, local_batch
        if not self.allow_accumulation:
            return None
        steps = math.ceil(local_batch / limit)
        return steps, math.ceil(local_batch / steps)

    # ---- phases of one placement --------------------------------------------------
    def phases(self, model: str, gpus: np.ndarray, batch: int) -> Phases | None:
        """Phases of one iteration on `gpus` at global batch `batch`; None if it cannot run."""
        gpus = np.asarray(gpus, dtype=np.int32)
        key = (model, tuple(gpus.tolist()), int(batch))
        res = self._phases.get(key, _MISSING)
        if res is _MISSING:
            n = int(gpus.shape[0])
            res = _put(self._phases, key, self._compute_phases(model, gpus, batch, n) if n > 0 else None)
        return res

    def _compute_phases(self, model: str, gpus: np.ndarray, batch: int, n: int) -> Phases | None:
        """`phases` without its caches (n = len(gpus) > 0). The compute part depends on the
        model, the GPU type, the batch and n alone, so it is kept per such key: a placement
        met for the first time costs its all-reduce, not the memory and compute lookups."""
        tp = self.facts(model).model_parallel
        if n % tp or batch < n // tp:  # whole tensor-parallel groups, a sample per data-parallel rank
            return None
        tys = self.gpu_type[gpus]
        if n == 1 or (tys == tys[0]).all():  # one type: no sort
            key = (model, int(tys[0]), int(batch), n)
            part = self._compute_part.get(key, _MISSING)
            if part is _MISSING:
                part = self._compute_part[key] = self._part(model, tys[:1], batch, n)
        else:
            part = self._part(model, np.unique(tys), batch, n)
        if part is None:  # the local batch does not fit memory
            return None
        c, start, steps = part
        if tp > 1:  # tensor-parallel all-reduces of activations: on the critical path
            c += steps * self._tp_comm_s(model, gpus, tp, math.ceil(math.ceil(batch / (n // tp)) / steps))
            start = self.facts(model).overlap_start_frac * c
        if n == tp:  # one data-parallel rank: no gradient collective
            return Phases(c, start, 0.0, _NO_IDS, _NO_BYTES, steps)
        cost = self._allreduce(model, gpus, self.facts(model))
        m, link_bytes = float(cost.seconds), np.asarray(cost.link_bytes, dtype=np.float64)
        if self.step is not None:  # the fitted form (calibration.stepform): solo = C' + S exactly
            gmax, nodes = self._node_counts(gpus)
            key = (model, c, m, n, gmax, nodes)
            step = self._step_phases.get(key)
            if step is None:
                step = _put(self._step_phases, key, self.step.form(model).phases(c, m, n, gmax, nodes))
            c, start, m, scale = step
            if scale != 1.0:
                link_bytes = link_bytes * scale
        return Phases(c, start, m, np.asarray(cost.link_ids, dtype=np.int32), link_bytes, steps)

    def _node_counts(self, gpus: np.ndarray) -> tuple[int, int]:
        """(most GPUs on one node, nodes) of a placement (a few GPUs: a `Counter` of Python ints
        costs a fifth of `np.unique`)."""
        per_node = Counter(self.topo.gpu_node[gpus].tolist())
        return max(per_node.values()), len(per_node)

    def step_inputs(self, model: str, gpus: np.ndarray, batch: int) -> tuple[float, float, int, int, int] | None:
        """(C, M, G, g_max, nodes): the inputs of the fitted form for one placement, as the
        engine computes them (`calibration.fit` fits on exactly these); None if it cannot run."""
        gpus = np.asarray(gpus, dtype=np.int32)
        n = int(gpus.shape[0])
        if n == 0 or batch < n:
            return None
        part = self._part(model, np.unique(self.gpu_type[gpus]), batch, n)
        if part is None:
            return None
        m = float(self._allreduce(model, gpus, self.facts(model)).seconds) if n > 1 else 0.0
        gmax, nodes = self._node_counts(gpus)
        return part[0], m, n, gmax, nodes

    def _part(self, model: str, types: np.ndarray, batch: int, n: int) -> tuple[float, float, int] | None:
        """(compute s, communication start s, accumulation steps) of `batch` over n GPUs of
        `types`; None if the local batch does not fit."""
        tp = self.facts(model).model_parallel
        mb = self.micro_batching(model, types, math.ceil(batch / (n // tp)), n)
        if mb is None:
            return None
        steps, micro = mb
        c = steps * max(self.compute_s(model, int(t), micro) for t in types) / tp
        return c, self.facts(model).overlap_start_frac * c, steps

    def _tp_comm_s(self, model: str, gpus: np.ndarray, tp: int, micro: int) -> float:
        """Seconds of one micro-batch's tensor-parallel all-reduces: `spec.tp_allreduces()` of
        `spec.tp_message_bytes(micro)` among each group of `tp` consecutive GPUs of the
        placement (the slowest group; a group spanning nodes pays the network)."""
        spec = self.zoo.get(model)
        nbytes = float(spec.tp_message_bytes(micro))
        worst = 0.0
        for i in range(0, gpus.shape[0], tp):
            g = gpus[i:i + tp]
            key = ("tp", g.tobytes(), nbytes)
            cost = self._comm_cache.get(key)
            if cost is None:
                cost = _put(self._comm_cache, key, self.comm.allreduce(g, nbytes))
            worst = max(worst, float(cost.seconds))
        return spec.tp_allreduces() * worst

    def placed(self, gpus: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """(the GPU ids ascending as a read-only int32 array, their one GPU type or -2 when
        mixed) of an allocation's GPU tuple; ids must be valid (the validator checks them
        first). Cached per tuple: a job restarting where it ran before (most starts under
        preemptive policies) costs a dict lookup instead of an array build, sort and type
        check. The array is shared between plans, which is safe because it is read-only."""
        hit = self._placed.get(gpus)
        if hit is None:
            arr = np.array(gpus, np.int32)
            if arr.shape[0] > 1:
                arr.sort()
            arr.setflags(write=False)
            tys = self.gpu_type[arr]
            hit = _put(self._placed, gpus, (arr, int(tys[0]) if (tys == tys[0]).all() else -2))
        return hit

    def phases_of(self, model: str, gpus_t: tuple[int, ...], gpus: np.ndarray, batch: int) -> Phases | None:
        """`phases(model, gpus, batch)` keyed by the allocation tuple `gpus_t` (whose sorted
        array is `gpus`, from `placed`), without building a key from the array. Kept apart
        from `phases`' own cache: a backend overriding `phases` (`perf_backends`) calls this
        class's `phases` for other placements, whose answers must not be taken for its own."""
        key = (model, gpus_t, batch)
        res = self._phases_t.get(key, _MISSING)
        if res is _MISSING:
            res = self.phases(model, gpus, batch)
            if self.gpu_slowdown is not None and res is not None:  # per-GPU variability: slowest GPU's pace
                m = float(self.gpu_slowdown[gpus].max())
                if m != 1.0:
                    res = Phases(res.compute_s * m, res.comm_start_s * m, res.comm_s, res.link_ids, res.link_bytes,
                                 res.accumulation_steps)
            res = _put(self._phases_t, key, res)
        return res

    def _allreduce(self, model: str, gpus: np.ndarray, facts: ModelFacts) -> Any:
        key = (model, gpus.tobytes())
        cost = self._comm_cache.get(key)
        if cost is None:
            cost = _put(self._comm_cache, key, self.comm.allreduce(gpus, facts.grad_bytes, facts.bucket_bytes))
        return cost

    def solo_iter_s(self, model: str, gpus: np.ndarray, batch: int) -> float:
        p = self.phases(model, gpus, batch)
        return math.inf if p is None else p.solo_s

    # ---- contention over the running set ------------------------------------------
    def contention_inputs(self, ph: Phases) -> Any:
        """The prepared solver's inputs for one placement (`PreparedContention.job`), made
        once per `Phases` object (phases are cached per placement, so once per placement)."""
        v = self._inputs.get(id(ph))
        if v is None:
            demand = ph.link_bytes / ph.comm_s if ph.comm_s > 0 else np.zeros_like(ph.link_bytes)
            # the entry keeps `ph` alive, so its id is not reused
            v = _put(self._inputs, id(ph), (ph, self.prepared.job(ph.compute_s, ph.comm_start_s, ph.comm_s,
                                                                    ph.link_ids, demand)))
        return v[1]

    def iteration_times(self, phases: list[Phases]) -> tuple[np.ndarray, np.ndarray]:
        """(iteration s, exposed communication s) for jobs running together, through the
        prepared solver (what the engine's `RateBook` solves); solo times without contention
        or links."""
        k = len(phases)
        if not self.contention or not any(p.link_ids.shape[0] for p in phases):  # solo times, unquantised
            c = np.fromiter((p.compute_s for p in phases), np.float64, k)
            it = np.maximum(c, np.fromiter((p.comm_start_s + p.comm_s for p in phases), np.float64, k))
            return it, it - c
        ins = [self.contention_inputs(p) for p in phases]
        c = np.fromiter((x.compute_s for x in ins), np.float64, k)
        s = np.fromiter((x.comm_start_s for x in ins), np.float64, k)
        m = np.fromiter((x.comm_s for x in ins), np.float64, k)
        ptr = np.zeros(k + 1, np.int64)
        np.cumsum(np.fromiter((x.link_ids.shape[0] for x in ins), np.int64, k), out=ptr[1:])
        ids = np.concatenate([x.link_ids for x in ins])
        demand = np.concatenate([x.link_demand_Bps for x in ins])
        return self.prepared.solve(c, s, m, ptr, ids, demand)

    # ---- reference placements -----------------------------------------------------
    def consolidated_gpus(self, n: int, type_req: int = -1) -> np.ndarray | None:
        """A consolidated placement of `n` GPUs (fewest nodes, nodes in index order, which
        presets number leaf by leaf), used to turn a trace duration into work. None if the
        cluster has too few GPUs of the type."""
        t = self.topo
        out: list[np.ndarray] = []
        need = n
        order = np.argsort(-np.asarray(t.node_num_gpus), kind="stable")  # big nodes first
        for node in order:
            first, cnt = int(t.node_first_gpu[node]), int(t.node_num_gpus[node])
            g = np.arange(first, first + cnt, dtype=np.int32)
            if type_req >= 0:
                g = g[self.gpu_type[g] == type_req]
            if g.shape[0] == 0:
                continue
            take = g[:need]
            out.append(take)
            need -= take.shape[0]
            if need == 0:
                break
        if need > 0:
            return None
        return np.sort(np.concatenate(out))


def _check_gpu_types(zoo: Any, spec: Any, names: tuple[str, ...]) -> None:
    """Register the cluster file's own GPU types with the zoo, then require every node type's
    GPU type to be known: an unknown one is an error naming the cluster file and field."""
    from cosim.errors import InputError, UnknownNameError

    if spec is None or not hasattr(zoo, "resolve_gpu"):
        return
    if getattr(spec, "gpu_types", None) and hasattr(zoo, "register_gpu_types"):
        zoo.register_gpu_types(spec.gpu_types, f"{spec.source}: gpu_types")
    for name in names:
        try:
            zoo.resolve_gpu(name)
        except UnknownNameError:
            nt = next((k for k, v in spec.node_types.items() if v.gpu_type == name), "?")
            raise InputError.at(spec.source, field=f"node_types.{nt}.gpu_type",
                                expected="a GPU type of the table (cosim clusters show --gpu-types FILE, or a "
                                "[gpu_types.<name>] table in this file)", got=name) from None

