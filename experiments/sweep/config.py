"""Sweep configuration: a TOML grid → frozen dataclasses → the list of cells.

A sweep is the cartesian product of its axes; one *cell* is one simulation of one policy
(with one assignment of its parameters) on one trace, cluster, contention setting,
calibration profile and seed. Cells are identified by a hash of exactly those coordinates,
so the id of a cell does not depend on its position in the file, on the order of the axes
or on which other cells the grid holds — which is what lets `--resume` recognise finished
cells after the grid has been edited.

The file format — every key, axis and default, with examples — is documented for users in
docs/sweeps.md; `cosim sweep --example NAME` prints the shipped examples. Relative file paths
are resolved against the TOML file's folder for running, but the cell id uses the spec as
written so a sweep folder stays valid when the project is moved.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from cosim.errors import InputError

#: top-level keys a sweep file may have
KNOWN_KEYS = ("name", "traces", "clusters", "policies", "contention", "calibration", "seeds", "write_decisions",
              "skip_invalid", "perf", "costs", "policy_costs", "progress", "load_series", "max_gpus")
#: keys of a trace table (a sampled file)
TRACE_KEYS = ("path", "jobs", "window", "seed", "name")
#: keys of a cluster table
CLUSTER_KEYS = ("preset", "nodes")
SCALAR = (bool, int, float, str)


@dataclass(frozen=True)
class TraceSpec:
    """One trace axis value. `spec` is what the runner gets (a path or `synth:like:n`);
    `sample` (jobs, window_s, seed) asks for a seeded sample of the file first."""

    label: str
    spec: str
    path: Path | None = None  # resolved file, None for synth specs
    sample_jobs: int | None = None
    sample_window_s: float | None = None
    sample_seed: int = 0

    def coordinate(self) -> str:
        return self.label


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster preset name (or preset file) with an optional node count override."""

    preset: str
    nodes: int | None = None

    @property
    def label(self) -> str:
        return self.preset if self.nodes is None else f"{self.preset}:{self.nodes}"


@dataclass(frozen=True)
class PolicyPoint:
    """One policy with one assignment of its parameters (sorted by name)."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={_fmt(v)}" for k, v in self.params)
        return f"{self.name}({inner})"


@dataclass(frozen=True)
class Cell:
    """One simulation of the sweep; `cell_id` hashes `coordinates()`."""

    index: int  # position in grid order (for stable output order only, not identity)
    trace: TraceSpec
    cluster: ClusterSpec
    policy: PolicyPoint
    contention: bool
    calibration: str | None
    seed: int
    skip_invalid: bool = False  # run without jobs that can never run (changes results: part of the id)
    perf: str = "network"  # iteration-time backend (simcore.perf_backends)
    #: costs of change (a preset name, seconds, or a table as canonical JSON text); None: the
    #: runner's default — and no coordinate, so ids of sweeps without costs do not change
    costs: str | float | None = None
    progress: str = "plain"  # progress model (experiments.runner.RunConfig.progress, simcore.goodput)
    #: inference load driving loans/reclaims (`RunConfig.load_series`); None: none, and no coordinate
    load_series: str | None = None
    max_gpus: str = "2x"  # per-job GPU cap of assembled jobs (`RunConfig.max_gpus`)

    def coordinates(self) -> dict[str, Any]:
        """The grid coordinates as plain JSON-able values (the identity of the cell)."""
        coords = {
            "trace": self.trace.label,
            "cluster": self.cluster.preset,
            "cluster_nodes": self.cluster.nodes,
            "policy": self.policy.name,
            "policy_params": {k: v for k, v in self.policy.params},
            "contention": self.contention,
            "calibration": self.calibration,
            "seed": self.seed,
        }
        if self.skip_invalid:  # only when set, so ids of ordinary sweeps do not depend on the option
            coords["skip_invalid"] = True
        if self.perf != "network":  # likewise: ids of sweeps on the default backend are unchanged
            coords["perf"] = self.perf
        if self.costs is not None:
            coords["costs"] = self.costs
        if self.progress != "plain":  # like perf: ids of sweeps on the default progress model are unchanged
            coords["progress"] = self.progress
        if self.load_series is not None:  # only when set: ids of sweeps without one are unchanged
            coords["load_series"] = self.load_series
        if self.max_gpus != "2x":  # only when set: ids of sweeps on the default cap are unchanged
            coords["max_gpus"] = self.max_gpus
        return coords

    @property
    def cell_id(self) -> str:
        blob = json.dumps(self.coordinates(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep file; `cells()` expands the grid in a fixed order."""

    name: str
    source: Path | None
    traces: tuple[TraceSpec, ...]
    clusters: tuple[ClusterSpec, ...]
    policies: tuple[PolicyPoint, ...]
    contention: tuple[bool, ...] = (True,)
    calibration: tuple[str | None, ...] = (None,)
    seeds: tuple[int, ...] = (0,)
    write_decisions: bool = False
    skip_invalid: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    perf: tuple[str, ...] = ("network",)
    costs: tuple[str | float | None, ...] = (None,)  # the costs axis (see `Cell.costs`)
    policy_costs: tuple[tuple[str, str | float], ...] = ()  # (policy, costs): fixed for that policy
    progress: tuple[str, ...] = ("plain",)
    load_series: str | None = None  # one per sweep (a grid with and one without: two sweeps)
    max_gpus: tuple[str, ...] = ("2x",)  # per-job GPU caps (`RunConfig.max_gpus`)

    def cells(self) -> list[Cell]:
        grid = itertools.product(self.traces, self.clusters, self.contention, self.calibration, self.perf,
                                 self.seeds, self.policies, self.costs, self.progress, self.max_gpus)
        fixed = dict(self.policy_costs)
        cells, seen = [], set()
        for t, c, cont, cal, pf, s, p, cost, pg, mg in grid:
            if p.name in fixed:  # the policy's own costs: the costs axis does not apply to it
                cost = fixed[p.name]
                key = (t, c, cont, cal, pf, s, p, pg, mg)
                if key in seen:
                    continue
                seen.add(key)
            cells.append(Cell(len(cells), t, c, p, cont, cal, s, self.skip_invalid, pf, cost, pg,
                              load_series=self.load_series, max_gpus=mg))
        ids = [c.cell_id for c in cells]
        if len(set(ids)) != len(ids):
            raise InputError.at(self.source, detail="the grid lists the same cell twice (duplicate axis values)")
        return cells

    def swept_axes(self) -> list[str]:
        """Names of the coordinates that take more than one value (report x-axes)."""
        axes = []
        for name, values in (("trace", self.traces), ("cluster", self.clusters), ("contention", self.contention),
                             ("calibration", self.calibration), ("perf", self.perf), ("seed", self.seeds),
                             ("costs", self.costs), ("progress", self.progress), ("max_gpus", self.max_gpus)):
            if len(values) > 1:
                axes.append(name)
        return axes


def _fmt(v: Any) -> str:
    """Parameter values in cell labels: 0.55, true, 'text', [3600,57600]."""
    if isinstance(v, tuple):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):  # short when exact, else the shortest repr that round-trips (labels stay distinct)
        short = f"{v:g}"
        return short if float(short) == v else repr(v)
    return repr(v) if isinstance(v, str) else str(v)


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and validate a sweep TOML file; errors name the file and the field."""
    from cosim.tomlfile import read_toml

    path = Path(path)
    data = read_toml(path, "sweep file")  # missing, unreadable, non-UTF-8 or bad TOML: one line naming the file
    return parse_sweep(data, source=path, base_dir=path.parent)


def parse_sweep(data: Mapping[str, Any], source: Path | str | None = None, base_dir: Path | None = None) -> SweepConfig:
    """Validate an already-parsed TOML mapping (`source` only names it in errors)."""
    src = Path(source) if source is not None else None
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    unknown = sorted(set(data) - set(KNOWN_KEYS))
    if unknown:
        raise InputError.at(src, field=unknown[0], expected=f"one of {', '.join(KNOWN_KEYS)}", got=unknown[0])
    name = data.get("name", src.stem if src else "sweep")
    if not isinstance(name, str) or not name:
        raise InputError.at(src, field="name", expected="a non-empty string", got=name)
    if "traces" not in data:
        raise InputError.at(src, field="traces", expected="a list of trace files or synth specs (missing)")
    if "policies" not in data:
        raise InputError.at(src, field="policies", expected="a list of policy names or [policies.<name>] tables (missing)")
    traces = tuple(_trace(v, i, src, base) for i, v in enumerate(_list(data["traces"], "traces", src)))
    clusters = tuple(_check_cluster(c, f"clusters[{i}]", src)
                     for i, v in enumerate(_list(data.get("clusters", ["dgx-a100"]), "clusters", src))
                     for c in _clusters(v, i, src))
    policies = _policies(data["policies"], src)
    contention = tuple(_typed(v, bool, f"contention[{i}]", "true or false", src)
                       for i, v in enumerate(_list(data.get("contention", [True]), "contention", src)))
    calibration = tuple(_calibration(v, i, src, base)
                        for i, v in enumerate(_list(data.get("calibration", [None]), "calibration", src)))
    seeds = tuple(_seed(v, f"seeds[{i}]", src) for i, v in enumerate(_list(data.get("seeds", [0]), "seeds", src)))
    perf = tuple(_perf(v, i, src) for i, v in enumerate(_list(data.get("perf", ["network"]), "perf", src)))
    write_decisions = _typed(data.get("write_decisions", False), bool, "write_decisions", "true or false", src)
    skip_invalid = _typed(data.get("skip_invalid", False), bool, "skip_invalid", "true or false", src)
    progress = tuple(_progress(v, i, src)
                     for i, v in enumerate(_list(data.get("progress", ["plain"]), "progress", src)))
    costs = tuple(_costs(v, f"costs[{i}]", src) for i, v in enumerate(_list(data.get("costs", [None]), "costs", src)))
    max_gpus = tuple(_max_gpus(v, i, src) for i, v in enumerate(_list(data.get("max_gpus", ["2x"]), "max_gpus", src)))
    pc = data.get("policy_costs", {})
    if not isinstance(pc, Mapping):
        raise InputError.at(src, field="policy_costs", expected="a table policy = costs", got=pc)
    names = {p.name for p in policies}
    for k in pc:
        if k not in names:
            raise InputError.at(src, field=f"policy_costs.{k}", expected=f"a policy of the sweep ({', '.join(sorted(names))})",
                                got=k)
    policy_costs = tuple(sorted((k, _costs(v, f"policy_costs.{k}", src)) for k, v in pc.items()))
    for axis, values in (("traces", [t.label for t in traces]), ("clusters", [c.label for c in clusters]),
                         ("policies", [p.label for p in policies]), ("contention", contention),
                         ("calibration", calibration), ("perf", perf), ("seeds", seeds), ("costs", costs),
                         ("progress", progress), ("max_gpus", max_gpus)):
        if not values:
            raise InputError.at(src, field=axis, expected="at least one value", got=[])
        dup = [v for v in values if list(values).count(v) > 1]
        if dup:
            raise InputError.at(src, field=axis, expected="distinct values", got=dup[0])
    load_series = _load_series(data.get("load_series"), src, base)
    return SweepConfig(name, src, traces, clusters, policies, contention, calibration, seeds, write_decisions,
                       skip_invalid, raw=dict(data), perf=perf, costs=costs, policy_costs=policy_costs,
                       progress=progress, load_series=load_series, max_gpus=max_gpus)


def _load_series(value: Any, src: Path | None, base: Path) -> str | None:
    """`diurnal:H` as written; a CSV file resolved against the sweep file's folder (must exist)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InputError.at(src, field="load_series", expected="a CSV time_s,pool,nodes_needed or diurnal:H",
                            got=value)
    if value.startswith("diurnal:"):
        return value
    path = _resolve(value, base)
    if not path.is_file():
        raise InputError.at(src, field="load_series", expected="an existing CSV file or diurnal:H", got=value)
    return str(path)


def _max_gpus(value: Any, i: int, src: Path | None) -> str:
    """A per-job GPU cap (`traces.workload.MAX_GPUS_OPTIONS` or "<k>x", k >= 1) as written."""
    from traces.workload import MAX_GPUS_OPTIONS

    text = str(value)
    k = text[:-1] if text.endswith("x") else ""
    if text not in MAX_GPUS_OPTIONS and not (k.replace(".", "", 1).isdigit() and float(k) >= 1):
        raise InputError.at(src, field=f"max_gpus[{i}]", expected="2x, artifact or <k>x with k >= 1", got=value)
    return text


def _progress(value: Any, i: int, src: Path | None) -> str:
    from simcore.goodput import PROGRESS_OPTIONS

    if value not in PROGRESS_OPTIONS:
        raise InputError.at(src, field=f"progress[{i}]", expected=f"one of {', '.join(PROGRESS_OPTIONS)}", got=value)
    return value


def _costs(value: Any, field_name: str, src: Path | None) -> str | float | None:
    """A costs value checked now (a bad preset or field fails before any cell runs) and kept
    hashable: presets and seconds as given, tables as canonical JSON text."""
    from simcore.costs import resolve_costs

    if value is None:
        return None
    try:
        resolve_costs(value, field_name)
    except InputError as exc:
        raise InputError.at(src, field=field_name, detail=str(exc)) from None
    except Exception as exc:  # an unknown preset name
        raise InputError.at(src, field=field_name, detail=str(exc)) from None
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def _list(value: Any, field_name: str, src: Path | None) -> list[Any]:
    """A scalar or table stands for a one-element axis."""
    if isinstance(value, list):
        return value
    return [value]


def _typed(value: Any, kind: type, field_name: str, expected: str, src: Path | None) -> Any:
    if kind is not bool and isinstance(value, bool) or not isinstance(value, kind):
        raise InputError.at(src, field=field_name, expected=expected, got=value)
    return value


def _seed(value: Any, field_name: str, src: Path | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError.at(src, field=field_name, expected="a non-negative integer seed", got=value)
    return value


def _resolve(spec: str, base: Path) -> Path:
    p = Path(spec).expanduser()
    return p if p.is_absolute() else (base / p)


#: what a synth trace value looks like (the form `cosim simulate --synth` and `traces.synth.from_spec` take)
SYNTH_FORM = "synth:<like>:<jobs>[:<window>], e.g. synth:philly:160 or synth:philly-sia:24:1h"


def _check_synth(value: str, where: str, src: Path | None) -> None:
    """The spec `traces.synth.from_spec` runs, checked before the sweep starts: a like name, a
    positive job count and an optional positive window (`parse_seconds`, as the runner reads it)."""
    from cosim.units import parse_seconds

    parts = value.split(":")
    if len(parts) not in (3, 4) or not parts[1] or not parts[2].isdigit() or int(parts[2]) <= 0:
        raise InputError.at(src, field=where, expected=SYNTH_FORM, got=value)
    if len(parts) == 4:
        try:
            window_s = parse_seconds(parts[3], field="window")
        except InputError:
            window_s = -1.0
        if not window_s > 0:
            raise InputError.at(src, field=where, expected=f"a positive window (45, 30m, 8h): {SYNTH_FORM}", got=value)


def _trace(value: Any, i: int, src: Path | None, base: Path) -> TraceSpec:
    where = f"traces[{i}]"
    if isinstance(value, str):
        if not value:
            raise InputError.at(src, field=where, expected="a file path or synth:<like>:<jobs>", got=value)
        if value.startswith("synth:"):
            _check_synth(value, where, src)
            return TraceSpec(label=value, spec=value)
        if value.startswith("aryl:"):  # Aryl's Philly-derived workloads: checked when the runner builds them
            return TraceSpec(label=value, spec=value)
        path = _resolve(value, base)
        if not path.exists():
            raise InputError.at(src, field=where, expected="an existing trace file", got=value)
        return TraceSpec(label=value, spec=str(path), path=path)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(TRACE_KEYS))
        if unknown:
            raise InputError.at(src, field=f"{where}.{unknown[0]}", expected=f"one of {', '.join(TRACE_KEYS)}",
                                got=unknown[0])
        file = value.get("path")
        if not isinstance(file, str) or not file:
            raise InputError.at(src, field=f"{where}.path", expected="a trace file path", got=file)
        path = _resolve(file, base)
        if not path.exists():
            raise InputError.at(src, field=f"{where}.path", expected="an existing trace file", got=file)
        jobs = value.get("jobs")
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs <= 0):
            raise InputError.at(src, field=f"{where}.jobs", expected="a positive integer", got=jobs)
        window_s = None
        if "window" in value:
            from cosim.units import parse_seconds

            try:
                window_s = parse_seconds(value["window"], field=f"{where}.window")
            except InputError:
                raise InputError.at(src, field=f"{where}.window", expected="a duration like 8h or 3600",
                                    got=value["window"]) from None
        seed = _seed(value.get("seed", 0), f"{where}.seed", src)
        label = value.get("name")
        if label is None:
            bits = [file] + ([f"jobs={jobs}"] if jobs else []) + ([f"window={_fmt(window_s)}s"] if window_s else []) + (
                [f"seed={seed}"] if (jobs or window_s) else [])
            label = "[" + ",".join(bits) + "]" if len(bits) > 1 else file
        if not isinstance(label, str) or not label:
            raise InputError.at(src, field=f"{where}.name", expected="a non-empty string", got=label)
        return TraceSpec(label=label, spec=str(path), path=path, sample_jobs=jobs, sample_window_s=window_s,
                         sample_seed=seed)
    raise InputError.at(src, field=where, expected="a string or a table {path, jobs, window, seed, name}", got=value)


def _clusters(value: Any, i: int, src: Path | None) -> list[ClusterSpec]:
    where = f"clusters[{i}]"
    if isinstance(value, str) and value:
        return [ClusterSpec(value)]
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(CLUSTER_KEYS))
        if unknown:
            raise InputError.at(src, field=f"{where}.{unknown[0]}", expected="preset or nodes", got=unknown[0])
        preset = value.get("preset")
        if not isinstance(preset, str) or not preset:
            raise InputError.at(src, field=f"{where}.preset", expected="a cluster preset name or file", got=preset)
        nodes = value.get("nodes")
        if nodes is None:
            return [ClusterSpec(preset)]
        out = []
        for n in _list(nodes, f"{where}.nodes", src):
            if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
                raise InputError.at(src, field=f"{where}.nodes", expected="positive integer node counts", got=n)
            out.append(ClusterSpec(preset, n))
        return out
    raise InputError.at(src, field=where, expected="a preset name or a table {preset, nodes}", got=value)


def _calibration(value: Any, i: int, src: Path | None, base: Path) -> str | None:
    """`"default"` (or nothing): the preset's shipped profile, as `simulate` without
    `--calibration`; `"none"`: no profile; else a profile file, resolved against the sweep
    file's folder, which must exist (checked now, not once per cell), or the name of a shipped
    profile (calibration/data/profiles/NAME.toml)."""
    expected = "default, none, a shipped profile name or an existing calibration profile file"
    if value is None or value == "" or value == "default":
        return None
    if value == "none":
        return "none"
    if not isinstance(value, str):
        raise InputError.at(src, field=f"calibration[{i}]", expected=expected, got=value)
    path = _resolve(value, base)
    if path.is_file():
        return str(path)
    from calibration.stepform import PROFILES_DIR

    if "/" not in value and (PROFILES_DIR / f"{value}.toml").is_file():
        return value  # a shipped profile by name, as `simulate --calibration NAME` takes it
    raise InputError.at(src, field=f"calibration[{i}]", expected=expected, got=value)


def _check_cluster(c: "ClusterSpec", where: str, src: Path | None) -> "ClusterSpec":
    """A cluster preset name or file (with its node count) loaded once now, as each cell will
    load it: a missing file or a resize the preset cannot take fails before any cell runs."""
    import netmodel

    from cosim.errors import CosimError

    try:
        netmodel.load_cluster(c.preset, **({} if c.nodes is None else {"num_nodes": c.nodes}))
    except CosimError as exc:
        raise InputError.at(src, field=where, expected="a cluster preset name or an existing cluster file",
                            detail=exc.format_message()) from None
    return c


def _perf(value: Any, i: int, src: Path | None) -> str:
    from simcore.perf_backends import PERF_BACKENDS, parse_perf

    if not isinstance(value, str) or value.partition(":")[0] not in PERF_BACKENDS:
        raise InputError.at(src, field=f"perf[{i}]", expected=f"one of {', '.join(PERF_BACKENDS)} "
                            "(linear:key=value,... with options)", got=value)
    try:
        parse_perf(value)  # a `--perf` spec with options, e.g. linear:hetero_efficiency=1.0
    except InputError as e:
        raise InputError(f"{src}: perf[{i}]: {e}" if src else f"perf[{i}]: {e}") from None
    return value


def _policies(value: Any, src: Path | None) -> tuple[PolicyPoint, ...]:
    points: list[PolicyPoint] = []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        for i, name in enumerate(value):
            if not isinstance(name, str) or not name:
                raise InputError.at(src, field=f"policies[{i}]", expected="a policy name", got=name)
            points.append(PolicyPoint(name))
        return tuple(points)
    if not isinstance(value, dict):
        raise InputError.at(src, field="policies", expected="a list of names or [policies.<name>] tables", got=value)
    for name, params in value.items():
        if not isinstance(params, dict):
            raise InputError.at(src, field=f"policies.{name}", expected="a table of parameters", got=params)
        keys = sorted(params)
        axes = []
        for k in keys:
            vals = list(_list(params[k], f"policies.{name}.{k}", src))
            if not vals:
                raise InputError.at(src, field=f"policies.{name}.{k}", expected="at least one value", got=[])
            for j, v in enumerate(vals):
                if isinstance(v, list) and all(isinstance(x, SCALAR) for x in v):
                    vals[j] = tuple(v)  # a list inside the grid is one tuple-valued parameter
                elif not isinstance(v, SCALAR):
                    raise InputError.at(src, field=f"policies.{name}.{k}",
                                        expected="numbers, strings, booleans or lists of them", got=v)
            axes.append(vals)
        for combo in itertools.product(*axes):
            points.append(PolicyPoint(name, tuple(zip(keys, combo))))
    return tuple(points)


def check_policy_params(config: SweepConfig, make: Callable[..., Any]) -> None:
    """Fail before any cell runs on an unknown policy parameter or a bad value.

    Builds every policy point once with `make(name, **params)` (the registry's
    `policies.make`: the same validation as `cosim simulate --set`); the one-line error names
    the file, the `[policies.NAME]` table, the key and the accepted keys or values. Policy
    names are checked before this (unknown ones list the registered names).
    """
    for p in config.policies:
        try:
            make(p.name, **dict(p.params))
        except InputError as exc:
            raise InputError(f"{config.source or 'sweep'}: [policies.{p.name}]: {exc.message}") from None


def policy_names(config: SweepConfig) -> list[str]:
    """Distinct policy names in grid order."""
    return list(dict.fromkeys(p.name for p in config.policies))
