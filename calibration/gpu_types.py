"""GPU types as data: datasheet numbers, aliases and sources that users can extend.

The package ships its table in ``data/zoo.json`` (``gpu_types``). A user adds or overrides
types with a TOML file (``--gpu-types FILE`` on ``cosim clusters``, ``validate``,
``calibrate fit`` and ``simulate``) or a ``[gpu_types.<name>]`` table in a cluster preset
(read with the preset)::

    [l4]
    display = "L4 24GB"
    aliases = ["NVIDIA L4"]
    mem_gb = 24
    peak_tflops = 30.3          # fp32, non-tensor
    tf32_tflops = 60            # dense TF32 tensor (0: none)
    tensor_tflops = 121         # dense fp16/bf16 tensor
    mem_bw_GBps = 300
    source = "NVIDIA L4 datasheet"
    # speed_fp32 = 1.2          # published relative fp32 throughput, V100 = 1 (optional, for
    #                           # reference: the compute model's speed comes from the numbers above)
    # amp_speedup = 2.0         # published AMP gain on CNNs (optional; pre-Ampere tensor-core types)
    # benchmark_ref = "t4"      # optional: a published single-GPU benchmark of this type against
    # benchmark_ratio = 1.9     # another one (this type's throughput ÷ the other's on convolutional
    # benchmark_source = "…"    # models): where the datasheet misses the type's efficiency (Kepler)

Validation names the file and the field: an unknown field, a number that is not finite or
is negative (or zero where a size is needed), an alias that another type already has.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from cosim.errors import InputError


@dataclass(frozen=True)
class GpuType:
    """One GPU type as the compute model reads it: datasheet peaks, memory, bandwidth, source."""

    name: str
    display: str
    mem_gb: float
    peak_tflops: float  # fp32, non-tensor
    tensor_tflops: float  # dense fp16/bf16 tensor core
    mem_bw_GBps: float
    source: str
    tf32_tflops: float = 0.0  # dense TF32 tensor core (0: no TF32)
    speed_fp32: float = 0.0  # published relative fp32 throughput, V100 = 1, for reference (0: none)
    amp_speedup: float = 1.0  # published AMP gain on convolutional models (pre-Ampere tensor-core types)
    #: a published single-GPU benchmark against another type: this type's throughput ÷ that type's
    #: on convolutional models (0: none); the compute model's prior for the type's residual speed
    benchmark_ref: str = ""
    benchmark_ratio: float = 0.0
    benchmark_source: str = ""


#: fields of one GPU type: (kind, required)
FIELDS: dict[str, tuple[str, bool]] = {
    "display": ("str", False), "aliases": ("list", False), "source": ("str", True),
    "mem_gb": ("pos", True), "peak_tflops": ("pos", True), "tensor_tflops": ("nonneg", True),
    "mem_bw_GBps": ("pos", True), "tf32_tflops": ("nonneg", False), "speed_fp32": ("nonneg", False),
    "amp_speedup": ("nonneg", False), "benchmark_ref": ("str", False), "benchmark_ratio": ("pos", False),
    "benchmark_source": ("str", False),
}


def norm(name: str) -> str:
    """The key names and aliases are compared by (case, spaces, ``-``, ``_``, ``/`` ignored)."""
    return re.sub(r"[\s_\-/]+", "", str(name).strip().lower())


def check_table(table: Mapping[str, Any], source: object, taken: Mapping[str, str] | None = None,
                prefix: str = "") -> dict[str, dict]:
    """Validate `table` ({name: {field: value}}) read from `source`; `taken` maps the normalised
    aliases already in use to their types (a type may redefine its own names; None: the table
    alone, a ``benchmark_ref`` then not checked against the known types). Returns clean
    copies; raises `InputError` naming `source` and the field."""
    used = dict(taken or {})
    out: dict[str, dict] = {}
    for name, entry in table.items():
        where = f"{prefix}{name}"
        if not isinstance(entry, Mapping):
            raise InputError.at(source, field=where, expected="a table of GPU-type fields", got=entry)
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            raise InputError.at(source, field=f"{where}.{unknown[0]}", expected="one of " + ", ".join(FIELDS))
        missing = [f for f, (_, req) in FIELDS.items() if req and f not in entry]
        if missing:
            raise InputError.at(source, field=f"{where}.{missing[0]}", expected="a value (required)")
        clean: dict[str, Any] = {}
        for f, v in entry.items():
            kind = FIELDS[f][0]
            if kind == "str":
                if not isinstance(v, str):
                    raise InputError.at(source, field=f"{where}.{f}", expected="a string", got=v)
            elif kind == "list":
                if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
                    raise InputError.at(source, field=f"{where}.{f}", expected="a list of strings", got=v)
            else:
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                if not ok or v < 0 or (kind == "pos" and v == 0):
                    want = "a finite number > 0" if kind == "pos" else "a finite number >= 0"
                    raise InputError.at(source, field=f"{where}.{f}", expected=want, got=v)
                v = float(v)
            clean[f] = v
        clean.setdefault("display", str(name))
        for a in (name, *clean.get("aliases", ())):
            owner = used.get(norm(a))
            if owner is not None and owner != norm(name):
                raise InputError.at(source, field=f"{where}.aliases", expected="names no other GPU type has",
                                    got=a, detail=f"'{a}' already names '{owner}'")
            used[norm(a)] = norm(name)
        out[norm(name)] = clean
    for name, clean in out.items():  # a benchmark names a type of this table or of `taken`
        if ("benchmark_ref" in clean) != ("benchmark_ratio" in clean):
            have, want = ("benchmark_ref", "benchmark_ratio") if "benchmark_ref" in clean else ("benchmark_ratio", "benchmark_ref")
            raise InputError.at(source, field=f"{prefix}{name}.{want}", expected=f"a value (given with {have})")
        if taken is not None and "benchmark_ref" in clean and norm(clean["benchmark_ref"]) not in used:
            raise InputError.at(source, field=f"{prefix}{name}.benchmark_ref", expected="a known GPU type",
                                got=clean["benchmark_ref"])
    return out


def read_file(path: str | Path, taken: Mapping[str, str] | None = None) -> dict[str, dict]:
    """A GPU-types TOML file (one ``[<name>]`` table per type), validated."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise InputError.at(p, detail="file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError.at(p, expected="a TOML file of [<gpu type>] tables", detail=str(exc)) from None
    return check_table(data, p, taken)
