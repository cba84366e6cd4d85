"""The Dally paper's SenseTime workloads (seeds/notes/dally.md §5): batch and Poisson.

"We randomly select 500 DL/DDL jobs for batch and about 400 DL/DDL jobs for Poisson workloads
from the trace, which utilize the models specified in Table I" (Sec. V). The authors' own
samples are in the shared data (`traces/sensetime/`): `sense_500jobs_0start0arrival-withBert.json`
(500 jobs, all at t = 0) and `sense_500jobs_poisson_1proc-week.json` (411 multi-GPU jobs,
≈ 59 jobs/day). Spec strings, usable wherever a trace is (`cosim simulate --trace`, catalogs):

    dally:batch[:N]                 seed 0: the authors' batch file; seed k > 0: N jobs (default
                                    500) drawn without replacement from the pool, all at t = 0
    dally:poisson[:N[:PER_DAY]]     seed 0: the authors' 1proc-week file; seed k > 0: N multi-GPU
                                    jobs (default 411) from the pool, Poisson arrivals at PER_DAY
                                    jobs/day (default 59, the 1proc-week rate [I])

Time basis (`per_gpu_iterations`, default True, the authors' simulator): the records'
`time_per_iteration × total_iterations` is the job's `duration` (to 0.7 %), but ArtISt-sim counts
the iterations per GPU and retires N of them per step on N GPUs (notes §3.4), so an N-GPU job
alone on a machine runs duration / N × (1 + r). The builders divide `time_per_iteration` (and
`duration`) by the GPU count to replay that; append ``+duration`` to a spec (``dally:batch+duration``)
to replay the trace duration itself on N GPUs (cosim's `sensetime` convention: 6.3× the GPU-time
on the batch set, 82,827 vs 13,054 GPU-hours).

The pool is every distinct SenseTime record (by job id) of the `sense_500jobs_*` files whose
model is one of Table I's (after the footnote-2 mapping EfficientNet → AlexNet). The rows are
the `sensetime` loader's (`traces.formats.sensetime`), so the work is the trace's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cosim.errors import InputError

BATCH_FILE = "sense_500jobs_0start0arrival-withBert.json"
POISSON_FILE = "sense_500jobs_poisson_1proc-week.json"
#: Table I's models as the zoo names them, and the footnote-2 substitution
TABLE_I_MODELS = ("vgg11", "alexnet", "mobilenet_v3", "resnet18", "resnet50", "bert_large")
MODEL_MAP = {"efficientnet": "AlexNet"}
#: the SenseTime records' spellings of Table I's models (lower case, without - and _), which the zoo
#: resolves to `TABLE_I_MODELS` (the loader already maps BERT to bert_large)
TABLE_I_SPELLINGS = frozenset({"vgg", "vgg11", "alexnet", "mobilenetv3", "resnet18", "resnet50", "bert",
                               "bertlarge"})
POISSON_PER_DAY = 59.0
SPEC_HELP = "dally:batch[:N] or dally:poisson[:N[:PER_DAY]], optionally +duration"


def _dir(shared: Path | None) -> Path:
    from cosim.paths import shared_data_dir

    return Path(shared) / "traces" / "sensetime" if shared is not None else shared_data_dir("traces/sensetime")


def _read(path: Path) -> pd.DataFrame:
    import traces

    df = traces.load(path, "sensetime")
    df["model"] = [MODEL_MAP.get(str(m).lower(), m) for m in df["model"]]
    return df


def _table_i(df: pd.DataFrame) -> pd.DataFrame:
    keep = [str(m).lower().replace("-", "").replace("_", "") in TABLE_I_SPELLINGS for m in df["model"]]
    return df[keep]


def pool(shared: Path | None = None) -> pd.DataFrame:
    """Distinct records (by job id, first file wins) of every `sense_500jobs_*` file, Table I models only."""
    d = _dir(shared)
    files = sorted(d.glob("sense_500jobs_*.json"))
    if not files:
        raise InputError.at(d, expected="the SenseTime job files sense_500jobs_*.json (Dally's workloads)")
    df = pd.concat([_read(f) for f in files], ignore_index=True).drop_duplicates("job_id", keep="first")
    return _table_i(df).sort_values("job_id", kind="stable").reset_index(drop=True)


def batch(seed: int, num_jobs: int = 500, shared: Path | None = None) -> pd.DataFrame:
    """The batch workload: `num_jobs` jobs all arriving at t = 0 (seed 0: the authors' file)."""
    if seed == 0 and num_jobs == 500:
        return _table_i(_read(_dir(shared) / BATCH_FILE)).reset_index(drop=True)
    p = pool(shared)
    if num_jobs > len(p):
        raise InputError.at(field="dally:batch jobs", expected=f"at most {len(p)} (the pool)", got=num_jobs)
    rng = np.random.default_rng(seed)
    df = p.iloc[np.sort(rng.choice(len(p), num_jobs, replace=False))].copy()
    df["submit_time"] = 0.0
    return df.reset_index(drop=True)


def poisson(seed: int, num_jobs: int = 411, per_day: float = POISSON_PER_DAY,
            shared: Path | None = None) -> pd.DataFrame:
    """The Poisson workload: multi-GPU jobs, exponential gaps of mean 86400 / `per_day` s
    (seed 0 with the defaults: the authors' 1proc-week file)."""
    if per_day <= 0:
        raise InputError.at(field="dally:poisson rate", expected="a positive number of jobs per day", got=per_day)
    if seed == 0 and num_jobs == 411 and per_day == POISSON_PER_DAY:
        return _table_i(_read(_dir(shared) / POISSON_FILE)).reset_index(drop=True)
    p = pool(shared)
    p = p[p["num_gpus"] > 1]
    if num_jobs > len(p):
        raise InputError.at(field="dally:poisson jobs", expected=f"at most {len(p)} multi-GPU jobs", got=num_jobs)
    rng = np.random.default_rng(seed)
    df = p.iloc[np.sort(rng.choice(len(p), num_jobs, replace=False))].copy()
    df = df.iloc[rng.permutation(num_jobs)]
    df["submit_time"] = np.cumsum(rng.exponential(86400.0 / per_day, num_jobs)) - 0.0
    df["submit_time"] -= df["submit_time"].min()
    return df.sort_values("submit_time", kind="stable").reset_index(drop=True)


def per_gpu_iterations(df: pd.DataFrame) -> pd.DataFrame:
    """The authors' time basis: iterations counted per GPU, so N GPUs retire the trace's
    iterations N times faster (time per iteration and duration divided by the GPU count)."""
    df = df.copy()
    n = df["num_gpus"].to_numpy(np.float64)
    df["time_per_iteration"] = df["time_per_iteration"].to_numpy(np.float64) / n
    if "duration" in df.columns:
        df["duration"] = df["duration"].to_numpy(np.float64) / n
    return df


def from_spec(spec: str, seed: int, shared: Path | None = None) -> pd.DataFrame:
    """A workload from `dally:batch[:N]` / `dally:poisson[:N[:PER_DAY]]`, optionally with a
    ``+duration`` suffix (see the module docstring)."""
    spec = str(spec)
    trace_time = spec.endswith("+duration")
    if trace_time:
        spec = spec[: -len("+duration")]
    parts = spec.split(":")
    if len(parts) < 2 or parts[0] != "dally" or parts[1] not in ("batch", "poisson") or len(parts) > 4 \
            or (parts[1] == "batch" and len(parts) > 3):
        raise InputError.at(field="trace", expected=SPEC_HELP, got=spec)
    from cosim.validate import MAX_SYNTH_JOBS, parse_number

    n = parse_number(parts[2], "trace jobs", integer=True, minimum=1, maximum=MAX_SYNTH_JOBS) if len(parts) > 2 \
        else (500 if parts[1] == "batch" else 411)
    rate = parse_number(parts[3], "trace rate", minimum=1e-9) if len(parts) > 3 else POISSON_PER_DAY
    df = batch(seed, n, shared) if parts[1] == "batch" else poisson(seed, n, rate, shared)
    return df if trace_time else per_gpu_iterations(df)
