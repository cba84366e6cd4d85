"""Fuzz what a run reads besides its trace, and what a rejected command leaves behind.

Cases: `--load-series` CSVs (hostile cells, ragged rows, empty files, non-UTF-8 bytes); every
numeric text through the one parser (`cosim.validate.parse_number`); capacity node values
("0.5" is not node 0); `--synth` specs (counts beyond the bound, non-ASCII digits, zero jobs);
`simulate` end to end on mutated Helios traces with `--out`; `-o`/`--out` paths that are or lie
under a file, for every command that writes; sweeps naming missing calibration, cluster,
load-series or trace files, or a window the trace cannot give.

Checks: an accepted load series is sorted, with known pools, integer counts within the pool
and finite times ≥ 0; an accepted number was written in ASCII digits, is finite and, where an
integer is asked for, integral; an accepted synth spec gives exactly that many jobs. A rejected
command exits 2 with one `error:` line and leaves no output folder or file behind.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.fuzz._harness import EXAMPLES, HOSTILE_TEXT, SETTINGS, cli_outcome, outcome
from tests.scratch import scratch_dir

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
#: the end-to-end cases run real simulations: a slice of the budget
END_TO_END = settings(SETTINGS, max_examples=max(5, EXAMPLES // 8))


def _write(data: bytes, name: str) -> Path:
    p = scratch_dir() / name
    p.write_bytes(data)
    return p


# ---- load series -----------------------------------------------------------------------------

def _pools():
    from simcore.capacity import Pools

    return Pools(("training", "inference"), np.array([0, 0, 0, 1, 1, 1, 1], np.int16))


def _series_ok(df) -> None:
    pools = _pools()
    t = df["time_s"].to_numpy(dtype=float)
    assert np.isfinite(t).all() and (t >= 0).all() and (np.diff(t) >= 0).all()
    for pool, k in zip(df["pool"], df["nodes_needed"]):
        assert pool in pools.names
        assert isinstance(k, (int, np.integer)) and 0 <= k <= len(pools.nodes(pool))


CELL = HOSTILE_TEXT | st.integers(0, 10).map(str) | st.sampled_from(["training", "inference", "0.5", "٣", "1e3"])


@SETTINGS
@example(rows=[("1", "inference", "2", "")], header=True, junk=None)  # a ragged row: was a pandas ParserError
@example(rows=[], header=False, junk=None)  # an empty file: was EmptyDataError
@example(rows=[("0", "inference", "1")], header=True, junk=b"\xff\xfe")  # non-UTF-8: was UnicodeDecodeError
@example(rows=[("٣٦٠٠", "inference", "1")], header=True, junk=None)  # non-ASCII digits read as 3600
@given(rows=st.lists(st.lists(CELL, min_size=2, max_size=4), max_size=5), header=st.booleans(),
       junk=st.none() | st.binary(min_size=1, max_size=8))
def test_load_series_csv(rows, header, junk):
    from simcore.capacity import read_load_series

    text = ("time_s,pool,nodes_needed\n" if header else "") + "".join(",".join(r) + "\n" for r in rows)
    data = text.encode("utf-8", errors="surrogatepass") + (junk or b"")
    p = _write(data, "load.csv")
    outcome(lambda: read_load_series(p, _pools()), _series_ok)


# ---- numbers ---------------------------------------------------------------------------------

@SETTINGS
@example(text="٣٦٠٠", integer=False)
@example(text="0.5", integer=True)
@example(text="1_000", integer=True)
@example(text="1\x1f", integer=True)  # str.strip() drops the separators \x1c-\x1f; float() does not
@example(text="1\xa0", integer=False)
@given(text=HOSTILE_TEXT | st.integers(-10**30, 10**30).map(str), integer=st.booleans())
def test_one_number_parser(text, integer):
    from cosim.validate import parse_number

    def check(v) -> None:
        assert text.strip().isascii() and "_" not in text, f"{text!r} accepted"
        assert math.isfinite(float(v)) and 0 <= v <= 10**12
        assert float(text) == v, f"{text!r} read as {v!r}"  # only text Python reads as that number
        if integer:
            assert isinstance(v, int)

    outcome(lambda: parse_number(text, "field", source="f.csv", row=1, integer=integer, minimum=0,
                                 maximum=10**12), check)


@SETTINGS
@example(node="0.5")
@example(node="٣")
@given(node=HOSTILE_TEXT | st.integers(-3, 10).map(str))
def test_capacity_node_values(node):
    from experiments.run_inputs import load_capacity

    p = _write(f"time_s,node,online\n10,{node},0\n".encode("utf-8", errors="surrogatepass"), "cap.csv")

    def check(changes) -> None:
        (t, n, online), = changes
        assert node.strip().isascii() and float(node) == n and isinstance(n, int) and n >= 0, f"node {node!r} accepted"

    outcome(lambda: load_capacity(p), check)


# ---- synth specs -----------------------------------------------------------------------------

def _small_or_invalid(text: str) -> bool:
    """Counts that are valid and large would synthesise millions of jobs: kept out of the fuzz."""
    try:
        return not (200 < float(text) <= 10_000_000)
    except (ValueError, OverflowError):
        return True


COUNT = (HOSTILE_TEXT | st.integers(-5, 40).map(str) | st.sampled_from(["99999999999", "10000001", "٣", "0"])
         ).filter(_small_or_invalid)


@SETTINGS
@example(like="sensetime", count="99999999999", window=None)  # was a MemoryError
@example(like="philly", count="0", window=None)  # ran 0 jobs and printed NaN
@given(like=st.sampled_from(["philly", "helios", "sensetime", "philly-sia", "nope", ""]), count=COUNT,
       window=st.none() | HOSTILE_TEXT | st.sampled_from(["4h", "0", "-1h"]))
def test_synth_specs(like, count, window):
    from traces.synth import from_spec

    spec = f"synth:{like}:{count}" + ("" if window is None else f":{window}")

    def check(df) -> None:
        assert count.strip().isascii() and len(df) == float(count) >= 1, f"{spec} gave {len(df)} jobs"

    outcome(lambda: from_spec(spec, 0), check)


@SETTINGS
@given(count=COUNT, rate=st.none() | HOSTILE_TEXT)
def test_dally_specs(count, rate):
    from traces.dally import from_spec

    spec = f"dally:poisson:{count}" + ("" if rate is None else f":{rate}")

    def check(df) -> None:
        assert count.strip().isascii() and len(df) == float(count) >= 1, f"{spec} gave {len(df)} jobs"

    outcome(lambda: from_spec(spec, 0), check)


# ---- end to end: simulate on mutated traces, nothing left behind ------------------------------

@END_TO_END
@example(row=1, col="start_time", value="2020-06-09 18:00:00", extra=[])  # starts before its submit
@example(row=1, col="gpu_num", value="0", extra=[])  # every row excluded: no jobs
@example(row=1, col="gpu_num", value="1", extra=["--cluster", "nope"])  # a bad preset after the trace
@example(row=1, col="gpu_num", value="1", extra=["--calibration", "missing.toml"])  # a missing profile
@example(row=1, col="gpu_num", value="1", extra=["--capacity", "CAP"])  # a node the cluster lacks
@example(row=1, col="submit_time", value="1096", extra=[])  # year 1096: the others 924 years later
@given(row=st.integers(1, 6), col=st.sampled_from(["gpu_num", "submit_time", "start_time", "end_time", "duration"]),
       value=HOSTILE_TEXT, extra=st.sampled_from([[], ["--cluster", "nope"], ["--calibration", "missing.toml"],
                                                  ["--capacity", "CAP"], ["--load-series", "LOAD"]]))
def test_simulate_mutated_trace(row, col, value, extra):
    import pandas as pd

    d = scratch_dir()
    df = pd.read_csv(FIX / "helios_cluster_log.csv", dtype=str)
    df.loc[(row - 1) % len(df), col] = value
    trace = d / "trace.csv"
    trace.write_text(df.to_csv(index=False), errors="surrogatepass")
    (d / "cap.csv").write_text("time_s,node,online\n10,99,0\n")
    (d / "load.csv").write_text("time_s,pool,nodes_needed\n0,nope,1\n")
    extra = [{"CAP": str(d / "cap.csv"), "LOAD": str(d / "load.csv")}.get(a, a) for a in extra]
    out = d / "out"
    def check(r) -> None:
        assert (out / "summary.parquet").is_file() and "fifo" in r.output, r.output

    res = cli_outcome(["simulate", "--trace", str(trace), "--cluster", "t4-pcie", "--policy", "fifo",
                       "--out", str(out), *extra], check)
    if res.exit_code != 0:
        assert not out.exists(), f"a rejected simulate left {out} behind: {res.output}"
    else:
        assert not extra, f"{extra} accepted"  # each extra option names something the run cannot take


def _never(what: str):
    """The check of a case that must be rejected."""
    def check(res) -> None:
        raise AssertionError(f"{what}: {res.output}")
    return check


# ---- output paths under files ----------------------------------------------------------------

WRITERS = {
    "simulate": lambda o: ["simulate", "--synth", "philly:2", "--policy", "fifo", "--out", o],
    "report": lambda o: ["report", str(FIX), "-o", o],
    "traces convert": lambda o: ["traces", "convert", str(FIX / "helios_cluster_log.csv"), "-o", o],
    "traces synth": lambda o: ["traces", "synth", "philly", "-n", "2", "-o", o],
    "calibrate fit": lambda o: ["calibrate", "fit", str(FIX / "helios_cluster_log.csv"), "-o", o],
    "sweep": lambda o: ["sweep", "SWEEP", "-o", o],
}

#: commands whose -o is a file (the others write a folder)
FILE_WRITERS = ("traces convert", "traces synth", "calibrate fit")


@SETTINGS
@given(command=st.sampled_from(sorted(WRITERS)), shape=st.sampled_from(["file", "under", "deep"]))
def test_outputs_under_a_file(command, shape):
    d = scratch_dir()
    f = d / "file"
    f.write_text("precious")
    target = {"file": f, "under": f / "x", "deep": f / "a" / "b" / "c.out"}[shape]
    sweep = d / "s.toml"
    sweep.write_text('traces = ["synth:philly:2"]\npolicies = ["fifo"]\n')
    args = [str(sweep) if a == "SWEEP" else a for a in WRITERS[command](str(target))]
    if command in FILE_WRITERS and shape == "file":
        return  # a file output replaces an existing file: only the paths under it are wrong
    res = cli_outcome(args, _never(f"{args} wrote under a file"))
    assert res.exit_code == 2 and f.read_text() == "precious"
    assert sorted(p.name for p in d.iterdir()) == ["file", "s.toml"]


# ---- sweeps naming missing files -------------------------------------------------------------

@SETTINGS
@example(missing="calibration", window=None)
@example(missing="cluster", window=None)
@example(missing=None, window="1s")  # a window the trace cannot give
@given(missing=st.sampled_from(["calibration", "cluster", "load_series", "trace", None]),
       window=st.none() | HOSTILE_TEXT | st.sampled_from(["1s", "0", "-1h", "10000d"]))
def test_sweep_refuses_up_front(missing, window):
    d = scratch_dir()
    trace = {"path": str(FIX / "helios_cluster_log.csv"), "jobs": 1000}
    if window is not None:
        trace["window"] = window
    data = {"traces": [trace], "policies": ["fifo"]}
    if missing == "calibration":
        data["calibration"] = ["default", "gone.toml"]
    elif missing == "cluster":
        data["clusters"] = ["gone-cluster.toml"]
    elif missing == "load_series":
        data["load_series"] = "gone.csv"
    elif missing == "trace":
        data["traces"].append("gone.parquet")
    lines = [f"policies = {json.dumps(data['policies'])}", "traces = [" + ", ".join(
        "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in t.items()) + "}" if isinstance(t, dict) else json.dumps(t)
        for t in data["traces"]) + "]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in data.items() if k not in ("policies", "traces")]
    toml = d / "s.toml"
    toml.write_text("\n".join(lines) + "\n", errors="surrogatepass")
    out = d / "out"
    res = cli_outcome(["sweep", str(toml), "-o", str(out), "-j", "1"], _never("a sweep with an invalid entry ran"))
    assert res.exit_code == 2 and not out.exists(), f"a refused sweep left {out} behind"
