"""What a run reads besides its configuration: the trace (`load_trace`: synthetic specs, trace
files through the trace cache) and a capacity-change file (`load_capacity`). The runner
(`experiments.runner`) calls them before anything is simulated, so bad input fails first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosim.errors import InputError

if TYPE_CHECKING:
    from experiments.runner import RunConfig


def load_trace(config: RunConfig) -> Any:
    """`synth:<like>:<jobs>[:<window>]` → traces.synth; a Parquet file → traces.io.read_jobs; any
    other file → traces.load. Then traces.workload.assemble fills models and batches.

    A file's assembled table goes through the trace cache (`traces.cache`) and comes back as
    columns (name → numpy array), read without pandas on every run after the first; the other
    specs give the DataFrame. `simcore.prepare.build_jobs` takes either."""
    spec = config.trace
    if spec.startswith(("synth:", "dally:", "aryl:")):
        from traces import workload

        if spec.startswith("synth:"):
            from traces import synth

            df = synth.from_spec(spec, config.seed)
        elif spec.startswith("dally:"):  # the Dally paper's SenseTime batch / Poisson workloads
            from traces import dally

            df = dally.from_spec(spec, config.seed)
        else:  # Aryl's Philly-derived workloads (testbed, Basic/Advanced/Ideal at a scale)
            from traces import aryl

            df = aryl.from_spec(spec, config.seed)
        return workload.assemble(df, config.seed, max_gpus=config.max_gpus)
    path = Path(spec)
    if not path.exists():
        raise InputError.at(spec, expected="an existing trace file or synth:<like>:<jobs>")
    from traces import cache

    opts = "" if config.max_gpus == "2x" else f"max_gpus={config.max_gpus}"
    return cache.load(path, config.seed, lambda: _load_file(path, config.seed, config.max_gpus), opts)


def _load_file(path: Path, seed: int, max_gpus: str = "2x") -> Any:
    """The assembled DataFrame of a trace file (what `traces.cache` stores)."""
    from traces import workload

    if path.suffix == ".parquet":
        from traces import io as tio

        df = tio.read_jobs(path)
    else:
        import traces

        df = traces.load(path)
    return workload.assemble(df, seed, max_gpus=max_gpus)


def load_capacity(path: str | Path) -> tuple[tuple[float, int, bool], ...]:
    """Capacity changes from a CSV with columns `time_s,node,online` (online: 1/0/true/false):
    nodes leaving and joining (Aryl's loaned servers, FFT's churn). Times are finite seconds
    ≥ 0 and nodes integers ≥ 0, in ASCII digits; the cluster bounds the node ids in `run`."""
    from cosim.validate import parse_number, read_csv_columns

    p = Path(path)
    out = []
    for i, r in enumerate(read_csv_columns(p, ("time_s", "node", "online")), start=1):
        t = parse_number(r["time_s"], "time_s", source=p, row=i, minimum=0.0)
        n = parse_number(r["node"], "node", source=p, row=i, integer=True, minimum=0)
        ov = r["online"].strip().lower()
        if ov not in ("1", "0", "true", "false", "1.0", "0.0"):
            raise InputError.at(p, row=i, field="online", expected="1/0/true/false", got=r["online"])
        out.append((t, n, ov in ("1", "true", "1.0")))
    return tuple(out)
