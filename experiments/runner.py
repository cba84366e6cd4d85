"""Run one trace on one cluster under several policies and write the outputs.

`run(RunConfig(...), out_dir)` loads the trace (`synth:<like>:<jobs>` or a file), assembles
the workload (models and batches), checks every job against the cluster and the zoo before
anything runs, computes the fluid-GPS reference once, runs each policy on a fresh copy of
the jobs and cluster, and writes (atomically, with config, seed and version in the Parquet
metadata):

    DIR/<policy>/jobs.parquet, timeline.parquet[, decisions.parquet][, reclaims.parquet]
    DIR/summary.parquet   (one row per policy; written last — its presence marks a
                           complete run)
    DIR/timing.parquet    (one row per policy: wall_s, policy_wall_s and what the policy
                           measures on the clock, `timing_metrics()`, e.g. FFT's solver seconds)
    DIR/<policy>/solver.parquet  (a policy with `solver_log()`: its per-round solves)
    DIR/config.json

Everything but timing.parquet and solver.parquet is deterministic: two runs of one config
write the same bytes (`cosim.columns.TIMING_COLUMNS` never enter the summary).

The packages behind the run (trace loading, topology, zoo, comm model, contention solver,
policy factory) come in a `Backends`; `real_backends()` wires the project's packages, tests
pass fakes. This module sits in the experiments layer, above the engine and the policies, and
composes the two: simcore imports no policy.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from cosim import __version__
from cosim.atomic import write_parquet, write_text
from cosim.errors import InputError
from simcore.admission import reject_never_fit
from simcore.api import JobState
from simcore.convergence import BatchHistory, assign_batch_history
from simcore.costs import resolve_costs
from simcore.engine import CapacityChange, Engine, EngineOptions
from simcore.goodput import PROGRESS_OPTIONS, assign_goodput, fill_run_epochs
from simcore.gps import FTF_REFERENCES, ftf_reference_jct
from simcore.metrics import (
    SUMMARY_EXTRAS,
    decisions_frame,
    jobs_columns,
    summary_extras,
    summary_row,
    timeline_columns,
)
from simcore.perf import PerfModel
from simcore.perf_backends import check_perf, table_gaps
from simcore.prepare import InvalidJob, build_jobs, describe_invalid
from simcore.state import ClusterState, JobTable
from simcore.tables import arrow_table, rows_table, to_pandas
from simcore.work import WorkMode
from experiments.defaults import DEFAULT_CLUSTER, DEFAULT_CONTENTION, DEFAULT_TRACE, PREFERRED_POLICIES
from experiments.run_inputs import load_trace
from experiments.run_perf import _perf_packages, build_perf
from experiments.run_progress import RunProgress

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunConfig:
    """One run: a trace, a cluster, the policies to compare, and the engine's options."""

    #: the embedded default: 160 Philly jobs as Pollux/Sia/Ares sample them (multi-GPU training
    #: runs with model and batch), arriving over 4 h. Ares uses 160 jobs / 8 h on 64 RTX 2080 Ti;
    #: A100s run these jobs ≈3.4× faster, so the window is halved to keep queues forming.
    trace: str = DEFAULT_TRACE
    cluster: str = DEFAULT_CLUSTER
    cluster_nodes: int | None = None
    policies: tuple[str, ...] = ()  # empty → `default_policies()`
    policy_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    contention: bool = DEFAULT_CONTENTION
    calibration: str | None = None
    seed: int = 0
    write_decisions: bool = False
    # additive options (not in the original contract)
    skip_invalid: bool = False
    costs: Any = "flat30"  # simcore.costs preset name, flat restart seconds, or a table (`resolve_costs`)
    #: costs of change per policy (same forms), overriding `costs` for that policy, so policies
    #: with different mechanisms (ONES in-place, Optimus checkpoint-restart) compare in one run
    policy_costs: Mapping[str, Any] = field(default_factory=dict)
    capacity_changes: tuple[tuple[float, int, bool], ...] = ()  # (time_s, node, online)
    capacity_source: str = ""  # the file the capacity changes came from (named in errors)
    allow_accumulation: bool = True
    fixed_epochs: bool = True  # jobs without work info train their model's fixed epochs (Pollux/Sia sets)
    perf: str = "network"  # iteration-time backend (simcore.perf_backends.PERF_BACKENDS)
    #: "plain" (progress in iterations/samples as the job's work mode says) or "goodput"
    #: (Pollux: jobs of pollux-sia applications count efficiency-weighted epochs, `simcore.goodput`)
    #: or "batch-history" (ONES: epochs to target depend on the batch history, `simcore.convergence`)
    progress: str = "plain"
    #: the FTF reference (`simcore.gps.FTF_REFERENCES`): "gps", "gps-uncapped", "gps-artifact",
    #: "gps-capped", "hetero-1-over-n"
    ftf_reference: str = "gps"
    #: per-job GPU cap of assembled jobs without a max_gpus (`traces.workload.MAX_GPUS_OPTIONS`):
    #: "2x" the request, "<k>x", or "artifact" (the Ares artifact's per-model 32-64)
    max_gpus: str = "2x"
    #: inference load driving join/reclaim demands (`simcore.capacity`): a CSV
    #: `time_s,pool,nodes_needed` or `diurnal:H` (seeded diurnal load, headroom H); None: none
    load_series: str | None = None
    reclaim_grace_s: float = 0.0  # seconds between a reclaim demand and its deadline
    #: per-GPU performance variability (`simcore.perf.gpu_variability`): the slowest GPU's
    #: compute up to this fraction slower, seeded by `gpu_variability_seed`; 0: off
    gpu_variability: float = 0.0
    gpu_variability_seed: int = 0
    #: a GPU-types TOML file (`calibration.gpu_types`) adding to the zoo's table for this run
    gpu_types: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["policies"] = list(self.policies)
        d["policy_params"] = {k: dict(v) for k, v in sorted(self.policy_params.items())}
        d["capacity_changes"] = [list(c) for c in self.capacity_changes]
        if not self.capacity_source:  # only when set: configs of runs without it stay identical
            d.pop("capacity_source")
        if self.policy_costs:  # only when set: configs of runs without it stay identical
            d["policy_costs"] = {k: _plain(v) for k, v in sorted(self.policy_costs.items())}
        else:
            d.pop("policy_costs")
        d["costs"] = _plain(self.costs)
        if self.load_series is None:  # only when set: configs of runs without one stay identical
            d.pop("load_series")
            d.pop("reclaim_grace_s")
        if not self.gpu_variability:  # only when set: configs of runs without it stay identical
            d.pop("gpu_variability")
            d.pop("gpu_variability_seed")
        if self.max_gpus == "2x":  # only when set: configs of runs without it stay identical
            d.pop("max_gpus")
        if self.gpu_types is None:  # only when set: configs of runs without it stay identical
            d.pop("gpu_types")
        return d


def _plain(v: Any) -> Any:
    """A cost setting as JSON-able data."""
    from simcore.costs import ChangeCosts

    if isinstance(v, ChangeCosts):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


@dataclass
class RunResult:
    """A run's tables. They are held as Arrow tables (`summary_table`, `job_tables`,
    `timeline_tables`: what the Parquet files hold) and handed out as DataFrames on first use
    (`summary`, `jobs`, `timelines`), so a run that only writes them, like `cosim simulate`,
    never imports pandas (`simcore.tables`)."""

    summary_table: pa.Table  # one row per policy
    job_tables: dict[str, pa.Table]
    timeline_tables: dict[str, pa.Table] = field(default_factory=dict)
    decisions: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: engine wall time per policy, without the numba kernels compiled (or loaded from the cache)
    #: during its run: the first policy of a cold run would otherwise carry every shared kernel's compile
    wall_s: dict[str, float] = field(default_factory=dict)
    policy_wall_s: dict[str, float] = field(default_factory=dict)  # of which inside policy.decide
    invalid: list = field(default_factory=list)  # InvalidJob skipped (skip_invalid)
    config: RunConfig | None = None
    reclaims: dict[str, pd.DataFrame] = field(default_factory=dict)  # per policy, with a load series
    #: trace rows the loader left out (reason → count, `traces.io.LoadReport`); also in the summary
    excluded: dict[str, int] = field(default_factory=dict)
    timing: dict[str, dict] = field(default_factory=dict)  # per policy: the policy's `timing_metrics()`

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per policy."""
        return to_pandas(self.summary_table)

    @cached_property
    def jobs(self) -> dict[str, pd.DataFrame]:
        """Per policy, one row per job (`jobs.parquet`)."""
        return {k: to_pandas(t) for k, t in self.job_tables.items()}

    @cached_property
    def timelines(self) -> dict[str, pd.DataFrame]:
        """Per policy, the occupancy timeline (`timeline.parquet`)."""
        return {k: to_pandas(t) for k, t in self.timeline_tables.items()}


@dataclass
class Backends:
    load_trace: Callable[[RunConfig], pd.DataFrame]
    topology: Callable[[RunConfig], Any]
    zoo: Any
    comm: Callable[[Any], Any]
    solve: Callable[..., Any] | None
    make_policy: Callable[[str, Mapping[str, Any]], Any]
    policy_names: Callable[[], list[str]]
    perf_source: str = "real"  # "real" or "placeholder" (recorded in the metadata)


def default_policies(backends: Backends) -> tuple[str, ...]:
    names = backends.policy_names()
    chosen = tuple(p for p in PREFERRED_POLICIES if p in names)
    return chosen or tuple(names[:5])


def run(config: RunConfig, out_dir: Path | None, progress: bool = False, backends: Backends | None = None,
        claim: Callable[[], Any] | None = None) -> RunResult:
    """Run every policy of `config`; write outputs under `out_dir` (None: keep in memory).

    Every input is read and checked first; only then is `claim()` called (e.g. the CLI's
    `claim_out_dir`, which creates and locks the folder) and anything written, so a rejected
    run leaves nothing behind. What `claim` returns is released (`.release()`) at the end."""
    be = backends or real_backends(config)
    if not config.policies:
        config = replace(config, policies=default_policies(be))
    for name in config.policies:  # unknown names fail before any work
        if name not in be.policy_names():
            from cosim.errors import UnknownNameError

            raise UnknownNameError("policy", name, be.policy_names())
    extra = sorted(set(config.policy_params) - set(config.policies))
    if extra:
        raise InputError.at(detail=f"parameters given for policy '{extra[0]}', which this run does not simulate "
                                   f"(policies: {', '.join(config.policies)})")
    extra = sorted(set(config.policy_costs) - set(config.policies))
    if extra:
        raise InputError.at(field="policy_costs", detail=f"costs given for policy '{extra[0]}', which this run does "
                                                         f"not simulate (policies: {', '.join(config.policies)})")
    costs_of = {name: resolve_costs(config.policy_costs[name], f"policy_costs.{name}") if name in config.policy_costs
                else resolve_costs(config.costs) for name in config.policies}  # bad settings fail before any work
    # bad parameters fail before any work too; each policy built here is the one its run uses
    built = [be.make_policy(name, dict(config.policy_params.get(name, {}))) for name in config.policies]
    if config.progress not in PROGRESS_OPTIONS:
        raise InputError.at(field="progress", expected=" or ".join(PROGRESS_OPTIONS), got=config.progress)
    if config.ftf_reference not in FTF_REFERENCES:
        raise InputError.at(field="ftf_reference", expected=", ".join(FTF_REFERENCES), got=config.ftf_reference)
    if config.max_gpus != "2x":
        from traces.workload import max_gpus_cap

        max_gpus_cap(config.max_gpus, np.zeros(0, np.int64), np.zeros(0, object))  # an InputError if unknown
    check_perf(config.perf)
    if not 0.0 <= config.gpu_variability < 10.0:
        raise InputError.at(field="gpu_variability", expected="a fraction >= 0 (0: off)", got=config.gpu_variability)
    if config.gpu_types is not None:  # before the cluster: its node types may name the added types
        be.zoo.load_gpu_types(config.gpu_types)
    out = Path(out_dir) if out_dir is not None else None
    topo = be.topology(config)
    perf = build_perf(topo, be, config)
    df = be.load_trace(config)
    excluded = dict((getattr(df, "attrs", {}).get("load_report") or {}).get("excluded") or {})
    base, invalid = build_jobs(df, perf, be.zoo, fixed_epochs=config.fixed_epochs)
    del df  # the job table holds what the run needs: the trace's frame is not kept through it
    invalid = _backend_gaps(config.perf, table_gaps(perf, base), base, invalid)
    if invalid and not config.skip_invalid:
        raise InputError(describe_invalid(invalid))
    if base.num_jobs == len(invalid):
        raise InputError.at(config.trace, expected="a trace with at least one job that can run",
                            detail=f"{base.num_jobs} job(s), {len(invalid)} of them invalid" if base.num_jobs
                            else "it holds no jobs")
    for b in invalid:
        log.warning("skipping job %s: %s", b.job_id, b.reason)
    if config.fixed_epochs:
        fill_run_epochs(base)
    gp = assign_goodput(base, config.progress)
    if config.progress == "batch-history":  # ONES' convergence model: epochs depend on the batch history
        assign_batch_history(base)
    solo = base.work_iters * base.ref_iter_s
    if gp is not None:  # epochs at the trace's batch, each at its efficiency
        for j in np.flatnonzero(base.work_mode == WorkMode.EPOCHS).tolist():
            solo[j] = gp.solo_iters(j, int(base.global_batch[j])) * base.ref_iter_s[j]
    caps = [CapacityChange(float(t), int(n), bool(o)) for t, n, o in config.capacity_changes]
    node_gpus = np.asarray(topo.node_num_gpus)
    for i, c in enumerate(caps, start=1):
        if not 0 <= c.node < node_gpus.shape[0]:
            raise InputError.at(config.capacity_source or "capacity_changes", row=i, field="node",
                                expected=f"a node index below {node_gpus.shape[0]} (the cluster's nodes)", got=c.node)
    cap_plan = None
    if config.load_series:  # horizon: every job alone, one after another, after the last arrival
        if not config.reclaim_grace_s >= 0:
            raise InputError.at(field="reclaim_grace_s", expected="seconds >= 0", got=config.reclaim_grace_s)
        busy = np.isfinite(solo) & (base.state != JobState.UNSCHEDULABLE)
        horizon = float(base.submit_time.max(initial=0.0)) + float(solo[busy].sum())
        from simcore.capacity import load_series_plan  # runs with a load series only

        cap_plan = load_series_plan(config.load_series, topo, horizon, config.seed, config.reclaim_grace_s)
    lock = claim() if claim is not None else None  # everything is checked: the outputs may be claimed now
    try:
        return _simulate(config, out, progress, be, built, costs_of, topo, perf, base, invalid, gp, solo, caps,
                         node_gpus, cap_plan, excluded)
    finally:
        if lock is not None:
            lock.release()


def _simulate(config: RunConfig, out: Path | None, progress: bool, be: Backends, built: list, costs_of: dict,
              topo: Any, perf: PerfModel, base: JobTable, invalid: list, gp: Any, solo: np.ndarray, caps: list,
              node_gpus: np.ndarray, cap_plan: Any, excluded: dict[str, int]) -> RunResult:
    """`run` after every input is checked: the FTF references, each policy's run, the outputs."""
    if out is not None:
        (out / "summary.parquet").unlink(missing_ok=True)  # a stale summary must not mark this run complete
    ref_changes = [(c.time_s, c.node, c.online) for c in caps] + (cap_plan.node_changes() if cap_plan else [])
    ref_cache: dict = {}

    def ftf_ref(name: str) -> np.ndarray:
        """Reference JCTs of FTF reference `name` (the run's; summary extras compare others), cached."""
        if name not in ref_cache:
            art = None
            if name == "gps-artifact":
                from traces.workload import max_gpus_cap

                art = max_gpus_cap("artifact", base.num_gpus, base.model)
            ref_cache[name] = ftf_reference_jct(
                name, base.submit_time, base.num_gpus, base.max_gpus, solo, node_gpus, _node_types(topo),
                _type_speed(base, perf, topo) if name == "hetero-1-over-n" else None, ref_changes, art)
        return ref_cache[name]

    gps = ftf_ref(config.ftf_reference)

    meta = {"config": config.to_dict(), "seed": config.seed, "version": __version__, "perf_source": be.perf_source,
            "perf": config.perf}
    rows, jobs_out, tls, decs, walls, pwalls, recl, timing = [], {}, {}, {}, {}, {}, {}, {}
    bar = RunProgress(progress, len(config.policies), base.num_jobs)
    try:
        for i, (name, policy) in enumerate(zip(config.policies, built)):
            jobs = base.for_run(last=i == len(built) - 1)  # after the last run `base` is read for trace columns only
            never = reject_never_fit(jobs, policy, topo.gpu_type, topo.gpu_type_names)
            if never:
                log.warning("%s: %d job(s) rejected (job %s: %s)", name, len(never),
                            base.job_id[min(never)], never[min(never)])
            cluster = ClusterState.from_topology(topo)
            engine = Engine(jobs, cluster, perf, policy, costs_of[name], caps,
                            options=EngineOptions(record_decisions=config.write_decisions),
                            efficiency=BatchHistory(jobs) if config.progress == "batch-history" else None,
                            on_progress=bar.callback(name), goodput=gp, capacity_plan=cap_plan)
            t0 = time.perf_counter()
            with _compile_timer() as compiling:
                res = engine.run()
            compile_s = compiling.duration if compiling.done else 0.0
            walls[name] = time.perf_counter() - t0 - compile_s
            pwalls[name] = res.policy_wall_s
            jf = jobs_columns(res, gps, {**{b.index: b.reason for b in invalid}, **never})
            jobs_out[name], tls[name] = arrow_table(jf), arrow_table(timeline_columns(res))
            dec = decisions_frame(res)
            if dec is not None:
                decs[name] = dec
            if res.reclaims is not None:
                recl[name] = res.reclaims.frame()
            rows.append({"policy": name, "perf": config.perf,
                         **summary_row(name, jf, res, config.progress, config.ftf_reference, len(never)),
                         **summary_extras(jf, res, policy, _type_speed(base, perf, topo) if SUMMARY_EXTRAS and
                                          res.decisions is not None else None, np.asarray(topo.gpu_type),
                                          ftf_ref=ftf_ref), **excluded_columns(excluded)})
            timing[name] = {"compile_s": compile_s,
                            **(policy.timing_metrics() if callable(getattr(policy, "timing_metrics", None)) else {})}
            bar.done(name)
            log.info("%s: %d events, %d policy calls, %.2f s", name, res.num_events, res.num_policy_calls, walls[name])
            if out is not None:
                m = dict(meta, policy=name)
                write_parquet(jobs_out[name], out / name / "jobs.parquet", m)
                write_parquet(tls[name], out / name / "timeline.parquet", m)
                if dec is not None:
                    _write(dec, out / name / "decisions.parquet", m)
                if res.reclaims is not None:
                    _write(recl[name], out / name / "reclaims.parquet", m)
                if callable(getattr(policy, "solver_log", None)):
                    _write(policy.solver_log(), out / name / "solver.parquet", m)
    finally:
        bar.close()
    summary = rows_table(rows)
    if out is not None:
        write_text(json.dumps(dict(meta, invalid=[asdict(b) for b in invalid]), indent=2, sort_keys=True,
                              default=str) + "\n", out / "config.json")
        write_parquet(rows_table([{"policy": n, "wall_s": walls[n], "policy_wall_s": pwalls[n], **timing[n]}
                                  for n in walls]), out / "timing.parquet", meta)
        write_parquet(summary, out / "summary.parquet", meta)
    return RunResult(summary, jobs_out, tls, decs, walls, pwalls, invalid, config, recl, excluded, timing)


def excluded_columns(excluded: Mapping[str, int]) -> dict[str, Any]:
    """The summary columns saying what the trace's loader left out, only when it left out rows
    (runs of clean traces keep their summary): `trace_rows_excluded` and `trace_excluded`
    ("reason: count, …")."""
    if not excluded:
        return {}
    return {"trace_rows_excluded": int(sum(excluded.values())),
            "trace_excluded": ", ".join(f"{k}: {v}" for k, v in sorted(excluded.items()))}


def _backend_gaps(backend: str, gaps: dict[str, str], jobs: JobTable, invalid: list) -> list:
    """Jobs the perf backend cannot time (`measured`: no table for their model) become invalid
    with that reason, replacing a reason `build_jobs` gave them, before anything runs."""
    if not gaps:
        return invalid
    from simcore.api import JobState

    by_index = {b.index: b for b in invalid}
    for i, jid in enumerate(jobs.job_id):
        why = gaps.get(str(jid))
        if why is not None:
            by_index[i] = InvalidJob(str(jid), f"--perf {backend}: {why}", i)
            jobs.state[i] = JobState.UNSCHEDULABLE
    return [by_index[i] for i in sorted(by_index)]


def _node_types(topo: Any) -> np.ndarray:
    """GPU type of each node (its first GPU's)."""
    return np.asarray(topo.gpu_type, np.int64)[np.asarray(topo.node_first_gpu, np.int64)]


def _type_speed(base: JobTable, perf: PerfModel, topo: Any) -> np.ndarray:
    """Each job's speed on each GPU type relative to its reference (`ref_iter_s`): its solo
    iteration time at its requested count, consolidated on that type (0 where it cannot
    run: a required other type, too few GPUs of the type, or memory). The solo time is
    computed once per (model, GPU count, global batch, type) a job needs, and divided out in
    one array operation (no Python work per job: a million-job trace has a few hundred keys)."""
    nt = len(topo.gpu_type_names)
    out = np.zeros((base.num_jobs, nt))
    ref = np.asarray(base.ref_iter_s, np.float64)
    idx = np.flatnonzero(np.isfinite(ref) & (ref > 0))
    if idx.size == 0:
        return out
    models, model_code = np.unique(base.model[idx], return_inverse=True)
    shapes = np.stack([model_code.ravel(), np.asarray(base.num_gpus, np.int64)[idx],
                       np.asarray(base.global_batch, np.int64)[idx]], axis=1)
    keys, inv = np.unique(shapes, axis=0, return_inverse=True)
    inv = inv.ravel()
    req = np.asarray(base.gpu_type_req, np.int64)[idx]
    allowed = (req[:, None] < 0) | (req[:, None] == np.arange(nt))  # job × type
    needed = np.zeros((keys.shape[0], nt), bool)
    np.logical_or.at(needed, inv, allowed)
    solo = np.full((keys.shape[0], nt), np.inf)
    for u, k in zip(*np.nonzero(needed)):
        m, n, b = str(models[keys[u, 0]]), int(keys[u, 1]), int(keys[u, 2])
        place = perf.consolidated_gpus(n, int(k))
        if place is not None:
            solo[u, k] = perf.solo_iter_s(m, place, b)
    t = solo[inv]
    good = allowed & np.isfinite(t) & (t > 0)
    out[idx] = np.where(good, ref[idx, None] / np.where(good, t, 1.0), 0.0)
    return out


def _compile_timer():
    """A context that adds up the seconds numba spends compiling (or loading from its cache) the
    kernels first called inside it: `.duration` (valid when `.done`)."""
    from numba.core import event

    return event.install_listener("numba:compile", event.TimingListener())


def _write(df: pd.DataFrame, path: Path, meta: dict) -> None:
    """A DataFrame table (decisions, reclaims) to Parquet."""
    write_parquet(pa.Table.from_pandas(df, preserve_index=False), path, meta)


# ---- the project's packages ---------------------------------------------------------------

#: `make(name, params) -> Policy` and `names() -> list[str]`: what the runner needs of a policy registry
PolicyFactory = tuple[Callable[[str, Mapping[str, Any]], Any], Callable[[], list[str]]]


def make_policy(name: str, params: Mapping[str, Any]) -> Any:
    """A policy from the project's registry, with its parameters."""
    import policies

    return policies.make(name, **dict(params))


def policy_factory() -> PolicyFactory:
    """`(make, names)` of the project's policy registry. Imported on first use, so commands that
    build no policy (`cosim --help`, `validate`) do not load the policy packages."""
    from experiments import ares_metrics, fft_metrics
    from policies.registry import POLICIES

    fft_metrics.install()  # FFT's summary columns, in every process that runs a policy (sweep workers too)
    ares_metrics.install()  # Ares' fairness under the paper's and the artifact's references, likewise
    return make_policy, POLICIES.names


def real_backends(config: RunConfig) -> Backends:
    import netmodel

    def topology(cfg: RunConfig) -> Any:
        over = {} if cfg.cluster_nodes is None else {"num_nodes": cfg.cluster_nodes}
        return netmodel.build_topology(netmodel.load_cluster(cfg.cluster, **over))

    zoo, comm, solve, source = _perf_packages(config)
    make_policy, policy_names = policy_factory()
    return Backends(load_trace, topology, zoo, comm, solve, make_policy, policy_names, source)


def perf_backends(config: RunConfig) -> Backends:
    """The project's perf packages (zoo, comm, contention) without a policy registry: what
    `build_perf` needs (`cosim validate` and `calibrate fit` build PerfModels only)."""
    zoo, comm, solve, source = _perf_packages(config)

    def no_policy(name: str, params: Mapping[str, Any]) -> Any:
        from cosim.errors import CosimError

        raise CosimError("perf_backends has no policy registry")

    return Backends(load_trace, lambda cfg: None, zoo, comm, solve, no_policy, list, source)


def engine_for(preset: str, profile_data: Mapping[str, Any], source: str = "profile") -> PerfModel:
    """The PerfModel `cosim simulate` builds on `preset` (solo, network backend) with a
    profile given as its parsed document: what `cosim validate` and `calibrate fit` predict
    through (`calibration.fit.set_engine(engine_for)`)."""
    import netmodel
    from calibration.stepform import profile_from_data

    cfg = RunConfig(cluster=preset, calibration="none", contention=False)
    hit = _ENGINES.get(preset)
    if hit is None:
        hit = _ENGINES[preset] = (netmodel.build_topology(netmodel.load_cluster(preset)), perf_backends(cfg))
    topo, be = hit
    return build_perf(topo, be, cfg, profile=profile_from_data(profile_data, source))


_ENGINES: dict[str, tuple[Any, Backends]] = {}
