"""Importers for public measured sets → one tidy measurement table.

Sources (all in `../shared/data/profiles`):
- Pollux/Sia `pollux-sia/<app>/placements-<platform>.csv`: `placement` (digit string, one
  digit per node = GPUs used on it; `44` = 2 nodes x 4 GPUs), `local_bsz`, `step_time`,
  `sync_time` (the all-reduce part), seconds.
- Pollux/Sia `scalability-<platform>.csv`: `local_bsz, step_time, sync_time, num_nodes,
  num_replicas` (GPUs spread evenly over the nodes).
- Gavel `gavel/simulation_throughputs.json`: `{gpu: {"('<job> (batch size B)', scale)":
  {"null": steps/s alone, ...co-located pairs}}}`; we take the isolated single-GPU rate (its
  "ResNet-18" is the CIFAR-10 one, `GAVEL_JOBS`).

Every importer returns a DataFrame with `STEP_COLUMNS`: one row per measurement, canonical
zoo model, the netmodel preset of the platform, the GPU type, the placement as GPUs per node,
and times in seconds. Bad files raise `InputError` naming the file, the row and what is wrong.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from calibration import zoo
from cosim.errors import CosimError, InputError, UnknownNameError

if TYPE_CHECKING:  # pandas is imported where it is used: a cached `cosim simulate` never needs it
    import pandas as pd

#: the shipped platforms file: Pollux/Sia platform → netmodel preset and zoo GPU type
#: (`read_platforms`); `--platforms FILE` replaces it.
DEFAULT_PLATFORMS_FILE = Path(__file__).resolve().parent / "data" / "platforms.toml"
PLATFORM_KEYS = ("preset", "gpu_type", "notes")


def read_platforms(path: str | Path | None = None) -> dict[str, tuple[str, str]]:
    """A platforms file (TOML: `[<platform>] preset = …, gpu_type = …, notes = …`) →
    {platform: (preset, GPU type)}. `preset` is a shipped netmodel preset name or a preset
    file (relative paths from the platforms file's folder); `gpu_type` a GPU type the zoo
    knows. Anything else is an `InputError` naming the file and field."""
    import netmodel
    from cosim.tomlfile import read_toml

    p = Path(path) if path is not None else DEFAULT_PLATFORMS_FILE
    data = read_toml(p, "platforms file")
    if not data:
        raise InputError.at(p, expected="at least one [<platform>] table")
    out = {}
    for name, t in data.items():
        if not isinstance(t, dict):
            raise InputError.at(p, field=name, expected="a table with preset, gpu_type", got=t)
        for k in t:
            if k not in PLATFORM_KEYS:
                raise InputError.at(p, field=f"{name}.{k}", expected=f"one of {', '.join(PLATFORM_KEYS)}")
        for k in ("preset", "gpu_type"):
            if not isinstance(t.get(k), str) or not t[k]:
                raise InputError.at(p, field=f"{name}.{k}", expected="a non-empty string", got=t.get(k))
        preset = t["preset"]
        if preset not in netmodel.preset_names():
            f = Path(preset) if Path(preset).is_absolute() else p.parent / preset
            if not f.is_file():
                raise InputError.at(p, field=f"{name}.preset", expected="a shipped preset "
                                    f"({', '.join(netmodel.preset_names())}) or a preset file", got=preset)
            try:
                netmodel.load_cluster(str(f))
            except CosimError as exc:
                raise InputError.at(p, field=f"{name}.preset", expected="a valid preset file",
                                    detail=exc.format_message()) from None
            preset = str(f)
        try:
            gpu = zoo.resolve_gpu(t["gpu_type"])
        except (UnknownNameError, KeyError):
            raise InputError.at(p, field=f"{name}.gpu_type", expected=f"a GPU type the zoo knows "
                                f"({', '.join(zoo.gpu_types())})", got=t["gpu_type"]) from None
        out[str(name)] = (preset, gpu)
    return out


GAVEL_GPUS = {"k80": "k80", "p100": "p100", "v100": "v100"}
#: Gavel's job names whose generic spelling names another zoo model: Gavel's "ResNet-18" trains
#: on CIFAR-10 (32x32 inputs; `scheduler/job_table.py`: `image_classification/cifar10`, `main.py
#: --data_dir=.../cifar10`, https://github.com/stanford-futuredata/gavel), not ImageNet's
GAVEL_JOBS = {"ResNet-18": "resnet18_cifar"}

#: bound on a per-GPU batch in a measurement file (far above any real one; keeps int64 math exact)
MAX_LOCAL_BSZ = 10**9
#: bound on the nodes of one measured placement (a placement is a string of per-node digits, so an
#: unbounded count such as 4294967296 would build a string of that length before any other check)
MAX_NODES = 100_000
#: the range a measured number may take, per column (CSV and Parquet names): a step or a collective
#: between a nanosecond and a day, a message up to a pebibyte, counts within the bounds above. A value
#: outside is not a measurement (a unit slip, a corrupted cell), and the fits would overflow or divide
#: by almost zero on it.
_TIME_S = (1e-9, 86400.0)
MEASURED_RANGE = {"step_time_s": _TIME_S, "step_time": _TIME_S, "time_s": _TIME_S,
                  "sync_time_s": (0.0, 86400.0), "sync_time": (0.0, 86400.0), "nbytes": (1, 2**50),
                  "local_bsz": (1, MAX_LOCAL_BSZ), "num_nodes": (1, MAX_NODES), "num_gpus": (1, 9 * MAX_NODES),
                  "group_size": (1, 9 * MAX_NODES)}

STEP_COLUMNS = ["source", "file", "row", "model", "app", "platform", "preset", "gpu_type", "placement",
                "num_nodes", "num_gpus", "local_bsz", "step_time_s", "sync_time_s"]


def placement_counts(placement: str) -> np.ndarray:
    """'144' → array([1, 4, 4]) (GPUs on each node)."""
    return np.array([int(c) for c in str(placement)], dtype=np.int64)


def _platform(file: Path, name: str, platform_map: dict[str, tuple[str, str]] | None) -> tuple[str, str]:
    table = read_platforms() if platform_map is None else platform_map
    if name not in table:
        raise InputError.at(file, field="platform", expected=f"a platform of the platforms file "
                            f"({', '.join(sorted(table))}; add it with --platforms FILE)", got=name)
    return table[name]


def _model(file: Path, app: str) -> str:
    try:
        return zoo.resolve(app)
    except UnknownNameError as exc:
        raise InputError.at(file, field="model", expected="a model the zoo knows", got=app) from exc


def _read_csv(file: Path, required: list[str]) -> pd.DataFrame:
    import pandas as pd

    try:
        df = pd.read_csv(file, dtype={"placement": str})
    except FileNotFoundError as exc:
        raise InputError.at(file, detail="file not found") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError.at(file, expected="a CSV file", detail=str(exc).splitlines()[0]) from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError.at(file, expected=f"columns {', '.join(required)}", detail=f"missing {', '.join(missing)}")
    if df.empty:
        raise InputError.at(file, expected="at least one measurement row", got="no rows")
    return df


def check_measured(file: object, df: pd.DataFrame, cols, allow_zero=(), first_row: int = 2) -> None:
    """Each of `cols` a finite number, > 0 (≥ 0 for the `allow_zero` ones) and inside its
    `MEASURED_RANGE`; the first bad cell is one error naming the file, its row (`first_row` for the
    table's first: 2 in a CSV, whose line 1 is the header) and the field."""
    import pandas as pd

    for c in cols:
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        lo, hi = MEASURED_RANGE.get(c, (0, math.inf))
        bad = ~np.isfinite(v) | ((v < 0) if c in allow_zero else (v <= 0)) | (v > hi) | ((v > 0) & (v < lo))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            kind = "a non-negative number" if c in allow_zero else "a positive number"
            if c in MEASURED_RANGE:
                kind += f" from {_bound(lo)} to {_bound(hi)}" if lo > 0 else f" up to {_bound(hi)}"
            raise InputError.at(file, row=i + first_row, field=c, expected=kind, got=df[c].iloc[i])


def _bound(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _parse_name(file: Path) -> tuple[str, str]:
    m = re.fullmatch(r"(placements|scalability)-(.+)\.csv", file.name)
    if not m:
        raise InputError.at(file, expected="a file named placements-<platform>.csv or scalability-<platform>.csv")
    return m.group(1), m.group(2)


def read_pollux_placements(file: str | Path, app: str | None = None,
                           platform_map: dict[str, tuple[str, str]] | None = None) -> pd.DataFrame:
    """One Pollux/Sia `placements-<platform>.csv` (app = its folder name unless given)."""
    import pandas as pd

    file = Path(file)
    kind, platform = _parse_name(file)
    app = app or file.parent.name
    preset, gpu = _platform(file, platform, platform_map)
    model = _model(file, app)
    if kind == "placements":
        df = _read_csv(file, ["placement", "local_bsz", "step_time", "sync_time"])
        pl = df["placement"].astype(str).str.strip()
        bad = ~pl.str.fullmatch(r"[1-9][0-9]*")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError.at(file, row=i + 2, field="placement", expected="a digit string (GPUs per node)",
                                got=df["placement"].iloc[i])
    else:
        df = _read_csv(file, ["local_bsz", "step_time", "sync_time", "num_nodes", "num_replicas"])
        check_measured(file, df, ["num_nodes", "num_replicas"])
        nodes, reps = pd.to_numeric(df["num_nodes"]), pd.to_numeric(df["num_replicas"])
        # whole numbers, at least one replica per node, at most 9 per node (a placement is a
        # string of per-node digits): 2e-12 nodes used to divide by zero, 1e30 to build a 1e30-long string
        bad = (nodes % 1 != 0) | (reps % 1 != 0) | (reps < nodes) | (reps > 9 * nodes) | (nodes > MAX_NODES)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError.at(file, row=i + 2, field="num_nodes, num_replicas",
                                expected=f"whole numbers, at most {MAX_NODES:,} nodes with 1 to 9 replicas per node",
                                got=f"{df['num_nodes'].iloc[i]}, {df['num_replicas'].iloc[i]}")
        pl = []
        for n, r in zip(nodes.astype(int), reps.astype(int)):  # replicas spread evenly, the remainder first
            base, extra = divmod(r, n)
            pl.append("".join(str(base + (1 if k < extra else 0)) for k in range(n)))
        pl = pd.Series(pl, index=df.index)
    # local_bsz from 1 to MAX_LOCAL_BSZ (`MEASURED_RANGE`), so its rounding below is a batch in that range
    check_measured(file, df, ["local_bsz", "step_time", "sync_time"])
    counts = [placement_counts(p) for p in pl]
    out = pd.DataFrame({
        "source": f"pollux-{kind}", "file": str(file), "row": np.arange(len(df)) + 2, "model": model, "app": app,
        "platform": platform, "preset": preset, "gpu_type": gpu, "placement": pl.to_numpy(),
        "num_nodes": [len(c) for c in counts], "num_gpus": [int(c.sum()) for c in counts],
        "local_bsz": df["local_bsz"].astype(float).round().astype(int).to_numpy(),
        "step_time_s": df["step_time"].astype(float).to_numpy(), "sync_time_s": df["sync_time"].astype(float).to_numpy(),
    })
    return out[STEP_COLUMNS]


def read_pollux_dir(root: str | Path, kinds: tuple[str, ...] = ("placements",), platforms=None,
                    platform_map: dict[str, tuple[str, str]] | None = None) -> pd.DataFrame:
    """All Pollux/Sia files under `root` (= .../profiles/pollux-sia or .../profiles).

    Skips `gpt_pmp` (pipeline/model-parallel GPT: its times are not data-parallel steps)."""
    import pandas as pd

    root = Path(root)
    platform_map = read_platforms() if platform_map is None else platform_map
    if (root / "pollux-sia").is_dir():
        root = root / "pollux-sia"
    if not root.is_dir():
        raise InputError.at(root, detail="profiles folder not found")
    frames, skipped = [], set()
    for app_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if app_dir.name == "gpt_pmp":
            continue
        for kind in kinds:
            for f in sorted(app_dir.glob(f"{kind}-*.csv")):
                plat = _parse_name(f)[1]
                if platforms and plat not in platforms:
                    continue
                if plat not in platform_map:  # a folder holds other sets: only the file's platforms
                    skipped.add(plat)
                    continue
                frames.append(read_pollux_placements(f, platform_map=platform_map))
    if skipped:
        import logging

        logging.getLogger(__name__).warning("%s: skipped platforms not in the platforms file: %s", root,
                                            ", ".join(sorted(skipped)))
    if not frames:
        raise InputError.at(root, expected="placements-<platform>.csv files in per-model folders of the platforms "
                            f"{', '.join(sorted(platform_map))}" + (" (name the others in a platforms file: "
                                                                    "--platforms FILE)" if skipped else ""),
                            got=", ".join(sorted(skipped)) if skipped else "none")
    return pd.concat(frames, ignore_index=True)


_GAVEL_KEY = re.compile(r"^(?P<job>.+?)(?: \(batch size (?P<bs>\d+)\))?$")


def read_gavel(file: str | Path) -> pd.DataFrame:
    """Gavel's isolated single-GPU throughputs as step times (s = 1 / steps per second)."""
    import pandas as pd

    file = Path(file)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError.at(file, detail="file not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError.at(file, expected="JSON (UTF-8)", detail=str(exc)) from exc
    except RecursionError:  # nesting deeper than the parser's stack: no Gavel file looks like that
        raise InputError.at(file, expected="Gavel's throughput JSON (GPU → \"(job, scale)\" → numbers)",
                            detail="nested too deeply") from None
    if not isinstance(data, dict):
        raise InputError.at(file, expected="a JSON object with GPU keys", got=type(data).__name__)
    rows = []
    found = [g for g in GAVEL_GPUS if g in data]
    if not found:
        raise InputError.at(file, expected=f"GPU keys {', '.join(GAVEL_GPUS)}", got=sorted(map(str, data))[:5])
    for g in found:
        if not isinstance(data[g], dict):
            raise InputError.at(file, field=g, expected="an object of \"(job, scale)\" keys", got=type(data[g]).__name__)
        for key, entry in data[g].items():
            try:
                job, scale = ast.literal_eval(key)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                job, scale = None, None
            if not isinstance(job, str) or isinstance(scale, bool) or not isinstance(scale, int):
                raise InputError.at(file, row=f"{g}/{key}", expected="a key like \"('ResNet-50 (batch size 64)', 1)\"")
            if scale != 1:
                continue
            m = _GAVEL_KEY.match(job)
            model = GAVEL_JOBS.get(m.group("job")) or _model(file, m.group("job"))
            thr = entry.get("null") if isinstance(entry, dict) else None
            if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not np.isfinite(thr) or thr <= 0:
                raise InputError.at(file, row=f"{g}/{key}", field="null", expected="a positive throughput", got=thr)
            if m.group("bs") is not None and not 1 <= int(m.group("bs")) <= MAX_LOCAL_BSZ:
                raise InputError.at(file, row=f"{g}/{key}", expected=f"a batch size from 1 to {MAX_LOCAL_BSZ:,}",
                                    got=m.group("bs"))
            rows.append(dict(source="gavel", file=str(file), row=f"{g}/{key}", model=model, app=m.group("job"),
                             platform=f"gavel-{g}", preset="", gpu_type=GAVEL_GPUS[g], placement="1", num_nodes=1,
                             num_gpus=1, local_bsz=int(m.group("bs") or 1), step_time_s=1.0 / float(thr),
                             sync_time_s=0.0))
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def read_any(path: str | Path, platform_map: dict[str, tuple[str, str]] | None = None) -> pd.DataFrame:
    """Dispatch on the path: a pollux-sia folder / file, a Gavel JSON, or a profiles folder (both)."""
    import pandas as pd

    p = Path(path)
    if p.is_dir():
        frames = []
        if (p / "pollux-sia").is_dir() or any(p.glob("*/placements-*.csv")):
            frames.append(read_pollux_dir(p, platform_map=platform_map))
        g = p / "gavel" / "simulation_throughputs.json"
        if g.exists():
            frames.append(read_gavel(g))
        if not frames:
            raise InputError.at(p, expected="a profiles folder (pollux-sia/, gavel/)")
        return pd.concat(frames, ignore_index=True)
    if p.suffix == ".json":
        return read_gavel(p)
    if p.suffix == ".csv":
        return read_pollux_placements(p, platform_map=platform_map)
    raise InputError.at(p, expected="a .csv, .json or a profiles folder")
