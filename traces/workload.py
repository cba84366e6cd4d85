"""Workload assembly: give every job a model, a global batch and elastic GPU bounds.

Production traces (Philly, Helios) record GPUs and durations but not what was trained. Ares
(`seeds/notes/ares.md` §5.3, Table 2) classifies each record by GPU-time into S/M/L/XL and maps
it to a model of that class with one of two global batch sizes:

| class | models (Ares Table 2)            | global batch options            |
|-------|----------------------------------|---------------------------------|
| S     | resnet18 (CIFAR-10), neumf       | 2048/4096; 16384/32768          |
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
and missing ``max_gpus`` to ``max_gpus_factor`` × requested (2×, after Pollux's
``max_replicas = 2 × max profiled``); set ``elastic=False`` to pin both to the request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cosim.errors import UnknownNameError
from traces.sample import size_class

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChoice:
    """One model of a size class with the global batch sizes a job of it may get."""

    model: str
    batches: tuple[int, ...]


#: Named size-class → model maps. "ares" is Table 2 of the Ares paper.
MODEL_MAPS: dict[str, dict[str, tuple[ModelChoice, ...]]] = {
    "ares": {
        "S": (ModelChoice("resnet18", (2048, 4096)), ModelChoice("neumf", (16384, 32768))),
        "M": (ModelChoice("bert_base", (192, 384)), ModelChoice("deepspeech2", (320, 640))),
        "L": (ModelChoice("yolov3", (256, 512)),),
        "XL": (ModelChoice("resnet50", (6400, 12800)),),
    },
}

#: Source spellings (Pollux/Sia application names) recognised when filling a missing batch only.
_BATCH_ALIASES = {"cifar10": "resnet18", "imagenet": "resnet50", "bert": "bert_base", "ncf": "neumf"}


def _resolve_map(mapping: str | dict) -> dict[str, tuple[ModelChoice, ...]]:
    if isinstance(mapping, str):
        if mapping not in MODEL_MAPS:
            raise UnknownNameError("model map", mapping, list(MODEL_MAPS))
        return MODEL_MAPS[mapping]
    return {k: tuple(v) for k, v in mapping.items()}


def assemble(df: pd.DataFrame, seed: int, *, mapping: str | dict = "ares", unknown_class: str = "any",
             elastic: bool = True, max_gpus_factor: float = 2.0) -> pd.DataFrame:
    """Fill ``model``, ``global_batch``, ``size_class``, ``min_gpus``, ``max_gpus`` where missing.

    Deterministic in (df, seed, options). Existing values are never changed. `unknown_class`
    is ``"any"`` (draw from every model of the map) or a class name (treat unknown as it).
    """
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
    hi = np.maximum(g, np.floor(g * max_gpus_factor)).astype(np.int64) if elastic else g
    mx = np.where(mx_have, mx_cur, np.maximum(hi, mn))  # a default never contradicts an existing min
    out["min_gpus"] = pd.Series(mn.astype(np.int32), index=out.index).astype("Int32")
    out["max_gpus"] = pd.Series(mx.astype(np.int32), index=out.index).astype("Int32")
    log.info("assembled %d jobs (map %s)", n, mapping if isinstance(mapping, str) else "custom")
    return out
