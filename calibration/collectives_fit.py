"""Collective sweeps → parameters that span group sizes.

A sweep (`cosim calibrate collectives`, `import-nccl-tests`) times one collective per
(group size n, message bytes B). Fitting α and β per group size (`fit.fit_collectives`, the
nccl-tests view) says nothing about a size that was not measured; two fits here do:

- `fit_across_sizes`: one α–β line over all sizes in the ring algorithm's own terms,
  t(n, B) = k(n) · α + f(n) · B / busbw, with k(n) the ring's sequential steps (2(n − 1)
  for all-reduce, n − 1 for all-gather and reduce-scatter) and f(n) nccl-tests' bus factor
  (2(n − 1)/n, (n − 1)/n). A sweep over 2–8 ranks predicts 16 (test). Reported, and written
  as comments in the profile (a diagnostic: the engine does not run a per-sweep line).
- `fit_comm_params` (`calibrate fit --preset`): the `collectives.CommParams` fields that
  make the engine's own CommModel reproduce the sweep's all-reduces on the preset's first n
  GPUs — what the profile's `[comm]` table carries into `cosim simulate`. The network
  fields are fitted only when the sweep crosses nodes (otherwise nothing identifies them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cosim.errors import InputError

#: sequential steps of the ring algorithm per op (the α term)
RING_STEPS = {"all_reduce": lambda n: 2.0 * (n - 1), "all_gather": lambda n: n - 1.0,
              "reduce_scatter": lambda n: n - 1.0}
#: CommParams fields fitted by `fit_comm_params` (intra-node ones always, network ones when crossed)
INTRA_FIELDS = ("beta_efficiency_intra", "base_latency_s", "alpha_intra_s")
NET_FIELDS = ("beta_efficiency_net", "alpha_net_s")


def _line(n: np.ndarray, b: np.ndarray, t: np.ndarray, op: str) -> tuple[float, float]:
    """(α per step s, bus bandwidth B/s) minimising Σ((pred − t)/t)², both ≥ 0."""
    from scipy.optimize import lsq_linear

    from calibration.measure import BUS_FACTOR

    k = np.array([RING_STEPS[op](x) for x in n])
    f = np.array([BUS_FACTOR[op](x) for x in n])
    A = np.column_stack([k, f * b]) / t[:, None]
    x = lsq_linear(A, np.ones_like(t), bounds=([0.0, 0.0], [np.inf, np.inf])).x
    return float(x[0]), float(1.0 / x[1]) if x[1] > 0 else float("inf")


def predict(op: str, n, nbytes, alpha_step_s: float, busbw_Bps: float) -> np.ndarray:
    from calibration.measure import BUS_FACTOR

    n = np.asarray(n, float)
    return (np.array([RING_STEPS[op](x) for x in n]) * alpha_step_s
            + np.array([BUS_FACTOR[op](x) for x in n]) * np.asarray(nbytes, float) / busbw_Bps)


def fit_across_sizes(sweep: pd.DataFrame) -> pd.DataFrame:
    """One α–β line per (source, op) over every group size, with its leave-one-size-out
    median abs error (fit without size n, predict n)."""
    rows = []
    if "source" not in sweep.columns:
        sweep = sweep.assign(source="sweep")
    for (src, op), g in sweep.groupby(["source", "op"]):
        if op not in RING_STEPS:
            raise InputError.at(src, field="op", expected=" | ".join(RING_STEPS), got=op)
        g = g.groupby(["group_size", "nbytes"], as_index=False)["time_s"].median()
        n, b, t = g["group_size"].to_numpy(float), g["nbytes"].to_numpy(float), g["time_s"].to_numpy(float)
        if len(t) < 3 or np.any(~np.isfinite(t)) or np.any(t <= 0):
            raise InputError.at(src, field=f"{op} time_s", expected="at least 3 positive finite times", got=len(t))
        alpha, bw = _line(n, b, t, op)
        sizes = sorted(set(n.astype(int)))
        errs = []
        for s in sizes if len(sizes) > 1 else []:
            keep = n != s
            a_s, bw_s = _line(n[keep], b[keep], t[keep], op)
            errs += list(np.abs(predict(op, n[~keep], b[~keep], a_s, bw_s) / t[~keep] - 1))
        rows.append(dict(source=src, op=op, group_sizes=",".join(map(str, sizes)), alpha_step_s=alpha,
                         busbw_GBps=bw / 1e9, loso_median_abs_err=float(np.median(errs)) if errs else float("nan")))
    return pd.DataFrame(rows)


def fit_comm_params(sweep: pd.DataFrame, preset: str) -> dict[str, float]:
    """CommParams fields (`INTRA_FIELDS`, and `NET_FIELDS` when a group spans nodes) that
    make `collectives.CommModel` on `preset`'s first n GPUs reproduce the sweep's all-reduce
    times (least squares on log ratios, over every group size and message size)."""
    from scipy.optimize import least_squares

    import netmodel
    from collectives import CommModel, CommParams

    ar = sweep[sweep["op"] == "all_reduce"]
    if ar.empty:
        raise InputError.at(preset, field="op", expected="all_reduce rows in the collectives sweep to fit [comm]")
    topo = netmodel.build_topology(netmodel.load_cluster(preset))
    g = ar.groupby(["group_size", "nbytes"], as_index=False)["time_s"].median()
    if g["group_size"].max() > topo.num_gpus:
        raise InputError.at(preset, field="group_size", expected=f"at most {topo.num_gpus} GPUs (the preset's)",
                            got=int(g["group_size"].max()))
    gpus = {int(n): np.arange(int(n), dtype=np.int64) for n in g["group_size"].unique()}
    crosses = int(g["group_size"].max()) > int(np.asarray(topo.node_num_gpus)[0])
    fields = INTRA_FIELDS + (NET_FIELDS if crosses else ())
    base = CommParams.for_cluster(topo.spec)
    n, b, t = g["group_size"].to_numpy(int), g["nbytes"].to_numpy(float), g["time_s"].to_numpy(float)

    def params(x):
        return base.replace(**{f: float(np.exp(v)) for f, v in zip(fields, x)})

    def resid(x):
        cm = CommModel(topo, params(x))
        pred = np.array([cm.allreduce(gpus[k], bb, np.array([bb])).seconds for k, bb in zip(n, b)])
        return np.log(np.maximum(pred, 1e-12) / t)

    x0 = np.log([max(float(getattr(base, f)), 1e-7) for f in fields])
    lo = np.array([np.log(1e-3) if f.startswith("beta") else np.log(1e-8) for f in fields])
    hi = np.array([0.0 if f.startswith("beta") else np.log(1e-1) for f in fields])
    res = least_squares(resid, np.clip(x0, lo + 1e-9, hi - 1e-9), bounds=(lo, hi), diff_step=0.05, max_nfev=60)
    return {f: float(np.exp(v)) for f, v in zip(fields, res.x)}
