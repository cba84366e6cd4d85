"""Single-GPU step = device part + host part, fitted on every measured source at once.

A measured single-GPU step time is the sum of two parts with different owners:

- **device**: forward + backward + optimizer kernels of (model, GPU type, precision, local
  batch) — the same whichever machine hosts the GPU;
- **host**: the per-step time the harness or platform adds that the GPU does not do —
  input pipeline, framework bookkeeping, Python — a property of the machine and software that
  measured it (a *host regime*), not of the model's arithmetic or the GPU type.

Host regimes (`host_regime`): ``synthetic`` (`cosim calibrate compute`: GPU-resident random
batches, nothing but launches on the host), ``gavel`` (Gavel's throughput harness),
``pollux-aws`` / ``pollux-dgx`` / ``pollux-rtx`` (Pollux/Sia's adaptdl training jobs with
real data loading; ``dgx-ext`` is the same DGX-A100 nodes as ``dgx``).

The form, per measured curve (points t(b) of one model on one GPU type under one host):

    t(b) = h[host, model] + D(model, gpu, precision, b),    D(b) ≈ d0[model] + k[model, gpu, precision]·b

- `d0[model]`: the device's per-step floor at batch → 0 (kernel launches), the intercept of
  the model's synthetic-input curves (median over GPU types), the median over models where
  the model has none; it is taken as the same on every GPU type (launch-bound, set by the
  host CPU and the kernel count, not by FLOP/s);
- `h[host, model] = max(0, t0 − d0)` with `t0` the intercept of that host's fitted line
  (median over its GPU types); ``synthetic`` is 0 by definition. The evidence that the
  intercept belongs to the host (docs/calibration.md): Pollux's intercepts are the same on
  T4, RTX 2080 Ti and A100 within a model, and do not fall on faster GPUs;
- `log k[model, gpu] = a[model] − u(gpu, class, math)` (fp32): one work per model and a
  speed from the GPU type's datasheet, `u = β[class]·log P + (1 − β[class])·log B + r[gpu]`,
  where `P` is the peak the model's compute class runs at under the harness's math mode
  (``conv``: cuDNN convolutions, on TF32 tensor cores where the GPU has them — PyTorch's
  default; ``matmul``: fp32 GEMMs, on TF32 only under a harness whose PyTorch defaulted
  matmuls to TF32), `B` its memory bandwidth, `β` the compute-bound share of each class and
  `r` what the datasheet misses about a type (clocks under its power limit, an older
  architecture's efficiency), pulled towards 0 — or, for a type with a published single-GPU
  benchmark against another type (`GpuType.benchmark_ratio`: the K80 against the P100), towards
  what the benchmark says. Huber-robust least squares over every measured (model, GPU type,
  host) of every source; a GPU type never measured (or left out) has the `r` of its benchmark
  at the reference type's fitted speed, else `r = 0`: its datasheet alone; a model never
  measured gets `a` from its training FLOPs per sample at the time per FLOP of its family's
  measured member nearest in FLOPs at the same input size (the same layer types: ``vgg19`` ←
  ``vgg16``), else at the median over the measured models (the roofline).

Device curve of a measured pair: its points less its host part (never below d0 or a quarter
of the point); of an unmeasured pair: the model's measured device curve nearest in speed (of
the run's own harness family if it measured the model, else GPU-bound) with its part above d0
moved by the ratio of the speeds; of a model measured nowhere: `d0 + exp(a − u)·b`. Precision
(``@amp`` / ``@bf16``): measured curves where they exist; otherwise the fp32 device curve with
its per-sample part divided by a gain — the model's own measured gain (fp32 slope ÷ bf16 slope)
on a GPU type of the same class (TF32-capable: Ampere and later), or, for pre-Ampere
tensor-core types (V100, T4, 2080 Ti, where fp32 convolutions do not run on tensor cores), the
type's published AMP gain (`amp_speedup`, cited in zoo.json); fp16 on a type without tensor
cores but with a faster fp16 peak (P100: 2x) gains that ratio to the power `β[class]`; no gain
on K80 or for bf16 before Ampere. A model never measured at the precision takes the median
measured gain of its family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SYNTHETIC = "synthetic"
#: a curve informs the speed fit only where its batch-dependent part is at least this share of
#: its step at the largest measured batch: launch-bound curves (flat in batch) carry no speed
WORK_SHARE_MIN = 0.3
#: weight (in measured curves) of the prior that a GPU type's speed is what its datasheet says
#: (its residual `r` is 0): a type measured on a few curves stays near its datasheet speed
RESIDUAL_PRIOR_WEIGHT = 3.0
#: the speed fit is Huber-robust: a curve whose log-residual exceeds this (ln 1.22: 22 %) weighs
#: less, so a few curves at odds with the rest (a harness whose input differs, e.g. Pollux's
#: DeepSpeech2 utterances; Kepler's K80) do not set the shares every GPU type is moved by
HUBER_DELTA = 0.2
HUBER_ITERATIONS = 30
#: compute classes (`DeviceModel.compute_class`) and the zoo tasks of the ``conv`` class
CLASSES = ("conv", "matmul")
CONV_TASKS = frozenset({"image classification", "object detection", "image-to-image translation",
                        "reinforcement learning"})
#: compute-bound share of a class's speed when nothing was measured
BETA_DEFAULT = 0.5
#: harness families whose PyTorch ran fp32 matmuls on TF32 tensor cores where the GPU has them
#: (PyTorch 1.7–1.11 defaulted `torch.backends.cuda.matmul.allow_tf32` to True; 1.12 turned it
#: off). Pollux/Sia's A100 BERT-base curve shows it: 4.5 ms per sample against 4.8 ms on our
#: H100 in full fp32 — a speed an A100 has only on its TF32 tensor cores (156 vs 19.5 TFLOP/s).
TF32_MATMUL_HARNESSES = frozenset({"pollux"})
#: measured precision gains are clipped into this range (a ratio of two noisy medians)
GAIN_RANGE = (0.5, 16.0)

#: the host regimes shipped measurements carry, and what each is (`cosim clusters show`)
HOST_REGIMES = {
    SYNTHETIC: "GPU-bound: synthetic GPU-resident input, no data loading (cosim calibrate compute)",
    "gavel": "Gavel's throughput harness (K80 / P100 / V100 servers)",
    "pollux-aws": "Pollux/Sia adaptdl jobs with real data loading on AWS g4dn.12xlarge (T4)",
    "pollux-dgx": "Pollux/Sia adaptdl jobs with real data loading on DGX-A100 (dgx, dgx-ext)",
    "pollux-rtx": "Pollux/Sia adaptdl jobs with real data loading on 8x RTX 2080 Ti servers",
}


def family(model: str) -> str:
    """Architecture family of a zoo model name: depth, width, size and input-size suffixes
    dropped (``vgg16_cifar`` → ``vgg``, ``densenet201`` → ``densenet``, ``resnet18`` →
    ``resnet``, ``gpt2_large`` → ``gpt2``, ``opt_6.7b`` → ``opt``)."""
    import re

    return re.sub(r"(_?cifar|_?v\d+|_(?:tiny|small|base|medium|large|xl)|[_\d.]+[a-z]?\d*)+$", "",
                  model.partition("@")[0]) or model


def host_regime(source: str, platform: str | None = None) -> str:
    """The host regime of a measured row: its harness, and for Pollux/Sia its platform."""
    s = str(source).removeprefix("measured:")
    if s.startswith("pollux"):
        p = str(platform or "")
        return "pollux-" + ("dgx" if p.startswith("dgx") else p)
    if s == "cosim-compute":
        return SYNTHETIC
    return s


#: (harness family, job model) → the precision that harness trained it at, where it is not fp32.
#: Pollux/Sia's ImageNet and YOLOv3 jobs (adaptdl's benchmark, benchmark/models/imagenet/main.py
#: and yolov3/train.py, https://github.com/petuum/adaptdl) call NVIDIA apex
#: `amp.initialize(model, optimizer)` (opt level O1: fp16 mixed precision); its BERT, CIFAR-10,
#: DeepSpeech2 and NCF jobs train in fp32. Their curves are the platform's jobs as measured
#: (what the platform's presets run) and the device curve of ``<model>@amp`` elsewhere.
MEASURED_PRECISION = {("pollux", "resnet50"): "amp", ("pollux", "yolov3"): "amp"}


@dataclass(frozen=True)
class Curve:
    """One measured curve: model (``name@prec`` for a precision), GPU type, host regime,
    isotonic medians per batch and the fitted line `t0 + k·b`."""

    model: str
    gpu: str
    host: str
    batches: tuple[float, ...]
    times_s: tuple[float, ...]
    t0_s: float
    per_sample_s: float

    @property
    def device_name(self) -> str:
        """The zoo name of what the device computed: the model at the precision it ran."""
        tag = MEASURED_PRECISION.get((self.host.split("-")[0], self.model))
        return f"{self.model}@{tag}" if tag and "@" not in self.model else self.model

    @staticmethod
    def from_dict(d: dict) -> "Curve":
        return Curve(d["model"], d["gpu"], d["host"], tuple(map(float, d["batches"])),
                     tuple(map(float, d["times_s"])), float(d["t0_s"]), float(d["per_sample_s"]))


@dataclass(frozen=True)
class ComputeCurve:
    """Compute time of one iteration on one GPU over local batch b.

    With measured points, linear interpolation between them and, outside their range, the
    fitted line `t0_s + per_sample_s * b` shifted to join the nearest end point (so the
    curve is continuous). Without points, the line alone. `scale` multiplies the result
    (a transferred curve)."""

    t0_s: float
    per_sample_s: float
    source: str  # "measured:<host>", "factor", "roofline" (+ precision and host notes)
    batch_min: int = 1
    batch_max: int = 0  # 0: no measured range
    batches: tuple[float, ...] = ()
    times_s: tuple[float, ...] = ()
    scale: float = 1.0
    target_t0_s: float | None = None  # transferred: this GPU's floor replaces the source's
    #: the host regime's per-step part added to the device curve (`calibration.device_model`)
    host_s: float = 0.0
    #: device curves: never below the model's launch floor (small batches below the measured range)
    floor_s: float = 0.0

    def __call__(self, local_batch: float) -> float:
        return max(self._own(local_batch), self.floor_s) + self.host_s

    def _own(self, local_batch: float) -> float:
        b = float(local_batch)
        if len(self.batches) >= 2:
            bs, ts = self.batches, self.times_s
            if b < bs[0]:
                v = max(ts[0] - self.per_sample_s * (bs[0] - b), ts[0] * b / bs[0])
            elif b > bs[-1]:
                v = ts[-1] + self.per_sample_s * (b - bs[-1])
            else:
                v = float(np.interp(b, bs, ts))
        elif len(self.batches) == 1:
            v = self.times_s[0] * (self.t0_s + self.per_sample_s * b) / (self.t0_s + self.per_sample_s * self.batches[0])
        else:
            v = self.t0_s + self.per_sample_s * b
        if self.target_t0_s is None:
            return v * self.scale
        # transferred / precision variant: the batch-dependent work above the fitted floor t0
        # scales, the per-iteration floor (launches, optimizer, Python, data loading: the
        # harness's host) is `target_t0_s`; below the floor the curve scales as a whole
        if v <= self.t0_s:
            return v * self.target_t0_s / self.t0_s if self.t0_s > 0 else self.target_t0_s
        return (v - self.t0_s) * self.scale + self.target_t0_s


class DeviceModel:
    """The fitted device/host decomposition over a list of measured curves.

    `gpu(g)` → the GPU type's datasheet (`peak_tflops`, `tf32_tflops`, `tensor_tflops`,
    `mem_bw_GBps`), `flops(m)` → training FLOPs per sample, `tasks` → each model's zoo task;
    `exclude_gpu` leaves one GPU type out of every fit (the leave-one-GPU-type-out check
    predicts it from the others)."""

    def __init__(self, curves: list[Curve], gpu, flops, exclude_gpu: str | None = None,
                 tasks: dict[str, str] | None = None) -> None:
        self.curves = [c for c in curves if c.gpu != exclude_gpu]
        self.tasks = dict(tasks or {})
        self._gpu, self._flops = gpu, flops
        fp32 = [c for c in self.curves if "@" not in c.device_name]
        syn: dict[str, list[float]] = {}
        for c in fp32:
            if c.host == SYNTHETIC:
                syn.setdefault(c.model, []).append(c.t0_s)
        self.d0 = {m: float(np.median(v)) for m, v in syn.items()}
        self.d0_default = float(np.median(list(self.d0.values()))) if self.d0 else 0.01
        hosts: dict[tuple[str, str], list[float]] = {}
        for c in self.curves:  # a host's per-step part does not depend on the precision
            if c.host != SYNTHETIC and "@" not in c.model:
                hosts.setdefault((c.host, c.model), []).append(max(0.0, c.t0_s - self.floor(c.model)))
        self.host = {k: float(np.median(v)) for k, v in hosts.items()}
        per_host: dict[str, list[float]] = {}
        for (h, _), v in self.host.items():
            per_host.setdefault(h, []).append(v)
        self.host_default = {h: float(np.median(v)) for h, v in per_host.items()}
        self._fit_speeds([c for c in fp32 if len(c.batches) >= 3 and c.per_sample_s * c.batches[-1] >= WORK_SHARE_MIN * c.times_s[-1]])
        self._fit_gains()

    # ---------------------------------------------------------------- fits
    def _fit_speeds(self, rows: list[Curve]) -> None:
        """Least squares of `log k = a[model] − u(gpu, model, host)` over the rows, with
        `u = β[class]·(log P − log B) + log B + r[gpu]` (`speed_u`): unknowns the models' work
        `a`, the two classes' compute-bound shares `β` and the GPU types' residuals `r`, each
        residual pulled towards 0 (weight `RESIDUAL_PRIOR_WEIGHT` curves)."""
        models = sorted({c.device_name for c in rows})
        gpus = sorted({c.gpu for c in rows})
        mi, gi = {m: i for i, m in enumerate(models)}, {g: i for i, g in enumerate(gpus)}
        nb = len(CLASSES)
        A = np.zeros((len(rows) + len(gpus), len(models) + nb + len(gpus)))
        y = np.zeros(len(rows) + len(gpus))
        for r, c in enumerate(rows):
            cls = self.compute_class(c.device_name)
            lp, lb = self._log_peak_bw(c.gpu, cls, c.host)
            A[r, mi[c.device_name]] = 1.0
            A[r, len(models) + CLASSES.index(cls)] = -(lp - lb)
            A[r, len(models) + nb + gi[c.gpu]] = -1.0
            y[r] = math.log(c.per_sample_s) + lb
        w = math.sqrt(RESIDUAL_PRIOR_WEIGHT)
        conv = len(models) + CLASSES.index("conv")
        for g, j in gi.items():
            A[len(rows) + j, len(models) + nb + j] = w
            ref, ratio = self._benchmark(g)
            if ratio:  # the prior is the published benchmark: u(g) − u(ref) = log ratio (conv class)
                (lp, lb), (lpr, lbr) = self._log_peak_bw(g, "conv"), self._log_peak_bw(ref, "conv")
                A[len(rows) + j, conv] = w * ((lp - lb) - (lpr - lbr))
                if ref in gi:
                    A[len(rows) + j, len(models) + nb + gi[ref]] = -w
                y[len(rows) + j] = w * (math.log(ratio) - lb + lbr)
        x = np.zeros(A.shape[1])
        wt = np.ones(len(y))
        for _ in range(HUBER_ITERATIONS if rows else 0):  # Huber: iteratively reweighted least squares
            x = np.linalg.lstsq(A * wt[:, None], y * wt, rcond=None)[0]
            res = np.abs(A[:len(rows)] @ x - y[:len(rows)])
            wt[:len(rows)] = np.sqrt(np.minimum(1.0, HUBER_DELTA / np.maximum(res, 1e-12)))
        self.a = {m: float(x[mi[m]]) for m in models}
        self.beta = {k: float(np.clip(x[len(models) + i], 0.0, 1.0)) if rows else BETA_DEFAULT
                     for i, k in enumerate(CLASSES)}
        self.r = {g: float(x[len(models) + nb + gi[g]]) for g in gpus}
        offa = [self.a[m] - math.log(self._flops(m)) for m in models if self._flops(m) > 0]
        self.a_offset = float(np.median(offa)) if offa else math.log(1e-13)

    def _fit_gains(self) -> None:
        """Measured precision gains per (model, GPU type, tag): fp32 step ÷ precision step at the
        largest local batch both ran (synthetic input). Slopes would be the per-sample gain, but
        at half precision many models stay launch-bound over the whole measured range (BERT-base
        on H200 at bf16: 39-41 ms from batch 4 to 32), so their slope is noise; the step ratio
        at the largest batch is the measured speed-up, and a lower bound of the per-sample one."""
        syn = {(c.model, c.gpu): c for c in self.curves if c.host == SYNTHETIC}
        self.gain: dict[tuple[str, str, str], float] = {}
        for (name, g), cp in syn.items():
            base, _, tag = name.partition("@")
            cf = syn.get((base, g))
            if not tag or cf is None:
                continue
            common = sorted(set(cp.batches) & set(cf.batches))
            if common:
                b = common[-1]
                ratio = cf.times_s[cf.batches.index(b)] / cp.times_s[cp.batches.index(b)]
                self.gain[(base, g, tag)] = float(np.clip(ratio, *GAIN_RANGE))

    # ---------------------------------------------------------------- parts
    def floor(self, model: str) -> float:
        return self.d0.get(model.partition("@")[0], self.d0_default)

    def compute_class(self, model: str) -> str:
        """``conv`` (convolutional vision models: their fp32 math is cuDNN convolutions) or
        ``matmul`` (everything else: GEMMs of linear, attention and recurrent layers)."""
        return "conv" if self._task(model.partition("@")[0]) in CONV_TASKS else "matmul"

    def _log_peak_bw(self, gpu: str, cls: str, host: str = SYNTHETIC) -> tuple[float, float]:
        """(log P, log B): the fp32 peak class `cls` runs at on `gpu` under `host`'s math mode
        (TF32 tensor cores for convolutions where the GPU has them — cuDNN's default — and for
        matmuls too under a TF32-matmul harness) and the memory bandwidth, from the table."""
        g = self._gpu(gpu)
        tf32 = g.tf32_tflops > 0 and (cls == "conv" or host.split("-")[0] in TF32_MATMUL_HARNESSES)
        return math.log(g.tf32_tflops if tf32 else g.peak_tflops), math.log(g.mem_bw_GBps)

    def class_speed_u(self, gpu: str, cls: str, host: str = SYNTHETIC) -> float:
        """log speed of `gpu` for compute class `cls` under `host`'s math mode:
        `β[cls]·log P + (1 − β[cls])·log B + r[gpu]` (r = 0 for a type never measured)."""
        lp, lb = self._log_peak_bw(gpu, cls, host)
        return self.beta[cls] * (lp - lb) + lb + self.residual(gpu)

    def residual(self, gpu: str, _seen: frozenset = frozenset()) -> float:
        """`r[gpu]`: fitted where the type was measured; else what its published benchmark against
        another type says (`GpuType.benchmark_ratio`: u(gpu) − u(ref) = log ratio on the ``conv``
        class, at the reference's fitted speed); else 0 (the datasheet alone)."""
        if gpu in self.r:
            return self.r[gpu]
        ref, ratio = self._benchmark(gpu)
        if not ratio or ref in _seen:
            return 0.0
        (lp, lb), (lpr, lbr) = self._log_peak_bw(gpu, "conv"), self._log_peak_bw(ref, "conv")
        u_ref = self.beta["conv"] * (lpr - lbr) + lbr + self.residual(ref, _seen | {gpu})
        return math.log(ratio) + u_ref - (self.beta["conv"] * (lp - lb) + lb)

    def _benchmark(self, gpu: str) -> tuple[str, float]:
        """(reference type, this type's speed ÷ the reference's) of a published benchmark, or ("", 0)."""
        g = self._gpu(gpu)
        return (g.benchmark_ref, g.benchmark_ratio) if g.benchmark_ratio and g.benchmark_ref else ("", 0.0)

    def speed_u(self, gpu: str, model: str, host: str = SYNTHETIC) -> float:
        """log speed of `gpu` for `model`'s compute class under `host`'s math mode."""
        return self.class_speed_u(gpu, self.compute_class(model), host)

    def relative_speed(self, gpu: str, cls: str, ref: str = "v100") -> float:
        """Speed of `gpu` for class `cls` relative to `ref`, GPU-bound PyTorch defaults."""
        return math.exp(self.class_speed_u(gpu, cls) - self.class_speed_u(ref, cls))

    def per_sample_s(self, model: str, gpu: str, host: str = SYNTHETIC) -> tuple[float, str]:
        """Fitted fp32 device time per sample and its basis: ``factor`` (the model's fitted
        work); for a model never measured, ``family (<member>)`` (its training FLOPs at the time
        per FLOP of the measured member of its family nearest in FLOPs — the same layer types at
        another depth or width, at the same input size: ``vgg19`` ← ``vgg16``, ``densenet201`` ←
        ``densenet121``, not ``vgg16_cifar`` ← ``vgg16``, whose 32×32 inputs run far below the
        efficiency of 224×224 ones) or ``roofline`` (its FLOPs at the median time per FLOP of every
        measured model), on `gpu` under `host`'s math mode."""
        u = self.speed_u(gpu, model, host)
        if model in self.a:
            return math.exp(self.a[model] - u), "factor"
        flops = math.log(max(self._flops(model), 1.0))
        kin = [m for m in self.a if family(m) == family(model) and "@" not in m and self._flops(m) > 0
               and ("cifar" in m) == ("cifar" in model)]  # the same input size
        if kin:  # the member nearest in FLOPs: the most similar mix of layers
            near = min(kin, key=lambda m: (abs(math.log(self._flops(m)) - flops), m))
            return math.exp(flops + self.a[near] - math.log(self._flops(near)) - u), f"family ({near})"
        return math.exp(flops + self.a_offset - u), "roofline"

    def nearest_measured(self, model: str, gpu: str, host: str = SYNTHETIC) -> Curve | None:
        """The measured curve of `model` to move to `gpu` for a run under `host`: among the
        curves of the same harness family if there are any (the same software stack, input
        shapes and math mode), else among the GPU-bound (synthetic-input) ones (their points are
        the device part itself; another host's device part is its points less an estimated host
        part), else among all, the one whose GPU type and math mode are nearest to `gpu`'s in
        fitted speed (ties: the faster one); None if the model was never measured."""
        have = [c for c in self.curves if c.device_name == model]
        fam = host.split("-")[0]
        have = ([c for c in have if c.host.split("-")[0] == fam] or [c for c in have if c.host == SYNTHETIC]
                or have)
        if not have:
            return None
        u = self.speed_u(gpu, model)
        return min(have, key=lambda c: (abs(self.speed_u(c.gpu, model, c.host) - u),
                                        -self.speed_u(c.gpu, model, c.host), c.gpu, c.host))

    def host_s(self, host: str, model: str) -> float:
        """Host part of one step of `model` under `host` (0 for ``synthetic``)."""
        if host == SYNTHETIC:
            return 0.0
        base = model.partition("@")[0]
        if (host, base) in self.host:
            return self.host[(host, base)]
        family = host.split("-")[0]  # the same harness on other machines (pollux-aws → pollux-*)
        kin = [v for (h, m), v in self.host.items() if m == base and h.split("-")[0] == family]
        if kin:
            return float(np.median(kin))
        if host in self.host_default:
            return self.host_default[host]
        kin = [v for h, v in self.host_default.items() if h.split("-")[0] == family]
        return float(np.median(kin)) if kin else 0.0

    def measured(self, model: str, gpu: str, host: str | None = None) -> list[Curve]:
        """Measured curves of `model` on `gpu`: under `host`, the jobs as that host ran them (by
        job name); without a host, what the device computed (by `Curve.device_name`)."""
        if host is None:
            return [c for c in self.curves if c.device_name == model and c.gpu == gpu]
        return [c for c in self.curves if c.model == model and c.gpu == gpu and c.host == host]

    def device_points(self, c: Curve) -> tuple[np.ndarray, np.ndarray]:
        """A measured curve's device part: its points less its host part."""
        t = np.asarray(c.times_s)
        h = self.host_s(c.host, c.model)
        return np.asarray(c.batches), np.maximum(t - h, np.maximum(np.minimum(self.floor(c.model), t), 0.25 * t))

    def half_ratio(self, gpu: str, model: str) -> float:
        """The GPU type's fp16/bf16 peak over the peak the model's class runs at in fp32 (tensor
        cores where present: A100 312 / 156 for convolutions, 312 / 19.5 for matmuls; V100 125 /
        15.7; P100's plain fp16 18.7 / 9.3)."""
        g = self._gpu(gpu)
        base = g.tf32_tflops if g.tf32_tflops > 0 and self.compute_class(model) == "conv" else g.peak_tflops
        return g.tensor_tflops / base

    def precision_gain(self, model: str, gpu: str, tag: str, published_amp: float = 1.0,
                       task: str = "") -> tuple[float, str]:
        """(gain on the per-sample part, basis) for `model` at `tag` on `gpu`.

        With tensor cores, the measured gain of the model (else of its family — the same
        architecture at another depth or input size: ``vgg19`` ← ``vgg11``/``vgg16`` — else of
        its task's models, else of all) as a power of the measured type's half-precision peak
        ratio (`half_ratio`), applied to this type's ratio: the same gain on Ampere and Hopper,
        whose ratios match; a larger one for matmul-bound models on V100 and T4 (fp32 GEMMs off
        tensor cores, fp16 on them: BERT-large 6.2 on H200 → 4.1 on V100, against 4.3 measured
        by NVIDIA), a smaller one on a GeForce RTX 2080 Ti (fp16 tensor cores at half rate).
        Convolutional models on pre-Ampere tensor-core types take the type's published AMP gain
        (`amp_speedup`, cited: measured on ResNet-50). bf16 needs Ampere or later. Without
        tensor cores, fp16 at a faster peak (P100: 2x) gains that ratio to the power of the
        class's compute-bound share β; K80 gains nothing."""
        g = self._gpu(gpu)
        cls = self.compute_class(model)
        if not has_tensor_cores(g):
            r = self.half_ratio(gpu, model)
            if tag == "amp" and r > 1.0:
                return r ** self.beta[cls], f"fp16 at {r:.3g}x the fp32 peak, on the compute-bound share"
            return 1.0, "no tensor-core gain"
        if tag == "bf16" and not g.tf32_tflops > 0:
            return 1.0, "no bf16 before Ampere"
        if cls == "conv" and not g.tf32_tflops > 0:
            return published_amp, "published AMP gain of the GPU type"
        kin, basis = self._gain_basis(model, task)
        if not kin:
            return 1.0, "no measured gain"
        expo = float(np.median([math.log(v) / math.log(self.half_ratio(ref, m)) for (m, ref, t), v in kin]))
        return self.half_ratio(gpu, model) ** expo, basis

    def _gain_basis(self, model: str, task: str) -> tuple[list, str]:
        """The measured gains a model's estimate rests on, and their description."""
        own = [(k, v) for k, v in self.gain.items() if k[0] == model]
        if own:
            return own, "measured gain of the model"
        fam = family(model)
        kin = [(k, v) for k, v in self.gain.items() if family(k[0]) == fam]
        if kin:
            return kin, f"measured gain of its family ({', '.join(sorted({k[0] for k, _ in kin}))})"
        same = [(k, v) for k, v in self.gain.items() if task and self._task(k[0]) == task]
        if same:
            return same, f"median measured gain of {task} models"
        return list(self.gain.items()), "median measured gain"

    def _task(self, model: str) -> str:
        return self.tasks.get(model, "")


def has_tensor_cores(g) -> bool:
    """Half-precision tensor cores: a fp16 peak at least 4x the fp32 one (V100, T4, 2080 Ti and
    later; P100's 2x fp16 is not a tensor core, K80 has no fast fp16)."""
    return g.tensor_tflops >= 4.0 * g.peak_tflops


def leave_one_gpu_out(curves: list[Curve], gpu, flops, curve_for, tasks: dict[str, str] | None = None) -> list[dict]:
    """Predict every measured fp32 curve from a fit without its GPU type (every source's rows of
    that type left out): rows of (gpu, host, model, batch, measured_s, predicted_s, error).
    `curve_for(dm, model, gpu, host)` is the zoo's own curve builder (what the engine runs)."""
    rows = []
    for g in sorted({c.gpu for c in curves}):
        dm = DeviceModel(curves, gpu, flops, exclude_gpu=g, tasks=tasks)
        for c in curves:
            if c.gpu != g or "@" in c.model:
                continue
            pred = curve_for(dm, c.device_name, c.gpu, c.host)  # the job as it ran (precision included)
            for b, t in zip(c.batches, c.times_s):
                p = float(pred(b))
                rows.append(dict(gpu=g, host=c.host, model=c.model, local_bsz=b, measured_s=t, predicted_s=p,
                                 error=(p - t) / t))
    return rows
