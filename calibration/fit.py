"""Fit the engine's iteration form to measured step/sync times; score it through the engine.

What is fitted is what `cosim simulate` runs: the `network` model's fitted form
(`calibration.stepform`: step = κ·C·(1 + h·(g_max − 1)) + c₀ + S, S the exposed all-reduce from
log-features of the placement, the CommModel all-reduce M and the compute C, times DDP's
exposed fraction). The inputs C and M of every measured row come from the engine itself
(`simcore.perf.PerfModel.step_inputs`, built by `experiments.run_perf.build_perf` on the platform's
preset with the profile's compute curves), the parameters are fitted by
`calibration.step_model` and go into a profile (`build_profile` → `write_profile`), and every
prediction is the engine's solo iteration time for the row's placement and batch with that
profile (`Platform.predict`: `PerfModel.phases(...).solo_s`, exposed = solo − compute).

Cross-validation: K folds over placement *shapes* (`12` ≡ `21`): each fold's profile is fitted
on the other folds' rows and the held-out rows are predicted through the engine.
Leave-one-hardware-out: the forms are fitted only on the platforms of other hardware
(`step_model.TRANSFER_FEATURES`), the held-out platform contributes its preset and its
single-GPU compute curves.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calibration import step_model
from calibration.importers import placement_counts
from cosim.errors import InputError

log = logging.getLogger(__name__)

MIN_ROWS = 8
#: fewest multi-GPU training rows of a model for its own form (else the preset's default)
MIN_MODEL_ROWS = 8


class Platform:
    """One measured platform: its rows, preset, compute curves and the engine's inputs per row."""

    def __init__(self, rows: pd.DataFrame, preset: str, name: str = "", gpu_type: str | None = None):
        from calibration import compute_fit

        self.name = name or str(rows["platform"].iloc[0])
        self.preset = preset
        self.rows = rows.reset_index(drop=True)
        self.gpu_type = gpu_type or str(rows["gpu_type"].iloc[0])
        single = self.rows[self.rows["num_gpus"] == 1]
        multi = self.rows[self.rows["num_gpus"] > 1]
        missing = sorted(set(multi["model"]) - set(single["model"]))
        if missing:
            raise InputError.at(self.name, expected="single-GPU rows for every model with multi-GPU rows",
                                detail=f"missing for {', '.join(missing)}")
        #: the single-GPU curves of this platform's GPU, as the profile's [compute] tables
        self.compute = {m: {self.gpu_type: c} for m, per in
                        compute_fit.compute_tables(compute_fit.fit_curves(single.assign(gpu_type=self.gpu_type))).items()
                        for c in per.values()}
        self.multi = multi.reset_index(drop=True)
        self._base = self.engine({"compute": self.compute})
        topo = self._base.topo
        fg = topo.node_first_gpu
        per_node = np.asarray(topo.node_num_gpus)
        self.gpus = []
        for pl in self.multi["placement"]:
            c = placement_counts(pl)
            if len(c) > len(fg) or (c > per_node[:len(c)]).any():
                raise InputError.at(self.name, field="placement", expected=f"a placement that fits preset {preset}",
                                    got=pl)
            self.gpus.append(np.concatenate([fg[i] + np.arange(k) for i, k in enumerate(c)]).astype(np.int32))
        self.batch = (self.multi["local_bsz"].to_numpy(int) * self.multi["num_gpus"].to_numpy(int)).tolist()
        feats = [self._base.step_inputs(m, g, b) for m, g, b in zip(self.multi["model"], self.gpus, self.batch)]
        bad = [i for i, f in enumerate(feats) if f is None]
        if bad:
            r = self.multi.iloc[bad[0]]
            raise InputError.at(r["file"], row=r["row"], field="local_bsz",
                                expected=f"a batch that fits {self.gpu_type} memory in the zoo", got=r["local_bsz"])
        f = np.array(feats, dtype=float)
        self.compute_s, self.comm_model_s = f[:, 0], f[:, 1]

    def engine(self, profile_data: dict):
        """The engine's PerfModel on this platform's preset with `profile_data` (a profile as
        `write_profile` writes it), built exactly as `cosim simulate` builds it: through the
        engine factory installed with `set_engine` (`experiments.runner.engine_for`; calibration
        sits below simcore, so the layer above — the CLI, tests — installs it)."""
        if _ENGINE is None:
            from cosim.errors import CosimError

            raise CosimError("no engine installed: call calibration.fit.set_engine(experiments.runner.engine_for)")
        return _ENGINE(self.preset, profile_data, f"{self.name} profile")

    def frame(self) -> pd.DataFrame:
        """Multi-GPU rows with the engine's `compute_s` (C) and `comm_model_s` (M)."""
        d = self.multi.copy()
        d["compute_s"], d["comm_model_s"] = self.compute_s, self.comm_model_s
        return d

    def predict(self, section: dict, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(step, exposed all-reduce) of the rows in `mask`, through the engine with the step
        `section` (`build_section`) for this preset."""
        perf = self.engine({"compute": self.compute, "step": {_preset_key(self.preset): section}})
        step, sync = [], []
        for i in np.flatnonzero(mask):
            ph = perf.phases(self.multi["model"].iloc[i], self.gpus[i], self.batch[i])
            step.append(ph.solo_s)
            sync.append(ph.solo_s - ph.compute_s)
        return np.array(step), np.array(sync)


_ENGINE = None


def set_engine(factory) -> None:
    """Install the engine factory `(preset, profile document, source) -> PerfModel` that
    every prediction goes through (`experiments.runner.engine_for`)."""
    global _ENGINE
    _ENGINE = factory


def _preset_key(preset: str) -> str:
    """The name a run sees for `preset` (a shipped name, or the `name` in a preset file)."""
    import netmodel

    return netmodel.load_cluster(preset).name


def build_section(d: pd.DataFrame, features: tuple[str, ...] = step_model.SYNC_FEATURES) -> dict:
    """The profile's `[step.<preset>]` table fitted on rows `d` (`Platform.frame` columns):
    one form per model with at least `MIN_MODEL_ROWS` rows, and the default form for the
    rest (`step_model.fit_default`: κ = 1, h = 0, c₀ = 0, S = the preset's pooled factor on
    M times the pooled exposed fraction)."""
    sec: dict = {"default": step_model.form_table(step_model.fit_default(d)), "model": {}}
    for m, g in d.groupby("model"):
        if len(g) >= MIN_MODEL_ROWS:
            sec["model"][m] = step_model.form_table(step_model.ModelFit.fit(g, features).form())
    return sec


@dataclass
class PlatformResult:
    platform: str
    table: pd.DataFrame  # per row: model, placement, local_bsz, step, sync, pred_step, pred_sync (CV)
    loo: pd.DataFrame | None = None
    section: dict = field(default_factory=dict)  # the [step.<preset>] table fitted on all rows
    preset: str = ""
    gpu_type: str = ""
    compute: dict = field(default_factory=dict)


@dataclass
class FitReport:
    results: dict[str, PlatformResult] = field(default_factory=dict)
    noise: pd.DataFrame | None = None
    collectives: pd.DataFrame | None = None  # α–β per (source, op, group size), see fit_collectives
    collective_model: pd.DataFrame | None = None  # α–β across group sizes (calibration.collectives_fit)
    comm: dict = field(default_factory=dict)  # CommParams fitted to a collectives sweep (--preset)
    sections: dict[str, dict] = field(default_factory=dict)  # preset → [step] table (pooled platforms)
    preset_compute: dict[str, dict] = field(default_factory=dict)  # preset → its [compute] curves
    compute: dict = field(default_factory=dict)  # [compute] curves from compute tables

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
            lines.append(f"{name} ({r.preset}, {r.gpu_type}): through the engine, cross-validated over placements: "
                         f"step median {np.median(e_step):.1%} p90 {np.quantile(e_step, 0.9):.1%}; "
                         f"exposed all-reduce median {np.median(e_sync):.1%}")
        if self.collective_model is not None and len(self.collective_model):
            for _, c in self.collective_model.iterrows():
                lines.append(f"{c['source']} {c['op']} over group sizes {c['group_sizes']}: alpha per step "
                             f"{c['alpha_step_s'] * 1e6:.2f}us, bus bandwidth {c['busbw_GBps']:.2f} GB/s, "
                             f"leave-one-size-out median abs err {c['loso_median_abs_err']:.1%}")
        if self.comm:
            lines.append("[comm] fitted to the collectives sweep: " + " ".join(
                f"{k}={v:.4g}" for k, v in self.comm.items()))
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


def fit_platform(name: str, p: Platform, folds: int = 5) -> PlatformResult:
    """Cross-validated predictions for one platform, through the engine.

    Held out per fold: whole placement *shapes* (`12` and `21` together, every batch size and
    model of them); the fold's profile section (`build_section`) is fitted on the other folds'
    rows and the held-out rows are the engine's solo iteration times with it. The final
    section is then fitted on all rows."""
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
        pred_step[test], pred_sync[test] = p.predict(build_section(d[train]), test)
    table = d[["model", "platform", "placement", "num_gpus", "local_bsz", "step_time_s", "sync_time_s"]].copy()
    table["pred_step"], table["pred_sync"], table["compute_s"] = pred_step, pred_sync, p.compute_s
    table["comm_model_s"] = p.comm_model_s
    return PlatformResult(name, table, section=build_section(d), preset=p.preset, gpu_type=p.gpu_type,
                          compute=p.compute)


#: how `leave_one_platform_out` groups platforms: ``hardware`` (default) holds out every
#: platform on the same netmodel preset together — `dgx` and `dgx-ext` are the same DGX-A100
#: nodes measured twice (their `neumf` files are identical), so predicting one from the other
#: is not a prediction for unseen hardware; ``platform`` holds out one data set at a time.
LOO_GROUPS = ("hardware", "platform")


def leave_one_platform_out(plats: dict[str, Platform], res: dict[str, PlatformResult], by: str = "hardware") -> None:
    """Predict each platform's multi-GPU rows through the engine with a profile section fitted
    on the *other* platforms' rows pooled (`step_model.TRANSFER_FEATURES`) — with
    `by="hardware"`, only platforms on another preset. The held-out platform contributes its
    single-GPU compute curves and its preset (the network physics in M).

    Besides `pred_step` / `pred_sync`, the table has `pred_step_msync` = the predicted
    non-communicating part plus the *measured* sync: a diagnostic that splits the held-out
    error into its compute/host part and its all-reduce part (never a prediction)."""
    if by not in LOO_GROUPS:
        raise InputError.at(field="leave-one-out grouping", expected=" | ".join(LOO_GROUPS), got=by)
    frames = {n: q.frame() for n, q in plats.items()}
    group = {n: (q.preset if by == "hardware" else n) for n, q in plats.items()}
    for name, q in plats.items():
        others = [f for n, f in frames.items() if group[n] != group[name]]
        if not others:
            continue
        t = res[name].table.copy()
        sec = build_section(pd.concat(others, ignore_index=True), step_model.TRANSFER_FEATURES)
        t["pred_step"], t["pred_sync"] = q.predict(sec, np.ones(len(q.multi), bool))
        t["pred_step_msync"] = t["pred_step"] - t["pred_sync"] + t["sync_time_s"]
        res[name].loo = t


def platform_rows(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {n: d for n, d in rows.groupby("platform")}


def fit_rows(rows: pd.DataFrame, folds: int = 5, platforms: list[str] | None = None,
             loo: bool = False, loo_by: str = "hardware") -> FitReport:
    """Fit every Pollux/Sia platform in `rows` (importer table, `preset` and `gpu_type` set
    from the platforms file); with `loo`, also the leave-one-out predictions grouped by
    `loo_by` (`LOO_GROUPS`). `FitReport.sections` holds one profile section per preset,
    fitted on the rows of all its platforms pooled."""
    rows = rows[rows["source"].astype(str).str.startswith("pollux")]
    if platforms:
        rows = rows[rows["platform"].isin(platforms)]
    if rows.empty:
        raise InputError.at("measurements", expected="Pollux/Sia placement rows (step and sync times)", got="none")
    plats = {n: Platform(d, d["preset"].iloc[0], n) for n, d in platform_rows(rows).items()}
    rep = FitReport(noise=noise_floor(rows))
    for n, p in plats.items():
        log.info("fitting %s (%d multi-GPU rows)", n, len(p.multi))
        rep.results[n] = fit_platform(n, p, folds)
    by_preset: dict[str, list[str]] = {}
    for n, p in plats.items():
        by_preset.setdefault(p.preset, []).append(n)
    for preset, names in by_preset.items():
        if len(names) == 1:
            rep.sections[preset], rep.preset_compute[preset] = rep.results[names[0]].section, plats[names[0]].compute
        else:  # platforms on one preset (dgx, dgx-ext): pooled rows, pooled single-GPU curves
            pooled = Platform(pd.concat([plats[n].rows for n in names], ignore_index=True), preset, "+".join(names))
            rep.sections[preset], rep.preset_compute[preset] = build_section(pooled.frame()), pooled.compute
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


STEP_TABLE_COLUMNS = ("placement", "step_time_s", "sync_time_s")
COMPUTE_TABLE_COLUMNS = ("model", "gpu_type", "local_bsz", "step_time_s")
COLLECTIVE_COLUMNS = ("op", "group_size", "nbytes", "time_s")


def _read_measurements(p: str, platforms) -> pd.DataFrame:
    from calibration import importers

    if p.endswith(".parquet"):
        try:
            return pd.read_parquet(p)
        except FileNotFoundError:
            raise InputError.at(p, detail="file not found") from None
        except Exception as exc:  # pyarrow raises several types for empty / corrupt files
            raise InputError.at(p, expected="a Parquet file", detail=str(exc).splitlines()[0] if str(exc) else
                                type(exc).__name__) from None
    return importers.read_any(p, platform_map=platforms)


def _check_placements(p: str, d: pd.DataFrame) -> pd.DataFrame:
    """A Parquet step table's `placement` column as the importers write it: a digit string of
    GPUs per node, 1-9 each (`44` = two nodes of 4); whole numbers are read as such strings."""
    import re

    out = []
    for i, v in enumerate(d["placement"].tolist()):
        text = str(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v
        if not isinstance(text, str) or not re.fullmatch(r"[1-9]+", text.strip()):
            raise InputError.at(p, row=i + 1, field="placement", expected="a digit string of GPUs per node, "
                                "e.g. 44 (two nodes of 4)", got=v)
        out.append(text.strip())
    return d.assign(placement=out)


def _check_numbers(p: str, d: pd.DataFrame, positive: tuple[str, ...], non_negative: tuple[str, ...] = ()) -> None:
    """Rows present and the named columns finite numbers (> 0, or ≥ 0 for `non_negative`) inside their
    measured range (`importers.check_measured`): a measurement table read from Parquet is not checked
    by an importer."""
    from calibration.importers import check_measured

    if d.empty:
        raise InputError.at(p, expected="at least one measurement row", got="no rows")
    check_measured(p, d, positive + non_negative, non_negative, first_row=1)


def fit_files(paths, preset: str | None = None, folds: int = 5, platforms=None) -> FitReport:
    """Fit whatever the files hold: step tables (Pollux CSVs/folders, import-profiles Parquet),
    single-GPU compute tables (`cosim calibrate compute` Parquet → the profile's [compute])
    and/or collective sweeps (`calibrate collectives` / `import-nccl-tests` Parquet → α–β
    across group sizes; with `preset`, the [comm] CommParams that make the engine's
    CommModel reproduce the sweep on that preset). `platforms`: a platforms file
    (`calibration.importers.read_platforms` of it) for the Pollux/Sia platform names."""
    from calibration import collectives_fit, compute_fit

    steps, colls, comps = [], [], []
    for p in map(str, paths):
        d = _read_measurements(p, platforms)
        cols = set(d.columns)
        if "busbw_GBps" in cols or set(COLLECTIVE_COLUMNS) <= cols:
            missing = [c for c in COLLECTIVE_COLUMNS if c not in cols]
            if missing:
                raise InputError.at(p, field=missing[0], expected=f"a collectives sweep with columns "
                                    f"{', '.join(COLLECTIVE_COLUMNS)}")
            _check_numbers(p, d, ("group_size", "nbytes", "time_s"))
            colls.append(d.assign(source=d["source"] if "source" in cols else p))
        elif set(STEP_TABLE_COLUMNS) <= cols:
            if p.endswith(".parquet"):  # `calibrate import-profiles` output: the importers' columns
                from calibration.importers import STEP_COLUMNS

                missing = [c for c in STEP_COLUMNS if c not in cols]
                if missing:
                    raise InputError.at(p, field=missing[0], expected=f"a step table with columns {', '.join(STEP_COLUMNS)}")
                _check_numbers(p, d, ("num_nodes", "num_gpus", "local_bsz", "step_time_s"), ("sync_time_s",))
                d = _check_placements(p, d)
            steps.append(d)
        elif "step_time_s" in cols and "sync_time_s" not in cols:
            missing = [c for c in COMPUTE_TABLE_COLUMNS if c not in cols]
            if missing:
                raise InputError.at(p, field=missing[0], expected=f"a compute table with columns "
                                    f"{', '.join(COMPUTE_TABLE_COLUMNS)}")
            _check_numbers(p, d, ("local_bsz", "step_time_s"))
            comps.append(_check_compute(p, d).assign(source=d["source"] if "source" in cols else "cosim-compute"))
        else:
            missing = [c for c in STEP_TABLE_COLUMNS if c not in cols]
            raise InputError.at(p, field=missing[0] if missing else None,
                                expected="a step-time table (placement, step_time_s, sync_time_s), a compute table "
                                "(model, gpu_type, local_bsz, step_time_s) or a collectives sweep "
                                "(op, group_size, nbytes, time_s)")
    rep = fit_rows(pd.concat(steps, ignore_index=True), folds) if steps else FitReport()
    if comps:
        rep.compute = compute_fit.compute_tables(compute_fit.fit_curves(pd.concat(comps, ignore_index=True)))
    if colls:
        sweep = pd.concat(colls, ignore_index=True)
        rep.collectives = fit_collectives(sweep)
        rep.collective_model = collectives_fit.fit_across_sizes(sweep)
        if preset is not None:
            rep.comm = collectives_fit.fit_comm_params(sweep, preset)
    return rep


def build_profile(rep: FitReport) -> dict:
    """The profile document (what `write_profile` writes and `calibration.stepform` reads)."""
    doc: dict = {}
    if rep.comm:
        doc["comm"] = dict(rep.comm)
    if rep.sections:
        doc["step"] = {}
        for preset, sec in rep.sections.items():
            key = _preset_key(preset)
            names = [n for n, r in rep.results.items() if r.preset == preset]
            errs = np.concatenate([np.abs(rep.results[n].table["pred_step"] / rep.results[n].table["step_time_s"] - 1)
                                   for n in names])
            doc["step"][key] = {"gpu_type": rep.results[names[0]].gpu_type, "platforms": names,
                                "cv_median_step_error": float(np.median(errs)), **sec}
    compute: dict = {}
    for src in [rep.preset_compute.get(p, {}) for p in rep.sections] + [getattr(rep, "compute", {}) or {}]:
        for m, per in src.items():
            for g, c in per.items():
                compute.setdefault(m, {}).setdefault(g, {k: c[k] for k in
                                                         ("t0_s", "per_sample_s", "batch_min", "batch_max",
                                                          "batches", "times_s", "source") if k in c})
    if compute:
        doc["compute"] = compute
    return doc


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


def _toml_lines(table: dict, path: tuple[str, ...]) -> list[str]:
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
    subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    out = []
    if path and (scalars or not subs):
        out.append("[" + ".".join(f'"{p}"' for p in path) + "]")
    out += [f'"{k}" = {_toml_value(v)}' for k, v in scalars]
    if scalars or (path and not subs):
        out.append("")
    for k, v in subs:
        out += _toml_lines(v, path + (str(k),))
    return out


def write_profile(rep: FitReport, out) -> None:
    """Write `build_profile(rep)` as TOML, with the α–β diagnostics as comments. Refuses a
    report whose cross-validated error is not finite (nothing written)."""
    from cosim.atomic import write_text

    err = rep.cv_median_abs_err
    if rep.results and not math.isfinite(err):
        raise InputError.at(out, field="cross-validated error", expected="a finite error", got=err)
    lines = ["# cosim calibration profile (cosim calibrate fit); read by cosim simulate --calibration",
             f"# cross-validated median abs step error (through the engine): {err:.4f}"]
    if rep.collective_model is not None and len(rep.collective_model):
        lines.append("# collectives, alpha-beta over group sizes (diagnostic; [comm] is what the engine reads):")
        for _, c in rep.collective_model.iterrows():
            lines.append(f"#   {c['source']} {c['op']}: alpha_step_s={c['alpha_step_s']:.4g} "
                         f"busbw_GBps={c['busbw_GBps']:.4g} sizes={c['group_sizes']}")
    lines.append("")
    write_text("\n".join(lines + _toml_lines(build_profile(rep), ())) + "\n", out)


def read_profile(path):
    """A profile written by `write_profile`, validated the way the engine reads it."""
    from calibration.stepform import read_profile as _read

    return _read(path)


def _check_compute(path: str, d: pd.DataFrame) -> pd.DataFrame:
    """A compute table's precisions and GPU types, each known (the file and field named
    otherwise); GPU types become their canonical names, so a type added with ``--gpu-types``
    is stored under its own name."""
    from calibration import zoo
    from calibration.measure import PRECISIONS
    from cosim.errors import UnknownNameError

    if "precision" in d.columns:
        bad = sorted(set(d["precision"].dropna().astype(str)) - set(PRECISIONS))
        if bad:
            raise InputError.at(path, field="precision", expected=" | ".join(PRECISIONS), got=bad[0])
    names = {}
    for g in d["gpu_type"].astype(str).unique():
        try:
            names[g] = zoo.resolve_gpu(g)
        except UnknownNameError:
            raise InputError.at(path, field="gpu_type", expected="a GPU type of the table (add it with --gpu-types "
                                "FILE)", got=g) from None
    return d.assign(gpu_type=d["gpu_type"].astype(str).map(names))

