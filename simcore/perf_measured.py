"""The `measured` perf backend ("table mode"): Pollux/Sia measured step times as the iteration.

The Pollux (OSDI'21) and Sia (SOSP'23) artifacts ship, per application and platform, the
step time of data-parallel training measured on many placements and local batch sizes:
`pollux-sia/<app>/placements-<platform>.csv` (`placement` = GPUs per node as a digit
string, `local_bsz`, `step_time`, `sync_time`) and `scalability-<platform>.csv` (the same
with `num_nodes`, `num_replicas` instead of a placement). Their simulators
(petuum/adaptdl branch `osdi21-artifact`, `simulator/applications.py`,
`Application.get_throughput`; siasosp23/artifacts `sia-simulator/applications.py`, the same
method) turn the tables into a step time for any placement and local batch like this, and
so do we (our own code, same method):

1. **Placement key.** Drop empty nodes, rotate the per-node GPU counts to their
   lexicographically smallest rotation (`(4, 1, 4)` → `(1, 4, 4)` → `"144"`).
2. **Measured placement:** linear interpolation of (`step_time`, `sync_time`) over that
   placement's measured `local_bsz` (their `interp1d`).
3. **Unmeasured placement:** linear interpolation over (num_nodes, num_replicas,
   local_bsz) — Delaunay/barycentric, their `LinearNDInterpolator` — through the placement
   rows averaged per (nodes, replicas, local_bsz) plus the scalability rows, with the node
   count capped at 16. The triangulation is computed once per version of the CSVs and cached
   on disk with the table (`simcore.measured_cache`); lookups locate the point with scipy's own
   walk in numpy (`simcore.measured_interp`: the same values, to the bit, without importing
   scipy at run time).
4. **Gradient accumulation** past the largest local batch measured for the application
   (Pollux's `max_local_bsz`): `a = ceil(l / l_max)` micro-steps of `ceil(l / a)` samples,
   iteration `step + (a - 1) * (step - sync)` (the synchronisation happens once).

Where their code fails (outside the measured ranges: `interp1d` raises, the 3-D interpolant
gives NaN, and Pollux asserts), ours clamps instead, documented here and in
`docs/architecture.md`: a local batch outside a placement's measured range takes the
nearest measured end; an unmeasured placement's node and GPU counts are capped at the
largest the set measured (the same reasoning as Pollux's 16-node cap: past the largest
measured scale the step time is taken as flat) and its local batch clipped to the set's
range; a point still outside the interpolant's hull takes the nearest measured point (an exact tie: the
lowest point index, where scipy's kd-tree picked by its traversal order).
So the iteration time equals the table at every measured (placement, local batch) and is
continuous (piecewise linear) in the local batch between measured points.

Phases: compute `C = a * (step - sync)`, communication `sync` starting at `C`, no link
demands. The measured step already contains the job's network, so contention does not
apply and exposed communication is the measured `sync_time`.

Which table a run reads: each GPU type of the cluster maps to the Pollux/Sia platform of
the shipped platforms file (`calibration.importers.read_platforms`; T4 → `aws`, A100 → `dgx`, RTX 2080 Ti → `rtx`); the
files are read with `calibration.importers.read_pollux_placements`. A placement over several
GPU types waits for the slowest (the largest of each type's table). Tables live under
`profiles/` of `$COSIM_SHARED_DATA` or, by default, `../shared/data/profiles` beside the checkout.

**`measured-pollux-sim`** (`MeasuredPerf(pollux_sim=True)`, off by default): the same tables with
the two step-time quirks of the Pollux OSDI'21 artifact simulator, for runs that must agree with
that simulator (`experiments/catalog/pollux.toml`), not with the measured hardware:

- yolov3's largest local batch is hand-set to 8 (`applications.py`, `APPLICATIONS`:
  `max_local_bsz=8`) although its tables go to 16, so larger local batches accumulate;
- a one-GPU job whose batch is above the application's initial batch (the smallest batch of
  its `validation-<b>.csv` files) always runs at least one extra accumulation step
  (`simulator.py`, `Job.update_local_bsz`: `accum_steps = max(1, accum_steps)`): 2 micro-steps
  of `ceil(b / 2)` where the tables alone would need one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cosim.errors import InputError
from simcore.measured_interp import FIELDS as TRI_FIELDS
from simcore.measured_interp import Triangulation
from simcore.perf import PerfModel, Phases

if TYPE_CHECKING:  # pandas is imported only where a table is first built (then cached)
    import pandas as pd

#: the Pollux simulator's hand-set largest local batch per application (`measured-pollux-sim` only)
POLLUX_SIM_MAX_LOCAL_BSZ = {"yolov3": 8}
#: Pollux caps the node count of the 3-D interpolation at 16 (`min(num_nodes, 16)`)
MAX_NODES = 16
_NO_IDS = np.zeros(0, np.int32)
_NO_IDS.flags.writeable = False
_NO_BYTES = np.zeros(0, np.float64)
_NO_BYTES.flags.writeable = False
_MISSING = object()
_VALIDATION = re.compile(r"validation-(\d+)\.csv$")


def default_profiles() -> Path:
    """`profiles/` of the shared data (`cosim.paths.shared_data_dir`: `$COSIM_SHARED_DATA`, else
    `../shared/data` beside the checkout); one-line error saying how to set it when absent."""
    from cosim.paths import shared_data_dir

    return shared_data_dir("profiles")


def gpu_platforms() -> dict[str, str]:
    """Zoo GPU type → the Pollux/Sia platform whose tables a run on that GPU reads (the first
    platform of the shipped platforms file with that GPU: A100 → `dgx`, not `dgx-ext`)."""
    from calibration.importers import read_platforms

    out: dict[str, str] = {}
    for platform, (_preset, gpu) in read_platforms().items():  # the shipped platforms file
        out.setdefault(gpu, platform)
    return out


def placement_key(counts: np.ndarray) -> str:
    """Pollux/Sia placement id: non-zero GPUs per node, smallest rotation, as digits ('' when a
    node holds 10 or more GPUs, which no table can name)."""
    c = tuple(counts[counts > 0].tolist())
    if not c or max(c) > 9:
        return ""
    best = min(c[i:] + c[:i] for i in range(len(c)))
    return "".join(map(str, best))


#: arrays of one cached table (`simcore.measured_cache`): the per-placement 1-D curves (`keys`,
#: `key_start` offsets into `lbs`/`step`/`sync`), the 3-D point set and its triangulation
TABLE_FIELDS = ("keys", "key_start", "lbs", "step", "sync", "points", "values", "max_local_bsz", *TRI_FIELDS)


def table_arrays(placements: pd.DataFrame, scalability: pd.DataFrame | None) -> dict[str, np.ndarray]:
    """A table's arrays from `calibration.importers.read_pollux_placements` frames (STEP_COLUMNS):
    per placement the mean step/sync per measured local batch, the 3-D points (placement rows
    averaged per (nodes, replicas, local_bsz) with the scalability rows) and their triangulation.
    Runs once per source file (the result is cached); imports pandas and scipy."""
    import pandas as pd

    keys, starts, lbs, step, sync = [], [0], [], [], []
    for key, g in placements.groupby("placement", sort=True):
        g = g.groupby("local_bsz", sort=True)[["step_time_s", "sync_time_s"]].mean()
        keys.append(str(key))
        lbs.append(g.index.to_numpy(np.float64))
        step.append(g["step_time_s"].to_numpy(np.float64))
        sync.append(g["sync_time_s"].to_numpy(np.float64))
        starts.append(starts[-1] + len(g))
    xs, ys = ["num_nodes", "num_gpus", "local_bsz"], ["step_time_s", "sync_time_s"]
    frames = [placements[xs + ys]] + ([scalability[xs + ys]] if scalability is not None else [])
    pts = pd.concat(frames, ignore_index=True).groupby(xs, sort=True)[ys].mean().reset_index()
    points = pts[xs].to_numpy(np.float64)
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0)
    return {"keys": np.array(keys, dtype=str), "key_start": np.array(starts, np.int64), "lbs": cat(lbs),
            "step": cat(step), "sync": cat(sync), "points": points, "values": pts[ys].to_numpy(np.float64),
            "max_local_bsz": np.array(int(placements["local_bsz"].max()), np.int64),
            **Triangulation.build(points).to_arrays()}


@dataclass
class MeasuredTable:
    """One application's measured set on one platform, ready for lookups."""

    model: str
    platform: str
    by_key: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # key → (local_bsz, step_s, sync_s) sorted
    points: np.ndarray  # float64[k, 3]: num_nodes, num_replicas, local_bsz (3-D interpolation)
    values: np.ndarray  # float64[k, 2]: step_s, sync_s
    max_local_bsz: int  # Pollux: largest local batch of the placements file (accumulation beyond)
    tri: Triangulation  # Delaunay triangulation of `points` (`simcore.measured_interp`)

    def __post_init__(self) -> None:
        self._max_nodes = int(min(self.points[:, 0].max(), MAX_NODES))
        self._max_reps = int(self.points[:, 1].max())
        self._lbs = (float(self.points[:, 2].min()), float(self.points[:, 2].max()))
        self._cache: dict[tuple[str, int, int], tuple[float, float]] = {}

    @classmethod
    def from_arrays(cls, model: str, platform: str, a: dict[str, np.ndarray]) -> MeasuredTable:
        """From `table_arrays` (fresh or cached); a `ValueError`/`IndexError` for arrays that do not fit
        together (the cache then rebuilds the entry)."""
        keys, start = a["keys"], a["key_start"]
        lbs, step, sync = (np.asarray(a[k], np.float64) for k in ("lbs", "step", "sync"))
        points, values = np.asarray(a["points"], np.float64), np.asarray(a["values"], np.float64)
        if (keys.ndim != 1 or start.shape != (keys.shape[0] + 1,) or start[0] != 0 or np.any(np.diff(start) < 1)
                or not lbs.shape == step.shape == sync.shape == (int(start[-1]),) or points.ndim != 2
                or points.shape[1] != 3 or points.shape[0] < 1 or values.shape != (points.shape[0], 2)):
            raise ValueError("measured table arrays do not fit together")
        by_key = {str(k): (lbs[i:j], step[i:j], sync[i:j])
                  for k, i, j in zip(keys.tolist(), start[:-1].tolist(), start[1:].tolist())}
        return cls(model, platform, by_key, points, values, int(a["max_local_bsz"]),
                   Triangulation.from_arrays(points, a))

    def step_sync(self, counts: np.ndarray, local_bsz: int) -> tuple[float, float]:
        """(step s, sync s) of one step with `counts` GPUs per node at `local_bsz` per GPU."""
        key = placement_key(counts)
        ck = (key or str(tuple(int(x) for x in counts if x > 0)), int(np.count_nonzero(counts)), int(local_bsz))
        hit = self._cache.get(ck)
        if hit is not None:
            return hit
        row = self.by_key.get(key) if key else None
        if row is not None:  # measured placement: 1-D in the local batch (clamped at the ends)
            lbs, step, sync = row
            res = (float(np.interp(local_bsz, lbs, step)), float(np.interp(local_bsz, lbs, sync)))
        else:
            res = self._interpolate(int(np.count_nonzero(counts)), int(np.sum(counts)), float(local_bsz))
        self._cache[ck] = res
        return res

    def _interpolate(self, nodes: int, replicas: int, local_bsz: float) -> tuple[float, float]:
        """3-D piecewise-linear lookup (the peers' `LinearNDInterpolator`), the nearest measured
        point outside the hull; node/GPU counts and local batch clamped (module docstring)."""
        n = min(nodes, self._max_nodes)
        q = (float(n), float(max(n, min(replicas, self._max_reps))), min(max(local_bsz, self._lbs[0]), self._lbs[1]))
        v = self.tri.interpolate(q, self.values)
        return float(v[0]), float(v[1])


def load_table(model: str, platform: str, placements: Path, scalability: Path) -> MeasuredTable:
    """The table of a `placements-<platform>.csv` (and its `scalability-<platform>.csv` when it
    exists), through the on-disk cache (`simcore.measured_cache`): read, averaged and triangulated
    once per version of the files, loaded as arrays afterwards (no pandas, no scipy)."""
    from simcore.measured_cache import load_or_build

    def build() -> dict[str, np.ndarray]:
        from calibration.importers import read_pollux_placements

        return table_arrays(read_pollux_placements(placements),
                            read_pollux_placements(scalability) if scalability.is_file() else None)

    return load_or_build("table", f"{placements.parent.name}-{platform}", [placements, scalability], TABLE_FIELDS,
                         build, lambda a: MeasuredTable.from_arrays(model, platform, a))


class MeasuredTables:
    """The measured sets under a profiles folder, loaded lazily per (model, platform)."""

    def __init__(self, profiles: str | Path | None = None) -> None:
        root = Path(profiles) if profiles is not None else default_profiles()
        self.root = root / "pollux-sia" if (root / "pollux-sia").is_dir() else root
        self._apps: dict[str, Path] | None = None
        self._tables: dict[tuple[str, str], MeasuredTable | None] = {}

    def apps(self) -> dict[str, Path]:
        """Canonical zoo model → its application folder (the GPT pipeline set is not data-parallel)."""
        if self._apps is None:
            from calibration import zoo
            from cosim.errors import UnknownNameError

            if not self.root.is_dir():
                raise InputError.at(self.root, expected="a folder of Pollux/Sia measured sets (set $COSIM_SHARED_DATA)",
                                    detail="needed by --perf measured")
            apps = {}
            for d in sorted(p for p in self.root.iterdir() if p.is_dir() and p.name != "gpt_pmp"):
                try:
                    apps.setdefault(zoo.resolve(d.name), d)
                except UnknownNameError:
                    continue
            self._apps = apps
        return self._apps

    def get(self, model: str, platform: str) -> MeasuredTable | None:
        """The table of `model` (canonical zoo name) on `platform`, or None when not measured."""
        k = (model, platform)
        t = self._tables.get(k, _MISSING)
        if t is _MISSING:
            t = None
            app = self.apps().get(model)
            f = app / f"placements-{platform}.csv" if app is not None else None
            if f is not None and f.is_file():
                t = load_table(model, platform, f, app / f"scalability-{platform}.csv")
            self._tables[k] = t
        return t

    def init_batch(self, model: str) -> int | None:
        """Pollux's initial batch of `model`: the smallest `validation-<b>.csv` of its folder (None: none)."""
        app = self.apps().get(model)
        if app is None:
            return None
        sizes = [int(m.group(1)) for p in app.glob("validation-*.csv") if (m := _VALIDATION.search(p.name))]
        return min(sizes) if sizes else None

    def available(self, platform: str) -> list[str]:
        return sorted(m for m, d in self.apps().items() if (d / f"placements-{platform}.csv").is_file())


class MeasuredPerf(PerfModel):
    """`PerfModel` whose iteration is the measured table's (see the module docstring);
    `pollux_sim`: with the Pollux simulator's two step-time quirks (`measured-pollux-sim`)."""

    def __init__(self, topology: Any, zoo: Any, comm: Any, solve: Any = None, contention: bool = True,
                 allow_accumulation: bool = True, tables: MeasuredTables | None = None,
                 pollux_sim: bool = False) -> None:
        super().__init__(topology, zoo, comm, solve, contention=contention, allow_accumulation=allow_accumulation)
        from calibration import zoo as zoo_mod

        self.pollux_sim = bool(pollux_sim)
        self._init_batch: dict[str, int | None] = {}
        self.tables = tables if tables is not None else MeasuredTables()
        plat = gpu_platforms()
        self.type_platform: tuple[str | None, ...] = tuple(plat.get(_gpu(zoo_mod, n)) for n in self.type_names)
        self.gpu_node = np.asarray(topology.gpu_node)
        self._mphases: dict[tuple[str, bytes, int], Phases | None] = {}

    def table(self, model: str, type_idx: int) -> MeasuredTable | None:
        p = self.type_platform[type_idx]
        return None if p is None else self.tables.get(model, p)

    def missing(self, model: str, type_idx: int) -> str | None:
        """Why `model` cannot run on GPU type `type_idx` in table mode (None: it can)."""
        name, p = self.type_names[type_idx], self.type_platform[type_idx]
        if p is None:
            return f"no measured table for GPU type {name} (table mode knows T4, A100, RTX 2080 Ti)"
        if self.tables.get(model, p) is None:
            return (f"no measured table for model {model} on platform {p} ({name}); measured: "
                    f"{', '.join(self.tables.available(p)) or 'none'} under {self.tables.root}")
        return None

    def max_local_batch(self, model: str, type_idx: int, n_gpus: int = 1) -> int:
        t = self.table(model, int(type_idx))  # the measured runs' limit, whatever the GPU count
        if t is None:
            return 0
        return POLLUX_SIM_MAX_LOCAL_BSZ.get(model, t.max_local_bsz) if self.pollux_sim else t.max_local_bsz

    def phases(self, model: str, gpus: np.ndarray, batch: int) -> Phases | None:
        gpus = np.asarray(gpus, dtype=np.int32)
        key = (model, gpus.tobytes(), int(batch))
        res = self._mphases.get(key, _MISSING)
        if res is _MISSING:
            res = self._measured(model, gpus, int(batch))
            if len(self._mphases) > 200_000:
                self._mphases.clear()
            self._mphases[key] = res
        return res

    def _measured(self, model: str, gpus: np.ndarray, batch: int) -> Phases | None:
        n = int(gpus.shape[0])
        if n == 0 or batch < n:
            return None
        types = sorted(set(self.gpu_type[gpus].tolist()))  # np.unique's order; a fifth of its cost here
        mb = self.micro_batching(model, types, math.ceil(batch / n))
        if mb is None:
            return None
        steps, micro = mb
        if self.pollux_sim and n == 1 and steps == 1 and self.allow_accumulation:
            b0 = self._init_batch.get(model, _MISSING)
            if b0 is _MISSING:
                b0 = self._init_batch[model] = self.tables.init_batch(model)
            if b0 is not None and batch > b0:  # the simulator's forced extra accumulation step
                steps, micro = 2, math.ceil(batch / 2)
        counts = np.bincount(self.gpu_node[gpus])
        worst = None
        for t in types:
            step, sync = self.table(model, t).step_sync(counts, micro)
            if worst is None or step + (steps - 1) * (step - sync) > worst[0] + (steps - 1) * (worst[0] - worst[1]):
                worst = (step, sync)
        step, sync = worst
        c = steps * (step - sync)
        return Phases(c, c, sync, _NO_IDS, _NO_BYTES, steps)


def _gpu(zoo_mod: Any, name: str) -> str:
    try:
        return zoo_mod.resolve_gpu(name)
    except Exception:  # a GPU type the zoo does not know has no table either
        return name.lower()
