"""Model zoo: every model the seed papers and traces name, with what the simulator needs.

`resolve(name)` maps any spelling used by the traces and papers (Pollux/Sia `application`
names such as `cifar10`, SenseTime `ResNet50`, ONES `inception_v3`, Gavel `ResNet-18`,
FFT `GPT-neo`) to one canonical name; `get(name)` returns a frozen `ModelSpec`;
`compute_time_s(model, gpu_type, local_batch)` gives forward + backward + optimizer time of
one iteration on one GPU.

Where the numbers come from:
- parameter tensors, FLOPs and activation bytes: `data/zoo_tensors.json`, read once from the
  real model definitions with torch (`python -m calibration.extract_zoo`);
- names, datasets, default batches, optimizers and GPU datasheets: `data/zoo.json`;
- compute-time curves: `data/compute_curves.json`, the measured single-GPU curves of every
  source (Pollux/Sia T4 / A100 / RTX 2080 Ti, Gavel K80 / P100 / V100, our H100 and H200
  runs) with their host regime and precision (`calibration.compute_fit`), split into a device
  part and a host part by `calibration.device_model` (fitted on all of them at once);
  `compute_curve(model, "gpu+host")` is the device part plus that host's part, the measured
  curve itself where that host measured the pair. The curve's source says which
  (`measured:<host>`, `factor:<gpu>`, `roofline`).
- precision: ``name@amp`` / ``name@bf16`` (`with_precision`, the job's `precision` column) is
  the model trained with autocast: measured curves where they exist, else the fp32 per-sample
  part divided by the model's measured gain (`calibration.device_model.precision_gain`),
  activations in half precision, fp32 gradients.
- GPU types: the shipped table in `data/zoo.json`, extended by `register_gpu_types` /
  `load_gpu_types` (`calibration.gpu_types`: a user's file or a cluster's ``[gpu_types]``).
- ImageNet and CIFAR variants are distinct models: ``resnet18`` is torchvision's 224×224
  ResNet-18 (Dally, SenseTime, ImageNet jobs), ``resnet18_cifar`` the 32×32 one (Pollux/Sia's
  ``cifar10``, ONES ``resnet18`` on cifar); likewise ``vgg16_cifar``, ``googlenet_cifar``.

Bert: Pollux/Sia's `bert` job is a SQuAD fine-tune of BERT-base: their RTX 2080 Ti (11 GB)
rows reach local batch 12 at sequence 384 in fp32, which BERT-large does not fit, and the T4
per-sample slope (0.06 s/sample) is about 4 effective TFLOP/s for BERT-base but would be 12
TFLOP/s (above the T4's 8.1 fp32 peak) for BERT-large. So `bert` → `bert_base`; the
SenseTime loader maps its ``BERT`` to ``bert_large`` (Dally's model).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from calibration import device_model as _dm
from calibration import sharding as _sh
from calibration.device_model import ComputeCurve
from calibration.gpu_types import GpuType
from cosim.errors import UnknownNameError

DATA = Path(__file__).resolve().parent / "data"

#: PyTorch DDP defaults: `bucket_cap_mb=25` (MiB) and a first bucket of 1 MiB
#: (`dist._DEFAULT_FIRST_BUCKET_BYTES`), filled with gradients in reverse registration order.
DDP_BUCKET_CAP_BYTES = 25 * 2**20
DDP_FIRST_BUCKET_BYTES = 1 * 2**20
BYTES_PER_GRAD = 4  # fp32 gradients (all measured sets train in fp32; mixed-precision models use 2)
#: optimizer state words per parameter, besides weight and gradient
OPTIMIZER_STATE_WORDS = {"sgd": 1, "adam": 2}
#: CUDA context + cuDNN/cuBLAS workspaces + allocator slack (GB), the batch-independent
#: overhead a framework process holds on every GPU.
FRAMEWORK_OVERHEAD_GB = 1.0
#: share of GPU memory usable by tensors (the caching allocator fragments the rest).
USABLE_MEMORY_FRAC = 0.92
#: default start of gradient communication as a fraction of the compute phase: backward is
#: about 2/3 of forward+backward FLOPs and DDP can launch the first bucket once backward
#: has produced it, so communication can start after the forward third. A calibration
#: profile's `[overlap] overlap_start_frac` (`cosim calibrate fit`, read with
#: `calibration.fit.read_profile`) is the measured alternative; on the Pollux/Sia sets it
#: fits 0.88-1.0 (adaptdl exposes most of its all-reduce).
DEFAULT_OVERLAP_START_FRAC = 1.0 / 3.0


def ddp_buckets(tensor_bytes: np.ndarray, cap_bytes: float = DDP_BUCKET_CAP_BYTES,
                first_cap_bytes: float = DDP_FIRST_BUCKET_BYTES) -> np.ndarray:
    """Bucket sizes (bytes, float64, in launch order) as PyTorch DDP forms them.

    Gradients are taken in reverse registration order (the order backward produces them);
    a bucket closes as soon as its size reaches its cap, the first cap being
    `first_cap_bytes` and later ones `cap_bytes`. A tensor larger than the cap gets a bucket
    of its own size (DDP never splits a tensor).
    """
    out: list[float] = []
    cur, limit = 0.0, float(first_cap_bytes)
    for b in np.asarray(tensor_bytes, dtype=np.float64)[::-1]:
        cur += float(b)
        if cur >= limit:
            out.append(cur)
            cur, limit = 0.0, float(cap_bytes)
    if cur > 0:
        out.append(cur)
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    display: str
    task: str
    dataset: str
    optimizer: str
    params: int
    grad_bytes: float
    tensor_bytes: np.ndarray = field(repr=False)  # float64, registration order
    bucket_bytes: np.ndarray = field(repr=False)  # float64, DDP launch order, 25 MiB cap
    flops_per_sample: float = 0.0  # training (forward + backward)
    activation_bytes_per_sample: float = 0.0
    default_global_batch: int = 32
    overlap_start_frac: float = DEFAULT_OVERLAP_START_FRAC
    precision: str = "fp32"  # "fp32" or "mixed" (fp16/bf16 compute, fp32 master weights)
    aliases: tuple[str, ...] = ()
    autocast: str = ""  # "" (fp32) | "amp" | "bf16": the job's `precision` attribute (`with_precision`)
    #: data-parallel sharding (`calibration.sharding`): none | zero1 | zero2 | zero3 (= FSDP)
    sharding: str = "none"
    model_parallel: int = 1  # tensor-parallel degree (GPUs of one node sharing each layer)
    #: transformer shape (0 when not a transformer): what tensor-parallel traffic is made of
    layers: int = 0
    hidden: int = 0
    seq_len: int = 0
    checkpointing: bool = False

    @property
    def state_bytes_per_param(self) -> float:
        """Weights + gradients + optimizer state per parameter. fp32: 4 bytes per word;
        mixed precision with Adam: fp16 weights and grads, fp32 master, m and v = 16 bytes."""
        return sum(self.state_split)

    @property
    def state_split(self) -> tuple[float, float, float]:
        """(weight, gradient, optimizer) bytes per parameter: ZeRO's 2 + 2 + K with K = 4 + 4·words
        in mixed precision (fp32 master copy + state), 4 + 4 + 4·words in fp32."""
        words = OPTIMIZER_STATE_WORDS[self.optimizer]
        if self.precision == "mixed":
            return 2.0, 2.0, 4.0 + 4.0 * words
        return 4.0, 4.0, 4.0 * words

    @property
    def sharded(self) -> bool:
        """Memory depends on the GPU count (ZeRO/FSDP or tensor parallelism)."""
        return self.sharding != "none" or self.model_parallel > 1

    @property
    def dp_comm_multiplier(self) -> float:
        """Data-parallel traffic relative to an all-reduce of the gradients (ZeRO-3: 1.5)."""
        return _sh.DP_COMM_MULTIPLIER[self.sharding]

    def static_memory_gb_at(self, n_gpus: int = 1) -> float:
        """Batch-independent memory per GPU (GB) when the job runs on `n_gpus`: its share of
        weights, gradients and optimizer state (`calibration.sharding`), ZeRO-3's gathered
        buffers, and the framework overhead."""
        w, g, k = self.state_split
        t = self.model_parallel
        b = _sh.state_bytes_per_gpu(self.params, w, g, k, self.sharding, max(1, int(n_gpus)) // t, t)
        if self.sharding == "zero3":
            block = 12.0 * self.hidden ** 2 if self.hidden else float(self.tensor_bytes.max(initial=0.0)) / g
            b += _sh.zero3_working_bytes(block, w, t)
        return b / 1e9 + FRAMEWORK_OVERHEAD_GB

    @property
    def static_memory_gb(self) -> float:
        """Weights + gradients + optimizer state + framework overhead (batch-independent), on one GPU."""
        return self.static_memory_gb_at(1)

    def memory_gb(self, local_batch: int, n_gpus: int = 1) -> float:
        """Training memory footprint per GPU at `local_batch` samples per data-parallel rank (GB)."""
        return self.static_memory_gb_at(n_gpus) + self.activation_bytes_per_sample * float(local_batch) / 1e9

    def max_local_batch(self, gpu_type: str | float, n_gpus: int = 1) -> int:
        """Largest local batch that fits one GPU (`gpu_type` name or memory in GB) when the job
        runs on `n_gpus` (sharded state shrinks with it); 0 if none."""
        mem = float(gpu_type) if isinstance(gpu_type, (int, float)) else get_gpu(gpu_type).mem_gb
        free = mem * USABLE_MEMORY_FRAC - self.static_memory_gb_at(n_gpus)
        if free <= 0:
            return 0
        if self.activation_bytes_per_sample <= 0:
            return 1 << 16
        return int(max(0, math.floor(free * 1e9 / self.activation_bytes_per_sample)))

    def tp_allreduces(self) -> int:
        """Tensor-parallel all-reduces per micro-batch (0 without tensor parallelism)."""
        if self.model_parallel <= 1:
            return 0
        return _sh.tp_allreduces_per_micro_batch(self.layers, self.checkpointing)

    def tp_message_bytes(self, micro_batch: int) -> float:
        """Bytes of one tensor-parallel all-reduce at `micro_batch` samples."""
        bpv = 2.0 if self.precision == "mixed" or self.autocast else 4.0
        return micro_batch * _sh.tp_message_bytes_per_sample(self.seq_len, self.hidden, bpv)

    def buckets(self, cap_bytes: float = DDP_BUCKET_CAP_BYTES) -> np.ndarray:
        return ddp_buckets(self.tensor_bytes, cap_bytes)

    def compute_source(self, gpu_type: str) -> str:
        return compute_curve(self.name, gpu_type).source


# ------------------------------------------------------------------ loading
@functools.lru_cache(maxsize=1)
def _meta() -> dict:
    return json.loads((DATA / "zoo.json").read_text())


@functools.lru_cache(maxsize=1)
def _tensors() -> dict:
    return json.loads((DATA / "zoo_tensors.json").read_text())


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-/]+", "", str(name).strip().lower())


@functools.lru_cache(maxsize=1)
def _alias_map() -> dict[str, str]:
    out: dict[str, str] = {}
    for canon, m in _meta()["models"].items():
        for a in (canon, *m.get("aliases", ())):
            out[_norm(a)] = canon
    return out


#: GPU types added by the user for this process (`register_gpu_types`): {name: fields}
_USER_GPU_TYPES: dict[str, dict] = {}


def _gpu_table() -> dict[str, dict]:
    """The shipped GPU types (zoo.json) with the user's added or replaced ones."""
    base = {k: v for k, v in _meta()["gpu_types"].items() if not k.startswith("_")}
    return {**base, **_USER_GPU_TYPES}


@functools.lru_cache(maxsize=1)
def _gpu_alias_map() -> dict[str, str]:
    out: dict[str, str] = {}
    for canon, g in _gpu_table().items():
        for a in (canon, *g.get("aliases", ())):
            out[_norm(a)] = canon
    return out


def register_gpu_types(table: dict, source: object = "gpu types") -> list[str]:
    """Add (or replace) GPU types for this process from `table` ({name: fields}, the format of
    `calibration.gpu_types`), validated against the types already known; returns their names."""
    from calibration import gpu_types as _gt

    taken = {k: v for k, v in _gpu_alias_map().items() if v not in {_gt.norm(n) for n in table}}
    clean = _gt.check_table(table, source, taken)
    _USER_GPU_TYPES.update(clean)
    for f in (_gpu_alias_map, get_gpu, compute_curve, device_model):
        f.cache_clear()
    return sorted(clean)


def load_gpu_types(path) -> list[str]:
    """`register_gpu_types` from a GPU-types TOML file (``--gpu-types FILE``)."""
    from calibration import gpu_types as _gt

    return register_gpu_types(_gt.read_file(path), path)


def reset_gpu_types() -> None:
    """Forget the GPU types added with `register_gpu_types` (back to the shipped table)."""
    _USER_GPU_TYPES.clear()
    for f in (_gpu_alias_map, get_gpu, compute_curve, device_model):
        f.cache_clear()


def known_models() -> list[str]:
    return sorted(_meta()["models"])


def gpu_types() -> list[str]:
    return sorted(_gpu_table())


#: job `precision` spellings → the variant tag of the model name ("" = fp32, the measured form).
PRECISIONS = {"fp32": "", "float32": "", "tf32": "", "amp": "amp", "fp16": "amp", "float16": "amp",
              "mixed": "amp", "bf16": "bf16", "bfloat16": "bf16"}


def with_precision(model: str, precision: str | None) -> str:
    """The zoo name of `model` trained at `precision` (None/"" = fp32): ``resnet50@amp``."""
    canon, _, par = resolve(model).partition("#")
    canon = canon.split("@")[0]
    p = "" if precision is None else str(precision).strip().lower()
    if p not in PRECISIONS and p != "":
        raise UnknownNameError("precision", str(precision), sorted(PRECISIONS))
    out = f"{canon}@{PRECISIONS[p]}" if p and PRECISIONS[p] else canon
    return f"{out}#{par}" if par else out


def with_parallelism(model: str, sharding: str | None = None, model_parallel: int | None = None) -> str:
    """The zoo name of `model` run with `sharding` (none | zero1 | zero2 | zero3 | fsdp; None/"":
    the model's default, zoo.json `sharding`) and tensor-parallel degree `model_parallel`
    (None/1: none): ``opt_6.7b#zero2.tp2``. The model's own default is the untagged name."""
    base = resolve(model).partition("#")[0]
    default = _meta()["models"][base.split("@")[0]].get("sharding", "none")
    try:
        sh = default if sharding is None or not str(sharding).strip() else _sh.canonical_sharding(sharding)
    except ValueError:
        raise UnknownNameError("sharding", str(sharding), sorted(_sh.SHARDING_ALIASES)) from None
    try:
        tp = 1 if model_parallel is None else int(model_parallel)
    except (TypeError, ValueError):
        tp = 0
    if tp < 1:
        raise UnknownNameError("model_parallel", str(model_parallel), ["an integer >= 1"])
    if sh == default and tp == 1:
        return base
    return f"{base}#{sh}" + (f".tp{tp}" if tp > 1 else "")


def _parse_parallelism(tag: str) -> tuple[str, int]:
    sh, _, tp = tag.partition(".tp")
    return sh, int(tp) if tp else 1


def resolve(name: str) -> str:
    """Canonical zoo name for any known spelling (``name@precision`` keeps its precision tag:
    `with_precision`; ``name#sharding[.tpN]`` its parallelism: `with_parallelism`);
    `UnknownNameError` otherwise."""
    if "#" in str(name):
        base, tag = str(name).rsplit("#", 1)
        try:
            sh, tp = _parse_parallelism(tag)
        except ValueError:
            raise UnknownNameError("model_parallel", tag, ["tpN with N an integer"]) from None
        return with_parallelism(base, sh, tp)
    if "@" in str(name):
        base, prec = str(name).rsplit("@", 1)
        return with_precision(base, prec)
    key = _norm(name)
    canon = _alias_map().get(key)
    if canon is None:
        raise UnknownNameError("model", str(name), known_models())
    return canon


def resolve_gpu(name: str) -> str:
    """Canonical GPU type for names like 'A100-80GB', 'NVIDIA H100 80GB HBM3', 'RTX2080Ti'."""
    amap = _gpu_alias_map()
    name = str(name).partition("+")[0]  # ``gpu+host``: the host regime is not part of the type
    key = _norm(name)
    if key in amap:
        return amap[key]
    drop = re.compile(r"^(nvidia|tesla|geforce|pcie|sxm\d*|nvl|hbm\d*e?|\d+gb|gpu)$")
    tokens = [t for t in re.split(r"[\s_\-/]+", str(name).strip().lower()) if t and not drop.match(t)]
    if "".join(tokens) in amap:
        return amap["".join(tokens)]
    raise UnknownNameError("GPU type", str(name), gpu_types())


@functools.lru_cache(maxsize=None)
def get_gpu(name: str) -> GpuType:
    """The `GpuType` of any name or alias."""
    canon = resolve_gpu(name)
    g = _gpu_table()[canon]
    return GpuType(canon, g.get("display", canon), float(g["mem_gb"]), float(g["peak_tflops"]),
                   float(g["tensor_tflops"]), float(g["mem_bw_GBps"]), g["source"], float(g.get("tf32_tflops", 0.0)),
                   float(g.get("speed_fp32", 0.0)), float(g.get("amp_speedup", 1.0)),
                   resolve_gpu(g["benchmark_ref"]) if g.get("benchmark_ref") else "", float(g.get("benchmark_ratio", 0.0)),
                   g.get("benchmark_source", ""))


def _transformer_activation_bytes(arch: dict, checkpointing: bool, bytes_per_value: float, tp: int = 1) -> float:
    """Activation bytes per sample of a transformer stack (Korthikanti et al. 2022, eq. 1):
    a layer keeps T·(34·h + 5·a·T) half-precision bytes, i.e. T·(17·h + 2.5·a·T) values.
    With per-layer activation checkpointing only each layer's input (T·h values) is kept,
    plus one layer's full set during its recomputation. Tensor parallelism of degree `tp`
    splits the per-layer set over its GPUs; checkpointed inputs stay replicated."""
    h, layers, heads, seq = (float(arch[k]) for k in ("hidden", "layers", "heads", "seq_len"))  # noqa: E501
    per_layer = seq * (17.0 * h + 2.5 * heads * seq) * bytes_per_value / tp
    if checkpointing:
        return layers * seq * h * bytes_per_value + per_layer
    return layers * per_layer


@functools.lru_cache(maxsize=None)
def get(name: str) -> ModelSpec:
    """The frozen `ModelSpec` of `name` (any alias; ``name@amp``/``@bf16``: the precision variant,
    whose saved activations are half-precision, gradients and optimizer state as in fp32:
    autocast keeps fp32 weights, so DDP all-reduces fp32 gradients)."""
    canon = resolve(name)
    if "#" in canon:  # a parallelism variant (`with_parallelism`): memory and traffic per GPU
        base_name, tag = canon.rsplit("#", 1)
        base = get(base_name)
        sh, tp = _parse_parallelism(tag)
        act = base.activation_bytes_per_sample / tp
        if base.hidden:  # transformer: only the per-layer working set splits (`_transformer_activation_bytes`)
            arch = dict(hidden=base.hidden, layers=base.layers, heads=_meta()["models"][base_name.split("@")[0]]
                        ["arch"]["heads"], seq_len=base.seq_len)
            act = base.activation_bytes_per_sample * (_transformer_activation_bytes(arch, base.checkpointing, 1.0, tp)
                                                      / _transformer_activation_bytes(arch, base.checkpointing, 1.0))
        return replace(base, name=canon, sharding=sh, model_parallel=tp, activation_bytes_per_sample=act,
                       display=f"{base.display} ({sh}" + (f", TP {tp})" if tp > 1 else ")"))
    if "@" in canon:
        base_name, tag = canon.split("@", 1)
        base = get(base_name)
        if base.precision == "mixed":  # already trained in mixed precision
            return replace(base, name=canon, autocast=tag)
        return replace(base, name=canon, autocast=tag, display=f"{base.display} ({tag.upper()})",
                       activation_bytes_per_sample=base.activation_bytes_per_sample / 2.0)
    m = _meta()["models"][canon]
    t = _tensors().get(canon, {})
    numel = np.asarray(t.get("tensor_numel", []), dtype=np.float64)
    precision = m.get("precision", "fp32")
    tb = numel * (2.0 if precision == "mixed" else BYTES_PER_GRAD)  # fp16 gradients in mixed precision
    params = int(numel.sum())
    flops = float(t.get("train_flops_per_sample", 0.0))
    act = float(m.get("activation_bytes_per_sample", t.get("activation_bytes_per_sample", 0.0)))
    arch = m.get("arch")
    if arch is not None:
        if flops <= 0:  # 6·N·T (Kaplan et al. 2020) + attention scores 12·L·h·T² (fwd+bwd)
            seq = float(arch["seq_len"])
            flops = 6.0 * params * seq + 12.0 * arch["layers"] * arch["hidden"] * seq * seq
        act = _transformer_activation_bytes(arch, bool(m.get("checkpointing")), 2.0 if precision == "mixed" else 4.0)
    if m.get("checkpointing"):
        flops *= 4.0 / 3.0  # recomputing the forward pass in backward
    return ModelSpec(
        name=canon, display=m["display"], task=m["task"], dataset=m["dataset"], optimizer=m["optimizer"],
        params=params, grad_bytes=float(tb.sum()), tensor_bytes=tb, bucket_bytes=ddp_buckets(tb),
        flops_per_sample=flops, activation_bytes_per_sample=act,
        default_global_batch=int(m["global_batch"]), precision=precision,
        overlap_start_frac=float(_curves().get("overlap_start_frac", {}).get(canon, DEFAULT_OVERLAP_START_FRAC)),
        aliases=tuple(m.get("aliases", ())), sharding=m.get("sharding", "none"),
        layers=int(arch["layers"]) if arch else 0, hidden=int(arch["hidden"]) if arch else 0,
        seq_len=int(arch["seq_len"]) if arch else 0, checkpointing=bool(m.get("checkpointing")),
    )


# ------------------------------------------------------------------ compute time
@functools.lru_cache(maxsize=1)
def _curves() -> dict:
    p = DATA / "compute_curves.json"
    if not p.exists():
        return {}
    return json.loads(p.read_text())


def _curve_from(c: dict) -> ComputeCurve:
    """A curve from a profile's ``[compute]`` table (measured step times, host part included)."""
    return ComputeCurve(float(c["t0_s"]), float(c["per_sample_s"]), c.get("source", "measured"),
                        int(c.get("batch_min", 1)), int(c.get("batch_max", 0)),
                        tuple(float(x) for x in c.get("batches", ())), tuple(float(x) for x in c.get("times_s", ())))


def measured_curves() -> list[_dm.Curve]:
    """Every measured single-GPU curve the zoo is fitted on (`data/compute_curves.json`)."""
    return [_dm.Curve.from_dict(d) for d in _curves().get("measured", [])]


@functools.lru_cache(maxsize=4)
def device_model(exclude_gpu: str | None = None) -> _dm.DeviceModel:
    """The device/host decomposition fitted on every measured curve (`calibration.device_model`);
    `exclude_gpu` leaves one GPU type out of the fit (leave-one-GPU-type-out validation)."""
    return _dm.DeviceModel(measured_curves(), get_gpu, lambda m: get(m).flops_per_sample, exclude_gpu,
                           tasks=model_tasks())


def model_tasks() -> dict[str, str]:
    """Each zoo model's task (what `DeviceModel.compute_class` reads)."""
    return {m: get(m).task for m in known_models()}


def split_host(gpu_type: str) -> tuple[str, str]:
    """``"a100+pollux-dgx"`` → (``"a100"``, ``"pollux-dgx"``): a GPU type on a machine of a host
    regime (`calibration.device_model.HOST_REGIMES`); no ``+host``: ``synthetic`` (GPU-bound)."""
    g, _, h = str(gpu_type).partition("+")
    h = h.strip() or _dm.SYNTHETIC
    known = sorted({_dm.SYNTHETIC, *device_model().host_default})
    if h not in known:
        raise UnknownNameError("host regime", h, known)
    return resolve_gpu(g), h


def _measured_device_curve(dm: _dm.DeviceModel, c: _dm.Curve, name: str, gpu: str,
                           host: str = _dm.SYNTHETIC) -> ComputeCurve:
    """The device part of measured curve `c` (its points less its host part) as `name` runs on
    `gpu` under `host`'s math mode (PyTorch's defaults for ``synthetic``; TF32 matmuls on Ampere
    and later under a harness whose PyTorch defaulted to them): the batch-dependent part above
    the floor moved by the fitted speeds (`DeviceModel.speed_u`: GPU type, class, math mode)."""
    b, d = dm.device_points(c)
    cur = ComputeCurve(dm.floor(name), c.per_sample_s, f"measured:{c.host}", int(b.min()), int(b.max()),
                       tuple(float(x) for x in b), tuple(float(x) for x in d), floor_s=dm.floor(name))
    scale = math.exp(dm.speed_u(c.gpu, name, c.host) - dm.speed_u(gpu, name, host))
    if c.gpu == gpu and abs(scale - 1.0) < 1e-12:
        return cur
    src = f"factor:{c.gpu}" if c.gpu != gpu else f"measured:{c.host} (math mode of {host})"
    return replace(cur, scale=scale, target_t0_s=cur.t0_s, source=src)


def _device_curve(dm: _dm.DeviceModel, name: str, gpu: str, host: str = _dm.SYNTHETIC) -> ComputeCurve:
    """Device part of `name` (``model`` or ``model@tag``) on `gpu` for a run under `host`:
    measured less its host part, moved from another GPU type's (`DeviceModel.nearest_measured`),
    the fp32 curve at a precision gain, or the roofline."""
    meas = dm.measured(name, gpu)
    if meas:
        return _measured_device_curve(dm, next((x for x in meas if x.host == _dm.SYNTHETIC), meas[0]), name, gpu, host)
    base, _, tag = name.partition("@")
    if tag:
        gain, basis = dm.precision_gain(base, gpu, tag, get_gpu(gpu).amp_speedup, get(base).task)
        fp = _device_curve(dm, base, gpu, host)
        if gain == 1.0:
            return replace(fp, source=f"{fp.source}+{tag}")
        return replace(fp, scale=fp.scale / gain, target_t0_s=fp.t0_s, source=f"{fp.source}+{tag} ({basis})")
    ref = dm.nearest_measured(name, gpu, host)
    if ref is not None:  # the model's measured device curve nearest in speed, moved by the fitted speeds
        return _measured_device_curve(dm, ref, name, gpu, host)
    k, basis = dm.per_sample_s(name, gpu, host)
    return ComputeCurve(dm.floor(name), k, basis, floor_s=dm.floor(name))


def curve_for(dm: _dm.DeviceModel, model: str, gpu: str, host: str = _dm.SYNTHETIC) -> ComputeCurve:
    """The step-time curve of canonical `model` on canonical `gpu` under `host`: the measured
    curve itself where that host measured the pair, else device part + the host's part."""
    base, _, tag = model.partition("@")
    name = base if get(base).precision == "mixed" else model  # trained in mixed precision already
    own = dm.measured(name, gpu, host)
    if own:
        c = own[0]
        return ComputeCurve(c.t0_s, c.per_sample_s, f"measured:{c.host}", int(min(c.batches)), int(max(c.batches)),
                            c.batches, c.times_s)
    dev = _device_curve(dm, name, gpu, host)
    h = dm.host_s(host, base)
    return replace(dev, host_s=h, source=dev.source + ("" if host == _dm.SYNTHETIC else f"; host {host}"))


@functools.lru_cache(maxsize=None)
def compute_curve(model: str, gpu_type: str) -> ComputeCurve:
    """The compute-time curve for (model, GPU type[+host regime]) — `curve_for` on the zoo's
    fitted `device_model`. The source says where it comes from: ``measured:<host>``,
    ``factor`` (the fitted speed of the GPU type × the fitted work of the model), ``roofline``
    (the model's FLOPs, never measured), ``+<precision> (<basis of the gain>)``, ``; host <regime>``."""
    canon = resolve(model).partition("#")[0]  # per replica: parallelism aside
    gpu, host = split_host(gpu_type)
    return curve_for(device_model(), canon, gpu, host)


def compute_time_s(model: str, gpu_type: str, local_batch: int) -> float:
    """Forward + backward + optimizer time of one iteration on one GPU at `local_batch`."""
    if local_batch <= 0:
        return 0.0
    return float(compute_curve(model, gpu_type)(local_batch))


def reload() -> None:
    """Forget cached data files (after `cosim calibrate fit` rewrote compute_curves.json)."""
    for f in (_meta, _tensors, _alias_map, _gpu_alias_map, get_gpu, get, _curves, compute_curve, device_model):
        f.cache_clear()
