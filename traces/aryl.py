"""Aryl's workloads, stood in from the public Philly trace (Aryl's ByteDance trace is private).

`../shared/seeds/notes/aryl.md` §5: a 15-day window rescaled to 443×8 training GPUs; the ≈5 %
of jobs with the largest GPU-time marked elastic so that they hold ≈36 % of the GPU-time
(w_max = trace GPUs, w_min = w_max/2); ≈21 % of jobs GPU-type-agnostic (the rest require the
training V100); scenarios Basic / Advanced (+10 % heterogeneous) / Ideal (every job elastic and
heterogeneous); an elastic-fraction sweep; and the testbed configuration (4 + 4 servers, 180
jobs of which 10 elastic over 8 h, durations 2 min–2 h, no job above 16 GPUs).

Every choice is a field of `ArylWorkload`, recorded with the trace (`params` beside it):

- *Rescaling*: each Philly job of the window is replicated `load_scale` times (the fraction by
  a seeded coin), copies jittered by U[0, 300) s, so the offered GPU-time over the window is
  `target_load` × the scaled training capacity. Philly's ≈750 jobs/day × 15 days × the factor
  (≈4.5 at 0.8) gives ≈50k jobs, the size of Aryl's trace (50,390).
- *Scale*: `train_servers` (443) and the cluster built by `cluster_toml` can be shrunk
  proportionally (`scale`) so a run fits a small machine: same load, fewer servers and jobs.
- *Elastic jobs* (`elastic_shape = "large"`, the default), on the window before rescaling so that
  a job's copies share its shape. Aryl §2.2: "these large jobs [ResNet-50, VGG16, BERT, GNMT-16]
  account for 36 % of training cluster resources with an average running time of 14.2 hours";
  §1/§7.1: "~5 % of all jobs". The `elastic_frac` × jobs are the contiguous window of jobs ranked
  by duration whose mean duration is closest to `elastic_mean_h` (14.2 h). Philly's multi-GPU
  jobs among them keep their GPUs; each one-GPU job among them becomes a multi-worker job of a
  power-of-two size in [2, 16] (Fig. 3: "each worker container uses 2 GPUs", 1 to 8 workers),
  drawn (seeded, duration-weighted mean) so that the elastic jobs hold `elastic_share` (36 %) of
  the GPU-time. The trace duration is the running time at w_max (Table 2: "jobs complete in min.
  running time when allocated with w^max workers"); the range is [max(1, g/2), g] ([I], the
  paper gives none). Sizes of 16 are two-server jobs, so reclaims meet multi-server jobs.
  `elastic_shape = "gpu-time"` is the plain cut the elastic-fraction sweep uses: among all jobs
  ranked by GPU-time, the contiguous rank window of `elastic_frac` × jobs whose GPU-time share is
  closest to `elastic_share`; an elastic 1-GPU job scales in [1, `single_gpu_elastic_max`].
- *Type-agnostic jobs*: the elastic jobs (the design places them on loaned servers) plus a
  seeded draw of the others up to `agnostic_frac` (§2.1: "up to 21 % of jobs ... can work with
  any GPU types").
- *Heterogeneous-capable jobs* (Advanced): §7.1 "On top of Basic, 10 % jobs can run on
  heterogeneous GPU"; App. A trains such jobs on 16-32 GPUs, and a one-GPU gang cannot mix types,
  so the `hetero_frac` × jobs are drawn (seeded) from the multi-GPU jobs, elastic ones included,
  first, and only when those run out from the rest. They are type-agnostic too, on top of Basic's
  set (Advanced = the same jobs as Basic with these marks added).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cosim.errors import InputError

PHILLY = "traces/philly/philly_jobs.csv"  # under ../shared/data
TRAIN_TYPE = "V100-32GB"
SCENARIOS = ("basic", "advanced", "ideal")
ELASTIC_SHAPES = ("large", "gpu-time")
MAX_ELASTIC_GPUS = 16  # Fig. 3: up to 8 workers of 2 GPUs


@dataclass(frozen=True)
class ArylWorkload:
    """The recorded parameters of one Aryl stand-in workload (see the module doc)."""

    scenario: str = "basic"
    window_start_day: int = 30  # days after the trace's first submission (2017-10-04: a busy stretch)
    window_days: float = 15.0  # [S] 15-day trace
    train_servers: int = 443  # [S] 443 x 8 V100
    inference_servers: int = 520  # [D/I] 4,160 T4 / 8
    scale: float = 1.0  # fraction of both clusters and of the job stream (1 = the paper's size)
    target_load: float = 0.8  # offered GPU-time / training capacity over the window [I]
    max_duration_s: float = 4 * 86400.0  # [I] cap: Philly has 53-day jobs; the paper "minutes to days"
    elastic_frac: float = 0.05  # [S] ~5 % of jobs elastic
    elastic_share: float = 0.36  # [S] holding 36 % of resources
    elastic_shape: str = "large"  # [S] large multi-worker jobs averaging 14.2 h (see the module doc)
    elastic_mean_h: float = 14.2  # [S] §2.2 "an average running time of 14.2 hours"
    agnostic_frac: float = 0.21  # [S] up to 21 % GPU-type-agnostic
    hetero_frac: float = 0.10  # [S] Advanced: 10 % more jobs heterogeneous-capable
    single_gpu_elastic_max: int = 2  # [I] an elastic 1-GPU job scales in [1, this] (Philly: 96 % of jobs are 1-GPU)
    model: str = "resnet50"  # [I] one zoo model for every job: throughput ∝ GPUs under --perf linear
    seed: int = 0

    def validate(self) -> None:
        if self.scenario not in SCENARIOS:
            raise InputError.at(field="scenario", expected=f"one of {', '.join(SCENARIOS)}", got=self.scenario)
        if self.elastic_shape not in ELASTIC_SHAPES:
            raise InputError.at(field="elastic_shape", expected=f"one of {', '.join(ELASTIC_SHAPES)}",
                                got=self.elastic_shape)
        for name in ("elastic_frac", "elastic_share", "agnostic_frac", "hetero_frac"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise InputError.at(field=name, expected="a fraction in [0, 1]", got=v)
        if not (0 < self.scale <= 1 and self.target_load > 0 and self.window_days > 0):
            raise InputError.at(field="scale/target_load/window_days", expected="positive (scale ≤ 1)",
                                got=(self.scale, self.target_load, self.window_days))


def read_philly(shared: Path) -> pd.DataFrame:
    """The Philly job table: submit s from the first submission, duration s, GPUs."""
    p = Path(shared) / PHILLY
    if not p.is_file():
        raise InputError.at(p, expected="the Philly trace (../shared/data/traces/philly/philly_jobs.csv)")
    df = pd.read_csv(p, parse_dates=["timestamp"])
    t = (df["timestamp"] - df["timestamp"].min()).dt.total_seconds().to_numpy()
    out = pd.DataFrame({"submit": t, "duration": df["duration"].to_numpy(float),
                        "gpus": df["num_gpus"].to_numpy(int)})
    return out.sort_values("submit", kind="stable").reset_index(drop=True)


def elastic_cut(gpu_time: np.ndarray, gpus: np.ndarray, frac: float, share: float) -> np.ndarray:
    """Mask of the elastic jobs: among all jobs by GPU-time (largest first), the contiguous
    rank window of round(frac × jobs) whose share of all GPU-time is closest to `share` (the
    top 5 % of Philly's jobs hold far more than 36 %, so the window starts lower)."""
    n = gpu_time.shape[0]
    k = int(round(frac * n))
    mask = np.zeros(n, bool)
    multi = np.arange(n)
    if k == 0 or multi.size == 0:
        return mask
    k = min(k, multi.size)
    order = multi[np.argsort(-gpu_time[multi], kind="stable")]
    cs = np.concatenate([[0.0], np.cumsum(gpu_time[order])]) / max(gpu_time.sum(), 1e-9)
    shares = cs[k:] - cs[:-k]
    a = int(np.argmin(np.abs(shares - share)))
    mask[order[a:a + k]] = True
    return mask


def large_elastic(duration: np.ndarray, gpus: np.ndarray, w: ArylWorkload,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the elastic jobs, every job's GPUs after reshaping) under `elastic_shape = "large"`
    (see the module doc): the `elastic_frac` window of jobs by duration whose mean is closest to
    `elastic_mean_h`, its one-GPU jobs made power-of-two multi-worker jobs so that the elastic
    jobs hold `elastic_share` of the GPU-time."""
    n = duration.shape[0]
    k = min(n, int(round(w.elastic_frac * n)))
    mask, g = np.zeros(n, bool), gpus.astype(np.int64).copy()
    if k == 0:
        return mask, g
    order = np.argsort(-duration, kind="stable")
    cs = np.concatenate([[0.0], np.cumsum(duration[order])])
    a = int(np.argmin(np.abs((cs[k:] - cs[:-k]) / k - w.elastic_mean_h * 3600.0)))
    mask[order[a:a + k]] = True
    one = np.flatnonzero(mask & (g == 1))
    if one.size and w.elastic_share < 1.0:
        rest = float((duration * g)[~mask].sum())
        need = w.elastic_share / (1.0 - w.elastic_share) * rest - float((duration * g)[mask & (g > 1)].sum())
        m = float(np.clip(need / max(float(duration[one].sum()), 1e-9), 2.0, MAX_ELASTIC_GPUS))
        p = 2 ** int(np.floor(np.log2(m)))  # sizes p or 2p with P(2p) = m/p - 1: duration-weighted mean m
        up = np.where(rng.random(one.size) < m / p - 1.0, 2 * p, p)
        g[one] = np.minimum(up, MAX_ELASTIC_GPUS)
    return mask, g


def build(w: ArylWorkload, shared: Path) -> tuple[pd.DataFrame, dict]:
    """The canonical job table of workload `w` and its recorded statistics."""
    w.validate()
    src = read_philly(shared)
    t0 = w.window_start_day * 86400.0
    horizon = w.window_days * 86400.0
    win = src[(src["submit"] >= t0) & (src["submit"] < t0 + horizon)].copy()
    win["submit"] -= t0
    win["duration"] = win["duration"].clip(1.0, w.max_duration_s)
    cap_gpus = int(round(w.train_servers * w.scale)) * 8
    win = win[win["gpus"] <= cap_gpus].reset_index(drop=True)
    rng = np.random.default_rng(w.seed)
    win["elastic"] = False
    if w.scenario != "ideal" and w.elastic_shape == "large":
        el, g = large_elastic(win["duration"].to_numpy(float), win["gpus"].to_numpy(int), w, rng)
        win["elastic"], win["gpus"] = el, np.minimum(g, cap_gpus)
    offered = float((win["duration"] * win["gpus"]).sum())
    factor = w.target_load * cap_gpus * horizon / max(offered, 1.0)
    reps = np.floor(factor).astype(int) + (rng.random(len(win)) < factor - np.floor(factor))
    rows = win.loc[win.index.repeat(reps)].reset_index(drop=True)
    rows["submit"] = np.clip(rows["submit"] + rng.uniform(0, 300.0, len(rows)), 0, horizon)
    rows = rows.sort_values("submit", kind="stable").reset_index(drop=True)
    marked = rows["elastic"].to_numpy(bool) if w.scenario != "ideal" and w.elastic_shape == "large" else None
    return _finish(rows, w, rng, dict(load_scale=factor, window_jobs=len(win)), elastic=marked)


def _finish(rows: pd.DataFrame, w: ArylWorkload, rng: np.random.Generator, extra: dict,
            elastic: np.ndarray | None = None) -> tuple[pd.DataFrame, dict]:
    """The job table from rows (submit, duration, gpus): elastic jobs (`elastic`, else the ideal
    scenario's all or the GPU-time cut), type-agnostic and heterogeneous-capable marks."""
    n = len(rows)
    gpus = rows["gpus"].to_numpy(int)
    gt = rows["duration"].to_numpy(float) * gpus
    if w.scenario == "ideal":
        elastic = np.ones(n, bool)
    elif elastic is None:
        elastic = elastic_cut(gt, gpus, w.elastic_frac, w.elastic_share)
    agn = elastic.copy()
    hetero = np.zeros(n, bool)
    want = int(round(w.agnostic_frac * n))
    if w.scenario == "ideal":
        agn[:] = True
        hetero[:] = True
    else:
        if want > agn.sum():
            agn[rng.permutation(np.flatnonzero(~agn))[:want - int(agn.sum())]] = True
        if w.scenario == "advanced":  # multi-GPU jobs first (elastic ones included), then the rest
            multi = rng.permutation(np.flatnonzero(gpus > 1))
            pool = np.concatenate([multi, rng.permutation(np.flatnonzero(gpus <= 1))])
            hetero[pool[:int(round(w.hetero_frac * n))]] = True
            agn |= hetero
    min_g = np.where(elastic, np.maximum(1, gpus // 2), gpus)
    max_g = np.where(elastic & (gpus == 1), max(1, w.single_gpu_elastic_max), gpus)
    df = pd.DataFrame({
        "job_id": [f"a{i}" for i in range(n)],
        "submit_time": rows["submit"].to_numpy(float),
        "num_gpus": gpus.astype(np.int32),
        "duration": rows["duration"].to_numpy(float),
        "model": w.model,
        "gpu_type": np.where(agn, None, TRAIN_TYPE),
        "min_gpus": min_g.astype(np.int32),
        "max_gpus": max_g.astype(np.int32),
        "source": f"aryl-{w.scenario} from philly_jobs.csv",
    })
    if hetero.any():  # heterogeneous-capable jobs (Advanced/Ideal) in virtual cluster "hetero": the job
        df["vc"] = np.where(hetero, "hetero", None)  # schema has no capability column (policy aryl hetero_jobs=vc)
    stats = dict(params=dataclasses.asdict(w), jobs=n, elastic_jobs=int(elastic.sum()),
                 elastic_job_frac=float(elastic.mean()) if n else 0.0,
                 elastic_gpu_time_share=float(gt[elastic].sum() / max(gt.sum(), 1e-9)),
                 elastic_mean_duration_h=float(rows["duration"][elastic].mean() / 3600) if elastic.any() else 0.0,
                 elastic_multi_gpu_frac=float((max_g[elastic] > 1).mean()) if elastic.any() else 0.0,
                 multi_server_job_frac=float((gpus > 8).mean()) if n else 0.0,
                 agnostic_frac=float(agn.mean()) if n else 0.0,
                 hetero_frac=float(hetero.mean()) if n else 0.0,
                 hetero_multi_gpu_frac=float((gpus[hetero] > 1).mean()) if hetero.any() else 0.0, **extra)
    return df, stats


def testbed(shared: Path, seed: int = 0, jobs: int = 180, elastic: int = 10, hours: float = 8.0,
            gpu_weight_exponent: float = 1.5, scenario: str = "basic") -> tuple[pd.DataFrame, dict]:
    """The testbed workload [S]: 180 jobs (10 elastic) over 8 h, 2 min–2 h, ≤ 16 GPUs, from
    Philly's jobs in that range, sampled without replacement with weight GPUs^`gpu_weight_exponent`
    [I] (uniform sampling gives 97 % 1-GPU jobs and an offered load of 0.47 of the 32 training
    GPUs; 1.5 gives ≈0.95, the paper's testbed queues: Baseline mean queueing 1532 s), arrivals
    rescaled to `hours`."""
    src = read_philly(shared)
    ok = src[(src["duration"] >= 120) & (src["duration"] <= 7200) & (src["gpus"] <= 16)]
    rng = np.random.default_rng(seed)
    wt = ok["gpus"].to_numpy(float) ** gpu_weight_exponent
    pick = np.sort(rng.choice(len(ok), size=min(jobs, len(ok)), replace=False, p=wt / wt.sum()))
    rows = ok.iloc[pick].reset_index(drop=True)
    s = rows["submit"].to_numpy(float)
    rows["submit"] = (s - s.min()) / max(np.ptp(s), 1.0) * hours * 3600.0
    frac = elastic / len(rows)
    share = 0.36
    w = ArylWorkload(scenario=scenario, elastic_frac=frac, elastic_share=share, elastic_shape="gpu-time", seed=seed,
                     train_servers=4, inference_servers=4, window_days=hours / 24)
    return _finish(rows, w, rng, dict(testbed=True, gpu_weight_exponent=gpu_weight_exponent,
                                      offered_load=float((rows["gpus"] * rows["duration"]).sum() / (32 * hours * 3600))))


def write(df: pd.DataFrame, stats: dict, path: Path) -> Path:
    """The trace as canonical Parquet plus `<name>.json` with its recorded parameters."""
    from traces.io import normalize, write_jobs

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jobs(normalize(df, source=str(path)), path)
    path.with_suffix(".json").write_text(json.dumps(stats, indent=1, default=str))
    return path


SPEC_HELP = "aryl:testbed[:SCENARIO] or aryl:SCENARIO:SCALE[:efF] (SCENARIO basic|advanced|ideal, 0 < SCALE <= 1)"


def parse_spec(spec: str, seed: int = 0) -> ArylWorkload | tuple[str, int]:
    """`aryl:testbed[:SCENARIO]` → ("testbed"-scenario, seed); `aryl:SCENARIO:SCALE[:efF]` → the
    Philly stand-in at SCALE (`efF`: F of the jobs elastic holding all elastic GPU-time, the
    elastic-fraction sweep of Figs. 13-14). The run's seed seeds the workload."""
    parts = str(spec).split(":")
    bad = InputError.at(field="trace", expected=SPEC_HELP, got=spec)
    if len(parts) < 2 or parts[0] != "aryl":
        raise bad
    if parts[1] == "testbed":
        if len(parts) > 3 or (len(parts) == 3 and parts[2] not in SCENARIOS):
            raise bad
        return (parts[2] if len(parts) == 3 else "basic", int(seed))
    if parts[1] not in SCENARIOS or len(parts) not in (3, 4) or (len(parts) == 4 and not parts[3].startswith("ef")):
        raise bad
    try:
        scale = float(parts[2])
        extra = (dict(elastic_frac=float(parts[3][2:]), elastic_share=1.0, elastic_shape="gpu-time")
                 if len(parts) == 4 else {})
    except ValueError:
        raise bad from None
    w = ArylWorkload(scenario=parts[1], scale=scale, seed=int(seed), **extra)
    w.validate()
    return w


def from_spec(spec: str, seed: int = 0, shared: Path | None = None) -> pd.DataFrame:
    """The canonical job table of an `aryl:` trace spec (`parse_spec`), as the runner loads it."""
    from cosim.paths import shared_data_dir
    from traces.io import normalize

    w = parse_spec(spec, seed)
    root = Path(shared) if shared is not None else shared_data_dir()
    if isinstance(w, tuple):
        df, _ = testbed(root, seed=w[1], scenario=w[0])
    else:
        df, _ = build(w, root)
    return normalize(df, source=spec)


def servers(spec: str) -> tuple[int, int, float]:
    """(training servers, inference servers, submission window s) of an `aryl:` spec's cluster."""
    w = parse_spec(spec)
    if isinstance(w, tuple):
        return 4, 4, 8 * 3600.0
    return (max(1, int(round(w.train_servers * w.scale))), max(1, int(round(w.inference_servers * w.scale))),
            w.window_days * 86400.0)


def cluster_toml(train_servers: int, inference_servers: int, repo: Path | None = None,
                 normalized: bool = False) -> str:
    """The `aryl` preset with its two groups resized (proportional scale-downs); `normalized`:
    the `aryl-normalized` preset, whose inference servers hold the paper's normalized capacity
    (8 T4 counted as 2 training GPUs at the training GPU's speed; see that preset)."""
    repo = Path(__file__).resolve().parents[1] if repo is None else repo
    name = "aryl-normalized" if normalized else "aryl"
    text = (repo / "netmodel" / "presets" / f"{name}.toml").read_text()
    text = text.replace(f'name = "{name}"', f'name = "{name}-{train_servers}+{inference_servers}"', 1)
    text = text.replace("nodes = 443", f"nodes = {int(train_servers)}", 1)
    return text.replace("nodes = 520", f"nodes = {int(inference_servers)}", 1)
