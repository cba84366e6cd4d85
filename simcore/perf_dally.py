"""`--perf astra`: the Dally authors' iteration model (ArtISt-sim), with cosim's collective model.

ArtISt-sim (seeds/notes/dally.md §3.3, §4.2) keeps the trace's iteration time as pure compute
and asks ASTRA-sim, on every new placement, only for the ratio r = exposed communication /
compute of one iteration of the job's model on that placement (the per-layer workload files
with their calibrated `--compute-scale`, no cross-job contention). A job then runs at
t_iter = t_trace × (1 + r(P)); Table I is r for 8 GPUs on a machine, a rack and the network.

This backend is that model, with r computed by cosim's own collective model exactly as
`cosim validate --dally` computes Table I (`collectives.layers.comm_ratio` with
`ASTRA_RATIO`: the authors' per-layer workload files from the shared data's
``models/layers/``, ASTRA-sim 1.0's pipeline over the preset's `multidim` dimensions).
Nothing is fitted to Table I; the ratio of each (model, placement shape) is computed once.

- Phases of a job on P: compute 1 (a unit: only ratios matter), communication r(P) starting
  after compute (ASTRA-sim's exposed part), no link demands: no contention, as in the paper.
  So `exposed_comm_s` is wall time × r / (1 + r), the paper's communication latency.
- `reference`: ``compute`` (default, the paper's): the trace time is compute only, so even
  a consolidated multi-GPU job pays its machine-tier ratio (`solo_iter_s` of the reference
  placement is the compute, 1); ``consolidated``: the trace time is the consolidated
  placement's (cosim's `trace` convention; a worse placement costs (1 + r(P)) / (1 + r(P*))).
- Models without a Dally workload file (Table I's six only) are an error before the run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from cosim.errors import InputError
from simcore.perf import PerfModel, Phases

REFERENCES = ("compute", "consolidated")
_NO_IDS = np.zeros(0, np.int32)
_NO_IDS.flags.writeable = False
_NO_BYTES = np.zeros(0, np.float64)
_NO_BYTES.flags.writeable = False


class AstraRatioPerf(PerfModel):
    """Iteration = compute × (1 + r(model, placement shape)), r by `collectives.layers.comm_ratio`."""

    def __init__(self, *args: Any, layers_dir: Path | str | None = None, reference: str = "compute",
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if reference not in REFERENCES:
            raise InputError.at(field="astra reference", expected=" | ".join(REFERENCES), got=reference)
        self.reference = reference
        self._layers_dir = Path(layers_dir) if layers_dir is not None else None
        self._lm: dict[str, Any] = {}
        self._ratio: dict[tuple[str, bytes], float] = {}
        self._ph: dict[tuple[str, bytes], Phases] = {}

    # -- the per-layer model of each Table-I model ---------------------------------------
    def _layers(self, model: str) -> Any:
        lm = self._lm.get(model)
        if lm is None:
            lm = self._lm[model] = read_workload(model, self._layers_dir)
        return lm

    def missing(self, model: str, gpu_type: int) -> str | None:
        """Why `model` cannot run under this backend (None: it can); read by `table_gaps`."""
        from calibration.validate import DALLY_LAYER_FILES

        base = model.split("@")[0].split("#")[0]
        return None if base in DALLY_LAYER_FILES else f"no Dally per-layer workload file for {model}"

    def ratio(self, model: str, gpus: np.ndarray) -> float:
        """Exposed communication / compute of one iteration of `model` on `gpus`."""
        gpus = np.asarray(gpus, np.int64)
        if gpus.shape[0] <= 1:
            return 0.0
        from collectives.layers import ASTRA_RATIO, comm_ratio
        from collectives.shape import placement_shape

        key = (model, placement_shape(self.topo, gpus).key)
        r = self._ratio.get(key)
        if r is None:
            loop = dict(ASTRA_RATIO)
            if self.comm.params.algorithm != "multidim":  # ASTRA-sim's pipeline needs the dimensions
                loop["pipeline"] = False
                loop.pop("system", None)
                loop.pop("phase_cost", None)
            r = self._ratio[key] = float(comm_ratio(self._layers(model), self.comm, gpus, **loop))
        return r

    def phases(self, model: str, gpus: np.ndarray, batch: int) -> Phases | None:
        gpus = np.asarray(gpus, np.int64)
        if gpus.shape[0] == 0:
            return None
        r = self.ratio(model, gpus)
        return Phases(1.0, 1.0, r, _NO_IDS, _NO_BYTES, 1)

    def solo_iter_s(self, model: str, gpus: np.ndarray, batch: int) -> float:
        if self.reference == "compute":
            return 1.0 if len(gpus) else math.inf
        return super().solo_iter_s(model, gpus, batch)


def read_workload(model: str, layers_dir: Path | str | None = None) -> Any:
    """The authors' per-layer workload file of a Table I model (`collectives.layers.LayerModel`),
    from `layers_dir` or the shared data's ``models/layers/``; a one-line error otherwise."""
    from calibration.validate import DALLY_LAYER_FILES
    from collectives.layers import read_layers
    from cosim.paths import shared_data_dir

    base = model.split("@")[0].split("#")[0]
    stem = DALLY_LAYER_FILES.get(base)
    if stem is None:
        raise InputError.at(field="model", expected="one of Dally Table I's models ("
                            + ", ".join(DALLY_LAYER_FILES) + ") under --perf astra", got=model)
    d = layers_dir or shared_data_dir("models/layers")
    files = sorted(Path(d).glob(f"{stem}*.csv"))
    if not files:
        raise InputError.at(d, expected=f"the Dally per-layer workload file {stem}*.csv")
    return read_layers(files[0])


def table_i(preset: str = "dally-3tier", layers_dir: Path | str | None = None) -> Any:
    """Dally Table I through this backend's own `ratio` (the path the runs take): exposed
    communication as % of compute for 8 GPUs on one machine (8), one rack (4 + 4 on two
    machines) and the network (4 + 4 on two racks), beside the paper's values."""
    import pandas as pd

    import netmodel
    from calibration.validate import DALLY_TABLE_I
    from collectives import CommModel, CommParams
    from collectives.placement import placement_gpus

    topo = netmodel.build_topology(netmodel.load_cluster(preset))
    perf = AstraRatioPerf(topo, None, CommModel(topo, CommParams.for_cluster(topo.spec)), None,
                          contention=False, layers_dir=layers_dir)
    shapes = {"machine": "8", "rack": "4,4", "network": "4/4"}
    rows = []
    for model, paper in DALLY_TABLE_I.items():
        row = {"model": model}
        for (tier, shape), pv in zip(shapes.items(), paper):
            row[f"{tier} paper %"] = pv
            row[f"{tier} cosim %"] = round(100.0 * perf.ratio(model, placement_gpus(topo, shape)), 1)
        rows.append(row)
    return pd.DataFrame(rows)
