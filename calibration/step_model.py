"""Measured-step model for Pollux/Sia-style rows: exposed all-reduce + host-contended compute.

What the data says (Pollux/Sia `placements-*.csv`, 12,939 multi-GPU rows): the non-sync part
of a multi-GPU step, `step − sync`, is within a few per cent of `κ · C(b)` for most models,
where `C(b)` is the single-GPU step at the same local batch (κ ≈ 1.0 on T4 and RTX, ≈ 0.87 on
the DGX, where the single-GPU runs paid more per step), but grows with the number of GPUs that
share one host for the data-loading-heavy models (YOLOv3 on the DGX: 1.0× with one GPU per
node, 1.5× with 8). `sync_time` is the *exposed* all-reduce (BERT's `11` on the DGX would need
55 GB/s through one 25 GB/s NIC otherwise), and on `aws` it does not follow an α–β model
(two-node placements are slower than four-node ones with the same GPU count). Hence two
fitted parts per (platform, model), each a named parameter set written to the profile:

1. **Exposed all-reduce** (`SyncModel`, `SYNC_FEATURES`): log S = w · φ(placement), with
   φ = (1, log M₀, log G, [one node], [two nodes], log g_max, log n·[>1 node], log C(b)) where M₀ is
   `collectives.CommModel`'s all-reduce of the model's DDP buckets on the placement with the
   preset's parameters (the network physics), G the GPU count, g_max the most GPUs on one
   node, n the node count, C(b) the single-GPU step (a longer backward hides more of the
   all-reduce: with it the cross-validated all-reduce error drops from 15.4 to 11.4 % on aws,
   15.8 to 12.1 % on rtx, 30.8 to 24.6 % on dgx). The exponent on M₀ and the placement terms absorb what the α–β
   model lacks: overlap with backward (the exposed part), host/PCIe contention with many GPUs
   per node, and the two-node anomaly. Fitted with a soft-L1 loss on log residuals
   (`SYNC_F_SCALE`), so a few outlying placements do not drag the fit. Default form
   (`SYNC_FORM` = ``overlap``, `SyncModel`): that estimate times DDP's exposed fraction, which
   falls from 1 to a floor (the last buckets) as the backward outgrows the all-reduce — the
   kink a power law in C misses. Cross-validated all-reduce error, log-linear → overlap (5
   folds, seeds 0 / 1 / 2): aws 11.4 / 11.7 / 11.9 → 10.6 / 10.8 / 10.8 %, dgx 24.6 / 24.3 /
   24.3 → 24.1 / 23.3 / 23.6 %, dgx-ext 24.0 / 23.8 / 23.8 → 24.2 / 24.1 / 24.2 % (0.2–0.4
   worse), rtx 12.2 / 12.2 / 12.2 → 11.2 / 11.0 / 11.0 %; step error equal or lower.
2. **Step** (`StepModel`): t = κ · C(b) · (1 + h · (g_max − 1)) + c₀ + S, with
   `kappa` (framework/data-loading factor of the non-communicating phase), `host_slope`
   (slowdown per extra GPU sharing the host: CPU data loading, PCIe root complex) and
   `overhead_s` (fixed per-step cost of a multi-GPU step *relative to the single-GPU step*:
   DDP hooks and process group add to it, but it is often negative — the single-GPU runs carry
   a larger fixed cost (the 0.12–0.15 s floors of the Pollux curves); bounding it at 0 raises
   the DGX CV step error from 3.8 % to 5.4 %, so it is allowed down to −1 s).
   Fitted on the training rows' measured `step − sync` decomposition (soft-L1 on log
   residuals, `STEP_F_SCALE`); predictions use the *predicted* S, never a measured one.

Both parts are fitted only on the rows given (the caller holds out whole placements for
cross-validation, or whole hardware types for leave-one-platform-out, `fit.leave_one_platform_out`).

Transfer to unseen hardware (LOPO) — what carries and what does not: the step part does (with
the measured all-reduce in place of the predicted one the held-out step error is 3–6 %: κ ≈ 1
and the single-GPU curve C(b) of the held-out GPU carry the compute), the exposed all-reduce
does not (46–259 % median error): its ratio to M₀ differs per hardware by more than an order of
magnitude and in *shape* across placements (aws: 4–18x more from one node to two; rtx ~1.2x;
DGX: less), because the presets' effective bandwidths and fixed costs are not the real stack's
(e.g. AWS's 5 Gb/s single-TCP-flow limit against the preset's 50 Gb/s NIC). Several physically
motivated transfer forms were tried (dimensionless S/C on M₀/C, exponent 1 on M₀, tier-split
M₀, per-hardware random intercepts; docs/calibration.md lists them with their numbers); none
is better on every held-out hardware, so `TRANSFER_FEATURES` is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cosim.errors import InputError
from calibration import stepform

#: names of the exposed-all-reduce regression terms, in weight order (the engine's, `calibration.stepform`)
SYNC_FEATURES = stepform.SYNC_FEATURES
#: terms used when transferring to unseen hardware (leave-one-platform-out): without
#: `log_compute_s`, whose coefficient is tied to one GPU's compute speed (pooled over other
#: hardware it mis-transfers: LOPO step error aws 33 % vs 15 %, dgx 34 % vs 31 %, rtx 43 % vs 30 %)
TRANSFER_FEATURES = SYNC_FEATURES[:-1]
#: soft-L1 scale of the log residuals (≈ the all-reduce noise floor, 10–20 %)
SYNC_F_SCALE = 0.1
#: soft-L1 scale of the step log residuals (≈ step noise, a few %)
STEP_F_SCALE = 0.03
STEP_PARAMS = stepform.STEP_PARAMS
STEP_LO = np.array([0.3, 0.0, -1.0])
STEP_HI = np.array([3.0, 1.0, 10.0])
#: ridge weight pulling the sync regression towards (log M₀ + intercept) when data are few
SYNC_RIDGE = 1e-3
#: forms of the exposed-all-reduce model (`SyncModel`): ``loglinear`` -- log S = w · φ;
#: ``overlap`` -- the same times DDP's hidden-fraction factor (see `SyncModel`), used when the
#: terms include `log_compute_s` (the factor is a function of the backward time)
SYNC_FORMS = ("loglinear", "overlap")
SYNC_FORM = "overlap"
#: the factor's parameters: exposed floor f = σ(tail_logit), sharpness e^log_sharpness, midpoint
OVERLAP_PARAMS = stepform.OVERLAP_PARAMS
OVERLAP_START = np.array([3.0, 0.0, 0.0])
#: |log_sharpness| bound: a transition no sharper than b = e^3 ≈ 20 per unit of log(C / e^g).
#: Unbounded, 28 of the 144 cross-validation fits drifted towards a step (b ≈ e^5) and ran to
#: least_squares' evaluation limit (validate: 32 s CPU → 9 s bounded, same errors to 0.1 point)
OVERLAP_MAX_LOG_SHARPNESS = 3.0


def placement_features(placements: pd.Series) -> pd.DataFrame:
    """G, g_max and n for each placement digit string ('144' → 9, 4, 3)."""
    counts = placements.astype(str).map(lambda p: [int(c) for c in p])
    return pd.DataFrame({"gpus": counts.map(sum), "gmax": counts.map(max), "nodes": counts.map(len)},
                        index=placements.index)


def sync_design(feat: pd.DataFrame, comm_model_s: np.ndarray, compute_s: np.ndarray) -> np.ndarray:
    """φ per row (the engine's `calibration.stepform.sync_design`) from `placement_features`."""
    return stepform.sync_design(feat["gpus"].to_numpy(), feat["gmax"].to_numpy(), feat["nodes"].to_numpy(),
                                comm_model_s, compute_s)


_hidden_factor_log = stepform.hidden_factor_log


def _overlap_residuals(t: np.ndarray, X: np.ndarray, log_c: np.ndarray, y: np.ndarray, lam: float,
                       w_lin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals and their analytic Jacobian (7x faster than finite differences over the full
    validation) of the ``overlap`` fit: t = (w, tail_logit, log_sharpness, midpoint); log
    residuals, then the ridge rows pulling the placement terms w[2:] towards `w_lin`."""
    k = X.shape[1]
    g = X @ t[:k]
    f = 1.0 / (1.0 + np.exp(-t[k]))
    b = np.exp(t[k + 1])
    z = np.clip(b * (log_c - g - t[k + 2]), -50.0, 50.0)
    sg = 1.0 / (1.0 + np.exp(z))
    D = f + (1.0 - f) * sg
    r = np.r_[g + np.log(D) - y, lam * (t[2:k] - w_lin[2:])]
    ds = (1.0 - f) * sg * (1.0 - sg) / D                 # −∂log D/∂z
    J = np.zeros((len(r), k + 3))
    J[:len(y), :k] = X * (1.0 + ds * b)[:, None]          # ∂/∂g = 1 + ds·b
    J[:len(y), k] = (1.0 - sg) * f * (1.0 - f) / D
    J[:len(y), k + 1] = -ds * z
    J[:len(y), k + 2] = ds * b
    J[len(y):, 2:k] = lam * np.eye(k - 2)
    return r, J


@dataclass
class SyncModel:
    """Exposed all-reduce. ``loglinear``: log S = w · φ. ``overlap`` (`overlap` set): the same
    estimate g = w · φ times DDP's exposed fraction, log S = g + log(f + (1 − f) / (1 + e^{b(log C
    − g − c)})): DDP all-reduces gradient buckets while the backward runs, so the part that stays
    exposed falls from all of it (backward short against the all-reduce, C ≪ e^g) to a floor f
    (the last buckets, which cannot start before the backward ends, C ≫ e^g), smoothly in
    log(C / e^g) — a kink the power law in C of the log-linear form cannot follow (rtx
    ResNet-18 `44`: the exposed all-reduce falls 4x from batch 32 to 363, then stays flat).
    With f → 1 it is the log-linear form; fitted from it (`OVERLAP_START`: f = 0.95), the
    ridge pulling the placement terms towards the log-linear solution."""

    weights: np.ndarray  # one per SYNC_FEATURES
    overlap: np.ndarray | None = None  # OVERLAP_PARAMS, None = log-linear

    @classmethod
    def fit_overlap(cls, X: np.ndarray, sync_s: np.ndarray, log_c_col: int) -> "SyncModel":
        from scipy.optimize import least_squares

        lin = cls.fit(X, sync_s)
        y = np.log(sync_s)
        lam = np.sqrt(SYNC_RIDGE * len(y))
        args = (X, X[:, log_c_col], y, lam, lin.weights)
        k = X.shape[1]
        hi = np.full(k + 3, np.inf)
        hi[k + 1] = OVERLAP_MAX_LOG_SHARPNESS
        res = least_squares(lambda t: _overlap_residuals(t, *args)[0], np.r_[lin.weights, OVERLAP_START],
                            jac=lambda t: _overlap_residuals(t, *args)[1], loss="soft_l1", f_scale=SYNC_F_SCALE,
                            bounds=(-hi, hi))
        return cls(res.x[:k], res.x[k:])

    @classmethod
    def fit(cls, X: np.ndarray, sync_s: np.ndarray) -> "SyncModel":
        from scipy.optimize import least_squares

        y = np.log(sync_s)
        # only the columns that vary in the training rows can be identified; the rest stay 0
        # (e.g. no single-node placement in the fold) — the ridge keeps them there.
        w0 = np.zeros(X.shape[1])
        w0[1] = 1.0
        w0[0] = float(np.median(y - X[:, 1]))
        lam = np.sqrt(SYNC_RIDGE * len(y))

        def resid(w):
            return np.r_[X @ w - y, lam * (w[2:] - w0[2:])]

        res = least_squares(resid, w0, loss="soft_l1", f_scale=SYNC_F_SCALE)
        return cls(res.x)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """`X`: the full `sync_design` (all SYNC_FEATURES columns)."""
        return stepform.exposed_s(self.weights, self.overlap, X)

    def as_dict(self) -> dict[str, float]:
        out = {f: float(v) for f, v in zip(SYNC_FEATURES, self.weights)}
        if self.overlap is not None:
            out.update({p: float(v) for p, v in zip(OVERLAP_PARAMS, self.overlap)})
        return out


@dataclass
class StepModel:
    kappa: float
    host_slope: float
    overhead_s: float

    @staticmethod
    def _pred(x, compute_s, gmax, sync_s):
        return stepform.noncomm_s(np.asarray(x), compute_s, gmax) + sync_s

    @classmethod
    def fit(cls, compute_s: np.ndarray, gmax: np.ndarray, sync_s: np.ndarray, step_s: np.ndarray) -> "StepModel":
        from scipy.optimize import least_squares

        def resid(x):
            return np.log(np.maximum(cls._pred(x, compute_s, gmax, sync_s), 1e-9) / step_s)

        hi = STEP_HI.copy()
        hi[2] = min(hi[2], float(np.min(step_s)))  # a fixed cost cannot exceed the fastest step
        x0 = np.clip([1.0, 0.0, 0.0], STEP_LO + 1e-9, hi - 1e-9)
        res = least_squares(resid, x0, bounds=(STEP_LO, hi), loss="soft_l1", f_scale=STEP_F_SCALE)
        return cls(*map(float, res.x))

    def predict(self, compute_s, gmax, sync_s) -> np.ndarray:
        return np.maximum(self._pred((self.kappa, self.host_slope, self.overhead_s), compute_s, gmax, sync_s),
                          1e-9)

    def as_dict(self) -> dict[str, float]:
        return dict(kappa=self.kappa, host_slope=self.host_slope, overhead_s=self.overhead_s)


@dataclass
class ModelFit:
    """One (platform or pooled platforms, model) fit: the exposed-sync and the step part."""

    sync: SyncModel
    step: StepModel

    @classmethod
    def fit(cls, d: pd.DataFrame, features: tuple[str, ...] = SYNC_FEATURES, form: str | None = None
            ) -> "ModelFit":
        """`d`: rows with placement, compute_s, comm_model_s, step_time_s, sync_time_s;
        `features`: the sync-regression terms used (the others are fixed at 0); `form`
        (`SYNC_FORMS`, default `SYNC_FORM`): ``overlap`` applies only when `features` include
        `log_compute_s` (the leave-one-platform-out terms do not: there it is log-linear)."""
        form = SYNC_FORM if form is None else form
        if form not in SYNC_FORMS:
            raise InputError.at(field="sync form", expected=" | ".join(SYNC_FORMS), got=form)
        feat = placement_features(d["placement"])
        X = sync_design(feat, d["comm_model_s"].to_numpy(float), d["compute_s"].to_numpy(float))
        keep = np.array([f in features for f in SYNC_FEATURES])
        y = d["sync_time_s"].to_numpy(float)
        if form == "overlap" and "log_compute_s" in features:
            sync = SyncModel.fit_overlap(X[:, keep], y, int(np.flatnonzero(keep).tolist().index(
                SYNC_FEATURES.index("log_compute_s"))))
        else:
            sync = SyncModel.fit(X[:, keep], y)
        w = np.zeros(len(SYNC_FEATURES))
        w[keep] = sync.weights
        sync = SyncModel(w, sync.overlap)
        step = StepModel.fit(d["compute_s"].to_numpy(float), feat["gmax"].to_numpy(float),
                             d["sync_time_s"].to_numpy(float), d["step_time_s"].to_numpy(float))
        c = d["compute_s"].to_numpy(float)
        return cls(sync, step, (float(c.min()), float(c.max())))

    def predict(self, d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(predicted step, predicted exposed all-reduce) per row of `d`."""
        feat = placement_features(d["placement"])
        S = self.sync.predict(sync_design(feat, d["comm_model_s"].to_numpy(float), d["compute_s"].to_numpy(float)))
        return self.step.predict(d["compute_s"].to_numpy(float), feat["gmax"].to_numpy(float), S), S

    def as_dict(self) -> dict:
        return {"sync": self.sync.as_dict(), "step": self.step.as_dict()}

    #: the compute times the fit saw (`StepForm.compute_range_s`), set by `fit`
    compute_range_s: tuple[float, float] = (0.0, float("inf"))

    def form(self) -> stepform.StepForm:
        """The engine's parameters (`calibration.stepform.StepForm`)."""
        ov = None if self.sync.overlap is None else tuple(map(float, self.sync.overlap))
        return stepform.StepForm(self.step.kappa, self.step.host_slope, self.step.overhead_s,
                                 sync=tuple(map(float, self.sync.weights)), overlap=ov,
                                 compute_range_s=self.compute_range_s)


def fit_default(d: pd.DataFrame) -> stepform.StepForm:
    """The form for models without measurements on a preset: κ = 1, h = 0, c₀ = 0 and
    S = e^b · M · D(log C − b − log M − c), i.e. the physics all-reduce M scaled by one
    platform factor e^b (the real stack's effective bandwidth against the preset's) times
    DDP's exposed fraction D, with b and D's parameters fitted on all the preset's measured
    rows pooled (soft-L1 on log residuals). Its dependence on the model is through M (the
    model's gradient bytes on the placement) and C alone, so it carries to any model."""
    from scipy.optimize import least_squares

    y = np.log(d["sync_time_s"].to_numpy(float))
    log_m = np.log(np.maximum(d["comm_model_s"].to_numpy(float), 1e-9))
    log_c = np.log(np.maximum(d["compute_s"].to_numpy(float), 1e-9))

    def resid(x):
        g = x[0] + log_m
        return g + stepform.hidden_factor_log(g, log_c, x[1:]) - y

    hi = np.array([np.inf, np.inf, OVERLAP_MAX_LOG_SHARPNESS, np.inf])
    x0 = np.r_[float(np.median(y - log_m)), OVERLAP_START]
    x = least_squares(resid, x0, loss="soft_l1", f_scale=SYNC_F_SCALE, bounds=(-hi, hi)).x
    w = np.zeros(len(SYNC_FEATURES))
    w[0], w[1] = x[0], 1.0
    return stepform.StepForm(1.0, 0.0, 0.0, sync=tuple(map(float, w)), overlap=tuple(map(float, x[1:])))


def form_table(form: stepform.StepForm) -> dict:
    """A `StepForm` as the profile's TOML table (`calibration.stepform.profile_from_data` reads it)."""
    out: dict = {k: float(getattr(form, k)) for k in STEP_PARAMS}
    if np.isfinite(form.compute_range_s[1]):
        out["compute_range_s"] = [float(x) for x in form.compute_range_s]
    out["sync"] = dict(zip(SYNC_FEATURES, map(float, form.sync)))
    if form.overlap is not None:
        out["overlap"] = dict(zip(OVERLAP_PARAMS, map(float, form.overlap)))
    return out


def fit_predict(train: pd.DataFrame, test: pd.DataFrame, features: tuple[str, ...] = SYNC_FEATURES
                ) -> tuple[np.ndarray, np.ndarray]:
    """Fit per model on `train`, predict `test` (models missing in `train`: all models pooled).
    A diagnostic of the regression alone (the same `calibration.stepform` evaluation, outside the
    engine); `cosim validate` scores the engine's predictions (`calibration.fit`)."""
    step = np.full(len(test), np.nan)
    sync = np.full(len(test), np.nan)
    pooled = None
    for m, idx in test.groupby("model").indices.items():
        tr = train[train["model"] == m]
        if len(tr) >= 8:
            mf = ModelFit.fit(tr, features)
        else:
            pooled = pooled or ModelFit.fit(train, features)
            mf = pooled
        step[idx], sync[idx] = mf.predict(test.iloc[idx])
    return step, sync
