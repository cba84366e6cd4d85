"""Workload assembly: give every job a model, a global batch and elastic GPU bounds.

Production traces (Philly, Helios) record GPUs and durations but not what was trained. Ares
(`seeds/notes/ares.md` §5.3, Table 2) classifies each record by GPU-time into S/M/L/XL and maps
it to a model of that class with one of two global batch sizes:

| class | models (Ares Table 2)            | global batch options            |
|-------|----------------------------------|---------------------------------|
| S     | resnet18_cifar, neumf            | 2048/4096; 16384/32768          |
| M     | bert_base (SQuAD), deepspeech2   | 192/384; 320/640                |
| L     | yolov3                           | 256/512                         |
| XL    | resnet50 (ImageNet)              | 6400/12800                      |

The model is drawn uniformly from the class's list and the batch uniformly from the two
options (Ares artifact: ``target_batch = max_batch × U{0.5, 1}``), with a seeded generator.
The mapping is a named option (`MODEL_MAPS`, default ``"ares"``); callers may pass their own.
Jobs whose class is unknown (no duration) draw from all models of the map (`unknown_class`).

Rows that already have a model keep it exactly as written (``cifar10``, ``VGG`` …: the model
zoo resolves aliases); a missing batch for a known model takes the larger option of its row
above (``cifar10``/``imagenet``/``bert``/``ncf`` are recognised as the Pollux application
names). Missing ``min_gpus`` default to 1 (endo-elastic jobs may shrink to one GPU, Ares §2.2)
and missing ``max_gpus`` to the per-job GPU cap `max_gpus` (`MAX_GPUS_OPTIONS`), never below the
request; set ``elastic=False`` to pin both to the request:

- ``"2x"`` (default): twice the request (after Pollux's ``max_replicas = 2 × max profiled``);
  any ``"<k>x"`` (``"8x"``) scales the request by k;
- ``"artifact"``: the Ares artifact's cap, the model's largest profiled GPU count whatever the
  request (sysdomlab/Ares ``simulator/policy/applications.py``: ``max_num_replicas =
  scalability.num_replicas.max()``; ``ARES_ARTIFACT_MAX_GPUS``).

Work (`work=`). Pollux/Sia/Ares workload rows carry no duration: their work is the model's
training run, a fixed number of epochs over its dataset at the job's fixed global batch (Ares
§5.3: "the trace's own duration does not set the job's work"; §9.1: "Job work = fixed epochs ×
dataset samples"). The runs are `traces/data/training_runs.json` (public training-set sizes,
Ares artifact ``max_epochs``). A filled row gets ``epochs``, ``epoch_size`` (samples per epoch),
``dataset`` and ``total_iterations = ceil(epochs × epoch_size / global_batch)`` — iterations *at that
batch*: the engine counts them as their samples (`simcore.work`, ITERATIONS), so a policy that
changes the batch (Pollux) still trains the run's epochs, not that many iterations of its batch:

- ``work="missing"`` (default): only rows with no work at all (no ``total_iterations``, no
  ``epochs`` with ``epoch_size``, no positive ``duration``) — trace-replay rows keep replaying;
- ``work="epochs"``: every row without explicit iterations or epochs becomes its model's
  training run, as Ares does with Philly/Helios records (the duration stays as a record only);
- ``work="none"``: work columns are left exactly as they are.

Rows whose model has no training run, or no global batch, are left as they are and counted
in the log (the engine then reports them by job id if they have no work).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cosim.errors import InputError, UnknownNameError

if TYPE_CHECKING:  # pandas is imported where it is used: a cached `cosim simulate` never needs it
    import pandas as pd

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChoice:
    """One model of a size class with the global batch sizes a job of it may get."""

    model: str
    batches: tuple[int, ...]


#: Named size-class → model maps. "ares" is Table 2 of the Ares paper.
MODEL_MAPS: dict[str, dict[str, tuple[ModelChoice, ...]]] = {
    "ares": {
        "S": (ModelChoice("resnet18_cifar", (2048, 4096)), ModelChoice("neumf", (16384, 32768))),
        "M": (ModelChoice("bert_base", (192, 384)), ModelChoice("deepspeech2", (320, 640))),
        "L": (ModelChoice("yolov3", (256, 512)),),
        "XL": (ModelChoice("resnet50", (6400, 12800)),),
    },
}

#: Source spellings (Pollux/Sia application names) recognised when filling a missing batch only.
_BATCH_ALIASES = {"cifar10": "resnet18_cifar", "imagenet": "resnet50", "bert": "bert_base", "ncf": "neumf"}


@dataclass(frozen=True)
class TrainingRun:
    """A model's fixed training run: `epochs` passes over `samples_per_epoch` samples of `dataset`."""

    model: str
    dataset: str
    samples_per_epoch: int
    epochs: float
    aliases: tuple[str, ...] = ()
    source: str = ""

    def iterations(self, global_batch: float) -> int:
        """Iterations of the whole run at a fixed global batch (the last one may be partial)."""
        return math.ceil(self.epochs * self.samples_per_epoch / global_batch)


#: The built-in training runs (Ares/Pollux models).
TRAINING_RUNS_FILE = Path(__file__).resolve().parent / "data" / "training_runs.json"

#: Values of `assemble(work=...)`.
WORK_OPTIONS = ("missing", "epochs", "none")

#: Named values of `assemble(max_gpus=...)` (besides any "<k>x"): module docstring.
MAX_GPUS_OPTIONS = ("2x", "artifact")

#: The Ares artifact's most GPUs per job by model: the largest `num_replicas` of its RTX 2080 Ti
#: scalability table (sysdomlab/Ares simulator/traces/2080ti/<app>/scalability.csv: imagenet,
#: deepspeech2 and ncf reach 32). The bert, cifar10 and yolov3 tables are not in the public
#: snapshot; they get 64, the largest count the artifact's Ares considers (candidate counts
#: 1, 2, …, 64 in simulator/policy/ares.py, GPSSystem._add_job).
ARES_ARTIFACT_MAX_GPUS = {"resnet50": 32, "deepspeech2": 32, "neumf": 32,
                          "bert_base": 64, "resnet18_cifar": 64, "yolov3": 64}


def max_gpus_cap(option: str, requested: np.ndarray, model: np.ndarray) -> np.ndarray:
    """int64[J]: each job's most GPUs under per-job GPU cap `option` (module docstring), at
    least its request; a model outside the artifact's table keeps 2× its request."""
    g = np.asarray(requested, np.int64)
    if option == "artifact":
        names = [_BATCH_ALIASES.get(str(m).lower(), str(m).lower()) for m in model]
        by = np.array([ARES_ARTIFACT_MAX_GPUS.get(n, -1) for n in names], np.int64)
        return np.maximum(g, np.where(by > 0, by, 2 * g))
    k = _factor(option)
    return np.maximum(g, np.floor(g * k)).astype(np.int64)


def _factor(option: str) -> float:
    text = str(option)
    try:
        k = float(text[:-1]) if text.endswith("x") else float("nan")
    except ValueError:
        k = float("nan")
    if not k >= 1:
        raise InputError.at(field="max_gpus", expected="2x, artifact or <k>x with k >= 1", got=option)
    return k

_RUNS_CACHE: dict[tuple[Path, int], dict[str, TrainingRun]] = {}


def training_runs(path: str | Path | None = None) -> dict[str, TrainingRun]:
    """Training runs by lower-case model name and alias (``cifar10`` and ``resnet18_cifar`` → one run).

    `path` defaults to `TRAINING_RUNS_FILE`; a file of the same layout (``{"runs": {model:
    {dataset, samples_per_epoch, epochs, aliases?, source?}}}``) replaces it. Bad files stop
    with an `InputError` naming the file, the model and the field.
    """
    p = Path(path) if path is not None else TRAINING_RUNS_FILE
    try:
        key = (p.resolve(), p.stat().st_mtime_ns)  # an edited file is read again
    except OSError:
        raise InputError.at(p, expected="an existing training-runs JSON file") from None
    if key not in _RUNS_CACHE:
        _RUNS_CACHE[key] = _read_runs(p)
    return dict(_RUNS_CACHE[key])


def _read_runs(p: Path) -> dict[str, TrainingRun]:
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError.at(p, expected="valid JSON", got=str(exc)) from None
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, dict) or not runs:
        raise InputError.at(p, field="runs", expected="an object of model → training run")
    out: dict[str, TrainingRun] = {}
    for model, r in runs.items():
        if not isinstance(r, dict):
            raise InputError.at(p, row=model, field="runs", expected="an object", got=r)
        for f in ("samples_per_epoch", "epochs"):
            v = r.get(f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InputError.at(p, row=model, field=f, expected="a positive number", got=v)
        if r["samples_per_epoch"] != int(r["samples_per_epoch"]):
            raise InputError.at(p, row=model, field="samples_per_epoch", expected="a whole number of samples",
                                got=r["samples_per_epoch"])
        aliases = r.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InputError.at(p, row=model, field="aliases", expected="a list of names", got=aliases)
        run = TrainingRun(model, str(r.get("dataset", "")), int(r["samples_per_epoch"]), float(r["epochs"]),
                          tuple(aliases), str(r.get("source", "")))
        for name in (model, *aliases):
            k = name.lower()
            if k in out:
                raise InputError.at(p, row=model, field="aliases", expected="names used by one run only", got=name)
            out[k] = run
    return out


def _resolve_map(mapping: str | dict) -> dict[str, tuple[ModelChoice, ...]]:
    if isinstance(mapping, str):
        if mapping not in MODEL_MAPS:
            raise UnknownNameError("model map", mapping, list(MODEL_MAPS))
        return MODEL_MAPS[mapping]
    return {k: tuple(v) for k, v in mapping.items()}


def assemble(df: pd.DataFrame, seed: int, *, mapping: str | dict = "ares", unknown_class: str = "any",
             elastic: bool = True, max_gpus: str = "2x", work: str = "missing",
             runs: str | Path | Mapping[str, TrainingRun] | None = None) -> pd.DataFrame:
    """Fill ``model``, ``global_batch``, ``size_class``, ``min_gpus``, ``max_gpus`` where missing,
    and the work (``epochs``, ``epoch_size``, ``dataset``, ``total_iterations``) per `work`.

    Deterministic in (df, seed, options). Existing values are never changed. `unknown_class`
    is ``"any"`` (draw from every model of the map) or a class name (treat unknown as it).
    `work` is one of `WORK_OPTIONS` (module doc); `runs` a training-runs file or mapping
    (default: the built-in `training_runs()`).
    """
    import pandas as pd

    from traces.sample import size_class

    if work not in WORK_OPTIONS:
        raise UnknownNameError("work option", work, list(WORK_OPTIONS))
    classes = _resolve_map(mapping)
    rng = np.random.default_rng(seed)
    out = df.copy()
    n = len(out)
    cls = size_class(out)
    if "size_class" in out.columns:
        cls = out["size_class"].where(out["size_class"].notna(), cls)
    out["size_class"] = cls
    model = out["model"].to_numpy(dtype=object, na_value=None).copy() if "model" in out else np.full(n, None)
    batch = out["global_batch"].to_numpy(dtype=np.float64, na_value=np.nan).copy() \
        if "global_batch" in out else np.full(n, np.nan)
    # draws happen for every row in a fixed order, so a row's choice does not depend on others
    u_model = rng.random(n)
    u_batch = rng.random(n)
    all_choices = tuple(c for k in classes for c in classes[k])
    if unknown_class != "any" and unknown_class not in classes:
        raise UnknownNameError("size class", unknown_class, list(classes) + ["any"])
    by_model = {c.model: c for c in all_choices}
    cls_arr = cls.to_numpy(dtype=object, na_value=None)
    need = np.array([m is None for m in model], dtype=bool)
    no_batch = np.isnan(batch)
    groups = [(k, classes[k]) for k in classes]
    unknown = np.array([c is None or c not in classes for c in cls_arr], dtype=bool)
    fallback = all_choices if unknown_class == "any" else classes[unknown_class]
    for k, options in groups + [(None, fallback)]:
        rows = need & (unknown if k is None else (cls_arr == k))
        if not rows.any():
            continue
        pick = np.minimum((u_model * len(options)).astype(np.int64), len(options) - 1)
        for o, choice in enumerate(options):
            r = rows & (pick == o)
            model[r] = choice.model
            rb = r & no_batch
            bi = np.minimum((u_batch * len(choice.batches)).astype(np.int64), len(choice.batches) - 1)
            batch[rb] = np.asarray(choice.batches, dtype=np.float64)[bi[rb]]
    fill = ~need & no_batch
    if fill.any():
        names = pd.Series(model[fill], dtype=object).astype(str).str.lower()
        names = names.map(lambda m: _BATCH_ALIASES.get(m, m))
        largest = {m: float(max(c.batches)) for m, c in by_model.items()}
        batch[fill] = names.map(lambda m: largest.get(m, np.nan)).to_numpy(dtype=np.float64)
    out["model"] = pd.Series(model, index=out.index, dtype="str")
    present = ~np.isnan(batch)
    out["global_batch"] = pd.Series(pd.arrays.IntegerArray(np.where(present, batch, 0).astype(np.int32),
                                                           ~present), index=out.index)
    g = out["num_gpus"].to_numpy(dtype=np.int64)

    def _current(col: str) -> tuple[np.ndarray, np.ndarray]:
        if col not in out:
            return np.zeros(n, np.int64), np.zeros(n, bool)
        cur = out[col]
        return cur.fillna(0).to_numpy(dtype=np.int64), cur.notna().to_numpy(dtype=bool)

    mn_cur, mn_have = _current("min_gpus")
    mx_cur, mx_have = _current("max_gpus")
    mn = np.where(mn_have, mn_cur, 1 if elastic else g)
    hi = max_gpus_cap(max_gpus, g, model) if elastic else g
    mx = np.where(mx_have, mx_cur, np.maximum(hi, mn))  # a default never contradicts an existing min
    out["min_gpus"] = pd.Series(mn.astype(np.int32), index=out.index).astype("Int32")
    out["max_gpus"] = pd.Series(mx.astype(np.int32), index=out.index).astype("Int32")
    if work != "none":
        _fill_work(out, work, runs)
    log.info("assembled %d jobs (map %s)", n, mapping if isinstance(mapping, str) else "custom")
    return out


def _fill_work(out: pd.DataFrame, work: str, runs) -> None:
    """Give the rows `work` selects their model's fixed-epoch training run (in place)."""
    import pandas as pd

    table = training_runs(runs) if runs is None or isinstance(runs, (str, Path)) \
        else {k.lower(): v for k, v in runs.items()}
    n = len(out)

    def col(name: str) -> np.ndarray:
        if name not in out:
            return np.full(n, np.nan)
        return pd.to_numeric(out[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan).copy()

    iters, epochs, size, dur = col("total_iterations"), col("epochs"), col("epoch_size"), col("duration")
    batch = col("global_batch")
    has_work = (iters > 0) | ((epochs > 0) & (size > 0))
    if work == "missing":
        has_work |= dur > 0
    models = out["model"].to_numpy(dtype=object, na_value=None)
    run_of = [table.get(m.lower()) if isinstance(m, str) else None for m in models]
    known = np.array([r is not None for r in run_of], dtype=bool)
    rows = ~has_work & known & (batch > 0)
    skipped = int(np.count_nonzero(~has_work & ~rows))
    if skipped:
        log.warning("%d job(s) got no training run (no run for their model, or no global batch) and keep "
                    "the work they had, if any (models with a run: %s)", skipped, ", ".join(sorted({r.model for r in table.values()})))
    if not rows.any():
        return
    idx = np.flatnonzero(rows)
    ep = np.array([run_of[i].epochs for i in idx])
    per = np.array([run_of[i].samples_per_epoch for i in idx], dtype=np.float64)
    ep = np.where(epochs[idx] > 0, epochs[idx], ep)  # an existing epoch count is kept
    per = np.where(size[idx] > 0, size[idx], per)
    epochs[idx], size[idx] = ep, per
    iters[idx] = np.ceil(ep * per / batch[idx])
    out["epochs"] = epochs
    out["epoch_size"] = size
    out["total_iterations"] = iters
    ds = out["dataset"].to_numpy(dtype=object, na_value=None).copy() if "dataset" in out else np.full(n, None)
    for i in idx:
        if ds[i] is None:
            ds[i] = run_of[i].dataset
    out["dataset"] = pd.Series(ds, index=out.index, dtype="str")
    log.info("%d job(s) train a fixed-epoch run (work=%s)", len(idx), work)
