"""Fuzz CLI options: every invocation exits 0 with a valid result or 2 with one `error:` line.

Cases: `simulate` with hostile `--seed` (negative, beyond int64), `--costs` (negative, `inf`,
`nan`, text), `--out` naming a file; `clusters show`/`net allreduce` with hostile `--nodes`
(0, negative, 10**8: the bound is named), `--bytes`; `traces synth -n` (0, negative, huge) and
`--seed`; `traces sample --jobs/--window`; unit strings (`parse_bytes`, `parse_seconds`).
`simulate` runs on the fake backends of tests/simcore (the real engine's code path with a
stand-in topology and trace), so accepted cases take milliseconds.

Checks on success: `simulate` printed its table and `--costs` was a preset or a finite number
≥ 0 and the seed was in [0, 2**63); `traces synth` wrote exactly N ≥ 1 jobs; `clusters show`
reports a cluster within `MAX_CLUSTER_GPUS`; unit parsers return finite numbers ≥ 0.
"""

from __future__ import annotations

import math
from pathlib import Path
from unittest import mock

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz._harness import HOSTILE_TEXT, SETTINGS, cli_outcome, outcome
from tests.scratch import scratch_dir

NUMBERS = st.one_of(st.integers(-10**20, 10**20), st.sampled_from([-1, 0, 1, 2**32, 2**63 - 1, 2**63, 10**8]))
COSTS = st.one_of(HOSTILE_TEXT, st.sampled_from(["flat30", "aryl", "free", "-500", "1e400", "inf", "nan", "45"]))


def _as_int(text: str) -> int:
    """An integer option as click reads it ("1.0" is 1: click accepts integral floats)."""
    v = float(text)
    assert v == int(v), f"non-integral {text!r} accepted as an integer"
    return int(v)


def _fake():
    import experiments.runner as r
    from tests.simcore.helpers import fake_backends
    from tests.simcore.test_runner import golden_trace

    return mock.patch.object(r, "real_backends", lambda cfg: fake_backends(golden_trace()))


@SETTINGS
@example(seed=-1, costs="flat30", out_is_file=False)
@example(seed=0, costs="-500", out_is_file=False)
@example(seed=0, costs="flat30", out_is_file=True)
@given(seed=NUMBERS, costs=COSTS, out_is_file=st.booleans())
def test_simulate_options(seed, costs, out_is_file):
    from simcore.costs import COST_PRESETS

    out = scratch_dir() / "out"
    if out_is_file:
        out.write_text("not a folder")
    args = ["simulate", "--policy", "fifo-test", "--seed", str(seed), "--costs", costs, "--out", str(out)]

    def check(res) -> None:
        assert "fifo-test" in res.output
        assert 0 <= seed < 2**63, f"--seed {seed} accepted"
        assert not out_is_file
        if costs not in COST_PRESETS:
            assert math.isfinite(float(costs)) and float(costs) >= 0, f"--costs {costs!r} accepted"

    with _fake():
        cli_outcome(args, check)


@SETTINGS
@example(nodes="100000000", command="clusters")
@example(nodes="1\x1f", command="clusters")  # a unit separator after the digit is not a number
@given(nodes=NUMBERS.map(str) | HOSTILE_TEXT, command=st.sampled_from(["clusters", "net"]))
def test_nodes_bound(nodes, command):
    from netmodel.spec import MAX_CLUSTER_GPUS

    if command == "clusters":
        args = ["clusters", "show", "dgx-a100", "--nodes", nodes, "--json"]
    else:
        args = ["net", "allreduce", "--placement", "8", "--bytes", "1MB", "--nodes", nodes, "--json"]

    def check(res) -> None:
        import json

        assert 1 <= _as_int(nodes) <= MAX_CLUSTER_GPUS
        if command == "clusters":
            assert json.loads(res.output)["gpus"] <= MAX_CLUSTER_GPUS

    cli_outcome(args, check)


@SETTINGS
@example(n="0", seed="0")
@given(n=NUMBERS.filter(lambda x: x < 10**9).map(str) | HOSTILE_TEXT, seed=NUMBERS.map(str))
def test_traces_synth_counts(n, seed):
    import pandas as pd

    from cosim.validate import MAX_SYNTH_JOBS

    out = scratch_dir() / "t.parquet"
    digits = n.strip().lstrip("-")
    if digits.isascii() and digits.isdecimal() and int(n) > 200:  # keep accepted runs fast; still probe the bound
        n = str(MAX_SYNTH_JOBS + 1)
    args = ["traces", "synth", "--like", "philly", "-n", n, "--seed", seed, "-o", str(out)]

    def check(res) -> None:
        assert 1 <= _as_int(n) <= MAX_SYNTH_JOBS, f"-n {n} accepted"
        assert len(pd.read_parquet(out)) == _as_int(n)

    cli_outcome(args, check)


@SETTINGS
@given(jobs=NUMBERS.filter(lambda x: abs(x) < 10**6).map(str), window=HOSTILE_TEXT | st.sampled_from(["8h", "0", "-1h"]))
def test_traces_sample_options(jobs, window):
    fix = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "helios_cluster_log.csv"
    out = scratch_dir() / "s.parquet"

    def check(res) -> None:
        assert _as_int(jobs) >= 1
        assert out.is_file()

    cli_outcome(["traces", "sample", str(fix), "-o", str(out), "--jobs", jobs, "--window", window], check)


@SETTINGS
@given(text=HOSTILE_TEXT | st.sampled_from(["100MB", "1GiB", "-1MB", "infMB", "nanGB", "8h", "-8h", "1e400h"]))
def test_unit_strings(text):
    from cosim.units import parse_bytes, parse_seconds

    def check(v) -> None:
        assert math.isfinite(v) and v >= 0, f"{text!r} → {v}"

    outcome(lambda: parse_bytes(text, field="--bytes"), check)
    outcome(lambda: parse_seconds(text, field="--window"), check)
