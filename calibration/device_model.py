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
- `log k[model, gpu] = a[model] − u[gpu]` (fp32): one speed per GPU type and one work per
  model, least squares over every measured (model, GPU type) of every source; a GPU type
  never measured gets `u` from the GPU-type table (`speed_fp32`, cited) moved by the
  median offset of the measured types; a model never measured gets `a` from its training
  FLOPs per sample by the median offset of the measured models (the roofline).

Device curve of a measured pair: its points less its host part (never below d0 or a quarter
of the point); of an unmeasured pair: `d0 + exp(a − u)·b`. Precision (``@amp`` / ``@bf16``):
measured curves where they exist; otherwise the fp32 device curve with its per-sample part
divided by a gain — the model's own measured gain (fp32 slope ÷ bf16 slope) on a GPU type of
the same class (TF32-capable: Ampere and later), or, for pre-Ampere tensor-core types (V100,
T4, 2080 Ti, where fp32 convolutions do not run on tensor cores), the type's published AMP
gain (`amp_speedup`, cited in zoo.json); no gain without tensor cores (K80, P100) or for
bf16 before Ampere. A model never measured at the precision takes the median measured gain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SYNTHETIC = "synthetic"
#: a curve informs the speed fit only where its batch-dependent part is at least this share of
#: its step at the largest measured batch: launch-bound curves (flat in batch) carry no speed
WORK_SHARE_MIN = 0.3
#: weight (in measured curves) of the table's published speed of a GPU type in the speed fit
SPEED_PRIOR_WEIGHT = 3.0
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
    """Architecture family of a zoo model name: depth, width and input-size suffixes dropped
    (``vgg16_cifar`` → ``vgg``, ``densenet201`` → ``densenet``, ``resnet18`` → ``resnet``)."""
    import re

    return re.sub(r"(_?cifar|_?v\d+|[_\d.]+[a-z]?\d*)+$", "", model.partition("@")[0]) or model


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


class DeviceModel:
    """The fitted device/host decomposition over a list of measured curves.

    `gpu_speed(g)` → the table's relative fp32 speed of GPU type g (0 = none), `flops(m)` →
    training FLOPs per sample; `exclude_gpu` leaves one GPU type out of every fit (the
    leave-one-GPU-type-out check predicts it from the others)."""

    def __init__(self, curves: list[Curve], gpu_speed, flops, exclude_gpu: str | None = None,
                 tasks: dict[str, str] | None = None) -> None:
        self.curves = [c for c in curves if c.gpu != exclude_gpu]
        self.tasks = dict(tasks or {})
        self._speed, self._flops = gpu_speed, flops
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
        models = sorted({c.device_name for c in rows})
        gpus = sorted({c.gpu for c in rows})
        mi, gi = {m: i for i, m in enumerate(models)}, {g: i for i, g in enumerate(gpus)}
        A = np.zeros((len(rows) + len(gpus), len(models) + len(gpus)))
        y = np.zeros(len(rows) + len(gpus))
        for r, c in enumerate(rows):
            A[r, mi[c.device_name]] = 1.0
            A[r, len(models) + gi[c.gpu]] = -1.0
            y[r] = math.log(c.per_sample_s)
        # prior: each speed pulled towards the table's published relative speed (weight
        # `SPEED_PRIOR_WEIGHT` rows); it also fixes the gauge (speeds relative to V100 = 1)
        w = math.sqrt(SPEED_PRIOR_WEIGHT)
        for g, j in gi.items():
            sp = self._speed(g)
            A[len(rows) + j, len(models) + j] = w if sp > 0 else 1e-3
            y[len(rows) + j] = w * math.log(sp) if sp > 0 else 0.0
        x = np.linalg.lstsq(A, y, rcond=None)[0] if rows else np.zeros(0)
        self.a = {m: float(x[mi[m]]) for m in models}
        self.u = {g: float(x[len(models) + gi[g]]) for g in gpus}
        offs = [self.u[g] - math.log(self._speed(g)) for g in gpus if self._speed(g) > 0]
        self.u_offset = float(np.median(offs)) if offs else 0.0
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
        self.gain_default = float(np.median(list(self.gain.values()))) if self.gain else 1.0

    # ---------------------------------------------------------------- parts
    def floor(self, model: str) -> float:
        return self.d0.get(model.partition("@")[0], self.d0_default)

    def speed_u(self, gpu: str) -> float:
        if gpu in self.u:
            return self.u[gpu]
        sp = self._speed(gpu)
        return math.log(sp) + self.u_offset if sp > 0 else self.u_offset

    def per_sample_s(self, model: str, gpu: str) -> tuple[float, str]:
        """Fitted fp32 device time per sample and its basis (``factor`` or ``roofline``)."""
        if model in self.a:
            return math.exp(self.a[model] - self.speed_u(gpu)), "factor"
        return math.exp(math.log(max(self._flops(model), 1.0)) + self.a_offset - self.speed_u(gpu)), "roofline"

    def nearest_measured(self, model: str, gpu: str) -> str | None:
        """The GPU type whose measured curve of `model` (any host) is nearest to `gpu` in fitted
        speed (ties: the faster one); None if the model was never measured."""
        have = sorted({c.gpu for c in self.curves if c.device_name == model})
        if not have:
            return None
        u = self.speed_u(gpu)
        return min(have, key=lambda g: (abs(self.speed_u(g) - u), -self.speed_u(g), g))

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

    def precision_gain(self, model: str, gpu: str, tag: str, has_tf32: bool, has_tensor: bool,
                       published_amp: float, task: str = "") -> tuple[float, str]:
        """(gain on the per-sample part, basis) for `model` at `tag` on `gpu`. A model not measured
        at a half precision takes the median measured gain of its family (the same architecture
        at another depth or input size: ``vgg19`` ← ``vgg11``/``vgg16``, ``densenet201`` ←
        ``densenet121``), else of the measured models of its task, else of all."""
        if not has_tensor or (tag == "bf16" and not has_tf32):
            return 1.0, "no tensor-core gain"
        if not has_tf32:
            return published_amp, "published AMP gain of the GPU type"
        own = [v for (m, g, t), v in self.gain.items() if m == model]
        if own:
            return float(np.median(own)), "measured gain of the model"
        fam = family(model)
        kin = sorted({m for (m, g, t) in self.gain if family(m) == fam})
        if kin:
            return float(np.median([v for (m, g, t), v in self.gain.items() if m in kin])), \
                f"measured gain of its family ({', '.join(kin)})"
        same = [v for (m, g, t), v in self.gain.items() if task and self._task(m) == task]
        if same:
            return float(np.median(same)), f"median measured gain of {task} models"
        return self.gain_default, "median measured gain"

    def _task(self, model: str) -> str:
        return self.tasks.get(model, "")


def leave_one_gpu_out(curves: list[Curve], gpu_speed, flops, curve_for) -> list[dict]:
    """Predict every measured fp32 curve from a fit without its GPU type (every source's rows of
    that type left out): rows of (gpu, host, model, batch, measured_s, predicted_s, error).
    `curve_for(dm, model, gpu, host)` is the zoo's own curve builder (what the engine runs)."""
    rows = []
    for g in sorted({c.gpu for c in curves}):
        dm = DeviceModel(curves, gpu_speed, flops, exclude_gpu=g)
        for c in curves:
            if c.gpu != g or "@" in c.model:
                continue
            pred = curve_for(dm, c.device_name, c.gpu, c.host)  # the job as it ran (precision included)
            for b, t in zip(c.batches, c.times_s):
                p = float(pred(b))
                rows.append(dict(gpu=g, host=c.host, model=c.model, local_bsz=b, measured_s=t, predicted_s=p,
                                 error=(p - t) / t))
    return rows
