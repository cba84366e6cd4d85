"""The trace cache (`traces.cache`) and the buffer codec behind it (`cosim.arrow_columns`): a
cached trace gives the columns a fresh load gives, is rebuilt when the file, the seed or a loader
changes or the entry is corrupt, is not kept when the load warned, and a run that hits it imports
no pandas."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cosim.arrow_columns import to_arrow, to_numpy
from traces import cache

ROOT = Path(__file__).resolve().parents[2]
POLLUX_CSV = """name,time,application,num_replicas,batch_size
job-a,0,cifar10,1,128
job-b,30,bert,2,12
job-c,60,imagenet,4,
job-d,90,ncf,1,256
"""


@pytest.mark.parametrize("values", [
    np.array([1.5, np.nan, -2.0]), np.array([1, 2, 3], np.int32), np.array([1, 2 ** 40], np.int64),
    np.array([True, False, True, True, False, False, True, False, True]), np.array(["a", "", "ü€"]),
    np.array(["x", None, np.nan, "y"], dtype=object), np.zeros(0), np.array([], dtype=object),
    np.array([], dtype="U3"), np.array(["", ""]), np.array(["a\x00b", "ab", "€\x00", "日本語", ""]),
    np.array(["synth-philly-%d" % i for i in range(300)]),
])
def test_to_arrow_is_pa_array_from_pandas(values):
    want = pa.array(values.tolist() if values.dtype.kind == "U" else values,
                    pa.large_string() if values.dtype.kind in "OU" else None, from_pandas=True)
    got = to_arrow(values)
    assert got.type == want.type and got.equals(want)


def test_to_numpy_reads_back_as_pandas_sees_it():
    ints = pa.array([1, None, 3], pa.int32())
    assert np.array_equal(to_numpy(ints), [1.0, np.nan, 3.0], equal_nan=True)
    assert to_numpy(pa.array([4, 5], pa.int32())).dtype == np.int32
    s = to_numpy(pa.chunked_array([pa.array(["a", None], pa.large_string()), pa.array(["c"], pa.large_string())]))
    assert s[0] == "a" and np.isnan(s[1]) and s[2] == "c"
    sliced = pa.array([0.5, 1.5, 2.5, 3.5]).slice(1, 2)  # an offset into the buffers
    assert to_numpy(sliced).tolist() == [1.5, 2.5]
    assert to_numpy(pa.array([True, False, True]).slice(1)).tolist() == [False, True]
    assert to_numpy(pa.array(["p", "q", "r"], pa.large_string()).slice(2)).tolist() == ["r"]


@pytest.fixture
def trace(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    p = tmp_path / "workload.csv"
    p.write_text(POLLUX_CSV)
    return p


def _build(path: Path, seed: int, calls: list):
    def build():
        import traces
        from traces import workload

        calls.append(1)
        return workload.assemble(traces.load(path), seed)

    return build


def _same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        assert x.dtype == y.dtype, k
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), k
        else:
            assert [v if v == v else "nan" for v in x.tolist()] == [v if v == v else "nan" for v in y.tolist()], k


def test_second_load_is_a_hit_with_the_same_columns(trace):
    calls: list = []
    first = cache.load(trace, 0, _build(trace, 0, calls))
    second = cache.load(trace, 0, _build(trace, 0, calls))
    assert calls == [1]  # built once
    _same(first, second)
    assert first["global_batch"].dtype == np.int32 and first["global_batch"].tolist() == [128, 12, 12800, 256]
    assert first["job_id"].tolist() == ["job-a", "job-b", "job-c", "job-d"]


def test_changed_file_or_seed_or_corrupt_entry_rebuilds(trace):
    calls: list = []
    cache.load(trace, 0, _build(trace, 0, calls))
    cache.load(trace, 1, _build(trace, 1, calls))  # another seed: another entry
    assert len(calls) == 2
    trace.write_text(POLLUX_CSV.replace("job-d,90", "job-d,95"))
    os.utime(trace, ns=(1, 1))  # a different mtime even on a coarse clock
    cols = cache.load(trace, 0, _build(trace, 0, calls))
    assert len(calls) == 3 and cols["submit_time"].tolist()[-1] == 95.0
    for entry in Path(os.environ[cache.ENV]).glob("*.arrow"):
        entry.write_bytes(b"not arrow")
    again = cache.load(trace, 0, _build(trace, 0, calls))
    assert len(calls) == 4
    _same(cols, again)


def test_assembly_options_get_their_own_entry(trace):
    """A run with the artifact's per-job GPU cap never reads the default cap's table, nor the reverse."""
    from experiments.run_inputs import load_trace
    from experiments.runner import RunConfig

    plain = load_trace(RunConfig(trace=str(trace)))
    art = load_trace(RunConfig(trace=str(trace), max_gpus="artifact"))
    again = load_trace(RunConfig(trace=str(trace)))
    assert cache.entry_key(trace, 0) != cache.entry_key(trace, 0, "max_gpus=artifact")
    assert art["max_gpus"].tolist() != plain["max_gpus"].tolist()
    assert min(art["max_gpus"].tolist()) >= 32 and again["max_gpus"].tolist() == plain["max_gpus"].tolist()


def test_a_load_that_warned_is_not_kept(trace, caplog):
    trace.write_text(POLLUX_CSV + "job-e,100,unknown_app,1,\n")  # no model run, no batch: assemble warns
    calls: list = []
    cache.load(trace, 0, _build(trace, 0, calls))
    cache.load(trace, 0, _build(trace, 0, calls))
    assert calls == [1, 1]
    assert not list(Path(os.environ[cache.ENV]).glob("*.arrow"))


def test_build_jobs_gets_the_same_jobs_from_the_cache_and_the_frame(trace):
    from calibration import zoo
    from experiments.runner import RunConfig, real_backends
    from simcore.prepare import build_jobs
    from experiments.run_perf import build_perf

    cfg = RunConfig(trace=str(trace), cluster="dgx-a100", cluster_nodes=2)
    be = real_backends(cfg)
    perf = build_perf(be.topology(cfg), be, cfg)
    calls: list = []
    df = _build(trace, 0, calls)()
    cache.load(trace, 0, _build(trace, 0, calls))
    cols = cache.load(trace, 0, _build(trace, 0, calls))
    assert len(calls) == 2
    a, bad_a = build_jobs(df, perf, zoo)
    b, bad_b = build_jobs(cols, perf, zoo)
    assert bad_a == bad_b
    for k, v in vars(a).items():
        w = vars(b)[k]
        if isinstance(v, np.ndarray):
            assert v.dtype == w.dtype and np.array_equal(v, w, equal_nan=v.dtype.kind == "f"), k


def test_a_cached_run_imports_no_pandas(trace, tmp_path):
    code = ("import sys\nfrom experiments.runner import RunConfig, run\n"
            f"run(RunConfig(trace={str(trace)!r}, cluster='dgx-a100', cluster_nodes=2, policies=('fifo',)), "
            f"{str(tmp_path / 'out')!r})\nprint('pandas' in sys.modules)\n")
    env = dict(os.environ)
    outs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           check=True).stdout.split()[-1] for _ in range(2)]
    assert outs == ["True", "False"]  # the first run loads the CSV with pandas, the second reads the cache
