"""Calibration benchmarks: zoo lookups the engine makes per decision, importing the measured sets.

    python -m benchmarks.bench_calibration
"""

from __future__ import annotations

import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "profiles"


def bench_zoo_compute_time() -> dict:
    """Calls of zoo.compute_time_s over all models x GPU types x 8 batches (cached curves)."""
    from calibration import zoo

    models, gpus = zoo.known_models(), zoo.gpu_types()
    for m in models:
        for g in gpus:
            zoo.compute_time_s(m, g, 1)
    n = 0
    t0 = time.perf_counter()
    for _ in range(5):
        for m in models:
            for g in gpus:
                for b in (1, 2, 4, 8, 16, 32, 64, 128):
                    zoo.compute_time_s(m, g, b)
                    n += 1
    dt = time.perf_counter() - t0
    return dict(name="zoo.compute_time_s", value=dt / n * 1e6, unit="us/call", target="< 20 us/call",
                detail=f"{n} calls, {len(models)} models x {len(gpus)} GPU types")


def bench_import_profiles() -> dict:
    """Import every Pollux/Sia placements file and Gavel's throughputs."""
    from calibration import importers

    if not SHARED.is_dir():
        return dict(name="import profiles", value=float("nan"), unit="s", target="< 5 s", detail="no ../shared/data")
    t0 = time.perf_counter()
    df = importers.read_any(SHARED)
    return dict(name="import profiles", value=time.perf_counter() - t0, unit="s", target="< 5 s",
                detail=f"{len(df)} rows")


def bench_validate_through_engine() -> dict:
    """`cosim validate` on aws, ResNet-50 + YOLOv3 (1,391 rows): 5-fold CV, every row predicted
    by the engine's PerfModel (`calibration.fit.Platform.predict`)."""
    from calibration import fit, validate
    from experiments.runner import engine_for

    fit.set_engine(engine_for)
    if not SHARED.is_dir():
        return dict(name="validate (engine)", value=float("nan"), unit="s", target="< 30 s", detail="no ../shared/data")
    t0 = time.perf_counter()
    _, t = validate.run(SHARED, ["aws"], 5, models=["resnet50", "yolov3"])
    allr = t[t["model"] == "ALL"].iloc[0]
    return dict(name="validate (engine)", value=time.perf_counter() - t0, unit="s", target="< 30 s",
                detail=f"{int(allr['rows'])} rows, step CV median {allr['step_med']:.1%}")


if __name__ == "__main__":
    for fn in (bench_zoo_compute_time, bench_import_profiles, bench_validate_through_engine):
        r = fn()
        print(f"{r['name']:<24} {r['value']:>10.3f} {r['unit']:<8} target {r['target']:<14} {r['detail']}")
