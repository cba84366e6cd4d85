"""Units and one-line meanings of the columns cosim writes, stored in every Parquet file's schema.

`cosim.atomic.write_parquet` attaches `unit` and `description` to each field named here (field
metadata, visible with `pyarrow.parquet.read_schema(path).field(name).metadata`), so an output
file explains itself without the docs. Unit strings: `s` seconds, `GPU·s` GPU-seconds, `1`
dimensionless ratio or fraction, `count`, `bool`, `id`/`name`/`label` for identifiers, `enum`.
Names are those of jobs.parquet, timeline.parquet, decisions.parquet and summary.parquet (simulate
and sweep); a column not listed gets no field metadata.
"""

from __future__ import annotations

from typing import Mapping

#: column → (unit, description)
COLUMNS: dict[str, tuple[str, str]] = {
    # jobs.parquet (one row per job)
    "job_id": ("id", "job identifier from the trace"),
    "model": ("name", "model the job trains (zoo name)"),
    "num_gpus": ("count", "GPUs the job requested"),
    "work_mode": ("enum", "how the job's work is measured: replay, iterations, samples, convergence or epochs (simcore.work)"),
    "submit_time_s": ("s", "submit time, seconds from the start of the trace"),
    "first_start_s": ("s", "time the job first got GPUs (NaN if never)"),
    "end_time_s": ("s", "time the job finished (NaN if unfinished); in summary: simulated end time"),
    "jct_s": ("s", "job completion time: end_time_s - submit_time_s (finished jobs)"),
    "queueing_delay_s": ("s", "first_start_s - submit_time_s: wait before the first start"),
    "waiting_s": ("s", "total time queued without GPUs, over every wait (not only the first)"),
    "gpu_s": ("GPU·s", "GPU time the job held (summary: sum over jobs)"),
    "executed_s": ("s", "time the job held GPUs (running or paying a change cost; includes restart_s)"),
    "restart_s": ("s", "time spent in restarts, migrations and resizes (change costs)"),
    "exposed_comm_s": ("s", "communication time not hidden behind compute (summary: sum over jobs)"),
    "num_restarts": ("count", "allocation changes that restarted the job (resume, migrate, resize)"),
    "progress": ("1", "fraction of the job's work done, 0..1"),
    "epochs_done": ("count", "epochs of the job's dataset completed (fractional; goodput progress)"),
    "stat_efficiency": ("1", "Pollux statistical efficiency of the job's last batch size (1 under plain progress)"),
    "final_batch": ("count", "global batch size at the end"),
    "gps_jct_s": ("s", "JCT under idealised GPU processor sharing (the fairness reference)"),
    "ftf": ("1", "finish-time fairness: jct_s / gps_jct_s (> 1: slower than its fair share)"),
    "finished": ("bool", "the job completed within the simulation"),
    "unschedulable": ("bool", "the job can never run on this cluster"),
    "unfinished_reason": ("label", ("why the job did not finish: empty if it did; 'not finished when the run "
                                    "ended'; or why it was rejected before running (an invalid job under "
                                    "skip-invalid, or 'never fits one GPU type' under a single-type policy, "
                                    "simcore.admission)")),
    # timeline.parquet (one row per change)
    "time_s": ("s", "simulated time of the row"),
    "busy_gpus": ("count", "GPUs allocated to jobs"),
    "online_gpus": ("count", "GPUs online (capacity changes remove and add nodes)"),
    "running": ("count", "jobs running"),
    "restarting": ("count", "jobs paying a change cost"),
    "queued": ("count", "jobs waiting for GPUs"),
    "utilization": ("1", "busy_gpus / online_gpus"),
    # reclaims.parquet (one row per reclaim demand of a load series)
    "pool": ("name", "node pool the demand reclaims (the preset's group pool, e.g. inference)"),
    "demanded": ("count", "nodes the demand asks back"),
    "available": ("count", "nodes of the pool the training cluster held when the demand came"),
    "deadline_s": ("s", "time by which the nodes must be returned"),
    "returned_at_s": ("s", "time the nodes were returned (NaN while pending)"),
    "returned_nodes": ("id", "comma-separated node ids returned"),
    "jobs_scaled_in": ("id", "comma-separated job ids scaled in to free the nodes"),
    "jobs_evicted": ("id", "comma-separated job ids evicted from the nodes"),
    "deadline_met": ("bool", "returned_at_s <= deadline_s"),
    "answered_by": ("name", "who chose the nodes: the policy, or the default answer"),
    # decisions.parquet
    "action": ("enum", "what the decision did to the job: start, resume, preempt, resize, migrate or finish"),
    "gpus": ("id", "GPU indices the job holds after the decision, comma-separated (empty: none)"),
    "batch_size": ("count", "global batch size chosen"),
    "cost_s": ("s", "change cost charged for the decision"),
    # summary.parquet (one row per policy, or per sweep cell)
    "policy": ("name", "scheduling policy"),
    "perf": ("name", "iteration-time backend: network, linear, measured, measured-pollux-sim, trace or astra (simcore.perf_backends)"),
    "progress_model": ("name", "progress model: plain or goodput (simcore.goodput)"),
    "ftf_reference": ("name", "finish-time-fairness reference: gps, gps-uncapped, gps-artifact, gps-capped or "
                              "hetero-1-over-n (simcore.gps)"),
    "jobs": ("count", "jobs in the trace (after skipped invalid ones)"),
    "unfinished": ("count", "jobs not finished at the end"),
    "never_fit_one_type": ("count", ("jobs rejected at admission: more GPUs than any one GPU type has, under "
                                     "a policy that places each job on one type (included in unfinished)")),
    "stuck": ("bool", "the simulation stopped with queued jobs that could never start"),
    "trace_rows_excluded": ("count", "trace rows the loader left out as not runnable jobs (only when it left some out)"),
    "trace_excluded": ("text", "why the loader left rows out, 'reason: count, ...' (only when it left some out)"),
    "avg_jct_s": ("s", "mean JCT over finished jobs"),
    "p50_jct_s": ("s", "median JCT over finished jobs"),
    "p95_jct_s": ("s", "95th percentile JCT over finished jobs"),
    "p99_jct_s": ("s", "99th percentile JCT over finished jobs"),
    "makespan_s": ("s", "last finish time"),
    "avg_queueing_s": ("s", "mean queueing_delay_s over finished jobs"),
    "avg_waiting_s": ("s", "mean waiting_s over finished jobs"),
    "starvation_s": ("s", "largest waiting_s of any job"),
    "p95_waiting_s": ("s", "95th percentile of waiting_s over finished jobs (Dally Fig. 8a queueing tail)"),
    "p99_waiting_s": ("s", "99th percentile of waiting_s over finished jobs"),
    "avg_exposed_comm_s": ("s", "mean exposed_comm_s per job (Dally Fig. 8b communication latency)"),
    "t50_done_s": ("s", "time from the first arrival until half of all jobs have finished"),
    "t90_done_s": ("s", "time from the first arrival until 90 % of all jobs have finished"),
    "gpu_utilization": ("1", "busy GPU-seconds / online GPU-seconds over the run"),
    "avg_ftf": ("1", "mean finish-time fairness over finished jobs"),
    "unfair_fraction": ("1", "fraction of finished jobs with ftf > 1 (finished later than under fair sharing)"),
    "worst_ftf": ("1", "largest ftf of any finished job"),
    # FFT's metrics (experiments/fft_metrics.py, added through simcore.metrics.SUMMARY_EXTRAS)
    "ftf_share_below_1": ("1", "share of finished jobs with ftf < 1 (the run's FTF reference)"),
    "max_starvation_s": ("s", "longest first start - arrival of any job (never started: to the end of the run)"),
    "max_jct_s": ("s", "largest jct_s of any finished job (FFT §2.3's 'makespan')"),
    "type_switches": ("count", "restarts on another GPU type than the job's last (from decisions)"),
    "upward_share": ("1", "share of type switches to a type where the job runs faster"),
    "switching_overhead_s": ("s", "sum of restart and migration cost charged over all jobs"),
    "placement_speed": ("1", "reference-run seconds of work per second executed over all jobs (1 = as fast as consolidated on the reference type; FFT §6.2.4)"),
    "ftf_hetero_mean": ("1", "mean FTF against FFT's T_id (1/N of every GPU type, hetero-1-over-n)"),
    "ftf_hetero_max": ("1", "largest FTF against FFT's T_id"),
    "ftf_hetero_share_below_1": ("1", "share of finished jobs with FTF < 1 against FFT's T_id"),
    # Ares' fairness under its paper's and its artifact's references (experiments/ares_metrics.py)
    "unfair_fraction_paper": ("1", "fraction of finished jobs with FTF > 1 against the Ares paper's GPS (gps-uncapped)"),
    "worst_ftf_paper": ("1", "largest FTF against the Ares paper's GPS (gps-uncapped)"),
    "unfair_fraction_artifact": ("1", "fraction of finished jobs with FTF > 1 against the Ares artifact's GPS (gps-artifact)"),
    "worst_ftf_artifact": ("1", "largest FTF against the Ares artifact's GPS (gps-artifact)"),
    "avg_restarts": ("count", "mean num_restarts per job"),
    "events": ("count", "engine events processed"),
    "policy_calls": ("count", "times the policy was called"),
    # sweep coordinates and bookkeeping
    "cell_id": ("id", "sweep cell identifier (hash of its coordinates)"),
    "trace": ("label", "trace of the cell"),
    "cluster": ("label", "cluster preset or file of the cell"),
    "cluster_nodes": ("count", "cluster resized to this many nodes (null: the preset's size)"),
    "policy_label": ("label", "policy with its swept parameters"),
    "max_gpus": ("label", "per-job GPU cap of assembled jobs: 2x, <k>x or artifact (traces.workload; absent: 2x)"),
    "contention": ("bool", "cross-job network contention modelled"),
    "calibration": ("label", "calibration profile (null: the preset's)"),
    "seed": ("count", "random seed of synthesis, workload assembly and random policies"),
    "status": ("enum", "ok or error"),
    "error": ("text", "the error of a failed cell"),
    "wall_s": ("s", "wall-clock time the cell took to run (not simulated time)"),
    # timing.parquet (clock-dependent: kept out of every summary, `TIMING_COLUMNS`)
    "policy_wall_s": ("s", "wall-clock time inside the policy's decisions (timing.parquet)"),
    "compile_s": ("s", "wall-clock time numba spent compiling or loading kernels during the run, not in wall_s"),
    "fft_solver_s_mean": ("s", "FFT: mean wall-clock seconds of a round's ILP solve"),
    "fft_solver_s_max": ("s", "FFT: longest round's ILP solve, wall-clock seconds"),
    "fft_limit_rounds": ("count", "FFT: rounds whose branch-and-bound the time limit stopped (incumbent used)"),
    "fft_limit_gap_max": ("1", "FFT: largest relative optimality gap of those rounds (HiGHS' dual bound)"),
}


#: columns measured on the clock (wall and solver times, and what a time-limited solve reached):
#: they differ between identical runs, so summaries leave them to timing.parquet beside them
TIMING_COLUMNS = ("wall_s", "policy_wall_s", "compile_s", "fft_solver_s_mean", "fft_solver_s_max", "fft_limit_rounds",
                  "fft_limit_gap_max")


#: the files that hold them (a run's timing.parquet, a policy's per-round solver.parquet)
TIMING_FILES = ("timing.parquet", "solver.parquet")


#: a name's suffix → its unit (STYLE: units in names), most specific first
SUFFIX_UNITS = (("_gpu_s", "GPU-s"), ("_s", "s"), ("_gbps", "Gbit/s"), ("_bytes", "bytes"))


def unit_from_name(name: str) -> str:
    """The unit a name's suffix states (`interval_s` → "s"), or "" when it states none."""
    return next((unit for suffix, unit in SUFFIX_UNITS if name.endswith(suffix)), "")


def field_metadata(name: str, columns: Mapping[str, tuple[str, str]] | None = None) -> dict[bytes, bytes] | None:
    """Parquet field metadata (`unit`, `description`) for a column: from `columns` (a file's own
    glossary) or `COLUMNS`; a sweep's `param_<name>` column, a policy parameter, gets the unit its
    name states ("1" when none: the parameter's own scale); None for a column not listed."""
    entry = (columns or {}).get(name) or COLUMNS.get(name)
    if entry is None and name.startswith("param_"):
        param = name.removeprefix("param_")
        entry = (unit_from_name(param) or "1", f"policy parameter {param} of the cell's policy (cosim policies "
                 "show POLICY: its meaning, unit and default)")
    if entry is None:
        return None
    return {b"unit": entry[0].encode(), b"description": entry[1].encode()}
