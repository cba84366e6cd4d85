"""The fitted iteration form of the `network` model and the calibration profile that carries it.

One multi-GPU iteration of a data-parallel job on a placement (G GPUs on n nodes, at most
g_max of them on one node) is, alone on the network (`calibration.step_model` fits the
parameters from measured Pollux/Sia rows; `docs/calibration.md` has the evidence):

    t = κ · C · (1 + h · (g_max − 1)) + c₀ + S

- C: the engine's compute time (`PerfModel._part`: the slowest GPU type's curve at the local
  micro-batch, times the accumulation steps) — the single-GPU step at that batch;
- κ (`kappa`), h (`host_slope`), c₀ (`overhead_s`): the non-communicating part of a
  multi-GPU step relative to the single-GPU one (framework/data loading, host and PCIe
  sharing by the GPUs of one node, a fixed per-step difference, which may be negative);
- S: the *exposed* all-reduce, log S = w · φ + log D, with φ = (1, log M, log G, [n = 1],
  [n = 2], log g_max, log n·[n > 1], log C) (`SYNC_FEATURES`), M = the `CommModel`
  all-reduce of the model's gradient buckets on the placement (the network physics), and
  D = f + (1 − f) / (1 + e^{b·(log C − w·φ − c)}) DDP's exposed fraction (the part the
  backward cannot hide, falling to the floor f of the last buckets as the backward grows).

Mapping onto the engine's phases (`simcore.perf.Phases`, what contention acts on):

    compute_s    = C' = max(κ · C · (1 + h · (g_max − 1)) + c₀, 1e-9)   (C within the
                   form's fitted range `compute_range_s`; outside, S uses the clamped C and C'
                   keeps its ratio to C at the edge)
    comm_s       = clip(M, S, C' + S)          (the collective's duration)
    comm_start_s = C' + S − comm_s             (in [0, C'], as the solver requires)
    link bytes   × comm_s / M when M > C' + S  (same link rates, shorter transfer)

so that alone, max(compute_s, comm_start_s + comm_s) = C' + S exactly — the fitted step.
Under contention the solver stretches comm_s by the links' fair shares; the exposed part
grows with it, so the network stays visible. When the fitted S exceeds the physics M (a
real stack slower than its preset: AWS's single-flow TCP against the preset's 50 Gb/s NIC)
the collective takes S and starts at the end of compute (link demand bytes / S); when M
exceeds the whole step C' + S (a preset slower than the measured stack), the transfer is
shortened to fit the step at the preset's link rates.

This module holds no fitting code (that is `calibration.step_model`); simcore runs it
(`simcore.perf.PerfModel(step=…)`, `experiments.run_perf.build_perf`). Parameters arrive as plain data (`StepParams`, from a profile TOML read by
`read_profile`): one `StepForm` per model fitted on the preset, a `default` form for models
without measurements there (κ = 1, h = 0, c₀ = 0 and the exposed all-reduce of the preset's
pooled fit over all its measured models). A preset without a profile uses no `StepParams`
and the zoo's overlap start fraction s: comm_start_s = s · C, comm_s = M (the generic
DDP-overlap form, exposed = max(0, M − (1 − s) · C)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from cosim.errors import InputError

#: names of the exposed-all-reduce terms, in weight order
SYNC_FEATURES = ("intercept", "log_comm_model_s", "log_gpus", "single_node", "two_nodes",
                 "log_max_gpus_per_node", "log_nodes", "log_compute_s")
#: DDP exposed-fraction parameters: floor f = σ(tail_logit), sharpness e^log_sharpness, midpoint
OVERLAP_PARAMS = ("tail_logit", "log_sharpness", "midpoint")
STEP_PARAMS = ("kappa", "host_slope", "overhead_s")
#: smallest compute phase (a negative fitted c₀ must not make the compute phase vanish)
MIN_COMPUTE_S = 1e-9


def sync_design(gpus: np.ndarray, gmax: np.ndarray, nodes: np.ndarray, comm_model_s: np.ndarray,
                compute_s: np.ndarray) -> np.ndarray:
    """φ per row (`SYNC_FEATURES` columns) from the placement counts, M and C."""
    n = np.asarray(nodes, float)
    cols = [np.ones(n.shape[0]), np.log(np.maximum(comm_model_s, 1e-9)), np.log(np.asarray(gpus, float)),
            (n == 1).astype(float), (n == 2).astype(float), np.log(np.asarray(gmax, float)),
            (n > 1) * np.log(n), np.log(np.maximum(compute_s, 1e-9))]
    return np.column_stack(cols)


def hidden_factor_log(g: np.ndarray, log_c: np.ndarray, overlap: np.ndarray) -> np.ndarray:
    """log D = log(f + (1 − f) / (1 + exp(b · (log C − g − c)))) (see the module docstring)."""
    f = 1.0 / (1.0 + np.exp(-overlap[0]))
    z = np.clip(np.exp(overlap[1]) * (log_c - g - overlap[2]), -50.0, 50.0)
    return np.log(f + (1.0 - f) / (1.0 + np.exp(z)))


def exposed_s(weights: np.ndarray, overlap: np.ndarray | None, X: np.ndarray) -> np.ndarray:
    """S per row of the design `X` (all `SYNC_FEATURES` columns)."""
    g = X @ np.asarray(weights, float)
    if overlap is not None:
        g = g + hidden_factor_log(g, X[:, SYNC_FEATURES.index("log_compute_s")], np.asarray(overlap, float))
    return np.exp(g)


def noncomm_s(step: np.ndarray, compute_s: np.ndarray, gmax: np.ndarray) -> np.ndarray:
    """κ · C · (1 + h · (g_max − 1)) + c₀ (unclamped; `step` = (κ, h, c₀))."""
    return step[0] * compute_s * (1.0 + step[1] * (gmax - 1.0)) + step[2]


@dataclass(frozen=True)
class StepForm:
    """One model's parameters on one preset (`STEP_PARAMS`, `SYNC_FEATURES`, `OVERLAP_PARAMS`)."""

    kappa: float = 1.0
    host_slope: float = 0.0
    overhead_s: float = 0.0
    sync: tuple[float, ...] = ()          # one weight per SYNC_FEATURES
    overlap: tuple[float, ...] | None = None
    #: the compute times C the form was fitted over; outside, C is clamped into it for S and
    #: the non-communicating part scales with C (its ratio at the edge): the affine fit
    #: (e.g. YOLOv3 on the DGX: κ = 2.1, c₀ = −0.33 s over C = 0.27–0.48 s) must not be
    #: extrapolated to batches never measured (2x at batch 128, or a negative time at 4)
    compute_range_s: tuple[float, float] = (0.0, math.inf)

    def phases(self, compute_s: float, comm_s: float, gpus: int, gmax: int, nodes: int
               ) -> tuple[float, float, float, float]:
        """(compute_s C', comm_start_s, comm_s, link-bytes factor) of one placement, alone:
        max(C', start + comm) = C' + S (see the module docstring)."""
        cc = min(max(compute_s, self.compute_range_s[0]), self.compute_range_s[1])
        X = sync_design(np.array([gpus]), np.array([gmax]), np.array([nodes]), np.array([comm_s]), np.array([cc]))
        S = float(exposed_s(np.asarray(self.sync), self.overlap, X)[0])
        c = float(noncomm_s(np.array([self.kappa, self.host_slope, self.overhead_s]), cc, gmax))
        c = max(c * (compute_s / cc) if cc > 0 else c, MIN_COMPUTE_S)
        m = min(max(comm_s, S), c + S)
        return c, c + S - m, m, (m / comm_s if comm_s > c + S else 1.0)


@dataclass(frozen=True)
class StepParams:
    """A profile's step part for one preset: fitted forms per model, a default for the rest."""

    models: Mapping[str, StepForm]
    default: StepForm
    preset: str = ""
    source: str = ""

    def form(self, model: str) -> StepForm:
        return self.models.get(model, self.default)


@dataclass(frozen=True)
class Profile:
    """Everything a calibration profile holds, as the engine uses it."""

    comm: Mapping[str, Any] = field(default_factory=dict)      # CommParams fields
    step: Mapping[str, StepParams] = field(default_factory=dict)  # preset → StepParams
    compute: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)  # model → gpu → curve
    source: str = ""

    def step_for(self, preset: str) -> StepParams | None:
        """The step parameters for `preset`: its own section, or the only one the profile
        has (a user's profile fitted under another preset name), else None."""
        if preset in self.step:
            return self.step[preset]
        if len(self.step) == 1:
            return next(iter(self.step.values()))
        return None


# ------------------------------------------------------------------ reading (strict)

PROFILE_TABLES = ("comm", "step", "compute", "meta")
COMPUTE_KEYS = ("batches", "times_s", "t0_s", "per_sample_s")


def _num(src: str, where: str, v: Any, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        raise InputError.at(src, field=where, expected="a positive finite number" if positive else "a finite number",
                            got=v)
    return float(v)


def _table(src: str, where: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise InputError.at(src, field=where, expected="a table", got=v)
    return v


def _form(src: str, where: str, t: Any) -> StepForm:
    t = _table(src, where, t)
    unknown = set(t) - set(STEP_PARAMS) - {"sync", "overlap", "compute_range_s"}
    if unknown:
        raise InputError.at(src, field=f"{where}.{sorted(unknown)[0]}",
                            expected=f"one of {', '.join(STEP_PARAMS)}, sync, overlap, compute_range_s")
    step: dict[str, Any] = {k: _num(src, f"{where}.{k}", t[k]) for k in STEP_PARAMS if k in t}
    if "compute_range_s" in t:
        r = t["compute_range_s"]
        if not isinstance(r, list) or len(r) != 2:
            raise InputError.at(src, field=f"{where}.compute_range_s", expected="[low, high] seconds", got=r)
        lo, hi = (_num(src, f"{where}.compute_range_s", x, positive=True) for x in r)
        if lo > hi:
            raise InputError.at(src, field=f"{where}.compute_range_s", expected="low <= high", got=r)
        step["compute_range_s"] = (lo, hi)
    sync_t = _table(src, f"{where}.sync", t.get("sync"))
    missing = [f for f in SYNC_FEATURES if f not in sync_t]
    if missing or set(sync_t) - set(SYNC_FEATURES):
        raise InputError.at(src, field=f"{where}.sync", expected=f"the terms {', '.join(SYNC_FEATURES)}",
                            got=", ".join(sorted(sync_t)))
    sync = tuple(_num(src, f"{where}.sync.{f}", sync_t[f]) for f in SYNC_FEATURES)
    overlap = None
    if "overlap" in t:
        ov = _table(src, f"{where}.overlap", t["overlap"])
        if set(ov) != set(OVERLAP_PARAMS):
            raise InputError.at(src, field=f"{where}.overlap", expected=f"the terms {', '.join(OVERLAP_PARAMS)}",
                                got=", ".join(sorted(ov)))
        overlap = tuple(_num(src, f"{where}.overlap.{p}", ov[p]) for p in OVERLAP_PARAMS)
    return StepForm(sync=sync, overlap=overlap, **step)


def _curve(src: str, where: str, t: Any) -> dict:
    t = _table(src, where, t)
    for k in COMPUTE_KEYS:
        if k not in t:
            raise InputError.at(src, field=f"{where}.{k}", expected="present (cosim calibrate fit writes it)")
    b, ts = t["batches"], t["times_s"]
    if not isinstance(b, list) or not isinstance(ts, list) or len(b) != len(ts) or not b:
        raise InputError.at(src, field=f"{where}.batches", expected="two equal-length non-empty arrays "
                            "batches and times_s", got=f"{b!r}")
    out = dict(t)
    out["batches"] = [_num(src, f"{where}.batches", x, positive=True) for x in b]
    out["times_s"] = [_num(src, f"{where}.times_s", x, positive=True) for x in ts]
    out["t0_s"] = _num(src, f"{where}.t0_s", t["t0_s"])
    out["per_sample_s"] = _num(src, f"{where}.per_sample_s", t["per_sample_s"])
    for k in ("batch_min", "batch_max"):  # whole batch sizes (batch_max 0: no measured range)
        if k in t and (_num(src, f"{where}.{k}", t[k]) < 0 or t[k] != int(t[k])):
            raise InputError.at(src, field=f"{where}.{k}", expected="a whole number >= 0", got=t[k])
    for k, v in t.items():  # any other number the curve carries (effective_flops, ...) must be finite
        if k not in out or k in ("batch_min", "batch_max") or not isinstance(v, (int, float)):
            continue
        _num(src, f"{where}.{k}", v)
    return out


#: top-level tables of the earlier profile format (a single fitted overlap, per-platform tables)
EARLIER_TABLES = ("overlap", "platform")


def profile_from_data(data: Mapping[str, Any], source: str = "profile") -> Profile:
    """Validate a parsed profile (the TOML `calibration.fit.write_profile` writes) — every
    table it writes is read here; anything else is an error naming the file and field."""
    earlier = sorted(k for k in data if k in EARLIER_TABLES)
    if earlier:  # the format before step forms: one overlap fraction and per-platform tables
        raise InputError.at(source, field=earlier[0], expected=(
            f"the profile tables {', '.join(PROFILE_TABLES)}; this file has the earlier format ([overlap], "
            "[platform.*]), which the iteration model no longer reads: refit it with `cosim calibrate fit -o FILE` "
            "(its [comm] table may be kept as it is)"))
    for k in data:
        if k not in PROFILE_TABLES:
            raise InputError.at(source, field=k, expected=f"one of the tables {', '.join(PROFILE_TABLES)}")
    comm = dict(_table(source, "comm", data.get("comm", {})))
    for k, v in comm.items():
        if k != "algorithm":
            _num(source, f"comm.{k}", v)
    steps = {}
    for preset, sec in _table(source, "step", data.get("step", {})).items():
        sec = _table(source, f"step.{preset}", sec)
        unknown = set(sec) - {"default", "model", "gpu_type", "platforms", "cv_median_step_error"}
        if unknown:
            raise InputError.at(source, field=f"step.{preset}.{sorted(unknown)[0]}",
                                expected="default, model, gpu_type, platforms, cv_median_step_error")
        if "default" not in sec:
            raise InputError.at(source, field=f"step.{preset}.default", expected="a table (the generic form)")
        models = {m: _form(source, f"step.{preset}.model.{m}", t)
                  for m, t in _table(source, f"step.{preset}.model", sec.get("model", {})).items()}
        steps[preset] = StepParams(models, _form(source, f"step.{preset}.default", sec["default"]), preset, source)
    compute = {}
    for m, per in _table(source, "compute", data.get("compute", {})).items():
        compute[m] = {g: _curve(source, f"compute.{m}.{g}", t)
                      for g, t in _table(source, f"compute.{m}", per).items()}
    return Profile(comm, steps, compute, source)


def read_profile(path: str | Path) -> Profile:
    """Read and validate a profile TOML (one line naming file and field on bad input)."""
    from cosim.tomlfile import read_toml

    p = Path(path)
    return profile_from_data(read_toml(p, "calibration profile (cosim calibrate fit)"), str(p))


#: shipped profiles (named by a preset's `profile` key)
PROFILES_DIR = Path(__file__).resolve().parent / "data" / "profiles"


def profile_path(name_or_path: str, relative_to: str | None = None) -> Path:
    """A preset's `profile` value: a shipped profile name, or a file (relative to the preset file)."""
    shipped = PROFILES_DIR / f"{name_or_path}.toml"
    if shipped.exists():
        return shipped
    p = Path(name_or_path)
    if not p.is_absolute() and relative_to:
        p = Path(relative_to).parent / p
    if not p.exists():
        raise InputError.at(relative_to or "preset", field="profile",
                            expected="a shipped profile name or a profile file", got=name_or_path)
    return p
