"""Warnings for runs whose results cannot tell their settings apart.

A comparison only means something when the settings being compared can change the outcome.
Three common ways they cannot, each reported as one line with its reason:

- the cluster never queues: no job waited in any run (longest wait 0 s), so policies that
  differ only in the order they serve a queue give the same schedule;
- an axis changes no output: every group of runs that differs only along that axis (the
  policy, a policy parameter, the seed, the trace, ...) has identical results;
- contention never binds: the runs with network contention on equal those with it off.

`warnings(rows, axes)` takes summary rows (one mapping per run: `cosim simulate`'s table
rows, a sweep's summary rows) and the names of the columns that vary between them; `cosim
simulate` and `cosim sweep` print what it returns below their results.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

#: the outputs compared when deciding whether an axis changed anything
OUTPUTS = ("finished", "avg_jct_s", "p99_jct_s", "makespan_s", "avg_waiting_s", "starvation_s",
           "gpu_utilization", "worst_ftf", "avg_restarts", "exposed_comm_s")


def _key(v: Any) -> Any:
    """A value that compares equal for equal outputs (NaN equals NaN; None stays None)."""
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    try:  # numpy and pandas scalars
        return v.item() if hasattr(v, "item") else v
    except (ValueError, TypeError):
        return v


def _ok(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows of runs that finished (a sweep's failed cells have status 'error')."""
    return [r for r in rows if r.get("status", "ok") != "error"]


def never_queues(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """A warning when no job waited in any run, else None."""
    waits = [r.get("starvation_s") for r in _ok(rows)]
    waits = [float(w) for w in waits if w is not None and not (isinstance(w, float) and math.isnan(w))]
    if not waits or any(w > 0.0 for w in waits):
        return None
    return ("warning: the cluster never queues: no job waited in any run (longest wait 0 s), so policies that "
            "order the queue cannot differ; use more jobs, a shorter window or fewer nodes")


def inert_axes(rows: Sequence[Mapping[str, Any]], axes: Sequence[str]) -> list[str]:
    """The axes along which every group of otherwise equal runs has identical outputs.

    An axis counts only where some group holds two or more of its values; outputs are the
    `OUTPUTS` columns the rows carry.
    """
    rows = _ok(rows)
    outputs = [c for c in OUTPUTS if any(c in r for r in rows)]
    inert = []
    for axis in axes:
        groups: dict[tuple, dict[Any, set]] = {}
        for r in rows:
            rest = tuple(_key(r.get(a)) for a in axes if a != axis)
            out = tuple(_key(r.get(c)) for c in outputs)
            groups.setdefault(rest, {}).setdefault(_key(r.get(axis)), set()).add(out)
        compared = [g for g in groups.values() if len(g) > 1]
        if compared and all(len(set().union(*g.values())) == 1 for g in compared):
            inert.append(axis)
    return inert


def warnings(rows: Sequence[Mapping[str, Any]], axes: Sequence[str]) -> list[str]:
    """Every warning that applies to these runs, one line each (empty: nothing to report)."""
    out = []
    queue = never_queues(rows)
    if queue:
        out.append(queue)
    for axis in inert_axes(rows, axes):
        if axis == "contention":
            out.append("warning: contention never binds: every run with network contention on gives the same "
                       "results as with it off, so no job's communication was slowed by another's")
        else:
            name = axis.removeprefix("param_").removesuffix("_label").replace("_", " ")
            out.append(f"warning: the {name} axis changes no output: every group of runs that differs only in "
                       f"{name} has identical results")
    return out


#: a sweep's axis names (`SweepConfig.swept_axes`) → the summary column holding each
_SWEEP_COLUMNS = {"trace": "trace", "cluster": "cluster", "contention": "contention", "calibration": "calibration",
                  "perf": "perf", "seed": "seed", "costs": "costs", "progress": "progress"}


def sweep_warnings(rows: Sequence[Mapping[str, Any]], config: Any) -> list[str]:
    """`warnings` for a sweep's summary rows: its swept axes, the policy and each policy parameter.

    The policy axis compares policies (with their parameters) on otherwise equal cells; a
    parameter axis compares the values of one parameter of one policy.
    """
    axes = [_SWEEP_COLUMNS[a] for a in config.swept_axes()]
    if "cluster" in axes:
        axes.append("cluster_nodes")
    if len({p.label for p in config.policies}) > 1:
        axes.insert(0, "policy_label")
    out = warnings(rows, axes)
    for policy in sorted({p.name for p in config.policies}):
        mine = [r for r in rows if r.get("policy") == policy]
        params = sorted({k for p in config.policies if p.name == policy for k, _ in p.params})
        for param in params:
            column = f"param_{param}"
            for axis in inert_axes(mine, [column] + [a for a in axes if a != "policy_label"]):
                if axis == column:
                    out.append(f"warning: {policy}'s {param} changes no output: every group of {policy} runs that "
                               f"differs only in {param} has identical results")
    return out
