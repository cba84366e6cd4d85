"""ONES' job speeds calibrated to the artifact's measured throughput: the `ones-artifact` profile.

The ONES artifact's run history (shared data `traces/ones/job_history.csv`) records each epoch's
throughput (samples/s) of 21 runs at their classes' reference configuration (per-GPU base batch ×
requested GPUs, the baselines' setting). The zoo's V100 compute times make the same jobs 1.0-8×
faster than those runs (AlexNet 8×, CIFAR VGG16 5.4×, the ImageNet CNNs 1.9-2.6×), so the
baselines' execution in cosim was far below the artifact's (Tiresias 158 s against 395 s on
average), and the load lighter than the paper's.

This module writes a calibration profile whose `[compute]` curves are the zoo's V100 curves of
the ONES models, each class's scaled by one factor f_g: chosen (bisection) so that the mean over
the class's models of the time per sample at the reference configuration — consolidated, alone,
through the run's network model — equals the mean over the class's constant-batch runs of their
measured time per sample. The models of one class keep the zoo's ratios (the history does not
say which model of a class a run was). Communication is the network model's, unscaled.

    python -m experiments.ones_speed [--profile ones-artifact|ones-longhorn] [--out FILE]

The catalog's ONES grids name the profile (`calibration = ["ones-artifact"]`).

The `ones-longhorn` profile adds the testbed's sub-linear scaling, which `ones-artifact` lacks
(there every ONES class speeds up exactly linearly: the all-reduce hides under the backward
pass). The history's one run at several sizes (CIFAR ResNet, per-GPU batch 256 on 2, 3 and 4
GPUs of one node) gives it. The profile carries a step form (`calibration.stepform`) for the
`ones-longhorn` preset, the same for every model:

    t = C · (1 + h · (g_max − 1)) + M

- h (`host_slope`) is fitted through the engine's PerfModel to the run's throughputs
  (`fit_host_slope`: least squares on log throughput, up to a common scale);
- M is the network model's all-reduce, fully exposed (the notes' throughput model
  X = samples / (compute + all-reduce));
- c₀ stays 0: at a constant per-GPU batch c₀ trades exactly against the compute scale, so the
  run cannot tell them apart.

The compute factors are refitted through that form (`fit(host_slope=h)`), so each class's time
per sample at its reference configuration stays the artifact's; h and the factors are fitted in
turn until h settles (`fit_longhorn`). One GPU then runs faster than under `ones-artifact` (the
engine applies no step form to a single data-parallel rank). The evidence is one three-point run
of one model class on one node; the other classes and the spread across nodes inherit it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

PROFILES = Path(__file__).resolve().parents[1] / "calibration" / "data" / "profiles"
PROFILE = PROFILES / "ones-artifact.toml"
LONGHORN = PROFILES / "ones-longhorn.toml"
#: the profile name → its file (`--profile`)
PROFILE_FILES = {"ones-artifact": PROFILE, "ones-longhorn": LONGHORN}
GPU = "V100-16GB"
BATCHES = tuple(2 ** k for k in range(0, 13))  # 1 … 4096 local samples


def measured_s_per_sample(path: str | Path | None = None) -> dict[str, float]:
    """Mean over each class's constant-batch runs of 1 / (its mean measured throughput)."""
    import pandas as pd

    from simcore.convergence_fit import history_path, read_runs

    p = Path(path) if path is not None else history_path()
    runs = read_runs(p)
    thr = pd.read_csv(p)["throughput"].to_numpy(np.float64)
    out: dict[str, list[float]] = {}
    for r in runs:
        if len(set(r.batches)) > 1:
            continue
        x = thr[r.row - 1:r.row - 1 + r.epochs]
        out.setdefault(r.group.split("/")[0], []).append(1.0 / float(np.mean(x)))
    return {g: float(np.mean(v)) for g, v in out.items()}


def measured_scaling(path: str | Path | None = None) -> tuple[str, dict[int, float]]:
    """The history's runs at more than one size: their class and, per GPU count (global batch /
    per-GPU base), the mean measured throughput (samples/s) of the epochs at that size."""
    import pandas as pd

    from cosim.errors import InputError
    from simcore.convergence_fit import history_path, read_runs

    p = Path(path) if path is not None else history_path()
    thr = pd.read_csv(p)["throughput"].to_numpy(np.float64)
    per: dict[int, list[float]] = {}
    groups = set()
    for r in read_runs(p):
        if len(set(r.batches)) < 2:
            continue
        groups.add(r.group.split("/")[0])
        for k, b in enumerate(r.batches):
            per.setdefault(b // r.base, []).append(float(thr[r.row - 1 + k]))
    if len(groups) != 1 or len(per) < 2:
        raise InputError.at(p, field="batch_size", expected="one model class run at two or more sizes "
                            "(the host slope's evidence)", got=f"{len(groups)} classes, {len(per)} sizes")
    return groups.pop(), {g: float(np.mean(v)) for g, v in sorted(per.items())}


def step_params(host_slope: float, preset: str = "ones-longhorn") -> Any:
    """The `ones-longhorn` step form (module doc) as the engine takes it."""
    from calibration.stepform import SYNC_FEATURES, StepForm, StepParams

    sync = tuple(1.0 if f == "log_comm_model_s" else 0.0 for f in SYNC_FEATURES)
    return StepParams({}, StepForm(host_slope=float(host_slope), sync=sync), preset, "ones-longhorn")


class _Scaled:
    """The zoo with compute times × `factor[model]`."""

    def __init__(self, zoo: Any, factor: dict[str, float]) -> None:
        self._zoo, self.factor = zoo, factor

    def compute_time_s(self, model: str, gpu_type: str, local_batch: int) -> float:
        return self.factor.get(model, 1.0) * self._zoo.compute_time_s(model, gpu_type, local_batch)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._zoo, attr)


def classes() -> dict[str, tuple[list[str], int, int]]:
    """History class → (its zoo models, per-GPU base batch, requested GPUs)."""
    from traces.formats.workloads import ONES_CLASSES
    from traces.ones import CLASS_CONFIG

    out: dict[str, tuple[list[str], int, int]] = {}
    for key, (b, _lr, _mlr, _acc, _pat, req) in CLASS_CONFIG.items():
        cls, model = ONES_CLASSES[key]
        group = "bert-glue" if cls in ("bert-cola", "bert-mrpc") else cls
        models, _, _ = out.setdefault(group, ([], b, req))
        if model not in models:
            models.append(model)
    return out


_ENGINE: dict[str, tuple[Any, Any, Any, Any]] = {}


def class_s_per_sample(group: str, factor: float, gpus: int, host_slope: float | None = None,
                       preset: str = "ones-longhorn") -> float:
    """The engine's time per sample (s) of `group`'s models (mean), alone on `gpus` packed GPUs
    at the per-GPU base batch, their compute × `factor`, with the step form of `host_slope`
    (None: no step form, the `ones-artifact` engine)."""
    from experiments.run_perf import _perf_packages
    from netmodel import build_topology, load_cluster
    from simcore.perf_backends import make_perf

    if preset not in _ENGINE:
        zoo, comm, solve, _ = _perf_packages(None)
        topo = build_topology(load_cluster(preset))
        _ENGINE[preset] = (zoo, topo, comm(topo), solve)
    zoo, topo, cm, solve = _ENGINE[preset]
    models, b, _req = classes()[group]
    step = None if host_slope is None else step_params(host_slope, preset)
    perf = make_perf("network", topo, _Scaled(zoo, {m: factor for m in models}), cm, solve, step=step)
    g = perf.consolidated_gpus(gpus, -1)
    return float(np.mean([perf.solo_iter_s(m, g, b * gpus) for m in models])) / (b * gpus)


def fit(preset: str = "ones-longhorn", history: str | Path | None = None,
        host_slope: float | None = None) -> dict[str, dict[str, float]]:
    """Per class: its factor, the measured and the calibrated time per sample (s), and the zoo's,
    through the engine with the step form of `host_slope` (None: none, the `ones-artifact` fit).
    Classes that share a zoo model (BERT on CoLA/MRPC and on SST-2) share one factor: the one
    whose calibrated/measured ratios have a geometric mean of 1 over those classes."""
    want = measured_s_per_sample(history)
    cls = {g: v for g, v in classes().items() if g in want}
    sets: list[list[str]] = []  # classes linked by a shared model
    for g, (models, _b, _r) in cls.items():
        hit = [s for s in sets if any(set(models) & set(cls[h][0]) for h in s)]
        merged = [g] + [h for s in hit for h in s]
        sets = [s for s in sets if s not in hit] + [merged]

    def s_per_sample(g: str, f: float) -> float:
        return class_s_per_sample(g, f, cls[g][2], host_slope, preset)

    out = {}
    for linked in sets:
        lo, hi = 1e-3, 1e3
        for _ in range(60):  # bisection in log f: the times per sample grow with f
            mid = (lo * hi) ** 0.5
            r = np.mean([np.log(s_per_sample(g, mid) / want[g]) for g in linked])
            lo, hi = (mid, hi) if r < 0 else (lo, mid)
        f = (lo * hi) ** 0.5
        for g in linked:
            out[g] = {"factor": f, "measured_s": want[g], "calibrated_s": s_per_sample(g, f),
                      "zoo_s": s_per_sample(g, 1.0)}
    return {g: out[g] for g in cls}


def fit_host_slope(factor: float, history: str | Path | None = None, sizes: tuple[int, ...] | None = None,
                   preset: str = "ones-longhorn") -> dict[str, Any]:
    """The host slope h that fits the history's multi-size run (`measured_scaling`) through the
    engine, its class's compute × `factor`: least squares on log throughput up to a common
    scale (the level is the reference fit's), over `sizes` (GPU counts; default all). Returns
    h, the class, and per size the measured and predicted throughput, the latter on the fitted
    sizes' level (so a size left out of `sizes` is predicted from the others)."""
    from scipy.optimize import minimize_scalar

    group, meas = measured_scaling(history)
    use = tuple(sorted(meas)) if sizes is None else tuple(sorted(sizes))

    def log_resid(h: float) -> dict[int, float]:
        return {g: -np.log(class_s_per_sample(group, factor, g, h, preset)) - np.log(meas[g]) for g in meas}

    def loss(h: float) -> float:
        r = log_resid(h)
        return float(np.var([r[g] for g in use]))

    h = float(minimize_scalar(loss, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-7}).x)
    r = log_resid(h)
    level = float(np.mean([r[g] for g in use]))
    pred = {g: meas[g] * float(np.exp(r[g] - level)) for g in meas}
    return {"host_slope": h, "group": group, "sizes": use, "measured": meas, "predicted": pred}


def fit_longhorn(history: str | Path | None = None, preset: str = "ones-longhorn", tol: float = 1e-6,
                 rounds: int = 6) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """The `ones-longhorn` fit: h and the compute factors in turn (module doc) until h moves by
    less than `tol`; returns (`fit_host_slope`'s result, `fit`'s table at that h)."""
    group = measured_scaling(history)[0]
    table = fit(preset, history)
    hs = None
    for _ in range(rounds):
        new = fit_host_slope(table[group]["factor"], history, preset=preset)
        table = fit(preset, history, host_slope=new["host_slope"])
        settled = hs is not None and abs(new["host_slope"] - hs["host_slope"]) < tol
        hs = new
        if settled:
            break
    return hs, table  # the last h and the factors fitted at it


def hold_one_out(factor: float, history: str | Path | None = None) -> dict[int, dict[str, float]]:
    """Per size of the multi-size run: h fitted on the other sizes and that size's throughput
    predicted from them (measured, predicted, relative error)."""
    _, meas = measured_scaling(history)
    out = {}
    for g in meas:
        r = fit_host_slope(factor, history, sizes=tuple(x for x in meas if x != g))
        out[g] = {"host_slope": r["host_slope"], "measured": meas[g], "predicted": r["predicted"][g],
                  "error": r["predicted"][g] / meas[g] - 1.0}
    return out


def write_profile(out: str | Path = PROFILE, preset: str = "ones-longhorn",
                  longhorn: bool = False) -> dict[str, dict[str, float]]:
    """Write the `ones-artifact` profile, or with `longhorn` the `ones-longhorn` one (module
    doc); returns `fit`'s table."""
    from calibration import zoo

    lines = ["# ONES models' V100 compute times scaled per class to the ONES artifact's measured throughput",
             "# (traces/ones/job_history.csv of the shared data): written by `python -m experiments.ones_speed`.",
             "# Per class: factor on the zoo's V100 curve; time per sample at the reference configuration",
             "# (per-GPU base batch x requested GPUs, consolidated, alone), measured / calibrated / zoo.", ""]
    name = "ones-longhorn" if longhorn else "ones-artifact"
    if longhorn:
        hs, table = fit_longhorn(preset=preset)
        h = hs["host_slope"]
        sizes = sorted(hs["measured"])
        base = sizes[0]
        lines = [
            "# ONES' job speeds with the Longhorn testbed's sub-linear scaling: the ONES models' V100 compute",
            "# times scaled per class to the ONES artifact's measured throughput (traces/ones/job_history.csv",
            "# of the shared data) through the step form t = C * (1 + h * (g_max - 1)) + M on multi-GPU",
            "# placements (M: the network model's all-reduce, exposed; one GPU: t = C), h fitted to the",
            f"# history's one run at several sizes ({hs['group']}, {', '.join(map(str, sizes))} GPUs of one node):",
            "# written by `python -m experiments.ones_speed --profile ones-longhorn`.",
            f"# h = {h:.4f}; throughput (samples/s) measured / fitted, speed-up over {base} GPUs measured / fitted:",
            *(f"#   {g} GPUs: {hs['measured'][g]:.0f} / {hs['predicted'][g]:.0f}, "
              f"{hs['measured'][g] / hs['measured'][base]:.3f} / {hs['predicted'][g] / hs['predicted'][base]:.3f}"
              for g in sizes),
            "# Per class: factor on the zoo's V100 curve; time per sample at the reference configuration",
            "# (per-GPU base batch x requested GPUs, consolidated, alone), measured / calibrated / zoo.", ""]
    else:
        table = fit(preset)
    done: set[str] = set()
    for group, (models, _b, _req) in classes().items():
        if group not in table:
            continue
        t = table[group]
        lines.append(f"# {group}: factor {t['factor']:.4f}; s/sample measured {t['measured_s']:.3e}, "
                     f"calibrated {t['calibrated_s']:.3e}, zoo {t['zoo_s']:.3e}")
        for m in models:
            if m in done:
                continue
            done.add(m)
            times = [t["factor"] * zoo.compute_time_s(m, GPU, b) for b in BATCHES]
            slope, t0 = np.polyfit(np.array(BATCHES, np.float64), np.array(times), 1)
            lines += [f'[compute.{m}."{GPU}"]', f'source = "{name}:{group}"',
                      f"batches = [{', '.join(str(b) for b in BATCHES)}]",
                      f"times_s = [{', '.join(f'{x:.6g}' for x in times)}]",
                      f"t0_s = {max(t0, 0.0):.6g}", f"per_sample_s = {slope:.6g}", ""]
    if longhorn:
        form = step_params(h, preset).default
        lines += [f'[step."{preset}"]', f'gpu_type = "{GPU}"', "platforms = []", "",
                  f'[step."{preset}".default]', "kappa = 1.0", f"host_slope = {form.host_slope:.6g}",
                  "overhead_s = 0.0", "", f'[step."{preset}".default.sync]']
        from calibration.stepform import SYNC_FEATURES

        lines += [f"{k} = {v:.1f}" for k, v in zip(SYNC_FEATURES, form.sync)] + [""]
    Path(out).write_text("\n".join(lines))
    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", choices=sorted(PROFILE_FILES), default="ones-artifact",
                    help="which profile to write (module doc)")
    ap.add_argument("--out", default=None, help="output file (default: the shipped profile)")
    args = ap.parse_args(argv)
    out = args.out or str(PROFILE_FILES[args.profile])
    longhorn = args.profile == "ones-longhorn"
    table = write_profile(out, longhorn=longhorn)
    if longhorn:
        group = measured_scaling()[0]
        for g, r in hold_one_out(table[group]["factor"]).items():
            print(f"hold-one-out {g} GPUs: h {r['host_slope']:.4f} from the others, throughput measured "
                  f"{r['measured']:.0f} predicted {r['predicted']:.0f} ({r['error']:+.1%})")
    for group, t in table.items():
        print(f"{group:18s} factor {t['factor']:7.4f}  s/sample measured {t['measured_s']:.3e} "
              f"calibrated {t['calibrated_s']:.3e} zoo {t['zoo_s']:.3e}")


if __name__ == "__main__":
    main()
