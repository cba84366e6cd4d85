"""The performance model of a run: the calibration profile it names (`profile_for`) and the
PerfModel built from the zoo, the comm model and that profile (`build_perf`). `cosim simulate`,
`cosim validate` and `calibrate fit` all predict through `build_perf`, so a fitted number
describes the path a simulation runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simcore.perf import PerfModel, gpu_variability
from simcore.perf_backends import make_perf

if TYPE_CHECKING:
    from experiments.runner import Backends, RunConfig


def profile_for(config: RunConfig, topo: Any) -> Any:
    """The calibration profile of a run (`calibration.stepform.Profile`): `--calibration FILE`
    or the name of a shipped profile (calibration/data/profiles/NAME.toml, when no such file is
    here), else the preset's `profile` key (the shipped fitted profile of its GPU class); None
    with `--calibration none` or when neither names one."""
    from calibration.stepform import PROFILES_DIR, profile_path, read_profile

    spec = getattr(topo, "spec", None)
    if config.calibration is not None:
        if str(config.calibration).lower() == "none":
            return None
        path = Path(config.calibration)
        if not path.exists() and (PROFILES_DIR / f"{config.calibration}.toml").is_file():
            path = PROFILES_DIR / f"{config.calibration}.toml"
    elif getattr(spec, "profile", None):
        path = profile_path(spec.profile, spec.source if str(spec.source).endswith(".toml") else None)
    else:
        return None
    key = (str(path), path.stat().st_mtime_ns if path.exists() else 0)
    prof = _PROFILES.get(key)
    if prof is None:
        prof = _PROFILES[key] = read_profile(path)
    return prof


_PROFILES: dict[tuple[str, int], Any] = {}


def build_perf(topo: Any, be: Backends, config: RunConfig, profile: Any = None) -> PerfModel:
    """The engine's PerfModel for `topo` with the run's calibration profile (`profile_for`):
    its `[comm]` overlays the preset's (in `be.comm`), its `[compute]` curves replace the
    zoo's for their (model, GPU type), its `[step]` section for the preset gives the fitted
    iteration form (`calibration.stepform`). `cosim validate` predicts through this function,
    passing the `profile` it fitted (a `stepform.Profile`) instead of a file."""
    prof = profile if profile is not None else profile_for(config, topo) if be.perf_source == "real" else None
    zoo = be.zoo if prof is None or not prof.compute else _ProfileZoo(be.zoo, prof.compute)
    spec = getattr(topo, "spec", None)
    step = None if prof is None else prof.step_for(getattr(spec, "name", ""))
    comm = be.comm(topo, prof.comm, prof.source) if prof is not None and prof.comm else be.comm(topo)
    perf = make_perf(config.perf, topo, zoo, comm, be.solve, contention=config.contention,
                     allow_accumulation=config.allow_accumulation, step=step)
    if config.gpu_variability:  # per-GPU variability (off by default: results unchanged)
        perf.gpu_slowdown = gpu_variability(len(perf.gpu_type), config.gpu_variability, config.gpu_variability_seed)
    return perf


def _perf_packages(config: RunConfig) -> tuple[Any, Callable[[Any], Any], Any, str]:
    """The zoo, comm-model factory and contention solver of the project's packages."""
    from calibration import zoo
    from collectives import CommModel, CommParams
    from collectives.contention import solve

    def comm(topo: Any, overlay: Mapping[str, Any] | None = None, source: str = "profile") -> Any:
        """The comm model with the preset's [comm] table, overlaid by a calibration
        profile's [comm] table (`build_perf` passes it)."""
        params = CommParams.for_cluster(getattr(topo, "spec", None))
        return CommModel(topo, params.with_mapping(overlay, source=source) if overlay else params)

    return zoo, comm, solve, "real"


class _ProfileZoo:
    """The zoo with a profile's `[compute]` curves (`cosim calibrate compute` measurements
    fitted by `calibrate fit`) in place of its own for those (model, GPU type) pairs."""

    def __init__(self, zoo: Any, compute: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        self._zoo = zoo
        self._curves = {(zoo.resolve(m), zoo.resolve_gpu(g)): zoo._curve_from(c)
                        for m, per in compute.items() for g, c in per.items()}

    def compute_time_s(self, model: str, gpu_type: str, local_batch: int) -> float:
        c = self._curves.get((self._zoo.resolve(model), self._zoo.resolve_gpu(gpu_type)))
        if c is None or local_batch <= 0:
            return self._zoo.compute_time_s(model, gpu_type, local_batch)
        return float(c(local_batch))

    def measured_max_batch(self, model: str, gpu_type: str) -> int:
        """Largest local batch the profile's curve was measured at (0: none): it fits memory."""
        c = self._curves.get((self._zoo.resolve(model), self._zoo.resolve_gpu(gpu_type)))
        return 0 if c is None else int(c.batch_max)

    def __getattr__(self, attr: str) -> Any:  # resolve, get, … unchanged
        return getattr(self._zoo, attr)
