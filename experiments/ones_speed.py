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

    python -m experiments.ones_speed [--out calibration/data/profiles/ones-artifact.toml]

The catalog's ONES grids name the profile (`calibration = ["ones-artifact"]`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

PROFILE = Path(__file__).resolve().parents[1] / "calibration" / "data" / "profiles" / "ones-artifact.toml"
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


def fit(preset: str = "ones-longhorn", history: str | Path | None = None) -> dict[str, dict[str, float]]:
    """Per class: its factor, the measured and the calibrated time per sample (s), and the zoo's.
    Classes that share a zoo model (BERT on CoLA/MRPC and on SST-2) share one factor: the one
    whose calibrated/measured ratios have a geometric mean of 1 over those classes."""
    from experiments.runner import _perf_packages
    from netmodel import build_topology, load_cluster
    from simcore.perf_backends import make_perf

    zoo, comm, solve, _ = _perf_packages(None)
    topo = build_topology(load_cluster(preset))
    cm = comm(topo)
    want = measured_s_per_sample(history)
    cls = {g: v for g, v in classes().items() if g in want}
    sets: list[list[str]] = []  # classes linked by a shared model
    for g, (models, _b, _r) in cls.items():
        hit = [s for s in sets if any(set(models) & set(cls[h][0]) for h in s)]
        merged = [g] + [h for s in hit for h in s]
        sets = [s for s in sets if s not in hit] + [merged]

    def s_per_sample(g: str, f: float) -> float:
        models, b, req = cls[g]
        perf = make_perf("network", topo, _Scaled(zoo, {m: f for m in models}), cm, solve)
        gpus = perf.consolidated_gpus(req, -1)
        return float(np.mean([perf.solo_iter_s(m, gpus, b * req) for m in models])) / (b * req)

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


def write_profile(out: str | Path = PROFILE, preset: str = "ones-longhorn") -> dict[str, dict[str, float]]:
    """Write the profile (module doc); returns `fit`'s table."""
    from calibration import zoo

    table = fit(preset)
    lines = ["# ONES models' V100 compute times scaled per class to the ONES artifact's measured throughput",
             "# (traces/ones/job_history.csv of the shared data): written by `python -m experiments.ones_speed`.",
             "# Per class: factor on the zoo's V100 curve; time per sample at the reference configuration",
             "# (per-GPU base batch x requested GPUs, consolidated, alone), measured / calibrated / zoo.", ""]
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
            lines += [f'[compute.{m}."{GPU}"]', f'source = "ones-artifact:{group}"',
                      f"batches = [{', '.join(str(b) for b in BATCHES)}]",
                      f"times_s = [{', '.join(f'{x:.6g}' for x in times)}]",
                      f"t0_s = {max(t0, 0.0):.6g}", f"per_sample_s = {slope:.6g}", ""]
    Path(out).write_text("\n".join(lines))
    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(PROFILE))
    args = ap.parse_args(argv)
    for group, t in write_profile(args.out).items():
        print(f"{group:18s} factor {t['factor']:7.4f}  s/sample measured {t['measured_s']:.3e} "
              f"calibrated {t['calibrated_s']:.3e} zoo {t['zoo_s']:.3e}")


if __name__ == "__main__":
    main()
