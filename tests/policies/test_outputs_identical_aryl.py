"""Aryl's decisions stay exactly what they were through changes that only make its rounds cheaper.

Each case runs the `aryl` policy through the real engine (`experiments.runner.run`) on a
workload of the `aryl:` stand-in (built from the shared data's philly_jobs.csv) and compares
its decisions table (every start, resize, preemption with its GPUs), its reclaim answers and
its jobs table with references committed under `tests/fixtures/policies/`, value for value
(no tolerance). The cases cover what the paper-size cell runs and what its options switch:

- `basic`: the testbed (4 + 4 servers, 180 jobs) on the normalized cluster, the catalog's Basic;
- `physical`: the same on the physical cluster, where an inference GPU runs at the T4's own
  speed, so the engine worker value weighs inference GPUs below one (the median speed sizes
  the knapsack);
- `advanced`: the Advanced testbed workload with heterogeneous gangs (`mix_types`, `hetero_jobs = vc`);
- `imperfect`: imperfect scaling (`--perf linear:imperfect_loss=0.1`), the knapsack's per-group
  values from the scaling curve;
- `paperval`: the paper's worker value (`worker_value = paper`, `t4_ratio = 1`);
- `tick-1/128`: the 15-day stand-in at 1/128 of the paper's cluster with rounds only at the tick
  and at capacity changes (`event_driven = false`), the paper-size cell's settings.

Regenerate (only when a change of Aryl's decisions is intended, and say so in the commit):

    COSIM_SHARED_DATA=/path/to/shared/data python -m tests.policies.test_outputs_identical_aryl --regenerate
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"
#: case → (trace, cluster kind, perf backend, policy options)
CASES: dict[str, tuple[str, str, str, dict]] = {
    "basic": ("aryl:testbed", "normalized", "linear", {}),
    "physical": ("aryl:testbed", "physical", "linear", {}),
    "advanced": ("aryl:testbed:advanced", "normalized", "linear", {"mix_types": True, "hetero_jobs": "vc"}),
    "imperfect": ("aryl:testbed", "normalized", "linear:imperfect_loss=0.1", {}),
    "paperval": ("aryl:testbed", "normalized", "linear", {"worker_value": "paper", "t4_ratio": 1.0}),
    "tick-1/128": ("aryl:basic:0.0078125", "normalized", "linear", {"event_driven": False}),
}
TABLES = ("decisions", "reclaims", "jobs")


def _run(case: str, tmp: Path) -> dict[str, pd.DataFrame]:
    from experiments.runner import RunConfig, run
    from traces import aryl as W

    trace, kind, perf, params = CASES[case]
    if trace.startswith("aryl:testbed"):
        cluster = "aryl-testbed-normalized" if kind == "normalized" else "aryl-testbed"
    else:
        tr, inf, _ = W.servers(trace)
        path = tmp / f"cluster-{tr}+{inf}.toml"
        path.write_text(W.cluster_toml(tr, inf, normalized=kind == "normalized"))
        cluster = str(path)
    cfg = RunConfig(trace=trace, cluster=cluster, policies=("aryl",), policy_params={"aryl": params},
                    contention=False, seed=0, costs="aryl", perf=perf, load_series="diurnal:0.05",
                    write_decisions=True)
    r = run(cfg, None)
    return {"decisions": r.decisions["aryl"], "reclaims": r.reclaims["aryl"], "jobs": r.jobs["aryl"]}


def _path(case: str, table: str) -> Path:
    return FIXTURES / f"aryl_{case.replace('/', '_')}_{table}.parquet"


@pytest.fixture(scope="module")
def _data():
    from cosim.errors import InputError
    from cosim.paths import shared_data_dir

    try:
        shared_data_dir("traces")
    except InputError as e:
        pytest.skip(f"the aryl stand-in needs the shared data: {e}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_aryl_outputs_identical_to_reference(_data, case, tmp_path):
    got = _run(case, tmp_path)
    for table in TABLES:
        ref = pd.read_parquet(_path(case, table))
        a = got[table].reset_index(drop=True)
        assert len(a) == len(ref), f"{case}/{table}: {len(a)} rows, reference {len(ref)}"
        pd.testing.assert_frame_equal(a, ref, check_exact=True, check_dtype=False, obj=f"aryl {case} {table}")


def main(argv: list[str]) -> None:
    import tempfile

    if argv != ["--regenerate"]:
        raise SystemExit("usage: python -m tests.policies.test_outputs_identical_aryl --regenerate")
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            got = _run(case, Path(tmp))
        for table in TABLES:
            got[table].reset_index(drop=True).to_parquet(_path(case, table), index=False)
            print("wrote", _path(case, table), len(got[table]), "rows")


if __name__ == "__main__":
    main(sys.argv[1:])
