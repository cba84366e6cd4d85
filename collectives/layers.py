"""Per-layer workload files (ASTRA-sim 1.0 format, as used by the Dally paper) and the
communication/compute ratio of a data-parallel iteration on a placement (Dally Table I).

File format (``../shared/data/models/layers/*.csv``): line 1 the parallelism (``DATA``), line 2
the declared layer count, then one tab-separated row per layer::

    name  -1  fwd_cycles  fwd_comm  fwd_bytes  ig_cycles  ig_comm  ig_bytes  wg_cycles  wg_comm  wg_bytes  update

The shipped files carry one more number per file that the export glued to the *start* of every
row after the first and left alone on the last line (e.g. ``18356271features.3``); it is the
same in every row and undocumented, so it is stripped from the names and kept as
`LayerModel.trailing_value`, unused. Files may hold fewer rows than declared (the BERT file: 66
of 145); the rows present are used and the shortfall recorded.

Compute time: cycles × `compute_scale` / `clock_hz`. ASTRA-sim counts one cycle per ns (1 GHz),
and the Dally artifact calibrated each model with a ``--compute-scale`` multiplier on the
cycles [R, notes/dally.md §4.2] (`DALLY_COMPUTE_SCALE`). Those are the defaults here; exact
percentages come from calibration later.

Overlap (`iteration_comm`): backward runs from the last layer to the first; each layer's weight
gradient is all-reduced (one call per layer: ASTRA-sim's per-layer messages) as soon as its
weight-gradient compute ends, one collective at a time in issue order; the next iteration's
forward of layer i waits for layer i's all-reduce. Exposed communication = the waiting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosim.errors import InputError

#: the Dally artifact's per-model compute multipliers ([R] notes/dally.md §4.2), keyed by file prefix
DALLY_COMPUTE_SCALE = {
    "resnet50": 0.033950, "resnet18": 0.001223, "alexnet": 0.0199, "mobilenet_v3": 0.00639,
    "vgg11": 0.01549, "bert": 0.0001121,
}
#: ASTRA-sim cycle = 1 ns
ASTRA_CLOCK_HZ = 1.0e9


@dataclass(frozen=True)
class LayerModel:
    name: str
    path: str
    layer_names: tuple[str, ...]
    fwd_cycles: np.ndarray
    ig_cycles: np.ndarray
    wg_cycles: np.ndarray
    wg_bytes: np.ndarray
    declared_layers: int
    trailing_value: int | None = None

    @property
    def grad_bytes(self) -> float:
        return float(self.wg_bytes.sum())

    def compute_scale(self) -> float:
        """The Dally artifact's multiplier for this model (1.0 when unknown)."""
        key = self.name.lower()
        for prefix, scale in DALLY_COMPUTE_SCALE.items():
            if key.startswith(prefix):
                return scale
        return 1.0

    def compute_s(self, clock_hz: float = ASTRA_CLOCK_HZ, compute_scale: float | None = None) -> float:
        scale = self.compute_scale() if compute_scale is None else compute_scale
        cycles = self.fwd_cycles.sum() + self.ig_cycles.sum() + self.wg_cycles.sum()
        return float(cycles * scale / clock_hz)


def read_layers(path: str | Path) -> LayerModel:
    """Parse one per-layer workload file; errors name the file, row and field."""
    p = Path(path)
    lines = [ln.rstrip("\r") for ln in p.read_text().split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 3 or lines[0].strip() != "DATA":
        raise InputError.at(p, row=1, expected="first line 'DATA' (data-parallel workload)",
                            got=lines[0] if lines else "")
    try:
        declared = int(lines[1].strip())
    except ValueError:
        raise InputError.at(p, row=2, field="layer count", expected="an integer", got=lines[1]) from None
    rows = lines[2:]
    trailing = None
    if rows and re.fullmatch(r"\d+", rows[-1].strip()):
        trailing = rows.pop().strip()
    names, fwd, ig, wg, size = [], [], [], [], []
    for r, line in enumerate(rows, start=3):
        f = line.split("\t")
        if len(f) < 11:
            raise InputError.at(p, row=r, expected="12 tab-separated fields", got=len(f))
        name = f[0]
        if trailing and r > 3 and name.startswith(trailing):
            name = name[len(trailing):]
        try:
            vals = [float(f[i]) for i in (2, 5, 8, 10)]
        except ValueError:
            raise InputError.at(p, row=r, field="cycles/bytes", expected="numbers", got=line[:60]) from None
        if min(vals) < 0:
            raise InputError.at(p, row=r, expected="non-negative cycles and bytes", got=vals)
        names.append(name)
        fwd.append(vals[0])
        ig.append(vals[1])
        wg.append(vals[2])
        size.append(vals[3] if f[9].strip().upper() == "ALLREDUCE" else 0.0)
    if not names:
        raise InputError.at(p, expected="at least one layer row")
    stem = p.stem.split("_B")[0]
    return LayerModel(stem, str(p), tuple(names), np.array(fwd), np.array(ig), np.array(wg), np.array(size),
                      declared, int(trailing) if trailing else None)


def iteration_comm(model: LayerModel, comm_s: np.ndarray, clock_hz: float = ASTRA_CLOCK_HZ,
                   compute_scale: float | None = None) -> tuple[float, float]:
    """(compute seconds, exposed communication seconds) of one data-parallel iteration.

    `comm_s[i]` is the all-reduce time of layer i's gradient on the placement.
    """
    scale = model.compute_scale() if compute_scale is None else compute_scale
    f = model.fwd_cycles * scale / clock_hz
    b = (model.ig_cycles + model.wg_cycles) * scale / clock_hz
    compute = float(f.sum() + b.sum())
    t = float(f.sum())
    comm_free = 0.0
    comm_end = np.zeros(len(f))
    for i in range(len(f) - 1, -1, -1):
        t += b[i]
        if comm_s[i] > 0:
            start = max(t, comm_free)
            comm_free = comm_end[i] = start + comm_s[i]
    cursor = t
    for i in range(len(f)):
        cursor = max(cursor, comm_end[i]) + f[i]
    return compute, float(cursor - t - f.sum())


def comm_ratio(model: LayerModel, comm_model, gpus: np.ndarray, algorithm: str = "auto",
               clock_hz: float = ASTRA_CLOCK_HZ, compute_scale: float | None = None) -> float:
    """Exposed communication as a fraction of compute (Dally Table I's metric) on `gpus`."""
    if len(gpus) <= 1:
        return 0.0
    comm = np.array([comm_model.allreduce(gpus, s, np.array([s]), algorithm=algorithm).seconds if s > 0 else 0.0
                     for s in model.wg_bytes])
    compute, exposed = iteration_comm(model, comm, clock_hz, compute_scale)
    return exposed / compute
