"""Two what-ifs and one bound of the ONES report's "Why ONES loses to Tiresias" (not cosim options).

Under the `ones-artifact` profile every ONES job class speeds up linearly with its GPUs, so ONES'
gradual growth buys nothing. The report asks how the comparison changes under the artifact's one
measured sub-linear run, read two ways, and how far ONES' own rules bound its execution:

- `pow`: speed-up c^0.78 — iteration compute and communication-start times × (n / c_ref)^0.22,
  c_ref = the class's requested GPUs, where the profile pins the artifact's speed (16 ImageNet,
  4 CIFAR, 4 BERT); the all-reduce itself is unchanged.
- `host`: the step form's host term normalised at the requested sizes — the same two times ×
  (1 + h (g_max − 1)) / (1 + 3 h), h = 0.085, g_max = the most GPUs of the placement on one node:
  one GPU 1.26×, two 1.16×, three 1.07× faster than under the profile, four and more unchanged.
- `bound`: on the artifact's trace (the first 50 rows of `traces/ones/trace_1.csv`), each job alone
  at the engine's iteration time (`PerfModel.solo_iter_s`, `ones-longhorn` cluster, `ones-artifact`
  profile): the mean of its two warm-up epochs on one GPU, of ONES' execution when it then doubles
  its GPUs every epoch up to 4× its request (batch capped at B_max = b · max_lr / lr) with the
  convergence model's whole saving for gradual growth, and of its execution at the requested size
  for the trace's epochs.

The scalings wrap `PerfModel._compute_phases` in this process only, so a sweep runs them with one
worker (in-process). The command line is `cli.ones_whatif`: `python -m cli.ones_whatif pow sweep
docs/reproductions/ones/ci-seeds.toml -o OUT -j 1` (any cosim command follows the mode) and
`python -m cli.ones_whatif bound`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

#: the requested GPUs of each class's zoo model (Table 2 of the paper, `traces.ones.CLASS_CONFIG`),
#: where the `ones-artifact` profile pins the artifact's measured speed
C_REF = {"alexnet": 16, "resnet50": 16, "vgg16": 16, "inception_v3": 16,
         "resnet18_cifar": 4, "googlenet_cifar": 4, "vgg16_cifar": 4, "bert": 4, "bert_base": 4}
POW_EXPONENT = 0.22  # (n / c_ref)^0.22 on the time: throughput ∝ n^0.78, the artifact's 2-4 GPU run
HOST_SLOPE = 0.085  # h of the host term fitted to the same run within 2 %
MODES = ("pow", "host")


def factor(mode: str, model: str, n: int, g_max: int) -> float:
    """The what-if's multiplier of a placement's compute and communication-start times."""
    if mode == "pow":
        if model not in C_REF:
            raise ValueError(f"what-if pow: model {model!r} is not an ONES class model ({', '.join(C_REF)})")
        return (n / C_REF[model]) ** POW_EXPONENT
    if mode == "host":
        return (1.0 + HOST_SLOPE * (g_max - 1)) / (1.0 + 3.0 * HOST_SLOPE)
    raise ValueError(f"what-if mode {mode!r}: expected one of {', '.join(MODES)}")


@contextlib.contextmanager
def applied(mode: str) -> Iterator[None]:
    """Every PerfModel of this process, inside the block, with `mode`'s scaling."""
    from simcore import perf as P

    factor(mode, "alexnet", 1, 1)  # an unknown mode fails here, before anything is patched
    original = P.PerfModel._compute_phases

    def scaled(self: Any, model: str, gpus: np.ndarray, batch: int, n: int) -> Any:
        ph = original(self, model, gpus, batch, n)
        if ph is None:
            return None
        m = factor(mode, model, n, self._node_counts(gpus)[0])
        return P.Phases(ph.compute_s * m, ph.comm_start_s * m, ph.comm_s, ph.link_ids, ph.link_bytes,
                        ph.accumulation_steps)

    P.PerfModel._compute_phases = scaled
    try:
        yield
    finally:
        P.PerfModel._compute_phases = original


def bound(rows: int = 50) -> dict[str, float]:
    """Means over the first `rows` jobs of the artifact's trace (s): `warmup` (two epochs on one GPU),
    `ones` (ONES' execution with unlimited GPUs, see the module doc), `requested` (at the requested size)."""
    import pandas as pd

    from cosim.paths import shared_file
    from experiments.run_perf import build_perf
    from experiments.runner import RunConfig, real_backends
    from simcore.convergence import ConvergenceModel
    from traces.ones import epochs_to_target_of, total_epochs
    from traces.formats.workloads import ONES_CLASSES, ONES_EPOCHS

    cfg = RunConfig(trace="synth:ones:4", cluster="ones-longhorn", calibration="ones-artifact")
    be = real_backends(cfg)
    perf = build_perf(be.topology(cfg), be, cfg)
    conv = ConvergenceModel()  # the engine's, φ fitted to the artifact's run history

    def s_per_sample(model: str, g: int, batch: int) -> float:
        return perf.solo_iter_s(model, perf.consolidated_gpus(g, -1), batch) / batch

    path = shared_file("traces/ones/trace_1.csv", "the ONES artifact's trace (time, model, task, …)")
    warm, ones, req = [], [], []
    for r in pd.read_csv(path).head(rows).itertuples():
        cls, model = ONES_CLASSES[(r.model, r.task)]
        epochs = ONES_EPOCHS[(cls, int(r.epoch_size))]
        patience, b, c, samples = int(r.patience), int(r.batch_size), int(r.num_gpus), float(r.epoch_size)
        b_max = int(round(b * r.max_lr / r.lr))
        # the epochs at gradual growth: the trace's epochs to target were taken at the requested batch
        e_ones = total_epochs(conv.intrinsic(epochs_to_target_of(epochs, patience), b, b * c), patience)
        t, w, g, k = 0.0, 0.0, 1, 0
        while k < e_ones:
            if k >= 2:
                g = min(2 * g, 4 * c)
            dt = min(1.0, e_ones - k) * samples * s_per_sample(model, g, min(b * g, b_max))
            t += dt
            w += dt if k < 2 else 0.0
            k += 1
        warm.append(w)
        ones.append(t)
        req.append(epochs * samples * s_per_sample(model, c, b * c))
    return {"phi": conv.phi, "warmup": float(np.mean(warm)), "ones": float(np.mean(ones)),
            "requested": float(np.mean(req))}
