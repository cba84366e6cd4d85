"""The canonical job table: one row per job, the contract between traces and everything else.

Every loader returns exactly `JOB_SCHEMA` (plus optional source-specific `extra_*`-free
columns listed in `EXTRA_COLUMNS`), so every policy runs on every trace. The schema version
is stored in the Parquet metadata under `cosim.job_schema_version`; readers refuse a file
whose major version they do not know.

Units: times in seconds (float64) from the start of the trace; GPU counts are int32.
"""

from __future__ import annotations

import pyarrow as pa

from cosim.columns import COLUMNS

JOB_SCHEMA_VERSION = "1.0"

#: Required columns (never null).
REQUIRED = ("job_id", "submit_time", "num_gpus")

#: The canonical columns in order, with their Arrow types. All but REQUIRED are nullable.
JOB_SCHEMA = pa.schema(
    [
        pa.field("job_id", pa.string(), nullable=False),
        pa.field("submit_time", pa.float64(), nullable=False),  # s from trace start
        pa.field("num_gpus", pa.int32(), nullable=False),  # requested
        pa.field("duration", pa.float64()),  # s the job ran in the trace
        pa.field("model", pa.string()),  # model-zoo name or alias (e.g. resnet18_cifar, cifar10)
        pa.field("global_batch", pa.int32()),
        pa.field("total_iterations", pa.float64()),
        pa.field("epochs", pa.float64()),
        pa.field("gpu_type", pa.string()),
        pa.field("min_gpus", pa.int32()),
        pa.field("max_gpus", pa.int32()),
        pa.field("user", pa.string()),
        pa.field("vc", pa.string()),
        pa.field("status", pa.string()),  # e.g. Pass/Failed/Killed/COMPLETED as in the source
        pa.field("source", pa.string()),  # which loader / file produced the row
    ]
)

#: Source-specific columns worth keeping; loaders may add any of these (nullable).
EXTRA_COLUMNS = pa.schema(
    [
        pa.field("dataset", pa.string()),
        pa.field("time_per_iteration", pa.float64()),  # s, SenseTime measured
        pa.field("gpu_util", pa.float64()),  # percent, SenseTime
        pa.field("max_parallelism", pa.int32()),  # SenseTime
        pa.field("start_time", pa.float64()),  # s from trace start, first start in the trace
        pa.field("end_time", pa.float64()),  # s from trace start
        pa.field("gpu_time", pa.float64()),  # GPU-seconds in the trace
        pa.field("task", pa.string()),  # ONES
        pa.field("target_acc", pa.float64()),  # ONES
        pa.field("patience", pa.int32()),  # ONES
        pa.field("lr", pa.float64()),  # ONES
        pa.field("max_lr", pa.float64()),  # ONES
        pa.field("epoch_size", pa.float64()),  # ONES: samples per epoch
        pa.field("size_class", pa.string()),  # Ares S/M/L/XL by GPU-time
        pa.field("precision", pa.string()),  # fp32 (default, null) | amp | bf16: the job's training precision
        #: none | zero1 | zero2 | zero3 | fsdp (null: the model's default, calibration.sharding)
        pa.field("sharding", pa.string()),
        pa.field("model_parallel", pa.int32()),  # tensor-parallel degree within a node (null: 1)
    ]
)

ALL_COLUMNS = tuple(JOB_SCHEMA.names) + tuple(EXTRA_COLUMNS.names)

#: unit and meaning of every canonical column, written into the schema of each job table
#: (`traces.io.write_jobs`, `cosim traces convert`); units as in `cosim.columns`
COLUMN_DOCS: dict[str, tuple[str, str]] = {
    **{name: COLUMNS[name] for name in ("job_id", "num_gpus")},  # the same meaning as in run outputs
    "submit_time": ("s", "submit time, seconds from the trace's start"),
    "duration": ("s", "seconds the job ran in the trace"),
    "model": ("name", "model the job trains (zoo name or alias)"),
    "global_batch": ("count", "global batch size (samples per iteration)"),
    "total_iterations": ("count", "iterations of work"),
    "epochs": ("count", "epochs of work"),
    "gpu_type": ("name", "GPU type the job asked for or ran on"),
    "min_gpus": ("count", "fewest GPUs an elastic job runs on"),
    "max_gpus": ("count", "most GPUs an elastic job runs on"),
    "user": ("id", "user who submitted the job"),
    "vc": ("id", "virtual cluster (team queue) of the job"),
    "status": ("label", "final status in the source trace (e.g. Pass, Failed, Killed, COMPLETED)"),
    "source": ("label", "the loader or file the row came from"),
    "dataset": ("name", "dataset the job trains on"),
    "time_per_iteration": ("s", "measured seconds per iteration (SenseTime)"),
    "gpu_util": ("%", "measured GPU utilisation (SenseTime)"),
    "max_parallelism": ("count", "most GPUs the job can use (SenseTime)"),
    "start_time": ("s", "first start in the trace, seconds from the trace's start"),
    "end_time": ("s", "end in the trace, seconds from the trace's start"),
    "gpu_time": ("GPU·s", "GPU-seconds the job used in the trace"),
    "task": ("name", "ONES task"),
    "target_acc": ("1", "ONES: accuracy the job trains to"),
    "patience": ("count", "ONES: epochs without improvement before stopping"),
    "lr": ("1", "ONES: learning rate"),
    "max_lr": ("1", "ONES: largest learning rate"),
    "epoch_size": ("count", "ONES: samples per epoch"),
    "size_class": ("label", "Ares size class by GPU time: S, M, L or XL"),
    "precision": ("label", "training precision: fp32 (null), amp or bf16"),
    "sharding": ("label", "none, zero1, zero2, zero3 or fsdp (null: the model's default)"),
    "model_parallel": ("count", "tensor-parallel degree within a node (null: 1)"),
}
