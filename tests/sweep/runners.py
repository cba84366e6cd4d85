"""Which runner the sweep/report tests drive: the real `experiments.runner` whenever it can run a
tiny simulation here, else the stand-in `tests.sweep.fake_runner` (same contract). `runner()`
gives it as the `Runner` that `run_sweep` takes.

`killing_runner` wraps the chosen runner and SIGKILLs its own process once `KILL_AFTER`
cells of the sweep are committed — a real kill at a deterministic point, mid-cell.
"""

from __future__ import annotations

import functools
import importlib

REAL = "experiments.runner"
FAKE = "tests.sweep.fake_runner"
#: tiny test traces, one per synthetic family, and the cluster they run on
TRACES = ("synth:philly:12", "synth:helios:12", "synth:sensetime:12")
CLUSTER = {"preset": "dgx-a100"}  # the preset's 8 nodes x 8 GPUs
PREFERRED = ("fifo", "sjf", "tiresias", "gandiva", "fifo-backfill", "srtf")


@functools.lru_cache(maxsize=1)
def runner_name() -> str:
    try:
        mod = importlib.import_module(REAL)
        mod.run(mod.RunConfig(trace="synth:philly:4", cluster="dgx-a100", policies=("fifo",)), None)
    except Exception:
        return FAKE
    return REAL


def runner():
    """The chosen runner as `run_sweep` takes it (`Runner`: config class, run function, registry)."""
    from experiments.sweep.cell import Runner

    mod = importlib.import_module(runner_name())
    return Runner(mod.RunConfig, mod.run, getattr(mod, "policy_factory", None))


def policies(n: int = 4) -> list[str]:
    """n policy names: registered baselines in PREFERRED order (fake names with the stand-in)."""
    if runner_name() == FAKE:
        return list(PREFERRED[:n])
    from policies.registry import POLICIES

    names = [p for p in PREFERRED if p in POLICIES] + [p for p in POLICIES.names() if p not in PREFERRED]
    return names[:n]


#: parameters the test grid gives a policy: Tiresias' periodic 60 s rounds over week-long tiny
#: traces cost thousands of rounds; hourly rounds keep the test fast and exercise policy_params
TEST_PARAMS = {"tiresias": {"interval_s": 3600.0}}


def small_grid(policy_names=None, seeds=(0, 1), traces=TRACES) -> dict:
    """The issue's test grid: 3 traces x 4 policies x 2 seeds (tiny traces)."""
    names = list(policy_names or policies())
    return {"name": "test-grid", "traces": list(traces), "clusters": [dict(CLUSTER)],
            "policies": {n: dict(TEST_PARAMS.get(n, {})) for n in names}, "seeds": list(seeds)}


def labels(policy_names=None) -> list[str]:
    """The policy labels `small_grid` produces (e.g. "tiresias(interval_s=3600)")."""
    from experiments.sweep import parse_sweep

    return [p.label for p in parse_sweep(small_grid(policy_names)).policies]
