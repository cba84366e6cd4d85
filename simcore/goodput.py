"""Statistical efficiency and goodput (Pollux, Qiao et al. OSDI'21), from measured gradient statistics.

Pollux's model (paper §3.1; the public simulator, petuum/adaptdl branch `osdi21-artifact`,
`simulator/`): with `b_0` the application's initial (smallest profiled) batch and `scale =
b / b_0`, one step at batch `b` is worth

    gain(b) = (var + sqr) / (var / scale + sqr)         initial-batch steps,

where `sqr` and `var` are the squared norm and the variance of the gradient measured during
the current epoch (the pre-conditioned gradient noise scale is `b_0 * var / sqr`). The
statistical efficiency is `E(b) = gain / scale` (E(b_0) = 1, falls towards `1 / scale` when
the noise is small) and goodput = throughput × efficiency (`goodput_samples_s`).

The measurements are the Pollux/Sia traces `profiles/pollux-sia/<app>/validation-<b>.csv`:
one row per epoch of a run at batch `b`, with `progress` (cumulative initial-batch steps at the
end of the epoch), `grad_sqr` and `grad_var`. As in the simulator:

- the statistics of a batch between two profiled ones are linearly interpolated in the batch
  (outside the profiled range the nearest one is used: Pollux never goes there);
- epoch `e` ends when progress reaches the smallest end-of-epoch progress of all the files,
  and the job is done after the application's epochs (`target`, in initial-batch steps);
- the statistics of the epoch being run apply until the next epoch boundary, where the
  engine refreshes each job's efficiency (the progress marks of `simcore.engine`).

The epochs of an application are its training run's (`traces/data/training_runs.json`, the
Ares/Pollux artifact `max_epochs`), or the rows of its shortest file when it has none; a
file with fewer rows than that cannot give the noise scale of every epoch (InputError).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosim.errors import InputError

_COLUMNS = ("progress", "grad_sqr", "grad_var")
_FILE = re.compile(r"validation-(\d+)\.csv$")


@dataclass(frozen=True)
class AppStats:
    """One application's gradient statistics per (profiled batch, epoch), and its epochs."""

    name: str
    batches: np.ndarray  # int64[B], ascending profiled global batches; batches[0] = b_0
    grad_sqr: np.ndarray  # float64[B, E]
    grad_var: np.ndarray  # float64[B, E]
    epoch_end: np.ndarray  # float64[E], initial-batch steps at the end of each epoch

    @property
    def init_batch(self) -> int:
        return int(self.batches[0])

    @property
    def epochs(self) -> int:
        return int(self.epoch_end.shape[0])

    @property
    def target(self) -> float:
        """Initial-batch steps of the whole run (the end of its last epoch)."""
        return float(self.epoch_end[-1])

    def epoch_at(self, steps: float) -> int:
        """Epochs completed after `steps` initial-batch steps (0-based index of the one running)."""
        return min(int(np.searchsorted(self.epoch_end, steps, side="right")), self.epochs - 1)

    def grad_stats_rows(self, batch: float) -> tuple[np.ndarray, np.ndarray]:
        """(sqr, var) of every epoch at global batch `batch` (float64[E] each), interpolated
        between profiled batches."""
        b = self.batches
        hi = int(np.searchsorted(b, batch, side="left"))
        if hi <= 0:
            return self.grad_sqr[0], self.grad_var[0]
        if hi >= b.shape[0]:
            return self.grad_sqr[-1], self.grad_var[-1]
        if b[hi] == batch:
            return self.grad_sqr[hi], self.grad_var[hi]
        lo = hi - 1
        w = (batch - b[lo]) / (b[hi] - b[lo])
        sqr = (1.0 - w) * self.grad_sqr[lo] + w * self.grad_sqr[hi]
        var = (1.0 - w) * self.grad_var[lo] + w * self.grad_var[hi]
        return sqr, var

    def grad_stats(self, batch: float, epoch: int) -> tuple[float, float]:
        """(sqr, var) during `epoch` at global batch `batch`, interpolated between profiled batches."""
        e = min(max(int(epoch), 0), self.epochs - 1)
        sqr, var = self.grad_stats_rows(batch)
        return float(sqr[e]), float(var[e])

    def efficiency_row(self, batch: float) -> np.ndarray:
        """E(batch) of every epoch (float64[E]), relative to the initial batch (E(b_0) = 1).
        Element-wise the same float operations, in the same order, as one epoch's: a run asks
        for a batch's efficiency at each of its epochs (`GoodputModel` keeps the rows)."""
        scale = float(batch) / self.init_batch
        sqr, var = self.grad_stats_rows(batch)
        denom = var / scale + sqr
        ok = denom > 0
        gain = np.divide(var + sqr, denom, out=np.ones_like(denom), where=ok)  # 1 where denom <= 0
        return gain / scale

    def efficiency(self, batch: float, epoch: int) -> float:
        """E(batch) during `epoch`, relative to the initial batch (E(b_0) = 1)."""
        return float(self.efficiency_row(batch)[min(max(int(epoch), 0), self.epochs - 1)])

    def goodput_samples_s(self, batch: float, iter_s: float, epoch: int) -> float:
        """Goodput: samples per second (`batch / iter_s`) times the efficiency of `batch`."""
        return float(batch) / iter_s * self.efficiency(batch, epoch)


def load_app(folder: str | Path, epochs: int | None = None) -> AppStats:
    """An application's statistics from its `validation-<batch>.csv` files.

    `epochs`: epochs the run trains (None: the rows of the shortest file, as Pollux does). A
    missing column, a non-finite or negative statistic, or a file with fewer rows than
    `epochs` stops with an `InputError` naming the file. The files' rows are read once per
    version of the files and cached as arrays (`simcore.measured_cache`: no CSV parsing, no
    pandas on later runs).
    """
    from simcore.measured_cache import load_or_build

    d = Path(folder)
    files = sorted((int(m.group(1)), p) for p in d.glob("validation-*.csv") if (m := _FILE.search(p.name)))
    if not files:
        raise InputError.at(d, expected="validation-<batch>.csv files (Pollux/Sia gradient statistics)")
    rows = load_or_build("validation", d.name, [p for _, p in files], ("batches", "row_start", "rows"),
                         lambda: _read_validation(files), lambda a: _split_rows(a, [b for b, _ in files]))
    frames = [(batch, p, x) for (batch, p), x in zip(files, rows)]
    need = min(x.shape[0] for _, _, x in frames) if epochs is None else int(epochs)
    for batch, p, x in frames:
        if x.shape[0] < max(need, 1):
            raise InputError.at(p, expected=f"at least {max(need, 1)} rows (one per epoch) for a noise-scale fit",
                                got=f"{x.shape[0]} rows")
    progress = np.stack([x[:need, 0] for _, _, x in frames])
    epoch_end = progress.min(axis=0)
    if np.any(np.diff(epoch_end) <= 0) or epoch_end[0] <= 0:
        raise InputError.at(d, field="progress", expected="end-of-epoch progress increasing from a positive value")
    return AppStats(name=d.name, batches=np.array([b for b, _, _ in frames], np.int64),
                    grad_sqr=np.stack([x[:need, 1] for _, _, x in frames]),
                    grad_var=np.stack([x[:need, 2] for _, _, x in frames]), epoch_end=epoch_end)


def _read_validation(files: list[tuple[int, Path]]) -> dict[str, np.ndarray]:
    """The checked (progress, grad_sqr, grad_var) rows of each file, concatenated (`row_start`:
    where each file's rows begin), for the cache; a bad file is an `InputError` naming it."""
    import pandas as pd

    parts = []
    for batch, p in files:
        try:
            df = pd.read_csv(p)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise InputError.at(p, expected="a CSV file", got=str(exc).splitlines()[0] if str(exc) else "") from None
        for c in _COLUMNS:
            if c not in df.columns:
                raise InputError.at(p, field=c, expected="columns progress, grad_sqr, grad_var")
        x = df[list(_COLUMNS)].to_numpy(np.float64)
        bad = np.flatnonzero(~np.isfinite(x).all(axis=1) | (x < 0).any(axis=1))
        if bad.size:
            raise InputError.at(p, row=int(bad[0]) + 1, field="progress/grad_sqr/grad_var",
                                expected="finite non-negative numbers", got=tuple(x[bad[0]]))
        if batch <= 0:
            raise InputError.at(p, expected="a positive batch size in the file name", got=batch)
        parts.append(x)
    return {"batches": np.array([b for b, _ in files], np.int64),
            "row_start": np.cumsum([0] + [x.shape[0] for x in parts]).astype(np.int64),
            "rows": np.concatenate(parts).reshape(-1, len(_COLUMNS))}


def _split_rows(a: dict[str, np.ndarray], batches: list[int]) -> list[np.ndarray]:
    """Each file's rows from cached arrays (`ValueError` when they are not the files' rows: the
    cache then rebuilds the entry)."""
    start, rows = a["row_start"], np.asarray(a["rows"], np.float64)
    if (a["batches"].tolist() != batches or start.shape != (len(batches) + 1,) or rows.ndim != 2
            or rows.shape[1] != len(_COLUMNS) or start[0] != 0 or int(start[-1]) != rows.shape[0]
            or np.any(np.diff(start) < 0)):
        raise ValueError("cached validation rows do not match the files")
    return [rows[i:j] for i, j in zip(start[:-1].tolist(), start[1:].tolist())]


def app_for_model(model: str, apps: set[str], runs: dict) -> str | None:
    """The pollux-sia application of a zoo model: its own name or an alias of its training run
    (``resnet18`` → ``cifar10``, ``neumf`` → ``ncf``), or None."""
    m = str(model).lower()
    if m in apps:
        return m
    run = runs.get(m)
    if run is None:
        return None
    for name in (run.model, *run.aliases):
        if name.lower() in apps:
            return name.lower()
    return None


class GoodputModel:
    """Per-job Pollux efficiency for the engine: the applications the run uses and each job's.

    `app_of[j]` indexes `apps` (-1: the job has no profiled application). Implements
    `simcore.work.StatEfficiency` with the epoch taken from the job's progress fraction
    (`bounds[a]`: the fractions of the run at which the epochs of application `a` end).
    """

    def __init__(self, apps: list[AppStats], app_of: np.ndarray) -> None:
        self.apps = apps
        self.app_of = np.asarray(app_of, np.int16)
        self.bounds = [a.epoch_end / a.target for a in apps]
        # the engine asks at every epoch end of every job (thousands of times a run, few distinct
        # answers): plain lists for `bisect` (the same index as `np.searchsorted(side="right")` on
        # these finite ascending floats) and each (application, batch, epoch)'s efficiency kept
        self._app = self.app_of.tolist()
        self._bounds_l = [b.tolist() for b in self.bounds]
        self._rows: dict[tuple[int, float], list[float]] = {}  # efficiency per epoch by (application, batch)
        self._solo: dict[tuple[int, float], float] = {}  # solo_iters by (application, batch)

    def epoch(self, job: int, progress: float) -> int:
        a = self._app[job]
        if a < 0:
            return 0
        b = self._bounds_l[a]
        return min(bisect_right(b, progress), len(b) - 1)

    def _row(self, a: int, batch: float) -> list[float]:
        """Application a's efficiency at `batch` in each epoch (deterministic: computed once)."""
        row = self._rows.get((a, batch))
        if row is None:
            row = self._rows[(a, batch)] = self.apps[a].efficiency_row(batch).tolist()
        return row

    def efficiency(self, job: int, batch: int, progress: float) -> float:
        a = self._app[job]
        if a < 0:
            return 1.0
        return self._row(a, batch)[self.epoch(job, progress)]

    def solo_iters(self, job: int, batch: int) -> float:
        """Iterations at a fixed global `batch` to finish job's run (its epochs, each at its own
        efficiency) — the fixed-batch solo work for the FTF reference. Deterministic in (the
        job's application, batch): computed once per pair (160 jobs share a few dozen)."""
        key = (int(self.app_of[job]), float(batch))
        hit = self._solo.get(key)
        if hit is not None:
            return hit
        st = self.apps[key[0]]
        steps = np.diff(st.epoch_end, prepend=0.0).tolist()
        scale = float(batch) / st.init_batch
        eff = self._row(key[0], batch)
        out = self._solo[key] = float(sum(steps[e] / (scale * eff[e]) for e in range(st.epochs)))
        return out

    def epoch_bounds(self, job: int) -> np.ndarray | None:
        """Fractions of job's work at which its epochs end (the last is 1), or None."""
        a = self.app_of[job]
        return None if a < 0 else self.bounds[a]


def fill_run_epochs(jobs, runs: dict | None = None) -> None:
    """`num_epochs` of the jobs whose work is their model's training run without an `epochs`
    column (`simcore.prepare`'s fixed-epochs fallback: SAMPLES, no duration), so that their
    epoch ends are known to policies that ask for them."""
    from simcore.work import WorkMode
    from traces.workload import training_runs

    runs = training_runs() if runs is None else runs
    cand = np.flatnonzero(np.isnan(jobs.num_epochs) & np.isnan(jobs.duration) & np.isnan(jobs.trace_iter_s)
                          & (jobs.work_mode == WorkMode.SAMPLES))
    for j in cand.tolist():
        run = runs.get(str(jobs.model[j]).lower())
        if run is not None and math.isclose(run.epochs * run.samples_per_epoch / float(jobs.global_batch[j]),
                                            float(jobs.work_iters[j]), rel_tol=1e-9):
            jobs.num_epochs[j] = run.epochs


#: Values of `RunConfig.progress`: "batch-history" is ONES' convergence model (`simcore.convergence`)
PROGRESS_OPTIONS = ("plain", "goodput", "batch-history")


def assign_goodput(jobs, progress: str, profiles: str | Path | None = None,
                   runs: dict | None = None) -> GoodputModel | None:
    """Switch the jobs of profiled applications to Pollux progress (`progress="goodput"`).

    Jobs whose model has a pollux-sia application and whose work is a fixed training run
    (ITERATIONS/SAMPLES from epochs of a dataset — the Pollux/Sia/Ares workloads; not elastic
    replayed jobs, whose SAMPLES work comes from a trace duration) become
    `WorkMode.EPOCHS`: `W_j = target × b_0 / b_ref` reference iterations, progress weighted by
    the efficiency; CONVERGENCE jobs of such models keep their mode and get the same
    efficiency (relative to their own batch). Replayed jobs are left alone. `"plain"`
    (and "batch-history", `simcore.convergence.assign_batch_history`) change nothing here and return
    None. `jobs` is a `simcore.state.JobTable` (modified in place).
    """
    from simcore.work import WorkMode
    from traces.workload import training_runs

    if progress not in PROGRESS_OPTIONS:
        raise InputError.at(field="progress", expected=" or ".join(PROGRESS_OPTIONS), got=progress)
    if progress != "goodput":
        return None
    if profiles is None:
        from cosim.paths import shared_data_dir

        profiles = shared_data_dir("profiles") / "pollux-sia"
    root = Path(profiles)
    if not root.is_dir():
        raise InputError.at(root, expected="the pollux-sia profile folder (needed by --progress goodput)")
    runs = training_runs() if runs is None else runs
    names = {p.name.lower() for p in root.iterdir() if p.is_dir()}
    apps: list[AppStats] = []
    index: dict[str, int] = {}
    app_of = np.full(jobs.num_jobs, -1, np.int16)
    cache: dict[str, str | None] = {}
    for j, m in enumerate(jobs.model):
        if m not in cache:
            cache[m] = app_for_model(m, names, runs)
        name = cache[m]
        mode = int(jobs.work_mode[j])
        if name is None or mode == WorkMode.REPLAY or not math.isfinite(float(jobs.work_iters[j])):
            continue
        if mode == WorkMode.SAMPLES and not math.isfinite(float(jobs.num_epochs[j])) \
                and (math.isfinite(float(jobs.duration[j])) or math.isfinite(float(jobs.trace_iter_s[j]))):
            continue  # an elastic replayed job: its work is its trace time, not a training run
        if name not in index:
            run = runs.get(name)
            index[name] = len(apps)
            apps.append(load_app(root / name, None if run is None else int(math.ceil(run.epochs))))
        a = index[name]
        app_of[j] = a
        if mode in (WorkMode.ITERATIONS, WorkMode.SAMPLES):
            st = apps[a]
            jobs.work_mode[j] = WorkMode.EPOCHS
            jobs.work_iters[j] = st.target * st.init_batch / float(jobs.global_batch[j])
            jobs.num_epochs[j] = st.epochs
    jobs.app_id[:] = app_of
    return GoodputModel(apps, app_of)
