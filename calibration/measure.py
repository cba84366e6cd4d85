"""Measurements on real hardware: collective sweeps, per-model step times, nccl-tests logs.

torch is optional (`pip install 'cosim[gpu]'`); the functions import it when called and
raise a one-line `CosimError` saying what to install when it is missing.

Collectives (`sweep_collectives`) follow nccl-tests' conventions: `time` is the median over
`iters` timed calls after `warmup` untimed ones (the slowest rank's wall time per call);
`algbw = bytes / time`; `busbw = algbw · factor` with factor `2(n−1)/n` for all-reduce and
`(n−1)/n` for all-gather and reduce-scatter, where `bytes` is the buffer size a rank
sends/receives in total (for all-gather and reduce-scatter the full gathered buffer). One
process per rank (`torch.multiprocessing`), `torch.distributed` over TCP on localhost; group
sizes 2..N are sub-groups of ranks 0..g−1.

Compute (`measure_compute`): for each model and local batch, forward + backward + optimizer
step on synthetic inputs, `warmup` untimed iterations, then `repeats` timed ones (CUDA
events on a GPU, `perf_counter` on CPU); the median is the step time, p10/p90 its spread.
A batch that runs out of memory is recorded as such and larger batches are skipped.

Precision (`PRECISIONS`): ``fp32`` is PyTorch's default (matmuls in full fp32, cuDNN
convolutions allowed TF32 on Ampere and later: what a user who sets nothing gets); ``tf32``
also allows TF32 matmuls; ``bf16`` and ``fp16`` run forward and loss under
`torch.autocast` with that dtype (fp32 weights, gradients and optimizer, as DDP mixed
precision trains), ``fp16`` with a `GradScaler`. Each row records its precision and the TF32
flags it ran with.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import socket
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.torch_models import build, require_torch
from cosim.errors import InputError

log = logging.getLogger(__name__)

OPS = ("all_reduce", "all_gather", "reduce_scatter")
BUS_FACTOR = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n}
COLLECTIVE_COLUMNS = ["op", "backend", "world", "group_size", "nbytes", "time_s", "algbw_GBps", "busbw_GBps",
                      "iters", "device", "host", "source"]
#: precisions `measure_compute` can run (`--precision`), and what each sets
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
COMPUTE_COLUMNS = ["model", "gpu_type", "gpu_name", "precision", "local_bsz", "step_time_s", "step_p10_s", "step_p90_s",
                   "repeats", "status", "peak_mem_gb", "gpu_mem_gb", "sm_clock_mhz", "mem_clock_mhz",
                   "torch_version", "num_gpus", "source", "tf32_matmul", "tf32_cudnn"]


def size_sweep(spec: str) -> list[int]:
    """'8B..1GB' → powers of two from 8 bytes to 1 GiB (inclusive, ×2 steps); '1MB,4MB' → list."""
    from cosim.units import parse_bytes

    if ".." in spec:
        lo, hi = (parse_bytes(x.strip().replace("GB", "GiB").replace("MB", "MiB").replace("KB", "KiB"), "sizes")
                  for x in spec.split("..", 1))
        if lo <= 0 or hi < lo:
            raise InputError.at(field="sizes", expected="LOW..HIGH with 0 < LOW <= HIGH", got=spec)
        out, s = [], int(lo)
        while s <= hi:
            out.append(s)
            s *= 2
        return out
    return [int(parse_bytes(x.strip(), "sizes")) for x in spec.split(",") if x.strip()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, backend: str, port: int, sizes: list[int], ops: list[str],
            group_sizes: list[int], warmup: int, iters: int, out_dir: str) -> None:
    import torch
    import torch.distributed as dist

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo") if backend == "gloo" else None
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    cuda = backend == "nccl"
    dev = torch.device("cuda", rank % max(1, torch.cuda.device_count())) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    groups = {g: dist.new_group(list(range(g))) for g in group_sizes}  # every rank creates every group
    rows = []

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    for g in group_sizes:
        grp = groups[g]
        member = rank < g
        for op in ops:
            for nbytes in sizes:
                numel = max(1, nbytes // 4)
                numel -= numel % g if numel >= g else 0
                numel = max(numel, g) if op != "all_reduce" else numel
                if member:
                    if op == "all_reduce":
                        buf = torch.ones(numel, dtype=torch.float32, device=dev)
                        fn = lambda: dist.all_reduce(buf, group=grp)  # noqa: E731
                    elif op == "all_gather":
                        out = torch.empty(numel, dtype=torch.float32, device=dev)
                        inp = torch.ones(numel // g, dtype=torch.float32, device=dev)
                        fn = lambda: dist.all_gather_into_tensor(out, inp, group=grp)  # noqa: E731
                    else:
                        inp = torch.ones(numel, dtype=torch.float32, device=dev)
                        out = torch.empty(numel // g, dtype=torch.float32, device=dev)
                        fn = lambda: dist.reduce_scatter_tensor(out, inp, group=grp)  # noqa: E731
                    for _ in range(warmup):
                        fn()
                    sync()
                    times = []
                    for _ in range(iters):
                        dist.barrier(group=grp)
                        t0 = time.perf_counter()
                        fn()
                        sync()
                        times.append(time.perf_counter() - t0)
                    t = torch.tensor(times, dtype=torch.float64)
                    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=grp)  # slowest rank per call
                    if rank == 0:
                        med = float(statistics.median(t.tolist()))
                        nb = numel * 4
                        algbw = nb / med / 1e9
                        rows.append(dict(op=op, backend=backend, world=world, group_size=g, nbytes=nb, time_s=med,
                                         algbw_GBps=algbw, busbw_GBps=algbw * BUS_FACTOR[op](g), iters=iters))
        dist.barrier()
    if rank == 0:
        pd.DataFrame(rows).to_pickle(Path(out_dir) / "rows.pkl")
    dist.destroy_process_group()


def sweep_collectives(backend: str = "gloo", nprocs: int | None = None, sizes: list[int] | None = None,
                      ops: tuple[str, ...] = OPS, group_sizes: list[int] | None = None, warmup: int = 3,
                      iters: int = 10) -> pd.DataFrame:
    """Run the sweep with one process per rank; return the table (`COLLECTIVE_COLUMNS`)."""
    torch = require_torch()
    import torch.multiprocessing as mp

    if backend not in ("gloo", "nccl"):
        raise InputError.at(field="backend", expected="nccl or gloo", got=backend)
    if backend == "nccl" and not torch.cuda.is_available():
        raise InputError.at(field="backend", expected="a CUDA GPU for nccl (use --backend gloo on CPU)", got="no GPU")
    n = nprocs or (torch.cuda.device_count() if backend == "nccl" else min(os.cpu_count() or 2, 8))
    if n < 2:
        raise InputError.at(field="gpus", expected="at least 2 ranks", got=n)
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise InputError.at(field="ops", expected=", ".join(OPS), got=bad[0])
    sizes = sizes or size_sweep("8B..64MB")
    group_sizes = sorted(set(group_sizes or range(2, n + 1)))
    if any(g < 2 or g > n for g in group_sizes):
        raise InputError.at(field="group sizes", expected=f"between 2 and {n}", got=group_sizes)
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(n, backend, _free_port(), sizes, list(ops), group_sizes, warmup, iters, tmp),
                 nprocs=n, join=True)
        df = pd.read_pickle(Path(tmp) / "rows.pkl")
    df["device"] = _device_name(torch, backend)
    df["host"] = platform.node()
    df["source"] = f"cosim-{backend}"
    return df[COLLECTIVE_COLUMNS]


def _device_name(torch, backend: str) -> str:
    if backend == "nccl" or torch.cuda.is_available():
        try:
            return torch.cuda.get_device_name(0)
        except Exception:  # noqa: BLE001
            pass
    return f"cpu:{platform.processor() or platform.machine()}"


def _clocks() -> tuple[float, float]:
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return (float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
                float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)))
    except Exception:  # noqa: BLE001 - clocks are informative only
        return float("nan"), float("nan")


def parse_precisions(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    """'fp32,bf16' → ['fp32', 'bf16'] (known names only: `PRECISIONS`)."""
    items = [x.strip().lower() for x in (spec.split(",") if isinstance(spec, str) else spec) if str(x).strip()]
    bad = [x for x in items if x not in PRECISIONS]
    if bad or not items:
        raise InputError.at(field="precision", expected=", ".join(PRECISIONS), got=bad[0] if bad else spec)
    return list(dict.fromkeys(items))


def _precision_context(torch, precision: str, dev):
    """(autocast context factory, GradScaler or None) for `precision`; sets the TF32 flags."""
    import contextlib

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default for convolutions
    if precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        scaler = torch.amp.GradScaler(dev.type) if precision == "fp16" and dev.type == "cuda" else None
        return (lambda: torch.autocast(dev.type, dtype=dtype)), scaler
    return contextlib.nullcontext, None


def measure_compute(models: list[str], batches: list[int], device: str | None = None, warmup: int = 5,
                    repeats: int = 20, gpu_type: str | None = None,
                    precisions: tuple[str, ...] | list[str] = ("fp32",)) -> pd.DataFrame:
    """Step times of forward + backward + optimizer per (model, precision, local batch) on one device."""
    precisions = parse_precisions(list(precisions))
    torch = require_torch()
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = dev.type == "cuda"
    if cuda:
        props = torch.cuda.get_device_properties(dev)
        gpu_name, mem_gb = props.name, props.total_memory / 1e9
    else:
        gpu_name, mem_gb = f"cpu:{platform.processor() or platform.machine()}", float("nan")
    if gpu_type is None:
        from calibration import zoo

        try:
            gpu_type = zoo.resolve_gpu(gpu_name)
        except Exception:  # noqa: BLE001
            gpu_type = gpu_name
    rows = []
    for name in models:
        for prec in precisions:
            rows += _measure_model(torch, name, sorted(batches), dev, warmup, repeats, gpu_type, gpu_name, mem_gb, prec)
    return pd.DataFrame(rows).reindex(columns=COMPUTE_COLUMNS)


def compute_provenance(df: pd.DataFrame, warmup: int) -> dict:
    """What a compute table's file metadata records: device, torch, precisions, harness."""
    return {"gpu_names": sorted(df["gpu_name"].dropna().astype(str).unique().tolist()),
            "torch_version": sorted(df["torch_version"].dropna().astype(str).unique().tolist()),
            "precisions": list(dict.fromkeys(df["precision"].astype(str))),
            "harness": "cosim calibrate compute: synthetic GPU-resident batches, forward + backward + optimizer, "
                       f"{warmup} warm-up iterations, median of {int(df['repeats'].max())} timed "
                       "(CUDA events on a GPU, wall clock on CPU)",
            "host": platform.node()}


def _measure_model(torch, name: str, batches: list[int], dev, warmup: int, repeats: int, gpu_type: str,
                   gpu_name: str, mem_gb: float, prec: str) -> list[dict]:
    cuda = dev.type == "cuda"
    autocast, scaler = _precision_context(torch, prec, dev)
    built = build(name)
    model = built.module.to(dev).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = (torch.optim.Adam(params, lr=1e-4) if built.optimizer == "adam"
           else torch.optim.SGD(params, lr=1e-3, momentum=0.9))
    rows: list[dict] = []
    oom = False
    for b in batches:
        base = dict(model=name, gpu_type=gpu_type, gpu_name=gpu_name, precision=prec, local_bsz=int(b),
                    repeats=repeats, gpu_mem_gb=mem_gb, torch_version=torch.__version__, num_gpus=1,
                    source="cosim-compute", tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32),
                    tf32_cudnn=bool(torch.backends.cudnn.allow_tf32))
        if oom:
            rows.append(dict(base, status="oom", step_time_s=np.nan, step_p10_s=np.nan, step_p90_s=np.nan))
            continue
        try:
            args, tgt = built.make_batch(int(b), dev)

            def step():
                opt.zero_grad(set_to_none=True)
                with autocast():
                    loss = built.loss(model(*args), tgt)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    loss.backward()
                    opt.step()

            if cuda:
                torch.cuda.reset_peak_memory_stats(dev)
            for _ in range(warmup):
                step()
            times = []
            for _ in range(repeats):
                if cuda:
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    step()
                    e1.record()
                    e1.synchronize()
                    times.append(e0.elapsed_time(e1) / 1e3)
                else:
                    t0 = time.perf_counter()
                    step()
                    times.append(time.perf_counter() - t0)
            sm, memclk = _clocks() if cuda else (np.nan, np.nan)
            rows.append(dict(base, status="ok", step_time_s=float(np.median(times)),
                             step_p10_s=float(np.percentile(times, 10)), step_p90_s=float(np.percentile(times, 90)),
                             peak_mem_gb=(torch.cuda.max_memory_allocated(dev) / 1e9) if cuda else np.nan,
                             sm_clock_mhz=sm, mem_clock_mhz=memclk))
            log.info("%s %s b=%d: %.4f s", name, prec, b, rows[-1]["step_time_s"])
        except torch.OutOfMemoryError:
            oom = True
            rows.append(dict(base, status="oom", step_time_s=np.nan, step_p10_s=np.nan, step_p90_s=np.nan))
        finally:
            args = tgt = None
            if cuda:
                torch.cuda.empty_cache()
    model = opt = built = None  # free GPU memory before the next model
    if cuda:
        torch.cuda.empty_cache()
    return rows


# ------------------------------------------------------------------ nccl-tests logs
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+|-)\s+(-?\d+|-)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")
_OPS_IN_NAME = {"all_reduce": "all_reduce", "allreduce": "all_reduce", "all_gather": "all_gather",
                "allgather": "all_gather", "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter"}


def import_nccl_tests(log_path: str | Path, op: str | None = None) -> pd.DataFrame:
    """Parse an nccl-tests `*_perf` log (out-of-place columns) into `COLLECTIVE_COLUMNS`.

    The collective comes from `op`, else from the binary name in the log or the file name
    (`all_reduce_perf` …). Ranks = the number of `#  Rank` lines (or nGpus × nThread)."""
    p = Path(log_path)
    try:
        text = p.read_text(errors="replace")
    except FileNotFoundError as exc:
        raise InputError.at(p, detail="file not found") from exc
    if op is None:
        hay = (text[:2000] + " " + p.name).lower()
        for k, v in _OPS_IN_NAME.items():
            if k in hay:
                op = v
                break
        else:
            op = "all_reduce"
    if op not in OPS:
        raise InputError.at(p, field="op", expected=", ".join(OPS), got=op)
    ranks = len(re.findall(r"^#\s+Rank\s+\d+", text, flags=re.M))
    if ranks == 0:
        m = re.search(r"nThread\s+(\d+)\s+nGpus\s+(\d+)", text)
        ranks = int(m.group(1)) * int(m.group(2)) if m else 0
    device = (re.findall(r"#\s+Rank\s+0 .*?device\s+\d+\s+\[[^\]]*\]\s+(.+)$", text, flags=re.M) or ["unknown"])[0]
    rows = []
    for i, line in enumerate(text.splitlines(), start=1):
        m = _ROW.match(line)
        if not m:
            continue
        nbytes, t_us, algbw, busbw = int(m.group(1)), float(m.group(6)), float(m.group(7)), float(m.group(8))
        if t_us <= 0:
            raise InputError.at(p, row=i, field="time", expected="a positive time (us)", got=m.group(6))
        rows.append(dict(op=op, backend="nccl", world=ranks, group_size=ranks, nbytes=nbytes, time_s=t_us * 1e-6,
                         algbw_GBps=algbw, busbw_GBps=busbw, iters=0, device=device.strip(), host="",
                         source="nccl-tests"))
    if not rows:
        raise InputError.at(p, expected="nccl-tests result rows (size count type redop root time algbw busbw ...)",
                            got="none")
    if ranks < 2:
        raise InputError.at(p, expected="a run with at least 2 ranks ('#  Rank' lines)", got=ranks)
    return pd.DataFrame(rows, columns=COLLECTIVE_COLUMNS)
