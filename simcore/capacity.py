"""Capacity as a protocol: pools, nodes joining, reclaim demands and their answers.

Aryl (EuroSys'22, ../shared/seeds/notes/aryl.md §2.1-2.2, App. B) runs training on its own
V100 servers plus idle inference T4 servers *loaned* by the inference cluster, which takes
them back when its load rises: "return k servers" is a demand the training scheduler answers
by choosing which servers, preferring ones whose loss preempts fewest jobs and scaling
elastic jobs in before evicting anything.

- **Pools.** Every node belongs to the pool of its node group (`pool` key of a preset's
  `[[groups]]`, default the group's name; the `aryl` preset has `training` and `inference`).
- **Load series.** The inference load says, every step, how many nodes of a pool inference
  needs: a CSV `time_s,pool,nodes_needed`, or `diurnal:H`, the seeded generator below with
  headroom H. Nodes of a driven pool start the run with inference (offline for training);
  at each step the loanable count is `L(t) = N_pool − nodes_needed(t)`; when it grows, that
  many pool nodes *join* (lowest ids first), when it shrinks, a *reclaim demand* asks for
  the difference back, due `grace_s` later (0 by default: Aryl's reclaim is immediate).
- **Answer.** A policy that declares `answers_reclaims` chooses the nodes
  (`Policy.answer_reclaim`); others get `default_answer`. The engine validates the answer
  (`check_answer`: too few or repeated nodes, nodes not on loan from that pool, or past the
  deadline → `PolicyError` naming policy, node and time), then at the answer's time scales
  in each job holding GPUs there to its GPUs elsewhere when it stays within `min_gpus` and
  memory (Aryl's flexible workers), evicting it otherwise, and takes the nodes offline.
- **Log.** Every demand is a row of `reclaims.parquet` (`ReclaimLog`).

Diurnal generator (5-minute steps, hour of day τ = (t / 3600) mod 24), shaped after Aryl's
Figure 1 (notes §3: peak ≈ 0.95 for about four hours at night, trough before dawn, peak /
trough ≈ 2.2):

    u(τ) = u_lo                                            2 ≤ τ < 6      (trough)
         = u_lo + (u_hi − u_lo)·(1 − cos(π(τ − 6)/14))/2    6 ≤ τ < 20     (rise)
         = u_hi                                            20 ≤ τ < 24    (peak)
         = u_hi − (u_hi − u_lo)·(1 − cos(π·τ/2))/2          0 ≤ τ < 2      (fall)
    u_hi = 0.95, u_lo = u_hi / 2.2; u_t = clip(u(τ) + ε_t, 0, 1), ε_t ~ N(0, 0.02²) i.i.d.
    from `numpy.random.default_rng(seed)`; nodes_needed(t) = min(N, ceil(N·(u_t + h)))

so `L(t) = max(0, floor(N·(1 − u_t − h)))`, the notes' headroom rule. The series runs until
`horizon_s` and then stays at its last value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from cosim.errors import InputError, PolicyError
from simcore.api import ReclaimAnswer, ReclaimDemand

if TYPE_CHECKING:  # pandas is imported where it is used: a cached `cosim simulate` never needs it
    import pandas as pd

STEP_S = 300.0  # the inference load's resolution (Aryl Fig. 1 and 7: 5-minute samples)
DIURNAL_PEAK = 0.95
DIURNAL_PEAK_TO_TROUGH = 2.2
DIURNAL_NOISE = 0.02
MAX_HORIZON_S = 365 * 86400.0


@dataclass(frozen=True)
class Pools:
    """Pool of every node: `names[node_pool[n]]`."""

    names: tuple[str, ...]
    node_pool: np.ndarray  # int16[N]

    @classmethod
    def from_topology(cls, topo: Any) -> "Pools":
        spec = getattr(topo, "spec", None)
        groups = getattr(spec, "groups", None)
        if not groups:  # a topology without groups: one pool
            return cls(("default",), np.zeros(len(topo.node_num_gpus), np.int16))
        names = tuple(dict.fromkeys(getattr(g, "pool", "") or g.name for g in groups))
        of_group = np.array([names.index(getattr(g, "pool", "") or g.name) for g in groups], np.int16)
        return cls(names, of_group[np.asarray(topo.node_group)])

    def nodes(self, pool: str) -> np.ndarray:
        return np.flatnonzero(self.node_pool == self.names.index(pool)).astype(np.int32)


@dataclass(frozen=True)
class CapacityDemand:
    """At `time_s`, `count` nodes of `pool` join (`kind="join"`) or are reclaimed by
    `deadline_s` (`kind="reclaim"`)."""

    time_s: float
    pool: str
    kind: str
    count: int
    deadline_s: float


@dataclass(frozen=True)
class CapacityPlan:
    """What a load series means for one run: nodes held by inference at the start, and the
    demands in time order."""

    pools: Pools
    offline_at_start: np.ndarray  # int32 node ids
    demands: tuple[CapacityDemand, ...]

    def node_changes(self) -> list[tuple[float, int, bool]]:
        """The plan as `(time_s, node, online)` changes with the counts the engine produces when
        demands are answered at once (joins: lowest offline ids; reclaims: highest on-loan ids):
        what a capacity-aware FTF reference (`simcore.gps`) needs, which counts GPUs, not nodes."""
        out = [(0.0, int(n), False) for n in self.offline_at_start.tolist()]
        loaned: dict[str, list[int]] = {}
        pool_nodes: dict[str, list[int]] = {}  # each pool's nodes, ascending (looked up once)
        for d in self.demands:
            held = loaned.setdefault(d.pool, [])
            if d.kind == "join":
                if d.pool not in pool_nodes:
                    pool_nodes[d.pool] = self.pools.nodes(d.pool).tolist()
                on_loan = set(held)  # one set per join, not one per candidate node
                free = [int(n) for n in pool_nodes[d.pool] if n not in on_loan][:d.count]
                held.extend(free)
                held.sort()
                out.extend((d.time_s, n, True) for n in free)
            else:
                back = held[len(held) - d.count:] if d.count else []
                del held[len(held) - len(back):]
                out.extend((d.time_s, n, False) for n in back)
        return out

    def take_offline(self, gpu_online: np.ndarray, node_first_gpu: np.ndarray, node_num_gpus: np.ndarray) -> None:
        """Mark the nodes inference holds at the start offline (before the engine counts them)."""
        for n in self.offline_at_start.tolist():
            f = int(node_first_gpu[n])
            gpu_online[f:f + int(node_num_gpus[n])] = False


# ---- load series ---------------------------------------------------------------------------

def read_load_series(path: str | Path, pools: Pools) -> pd.DataFrame:
    """A CSV `time_s,pool,nodes_needed` → rows sorted by time (checked: known pool, count an
    integer in [0, pool size], time finite and non-negative; numbers in ASCII digits)."""
    import pandas as pd

    from cosim.validate import parse_number, read_csv_columns

    p = Path(path)
    rows = read_csv_columns(p, ("time_s", "pool", "nodes_needed"))
    times, names, needs = [], [], []
    for i, r in enumerate(rows, start=1):
        pool = r["pool"].strip()
        if pool not in pools.names:
            raise InputError.at(p, row=i, field="pool", expected=f"one of {', '.join(pools.names)}", got=pool)
        size = int(pools.nodes(pool).shape[0])
        times.append(parse_number(r["time_s"], "time_s", source=p, row=i, minimum=0.0, maximum=MAX_HORIZON_S))
        needs.append(parse_number(r["nodes_needed"], "nodes_needed", source=p, row=i, integer=True, minimum=0,
                                  maximum=size))
        names.append(pool)
    out = pd.DataFrame({"time_s": pd.Series(times, dtype=float), "pool": pd.Series(names, dtype=object),
                        "nodes_needed": pd.Series(needs, dtype=int)})
    return out.sort_values(["time_s", "pool"], kind="stable").reset_index(drop=True)


def diurnal_utilisation(t_s: np.ndarray) -> np.ndarray:
    """The noiseless daily inference utilisation u(τ) of the module docstring."""
    tau = np.mod(np.asarray(t_s, np.float64) / 3600.0, 24.0)
    hi, lo = DIURNAL_PEAK, DIURNAL_PEAK / DIURNAL_PEAK_TO_TROUGH
    u = np.full(tau.shape, lo)
    rise = (tau >= 6) & (tau < 20)
    u[rise] = lo + (hi - lo) * (1 - np.cos(np.pi * (tau[rise] - 6) / 14)) / 2
    u[tau >= 20] = hi
    fall = tau < 2
    u[fall] = hi - (hi - lo) * (1 - np.cos(np.pi * tau[fall] / 2)) / 2
    return u


def diurnal_series(pool: str, pool_nodes: int, headroom: float, horizon_s: float, seed: int) -> pd.DataFrame:
    """The seeded diurnal load of one pool at 5-minute steps over [0, horizon_s]."""
    import pandas as pd

    if not 0.0 <= headroom < 1.0:
        raise InputError.at(field="--load-series", expected="diurnal:H with headroom H in [0, 1)", got=headroom)
    steps = int(min(horizon_s, MAX_HORIZON_S) // STEP_S) + 1
    t = np.arange(steps) * STEP_S
    rng = np.random.default_rng(seed)
    u = np.clip(diurnal_utilisation(t) + rng.normal(0.0, DIURNAL_NOISE, steps), 0.0, 1.0)
    need = np.minimum(pool_nodes, np.ceil(pool_nodes * (u + headroom) - 1e-9)).astype(int)
    return pd.DataFrame({"time_s": t, "pool": pool, "nodes_needed": need})


def plan_from_series(series: pd.DataFrame, pools: Pools, grace_s: float = 0.0) -> CapacityPlan:
    """Join and reclaim demands from a load series (module docstring): a driven pool starts
    held by inference, and each change of its loanable count is one demand."""
    demands: list[CapacityDemand] = []
    offline: list[np.ndarray] = []
    for pool, rows in series.groupby("pool", sort=True):
        size = int(pools.nodes(str(pool)).shape[0])
        offline.append(pools.nodes(str(pool)))
        loaned = 0
        for t, need in zip(rows["time_s"].tolist(), rows["nodes_needed"].tolist()):
            target = size - int(need)
            if target > loaned:
                demands.append(CapacityDemand(float(t), str(pool), "join", target - loaned, float(t)))
            elif target < loaned:
                demands.append(CapacityDemand(float(t), str(pool), "reclaim", loaned - target, float(t) + grace_s))
            loaned = target
    demands.sort(key=lambda d: (d.time_s, d.pool))
    off = np.sort(np.concatenate(offline)).astype(np.int32) if offline else np.zeros(0, np.int32)
    return CapacityPlan(pools, off, tuple(demands))


def load_series_plan(spec: str, topo: Any, horizon_s: float, seed: int, grace_s: float = 0.0) -> CapacityPlan:
    """`--load-series FILE|diurnal:H`: `diurnal:H` drives the `inference` pool (the only pool of
    a one-pool cluster otherwise) with the generator above; a file is read as a CSV."""
    pools = Pools.from_topology(topo)
    if spec.startswith("diurnal:"):
        from cosim.validate import parse_number

        h = parse_number(spec.split(":", 1)[1], "--load-series diurnal:H", minimum=0.0)
        pool = "inference" if "inference" in pools.names else pools.names[-1]
        series = diurnal_series(pool, int(pools.nodes(pool).shape[0]), h, horizon_s, seed)
    else:
        series = read_load_series(spec, pools)
    return plan_from_series(series, pools, grace_s)


# ---- answers ----------------------------------------------------------------------------------

def default_answer(demand: ReclaimDemand, node_first_gpu: np.ndarray, node_num_gpus: np.ndarray,
                   gpu_owner: np.ndarray, alloc: Mapping[int, tuple[int, ...]], min_gpus: np.ndarray,
                   now: float) -> ReclaimAnswer:
    """The engine's answer for policies that do not choose: Aryl's greedy (Algorithm 1, the
    flexible-workers-first rule folded in), one node at a time, each the candidate of least
    `(preemption cost, GPUs taken from jobs that scale in, node id)` given the nodes already
    chosen. A job on the node costs 0 if it keeps at least `min_gpus` GPUs off the chosen nodes
    (it scales in) or is already evicted by them, else its server fraction `1/|S_j|`, S_j its
    nodes among the candidates. Idle nodes cost (0, 0) and go first; returned now."""
    cands = [int(n) for n in demand.candidates]
    gone: set[int] = set()
    doomed: set[int] = set()
    chosen: list[int] = []
    nodes_of: dict[int, set[int]] = {}

    def gpus(n: int) -> range:
        f = int(node_first_gpu[n])
        return range(f, f + int(node_num_gpus[n]))

    owners = {n: {int(o) for o in gpu_owner[gpus(n).start:gpus(n).stop] if o >= 0} for n in cands}
    for n, js in owners.items():
        for j in js:
            nodes_of.setdefault(j, set()).add(n)

    def cost(n: int) -> tuple[float, int, int]:
        g = set(gpus(n))
        pre, lost = 0.0, 0
        for j in owners[n]:
            if j in doomed:
                continue
            held = alloc[j]
            left = sum(1 for x in held if x not in gone and x not in g)
            if left >= max(1, int(min_gpus[j])):
                lost += sum(1 for x in held if x in g)
            else:
                pre += 1.0 / len(nodes_of[j])
        return pre, lost, n

    left = set(cands)
    for _ in range(demand.count):
        best = min((cost(n) for n in left))
        n = best[2]
        chosen.append(n)
        left.discard(n)
        gone.update(gpus(n))
        for j in owners[n]:
            if sum(1 for x in alloc[j] if x not in gone) < max(1, int(min_gpus[j])):
                doomed.add(j)
    return ReclaimAnswer(tuple(sorted(chosen)), now)


def check_answer(answer: Any, demand: ReclaimDemand, policy: str, now: float) -> tuple[tuple[int, ...], float]:
    """(nodes, time they go) of a policy's answer, or a `PolicyError` naming the policy, the
    node and the time: exactly `demand.count` distinct nodes, each a candidate, at most the
    deadline. A bare sequence of node ids is an answer given now."""
    where = f"policy '{policy}' answering the reclaim of {demand.count} '{demand.pool}' node(s) at t={now:.3f}s"
    if not isinstance(answer, ReclaimAnswer):
        try:
            answer = ReclaimAnswer(tuple(answer))
        except (TypeError, ValueError):
            raise PolicyError(f"{where}: expected a ReclaimAnswer or node ids, got {answer!r}") from None
    nodes = tuple(int(n) for n in answer.nodes)
    cands = set(int(n) for n in demand.candidates)
    for n in nodes:
        if n not in cands:
            raise PolicyError(f"{where}: node {n} is not a node of pool '{demand.pool}' on loan to training "
                              f"(candidates: {sorted(cands)[:20]}{' …' if len(cands) > 20 else ''})")
    if len(set(nodes)) != len(nodes):
        dup = next(n for n in nodes if nodes.count(n) > 1)
        raise PolicyError(f"{where}: node {dup} named twice")
    if len(nodes) != demand.count:
        raise PolicyError(f"{where}: returned {len(nodes)} node(s) {list(nodes)}, the demand is {demand.count}")
    at = now if answer.at_s is None else float(answer.at_s)
    if not (now <= at <= demand.deadline_s + 1e-9):
        raise PolicyError(f"{where}: nodes {list(nodes)} returned at t={at:.3f}s, "
                          f"{'before now' if at < now else f'after the deadline t={demand.deadline_s:.3f}s'}")
    return nodes, at


# ---- the log ----------------------------------------------------------------------------------

RECLAIM_COLUMNS = ("time_s", "pool", "demanded", "available", "deadline_s", "returned_at_s", "returned_nodes",
                   "jobs_scaled_in", "jobs_evicted", "deadline_met", "answered_by")


@dataclass
class ReclaimLog:
    """One row per reclaim demand (`reclaims.parquet`); node and job lists comma-separated."""

    rows: list[dict] = field(default_factory=list)

    def open(self, t: float, d: CapacityDemand, available: int, by: str) -> int:
        self.rows.append(dict(time_s=t, pool=d.pool, demanded=d.count, available=available,
                              deadline_s=d.deadline_s, returned_at_s=math.nan, returned_nodes="",
                              jobs_scaled_in="", jobs_evicted="", deadline_met=False, answered_by=by))
        return len(self.rows) - 1

    def close(self, i: int, t: float, nodes, scaled: list[str], evicted: list[str]) -> None:
        r = self.rows[i]
        r.update(returned_at_s=t, returned_nodes=",".join(map(str, nodes)), jobs_scaled_in=",".join(scaled),
                 jobs_evicted=",".join(evicted), deadline_met=bool(t <= r["deadline_s"] + 1e-9))

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(RECLAIM_COLUMNS))

