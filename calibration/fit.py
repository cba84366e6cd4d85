"""Fit communication, overlap and step-model parameters to measured step/sync times; cross-validate.

Two fits per Pollux/Sia platform:
- **Predictions** (what `cosim validate` scores): `calibration.step_model` — per model, the
  exposed all-reduce as a log-linear function of `collectives.CommModel`'s all-reduce M₀ on the
  placement (preset parameters) and placement/compute terms, and the step as
  κ·C(b)·(1 + h·(g_max − 1)) + c₀ + S. Cross-validation: K folds over placement *shapes*
  (`12` ≡ `21`); leave-one-platform-out: fitted only on the rows of platforms on other
  hardware (`dgx` and `dgx-ext` are one DGX-A100 and are held out together).
- **Engine profile** (`[comm]`, `overlap_start_frac`; the engine's phase model
  `t = max(C, s·C + M)`): the CommParams efficiencies `beta_efficiency_intra`,
  `beta_efficiency_net` and `base_latency_s` with one gradient-bytes multiplier per model by
  least squares on log(M_pred / sync), then `s` on the step residuals (`fit_comm`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calibration import step_model, zoo
from calibration.importers import placement_counts
from cosim.errors import InputError

log = logging.getLogger(__name__)

#: the `collectives.CommParams` fields fitted, in θ order: two bandwidth efficiencies, then
#: latencies (fitted in log space). Adding `alpha_intra_s`, `alpha_net_s` made the
#: cross-validated errors worse on the Pollux/Sia sets (aws 9.8 % vs 8.3 %), so they stay at
#: the preset's values.
COMM_FIELDS = ("beta_efficiency_intra", "beta_efficiency_net", "base_latency_s")
N_THETA = len(COMM_FIELDS)
#: weight of the all-reduce residuals next to the step-time ones in the joint fit
SYNC_WEIGHT = 0.5
MIN_ROWS = 8


class Platform:
    """Everything fixed about one platform's rows: topology, GPU lists, compute curves."""

    def __init__(self, rows: pd.DataFrame, preset: str):
        import netmodel

        self.preset = preset
        self.topo = netmodel.build_topology(netmodel.load_cluster(preset))
        self.rows = rows.reset_index(drop=True)
        single = rows[rows["num_gpus"] == 1]
        self.curves: dict[str, pd.Series] = {
            m: d.groupby("local_bsz")["step_time_s"].median().sort_index() for m, d in single.groupby("model")}
        multi = self.rows[self.rows["num_gpus"] > 1]
        missing = sorted(set(multi["model"]) - set(self.curves))
        if missing:
            raise InputError.at(preset, expected="single-GPU rows for every model with multi-GPU rows",
                                detail=f"missing for {', '.join(missing)}")
        self.multi = multi.reset_index(drop=True)
        fg = self.topo.node_first_gpu
        # all-reduce time depends on (model, placement shape) only: evaluate each pair once
        # (nodes of a platform are identical, so `12` and `21` cost the same)
        keys = [(m, "".join(sorted(str(pl), reverse=True))) for m, pl in zip(self.multi["model"], self.multi["placement"])]
        self.pairs = sorted(set(keys))
        index = {k: i for i, k in enumerate(self.pairs)}
        self.pair_of_row = np.array([index[k] for k in keys], dtype=np.int64)
        self.gpus = [np.concatenate([fg[i] + np.arange(c) for i, c in enumerate(placement_counts(pl))]).astype(np.int64)
                     for _, pl in self.pairs]
        self.compute_s = np.array([self._compute(m, b) for m, b in zip(self.multi["model"], self.multi["local_bsz"])])

    def frame(self) -> pd.DataFrame:
        """Multi-GPU rows with `compute_s` (single-GPU curve) and `comm_model_s` (CommModel
        all-reduce with the preset's parameters, the physics feature of the sync model)."""
        d = self.multi.copy()
        d["compute_s"] = self.compute_s
        if not hasattr(self, "_comm0"):
            self._comm0 = self.comm_s(base_params(self))
        d["comm_model_s"] = self._comm0
        return d

    def _compute(self, model: str, b: int) -> float:
        s = self.curves[model]
        return float(np.interp(b, s.index.to_numpy(float), s.to_numpy(float)))

    def comm_s(self, params, byte_scale: dict[str, float] | None = None) -> np.ndarray:
        """Predicted all-reduce seconds per multi-GPU row; `byte_scale[model]` multiplies the
        model's gradient bytes (its buckets keep their proportions)."""
        from collectives import CommModel

        cm = CommModel(self.topo, params)
        per_pair = np.empty(len(self.pairs))
        specs = {m: zoo.get(m) for m in self.multi["model"].unique()}
        byte_scale = byte_scale or {}
        for i, ((m, _), g) in enumerate(zip(self.pairs, self.gpus)):
            s = specs[m]
            per_pair[i] = cm.allreduce(g, s.grad_bytes * byte_scale.get(m, 1.0), s.bucket_bytes).seconds
        return per_pair[self.pair_of_row]


def base_params(platform: Platform):
    from collectives import CommParams

    return CommParams.for_cluster(platform.topo.spec)


def with_theta(params, theta: np.ndarray, base_latency_s: float | None = None):
    """CommParams with θ = (β_intra, β_net, base latency, α_intra, α_net) (absolute values)."""
    return params.replace(**{f: float(v) for f, v in zip(COMM_FIELDS, theta)})


def theta_of(params) -> np.ndarray:
    return np.array([float(getattr(params, f)) for f in COMM_FIELDS])


def fit_comm(platforms: list[tuple[Platform, np.ndarray]], per_model: bool = True, joint: bool = False,
             sync_weight: float = SYNC_WEIGHT) -> tuple[np.ndarray, dict[str, float], float]:
    """Joint least squares for θ = (β_eff_intra, β_eff_net, base_latency_s, alpha_intra_s,
    alpha_net_s), the overlap start fraction s and, with `per_model`, one effective
    gradient-bytes multiplier per model (what the framework really moves: Pollux's sync times
    for YOLOv3 and BERT imply ~2x the bytes of their fp32 parameters relative to ResNets).

    Default (`joint=False`): θ and the byte multipliers minimise Σ log²(M_pred / sync) (relative
    errors, so small and large messages weigh alike), then s minimises the step residuals
    (`fit_overlap`). `joint=True` fits everything at once on log(t_pred / t) plus
    `sync_weight`·log(M_pred / sync); on the Pollux/Sia sets it was no better (aws 8.6 % vs
    8.3 %, dgx 10.8 % vs 8.0 % CV step error) and twice as slow, so it is an option."""
    from scipy.optimize import least_squares

    models = sorted({m for p, mask in platforms for m in p.multi["model"][mask]}) if per_model else []
    x0_theta = theta_of(base_params(platforms[0][0]))

    def unpack(x):
        theta = np.r_[x[:2], np.exp(x[2:N_THETA])]
        return theta, {m: float(np.exp(v)) for m, v in zip(models, x[N_THETA + 1:])}, float(x[N_THETA])

    def resid(x):
        theta, scale, s = unpack(x)
        out = []
        for p, mask in platforms:
            M = p.comm_s(with_theta(base_params(p), theta), scale)[mask]
            sync_r = np.log(np.maximum(M, 1e-9) / p.multi["sync_time_s"].to_numpy()[mask])
            if joint:
                t = predict_step(p.compute_s[mask], M, s)
                out += [np.log(t / p.multi["step_time_s"].to_numpy()[mask]), sync_weight * sync_r]
            else:
                out.append(sync_r)
        return np.concatenate(out)

    k = len(models)
    lat0 = np.log(np.clip(x0_theta[2:], 1e-7, 1e-2))
    lo = np.r_[0.005, 0.005, np.full(N_THETA - 2, np.log(1e-7)), 0.0, np.full(k, -3.0)]
    hi = np.r_[1.0, 1.0, np.full(N_THETA - 2, np.log(0.1)), 1.0, np.full(k, 3.0)]
    x0 = np.clip(np.r_[0.8, 0.8, lat0, 0.5, np.zeros(k)], lo + 1e-9, hi - 1e-9)
    if not joint:  # s is not in the residuals: pin it
        lo[N_THETA], hi[N_THETA], x0[N_THETA] = 0.5 - 1e-9, 0.5 + 1e-9, 0.5
    res = least_squares(resid, x0=x0, bounds=(lo, hi), diff_step=0.05, max_nfev=40 + 5 * k)
    theta, scale, s = unpack(res.x)
    if not joint:
        Ms, Cs, ts = [], [], []
        for p, mask in platforms:
            Ms.append(p.comm_s(with_theta(base_params(p), theta), scale)[mask])
            Cs.append(p.compute_s[mask])
            ts.append(p.multi["step_time_s"].to_numpy()[mask])
        s = fit_overlap(np.concatenate(Cs), np.concatenate(Ms), np.concatenate(ts))
    return theta, scale, s


def fit_overlap(compute_s: np.ndarray, comm_s: np.ndarray, step_s: np.ndarray) -> float:
    """s in [0, 1] minimising Σ(max(C, s·C + M)/t − 1)² (grid, then refine)."""
    grid = np.linspace(0.0, 1.0, 101)
    err = [np.sum((np.maximum(compute_s, s * compute_s + comm_s) / step_s - 1.0) ** 2) for s in grid]
    return float(grid[int(np.argmin(err))])


def predict_step(compute_s, comm_s, s):
    return np.maximum(compute_s, s * compute_s + comm_s)


@dataclass
class PlatformResult:
    platform: str
    theta: np.ndarray
    overlap_start_frac: float
    table: pd.DataFrame  # per row: model, placement, local_bsz, step, sync, pred_step, pred_sync (CV)
    loo: pd.DataFrame | None = None
    byte_scale: dict[str, float] = field(default_factory=dict)
    step_models: dict[str, dict] = field(default_factory=dict)  # model → ModelFit.as_dict()


@dataclass
class FitReport:
    results: dict[str, PlatformResult] = field(default_factory=dict)
    noise: pd.DataFrame | None = None
    collectives: pd.DataFrame | None = None  # α–β per (source, op, group size), see fit_collectives

    @property
    def cv_median_abs_err(self) -> float:
        errs = [np.abs(r.table["pred_step"] / r.table["step_time_s"] - 1) for r in self.results.values()]
        if not errs and self.collectives is not None and len(self.collectives):
            return float(self.collectives["cv_median_abs_err"].median())
        return float(np.median(np.concatenate(errs))) if errs else float("nan")

    def summary(self) -> str:
        lines = []
        for name, r in self.results.items():
            t = r.table
            e_step = np.abs(t["pred_step"] / t["step_time_s"] - 1)
            e_sync = np.abs(t["pred_sync"] / t["sync_time_s"] - 1)
            params = " ".join(f"{f}={v * 1e6:.1f}us" if f.endswith("_s") else f"{f}={v:.3f}"
                              for f, v in zip(COMM_FIELDS, r.theta))
            lines.append(f"{name}: {params} "
                         f"overlap_start_frac={r.overlap_start_frac:.2f}  CV step median {np.median(e_step):.1%} "
                         f"p90 {np.quantile(e_step, 0.9):.1%}; sync median {np.median(e_sync):.1%}")
        if self.collectives is not None and len(self.collectives):
            for _, c in self.collectives.iterrows():
                lines.append(f"{c['source']} {c['op']} n={int(c['group_size'])}: alpha={c['alpha_s'] * 1e6:.1f}us "
                             f"bus bandwidth={c['busbw_GBps']:.2f} GB/s  CV median abs err {c['cv_median_abs_err']:.1%}")
        lines.append(f"overall CV median abs error {self.cv_median_abs_err:.1%}")
        return "\n".join(lines)


def noise_floor(rows: pd.DataFrame) -> pd.DataFrame:
    """Measurement noise per (model, platform): median |x / group median − 1| over groups of
    measurements that should be equal.

    - `noise_sync`: all-reduce time does not depend on the local batch (the gradient size
      is fixed), so the groups are (placement) across batch sizes — repeats in effect;
    - `noise_step`: equivalent placements, the same multiset of GPUs per node (`12` ≡ `21`)
      at the same batch, and the same placement measured on the same hardware twice (Sia's
      `dgx` and `dgx-ext` are the same DGX-A100 nodes).
    """
    d = rows[rows["num_gpus"] > 1].copy()
    d["shape"] = d["placement"].map(lambda p: "".join(sorted(str(p))))
    out = []
    for (m, plat), g in d.groupby(["model", "platform"]):
        dev_sync = []
        for _, gg in g.groupby("placement"):
            if len(gg) >= 2:
                dev_sync += list(np.abs(gg["sync_time_s"] / gg["sync_time_s"].median() - 1))
        same_hw = d[(d["model"] == m) & (d["preset"] == g["preset"].iloc[0])]
        dev_step = []
        for _, gg in same_hw.groupby(["local_bsz", "shape"]):
            if len(gg) >= 2 and plat in set(gg["platform"]):
                dev_step += list(np.abs(gg["step_time_s"] / gg["step_time_s"].median() - 1))
        out.append(dict(model=m, platform=plat, noise_step=float(np.median(dev_step)) if dev_step else np.nan,
                        noise_sync=float(np.median(dev_sync)) if dev_sync else np.nan,
                        step_groups=len(dev_step), sync_groups=len(dev_sync)))
    return pd.DataFrame(out)


def _folds(placements: pd.Series, k: int, seed: int = 0) -> np.ndarray:
    uniq = np.array(sorted(placements.unique()))
    rng = np.random.default_rng(seed)
    fold_of = dict(zip(uniq, rng.permutation(len(uniq)) % k))
    return placements.map(fold_of).to_numpy()


def _shape(placement: pd.Series) -> pd.Series:
    """Placement up to node order: `12` and `21` are the same GPUs-per-node multiset."""
    return placement.astype(str).map(lambda p: "".join(sorted(p, reverse=True)))


def fit_platform(name: str, p: Platform, folds: int = 5, comm: bool = True) -> PlatformResult:
    """Cross-validated predictions for one platform.

    Held out per fold: whole placement *shapes* (`12` and `21` together, every batch size and
    model of them); the exposed-sync and step models (`calibration.step_model`) are fitted per
    model on the other folds' rows. The final per-model parameters are then fitted on all rows.
    With `comm`, the `[comm]` CommParams (β efficiencies, base latency), per-model gradient-byte
    multipliers and the phase-model overlap start are also fitted on all rows for the engine's
    profile (`fit_comm`); without it they stay at the preset's values (faster; validation does
    not use them)."""
    if len(p.multi) < MIN_ROWS:
        raise InputError.at(name, expected=f"at least {MIN_ROWS} multi-GPU rows to fit", got=len(p.multi))
    d = p.frame()
    fold = _folds(_shape(d["placement"]), folds)
    pred_sync = np.full(len(d), np.nan)
    pred_step = np.full(len(d), np.nan)
    for f in range(folds):
        train, test = fold != f, fold == f
        if not test.any() or not train.any():
            continue
        pred_step[test], pred_sync[test] = step_model.fit_predict(d[train], d[test])
    per_model = {m: step_model.ModelFit.fit(g).as_dict() for m, g in d.groupby("model")}
    base = base_params(p)
    if comm:
        theta, scale, s = fit_comm([(p, np.ones(len(p.multi), bool))])
    else:
        theta, scale = theta_of(base), {}
        s = fit_overlap(p.compute_s, d["comm_model_s"].to_numpy(), d["step_time_s"].to_numpy())
    table = d[["model", "platform", "placement", "num_gpus", "local_bsz", "step_time_s", "sync_time_s"]].copy()
    table["pred_step"], table["pred_sync"], table["compute_s"] = pred_step, pred_sync, p.compute_s
    return PlatformResult(name, theta, s, table, byte_scale=scale, step_models=per_model)


#: how `leave_one_platform_out` groups platforms: ``hardware`` (default) holds out every
#: platform on the same netmodel preset together — `dgx` and `dgx-ext` are the same DGX-A100
#: nodes measured twice (their `neumf` files are identical), so predicting one from the other
#: is not a prediction for unseen hardware; ``platform`` holds out one data set at a time (the
#: earlier behaviour, kept to compare).
LOO_GROUPS = ("hardware", "platform")


def leave_one_platform_out(plats: dict[str, Platform], res: dict[str, PlatformResult], by: str = "hardware") -> None:
    """Predict each platform's multi-GPU rows with step/sync models fitted per model on the
    *other* platforms' multi-GPU rows pooled — with `by="hardware"`, only platforms on another
    preset (see `LOO_GROUPS`). The held-out platform contributes only its single-GPU compute
    curve C(b) (`Platform.curves`, from its `num_gpus == 1` rows: the compute profile a user
    measures on one GPU) and its preset (network physics in the CommModel feature M₀); the sync
    regression uses `step_model.TRANSFER_FEATURES`.

    Besides `pred_step` / `pred_sync`, the LOPO table has `pred_step_msync` = the predicted
    non-communicating part plus the *measured* sync: a diagnostic that splits the held-out
    error into its compute/host part and its all-reduce part (never a prediction)."""
    if by not in LOO_GROUPS:
        raise InputError.at(field="leave-one-out grouping", expected=" | ".join(LOO_GROUPS), got=by)
    frames = {n: q.frame() for n, q in plats.items()}
    group = {n: (q.preset if by == "hardware" else n) for n, q in plats.items()}
    for name in plats:
        others = [f for n, f in frames.items() if group[n] != group[name]]
        if not others:
            continue
        t = res[name].table.copy()
        t["pred_step"], t["pred_sync"] = step_model.fit_predict(pd.concat(others, ignore_index=True), frames[name],
                                                                  step_model.TRANSFER_FEATURES)
        t["pred_step_msync"] = t["pred_step"] - t["pred_sync"] + t["sync_time_s"]
        res[name].loo = t


def fit_rows(rows: pd.DataFrame, folds: int = 5, platforms: list[str] | None = None,
             loo: bool = False, comm: bool = True, loo_by: str = "hardware") -> FitReport:
    """Fit every Pollux/Sia platform in `rows` (importer table); with `loo`, also the
    leave-one-out predictions grouped by `loo_by` (`LOO_GROUPS`)."""
    rows = rows[rows["source"].astype(str).str.startswith("pollux")]
    if platforms:
        rows = rows[rows["platform"].isin(platforms)]
    if rows.empty:
        raise InputError.at("measurements", expected="Pollux/Sia placement rows (step and sync times)", got="none")
    plats = {n: Platform(d, d["preset"].iloc[0]) for n, d in rows.groupby("platform")}
    rep = FitReport(noise=noise_floor(rows))
    for n, p in plats.items():
        log.info("fitting %s (%d multi-GPU rows)", n, len(p.multi))
        rep.results[n] = fit_platform(n, p, folds, comm=comm)
    if loo:
        leave_one_platform_out(plats, rep.results, loo_by)
    return rep


def _alpha_beta(nbytes: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """t = α + bytes / B minimising Σ((pred − t)/t)², α ≥ 0, 1/B ≥ 0."""
    from scipy.optimize import lsq_linear

    A = np.column_stack([np.ones_like(nbytes), nbytes]) / t[:, None]
    x = lsq_linear(A, np.ones_like(t), bounds=([0.0, 0.0], [np.inf, np.inf])).x
    return float(x[0]), float(1.0 / x[1]) if x[1] > 0 else float("inf")


def fit_collectives(df: pd.DataFrame) -> pd.DataFrame:
    """α (s) and bus bandwidth per (source, op, group size) of a collectives sweep, with the
    leave-one-size-out median abs error of the α–β line. busbw = B · factor(n) as nccl-tests."""
    from calibration.measure import BUS_FACTOR

    rows = []
    for (src, op, n), g in df.groupby(["source", "op", "group_size"]):
        g = g.groupby("nbytes")["time_s"].median()
        b, t = g.index.to_numpy(float), g.to_numpy(float)
        if len(b) < 3:
            raise InputError.at(src, field=f"{op} n={n}", expected="at least 3 message sizes to fit α and β",
                                got=len(b))
        alpha, bw = _alpha_beta(b, t)
        errs = []
        for i in range(len(b)):
            keep = np.arange(len(b)) != i
            a_i, bw_i = _alpha_beta(b[keep], t[keep])
            errs.append(abs((a_i + b[i] / bw_i) / t[i] - 1))
        rows.append(dict(source=src, op=op, group_size=int(n), alpha_s=alpha, algbw_GBps=bw / 1e9,
                         busbw_GBps=bw / 1e9 * BUS_FACTOR[op](int(n)), cv_median_abs_err=float(np.median(errs)),
                         sizes=len(b)))
    return pd.DataFrame(rows)


def fit_files(paths, preset: str | None = None, folds: int = 5) -> FitReport:
    """Fit whatever the files hold: step tables (Pollux CSVs/folders, import-profiles Parquet)
    and/or collective sweeps (`calibrate collectives` / `import-nccl-tests` Parquet)."""
    from calibration import importers

    steps, colls = [], []
    for p in paths:
        p = str(p)
        d = pd.read_parquet(p) if p.endswith(".parquet") else importers.read_any(p)
        if "busbw_GBps" in d.columns:
            colls.append(d)
        elif {"placement", "step_time_s", "sync_time_s"} <= set(d.columns):
            steps.append(d)
        else:
            raise InputError.at(p, expected="a step-time table (placement, step_time_s, sync_time_s) or a "
                                "collectives sweep (op, group_size, nbytes, time_s)")
    rep = fit_rows(pd.concat(steps, ignore_index=True), folds) if steps else FitReport()
    if colls:
        rep.collectives = fit_collectives(pd.concat(colls, ignore_index=True))
    return rep


def write_profile(rep: FitReport, out) -> None:
    """TOML profile: one `[platform.<name>.comm]` table per platform (CommParams field names)
    and its `overlap_start_frac`; `[comm]` holds the median over platforms."""
    from cosim.atomic import write_text

    lines = ["# cosim calibration profile (cosim calibrate fit)",
             f"# cross-validated median abs step error: {rep.cv_median_abs_err:.4f}", ""]
    if rep.results:
        thetas = np.array([r.theta for r in rep.results.values()])
        med = np.exp(np.median(np.log(thetas), axis=0))
        lines += ["# median over the fitted platforms (geometric); per-platform values below", "[comm]"]
        lines += [f"{f} = {v:.6g}" for f, v in zip(COMM_FIELDS, med)] + [""]
        lines += ["[overlap]",
                  f"overlap_start_frac = {np.median([r.overlap_start_frac for r in rep.results.values()]):.4g}", ""]
    for n, r in rep.results.items():
        lines += [f'[platform."{n}"]', f"overlap_start_frac = {r.overlap_start_frac:.4g}", f'[platform."{n}".comm]']
        lines += [f"{f} = {v:.6g}" for f, v in zip(COMM_FIELDS, r.theta)] + [""]
        if r.byte_scale:
            lines += [f'[platform."{n}".grad_bytes_scale]'] + [f'"{m}" = {v:.4g}' for m, v in sorted(r.byte_scale.items())] + [""]
        for m, parts in sorted(r.step_models.items()):  # calibration.step_model, named terms
            for part, vals in parts.items():
                lines += [f'[platform."{n}".step_model."{m}".{part}]'] + [f"{k} = {v:.6g}" for k, v in vals.items()] + [""]
    if rep.collectives is not None and len(rep.collectives):
        lines.append("# measured collectives: alpha (s) and bus bandwidth (GB/s) per group size")
        for _, c in rep.collectives.iterrows():
            lines += [f'[collectives."{c["source"]}".{c["op"]}."{int(c["group_size"])}"]',
                      f"alpha_s = {c['alpha_s']:.6g}", f"busbw_GBps = {c['busbw_GBps']:.6g}",
                      f"cv_median_abs_err = {c['cv_median_abs_err']:.4g}", ""]
    write_text("\n".join(lines) + "\n", out)



def read_profile(path) -> dict:
    """A profile written by `write_profile`, for the engine: `{"comm": {CommParams fields},
    "overlap_start_frac": float | None, "platforms": {...}}`. (`collectives.CommParams.from_toml`
    reads the `[comm]` table directly.)"""
    from pathlib import Path

    from cosim.tomlfile import read_toml

    p = Path(path)
    data = read_toml(p, "calibration profile (cosim calibrate fit)")
    ov = data.get("overlap", {}).get("overlap_start_frac")
    if ov is not None and not (isinstance(ov, (int, float)) and 0.0 <= ov <= 1.0):
        raise InputError.at(p, field="overlap.overlap_start_frac", expected="a number in [0, 1]", got=ov)
    return {"comm": dict(data.get("comm", {})), "overlap_start_frac": None if ov is None else float(ov),
            "platforms": dict(data.get("platform", {}))}
