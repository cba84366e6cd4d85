"""From a canonical job table to the engine's `JobTable`: names, checks and work.

Before any run the jobs are checked against the cluster and the model zoo. A job is
invalid (reported by job id; the run refuses unless `skip_invalid`, which marks it
UNSCHEDULABLE and reports it unfinished) if it names a model the zoo does not know or a GPU
type the cluster lacks, asks for more GPUs than the cluster (of its type) ever has, or
cannot fit its local batch in GPU memory at its requested size, or has no work (neither
`total_iterations`, nor `epochs` with `epoch_size`, nor `duration`).

Work modes (see `simcore.work`), first match wins:

1. a trace time per iteration (`time_per_iteration`, SenseTime/Dally) → the trace's run time
   `T = time_per_iteration × total_iterations` (or `duration` without iterations) is replayed:
   REPLAY (SAMPLES for elastic jobs) with `W = T / t_ref`. The trace's iterations are not
   replayed at the zoo's step time: the zoo's model of a job is not the job the trace timed
   (measured on the SenseTime trace: median 27×, max 2,138× on `sensetime-1april.json`). With a perf
   backend whose consolidated iteration time is the trace's own (`trace`), `W` is exactly the
   trace's iteration count; with any backend, the job alone on the placement its trace implies
   (its requested GPUs, consolidated) takes `T`, and a worse placement costs more.
2. `total_iterations` → ITERATIONS: that many iterations at the job's `global_batch`, i.e. their
   samples (a batch change conserves them, `simcore.work`);
3. `epochs` × `epoch_size` samples → CONVERGENCE when the job has a `target_acc` (ONES), else
   SAMPLES;
4. a `duration` → REPLAY, or SAMPLES for elastic jobs (`min_gpus` < `max_gpus`) so their GPU
   count can vary at a fixed global batch, with `W = duration / t_ref`;
5. otherwise, with `fixed_epochs=True`, the model's fixed-epoch training run of the
   Pollux/Sia/Ares workloads (`traces.workload.training_runs`, the same table `assemble` fills
   work from) → SAMPLES.

`t_ref` is the solo iteration time at the requested count on a consolidated placement, so
replaying a job alone on that placement reproduces its trace time (`tests/simcore/test_replay.py`
checks Philly, Helios and SenseTime). A `precision` column (fp32 | amp | bf16) selects the
model's precision variant in the zoo (`calibration.zoo.with_precision`); `sharding` (none |
zero1 | zero2 | zero3 | fsdp) and `model_parallel` (tensor-parallel degree) its parallelism
variant (`calibration.zoo.with_parallelism`: memory per GPU and traffic, `calibration.sharding`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from cosim.errors import CosimError, InputError
from simcore.api import JobState
from simcore.perf import PerfModel
from simcore.state import JobTable, static_columns
from simcore.work import WorkMode
from traces.cache import columns as job_columns
from traces.workload import training_runs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InvalidJob:
    job_id: str
    reason: str
    index: int = -1  # row in the sorted job table


def canonical_models(df, zoo) -> tuple[dict[str, np.ndarray], list[InvalidJob]]:
    """Resolve model names through the zoo (aliases → canonical); unknown ones are invalid.
    `df`: the job table as columns (`traces.cache.columns`) or a DataFrame; returns its columns
    with the canonical names.

    A `precision` column (fp32 | amp | bf16; null = fp32) names the model's precision variant
    (``resnet50@amp``, `calibration.zoo.with_precision`): its compute time, activation memory
    and name follow the precision; an unknown precision makes the job invalid."""
    df = job_columns(df)
    n = len(df["job_id"])
    bad: list[InvalidJob] = []
    cache: dict[tuple, str | None] = {}
    out = []
    precs = np.asarray(df["precision"], dtype=object) if "precision" in df else np.full(n, None)
    with_precision = getattr(zoo, "with_precision", None)
    pars = _parallelism(df, getattr(zoo, "with_parallelism", None))
    for i, (jid, name, prec) in enumerate(zip(map(str, df["job_id"]), df["model"], precs)):
        if not isinstance(name, str) or not name:
            bad.append(InvalidJob(jid, "no model", i))
            out.append("")
            continue
        prec = None if _nan(prec) or (isinstance(prec, str) and not prec.strip()) else str(prec)
        par = pars[i] if pars is not None else None
        key = (name, prec, par)
        if key not in cache:
            try:
                c = zoo.resolve(name) if prec is None or with_precision is None else with_precision(name, prec)
                cache[key] = c if par is None else zoo.with_parallelism(c, *par)
            except CosimError:
                cache[key] = None
        c = cache[key]
        if c is None:
            what = f"unknown model '{name}'" + ("" if prec is None else f" or precision '{prec}'") + \
                ("" if par is None else f" or parallelism sharding={par[0]!r}, model_parallel={par[1]!r}")
            bad.append(InvalidJob(jid, what, i))
            out.append(name)
        else:
            out.append(c)
    df = dict(df)
    df["model"] = np.array(out, dtype=object)
    return df, bad


def _parallelism(df: dict[str, np.ndarray], with_parallelism) -> list | None:
    """Per row (sharding or None, model_parallel or None), or None per row when the row sets
    neither; None when the table has neither column (or the zoo has no parallelism variants)."""
    if with_parallelism is None or not ({"sharding", "model_parallel"} & set(df)):
        return None
    n = len(df["job_id"])
    sh = np.asarray(df["sharding"], dtype=object) if "sharding" in df else np.full(n, None)
    mp = np.asarray(df["model_parallel"], dtype=object) if "model_parallel" in df else np.full(n, None)
    out: list = []
    for s, m in zip(sh, mp):
        s = None if _nan(s) or (isinstance(s, str) and not s.strip()) else str(s)
        m = None if _nan(m) else m
        if m is not None:
            try:
                m = int(m) if float(m) == int(float(m)) else str(m)
            except (TypeError, ValueError):
                m = str(m)
        out.append(None if s is None and m is None else (s, m))
    return out


def build_jobs(df, perf: PerfModel, zoo, fixed_epochs: bool = True) -> tuple[JobTable, list[InvalidJob]]:
    """Sort by (submit, job id), resolve names, assign work, and collect invalid jobs. `df`: the
    canonical job table, as a DataFrame or as columns (`traces.cache.columns`: what a cached
    trace gives, without pandas)."""
    df = job_columns(df)
    if "model" not in df:
        raise InputError.at(field="model", expected="a model per job (run traces.workload.assemble first)")
    sub = np.asarray(df["submit_time"], np.float64)
    ids = [str(x) for x in df["job_id"]]
    order = np.array(sorted(range(len(ids)), key=lambda i: (sub[i], ids[i])), dtype=np.int64)
    if not np.array_equal(order, np.arange(order.size)):  # pandas' stable sort by (submit_time, job_id)
        df = {k: np.asarray(v)[order] for k, v in df.items()}
    df, bad = canonical_models(df, zoo)
    runs = training_runs() if fixed_epochs else {}
    bad_idx = {b.index for b in bad}
    type_names = perf.type_names
    static = static_columns(df, type_names)
    n = len(df["job_id"])
    gb = static["global_batch"]
    for i in np.flatnonzero(gb <= 0):  # no batch in the trace: the zoo's default
        m = static["model"][i]
        if i not in bad_idx:
            gb[i] = int(getattr(zoo.get(m), "default_global_batch", 0) or 0)
    ref_cache: dict[tuple, float] = {}
    gpus_of_type = {t: int(np.count_nonzero(perf.gpu_type == t)) for t in range(len(type_names))}
    total = int(perf.gpu_type.shape[0])
    get = lambda c: np.asarray(df[c]) if c in df else np.full(n, np.nan)  # noqa: E731
    iters, epochs, epoch_size, target = get("total_iterations"), get("epochs"), get("epoch_size"), get("target_acc")
    tpi = static["trace_iter_s"]
    for i in range(n):
        jid = static["job_id"][i]
        if i in bad_idx:
            continue
        req, num, model = int(static["gpu_type_req"][i]), int(static["num_gpus"][i]), static["model"][i]
        reason = None
        cap = total if req < 0 else gpus_of_type.get(req, 0)
        if req == -2:
            reason = f"GPU type '{df['gpu_type'][i]}' not in cluster (has {', '.join(type_names)})"
        elif num < 1 or static["min_gpus"][i] < 1 or static["min_gpus"][i] > static["max_gpus"][i]:
            reason = f"bad GPU counts (num {num}, min {static['min_gpus'][i]}, max {static['max_gpus'][i]})"
        elif static["min_gpus"][i] > cap or num > cap:
            reason = f"asks for {num} GPUs, cluster has {cap}"
        elif gb[i] < num:
            reason = f"global batch {gb[i]} < {num} GPUs"
        if reason is None:
            key = (model, num, int(gb[i]), req)
            t_ref = ref_cache.get(key)
            if t_ref is None:
                place = perf.consolidated_gpus(num, req)
                t_ref = math.inf if place is None else perf.solo_iter_s(model, place, int(gb[i]))
                ref_cache[key] = t_ref
            if not math.isfinite(t_ref):
                reason = f"local batch {math.ceil(gb[i] / num)} of {model} does not fit GPU memory"
            else:
                static["ref_iter_s"][i] = t_ref
                reason = _assign_work(static, i, iters[i], epochs[i], epoch_size[i], target[i], t_ref, runs,
                                      tpi[i])
        if reason is not None:
            bad.append(InvalidJob(jid, reason, i))
            bad_idx.add(i)
    jobs = JobTable.build(static)
    bad.sort(key=lambda b: b.index)
    if bad:
        jobs.state[np.array(sorted(bad_idx), np.int64)] = JobState.UNSCHEDULABLE
    return jobs, bad


def _nan(x) -> bool:
    """Missing: None, NaN, or pandas' NA (recognised by type, so that pandas need not be imported)."""
    return x is None or (isinstance(x, float) and math.isnan(x)) or type(x).__name__ == "NAType"


def trace_time_s(iters, tpi, duration) -> float:
    """The run time a row's trace records: `tpi × iterations` where the trace times its
    iterations (SenseTime: equal to its `duration` to 0.7 % in every shared file), else its
    `duration`; NaN when it has neither."""
    if not _nan(tpi) and float(tpi) > 0 and not _nan(iters) and float(iters) > 0:
        return float(tpi) * float(iters)
    if not _nan(duration) and float(duration) > 0:
        return float(duration)
    return math.nan


def _assign_work(static: dict, i: int, iters, epochs, epoch_size, target, t_ref: float,
                 runs: dict, tpi=math.nan) -> str | None:
    b = float(static["global_batch"][i])
    elastic = static["min_gpus"][i] < static["max_gpus"][i]
    t_trace = trace_time_s(iters, tpi, static["duration"][i]) if not _nan(tpi) and float(tpi) > 0 else math.nan
    if not math.isnan(t_trace):
        static["work_mode"][i] = WorkMode.SAMPLES if elastic else WorkMode.REPLAY
        static["work_iters"][i] = t_trace / t_ref
    elif not _nan(iters) and float(iters) > 0:
        static["work_mode"][i], static["work_iters"][i] = WorkMode.ITERATIONS, float(iters)
    elif not _nan(epochs) and not _nan(epoch_size) and float(epochs) * float(epoch_size) > 0:
        mode = WorkMode.CONVERGENCE if not _nan(target) else WorkMode.SAMPLES
        static["work_mode"][i], static["work_iters"][i] = mode, float(epochs) * float(epoch_size) / b
    elif not _nan(static["duration"][i]) and static["duration"][i] > 0:
        static["work_mode"][i] = WorkMode.SAMPLES if elastic else WorkMode.REPLAY
        static["work_iters"][i] = float(static["duration"][i]) / t_ref
    elif (run := runs.get(str(static["model"][i]).lower())) is not None:
        static["work_mode"][i] = WorkMode.SAMPLES
        static["work_iters"][i] = run.epochs * run.samples_per_epoch / b
    else:
        return "no work: needs total_iterations, epochs with epoch_size, or a positive duration"
    return None


def describe_invalid(bad: list[InvalidJob], limit: int = 10) -> str:
    head = "; ".join(f"job {b.job_id}: {b.reason}" for b in bad[:limit])
    more = f" (and {len(bad) - limit} more)" if len(bad) > limit else ""
    return f"{len(bad)} job(s) can never run: {head}{more}; pass --skip-invalid to run without them"
