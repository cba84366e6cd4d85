"""Fuzz the calibration inputs: Pollux/Sia placement and scalability CSVs, the Gavel throughput
JSON, measurement Parquet files (`calibrate fit`), the platforms TOML and a profile TOML.

Cases: CSV rows of hostile cells (text, NaN, inf, 0, negatives, 2e-12, huge numbers); Gavel
JSON of hostile structure (lists, nested non-dicts, keys that are not `(job, scale)` tuples,
non-numeric or non-positive throughputs); Parquet tables with the step/compute/collective
columns holding hostile values or strings, no rows, or cut/corrupted bytes; the shipped
platforms file and a shipped profile with one `key = value` value replaced by a hostile TOML
literal or a non-UTF-8 byte inserted.

Checks on an accepted input: every imported row has a finite step time > 0, a sync time ≥ 0,
a placement of digits whose sum is `num_gpus` ≥ 1 and a batch ≥ 1; a fit report's numbers
that reach a profile are finite; a platforms map names a preset and GPU type; a profile's
numbers are finite. A rejection must be one `CosimError` line.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz._harness import HOSTILE_TEXT, SETTINGS, outcome
from tests.fuzz.test_files import TOML_VALUES, _mutate
from tests.scratch import scratch_dir

QUOTED_KEY_LINE = re.compile(r'^(\s*"[^"]+"\s*=\s*)(.+?)\s*$')


def _mutate_quoted(text: str, line_no: int, value: str) -> str:
    """`_mutate` for files written with quoted keys (`"kappa" = 1.0`, as `calibrate fit` writes)."""
    lines = text.splitlines()
    keyed = [i for i, ln in enumerate(lines) if QUOTED_KEY_LINE.match(ln)]
    i = keyed[line_no % len(keyed)]
    lines[i] = QUOTED_KEY_LINE.sub(lambda m: m.group(1) + value, lines[i])
    return "\n".join(lines) + "\n"

REPO = Path(__file__).resolve().parents[2]
CELL = HOSTILE_TEXT | st.sampled_from(["1", "2", "4", "32", "0.1", "0.01", "144", "2e-12", "1e30"])


def _app_file(app: str, name: str, data: bytes) -> Path:
    d = scratch_dir() / app
    d.mkdir()
    (d / name).write_bytes(data)
    return d / name


def _rows_ok(df) -> None:
    assert len(df) >= 1
    for r in df.itertuples():
        assert math.isfinite(r.step_time_s) and r.step_time_s > 0, r
        assert math.isfinite(r.sync_time_s) and r.sync_time_s >= 0, r
        assert re.fullmatch(r"[0-9]+", r.placement) and sum(map(int, r.placement)) == r.num_gpus >= 1, r
        assert r.num_nodes == len(r.placement) and r.local_bsz >= 1, r


def _csv(header: list[str], rows) -> bytes:
    return (",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows)).encode("utf-8", "surrogatepass")


@SETTINGS
@given(rows=st.lists(st.tuples(CELL, CELL, CELL, CELL), max_size=4))
def test_pollux_placements_csv(rows):
    from calibration.importers import read_pollux_placements

    f = _app_file("cifar10", "placements-aws.csv", _csv(["placement", "local_bsz", "step_time", "sync_time"], rows))
    outcome(lambda: read_pollux_placements(f), _rows_ok)


@SETTINGS
@example(rows=[("20", "0.1", "0.01", "2e-12", "5")])  # the case: ZeroDivisionError
@example(rows=[("20", "0.1", "0.01", "1e30", "5")])
@example(rows=[("20", "0.1", "0.01", "2", "1e12")])
@example(rows=[("20", "0.1", "0.01", "4294967296", "4294967296")])  # a 4e9-digit placement string: refused first
@given(rows=st.lists(st.tuples(CELL, CELL, CELL, CELL, CELL), max_size=4))
def test_pollux_scalability_csv(rows):
    from calibration.importers import read_pollux_placements

    f = _app_file("imagenet", "scalability-dgx.csv",
                  _csv(["local_bsz", "step_time", "sync_time", "num_nodes", "num_replicas"], rows))
    outcome(lambda: read_pollux_placements(f), _rows_ok)


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(), st.text(max_size=8))
JSON_ANY = st.recursive(JSON_LEAF, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                        max_leaves=8)
GAVEL_KEYS = st.one_of(st.sampled_from(["('ResNet-50 (batch size 64)', 1)", "('ResNet-50 (batch size 64)', 2)",
                                        "('Transformer (batch size 128)', 1)", "('Nope', 1)", "('ResNet-50', 'x')",
                                        "(1, 1)", "('ResNet-50',)", "[1, 2]", "x", "('ResNet-50 (batch size 0)', 1)"]),
                       st.text(max_size=10))
GAVEL_ENTRY = st.one_of(st.fixed_dictionaries({"null": JSON_LEAF}), JSON_ANY)


@SETTINGS
@example(doc={"v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 7.5}}}, raw=None)
@example(doc=[1, 2], raw=None)
@example(doc={"v100": [1]}, raw=None)
@example(doc={"v100": {"(1, 1)": {"null": 1.0}}}, raw=None)
@example(doc={"v100": {"('ResNet-50 (batch size 64)', 1)": {"null": True}}}, raw=None)
@example(doc=None, raw=b"\xff{}")
@example(doc={"v100": {"('ResNet-50 (batch size 99999999999999999999)', 1)": {"null": 1.0}}}, raw=None)
@example(doc={"v100": {"\n": {"null": None}}}, raw=None)  # a key quoted in the error holds a line break
@given(doc=st.one_of(st.dictionaries(st.sampled_from(["v100", "p100", "k80", "a100"]),
                                     st.dictionaries(GAVEL_KEYS, GAVEL_ENTRY, max_size=3) | JSON_ANY, max_size=3),
                     JSON_ANY),
       raw=st.none() | st.binary(max_size=20))
def test_gavel_json(doc, raw):
    from calibration.importers import read_gavel

    d = scratch_dir()
    f = d / "thr.json"
    f.write_bytes(raw if raw is not None else json.dumps(doc).encode())

    def ok(df):
        if len(df):
            assert np.isfinite(df["step_time_s"]).all() and (df["step_time_s"] > 0).all()
            assert (df["local_bsz"] >= 1).all()

    outcome(lambda: read_gavel(f), ok)


# ---- measurement Parquet (`cosim calibrate fit FILE`) ----------------------------------------

TABLES = {
    "steps": {"placement": ["1", "2", "11", "4"], "local_bsz": [32, 32, 32, 64], "step_time_s": [0.1, 0.11, 0.2, 0.3],
              "sync_time_s": [0.0, 0.01, 0.05, 0.02], "model": ["resnet18_cifar"] * 4, "gpu_type": ["t4"] * 4,
              "platform": ["aws"] * 4, "preset": ["t4-pcie"] * 4, "num_gpus": [1, 2, 2, 4], "num_nodes": [1, 1, 2, 1]},
    "compute": {"model": ["resnet18_cifar"] * 3, "gpu_type": ["h100"] * 3, "local_bsz": [32, 64, 128],
                "step_time_s": [0.01, 0.018, 0.033]},
    "collectives": {"op": ["allreduce"] * 4, "group_size": [2, 2, 4, 4], "nbytes": [1e6, 1e8, 1e6, 1e8],
                    "time_s": [1e-4, 5e-3, 2e-4, 8e-3]},
}
PARQUET_VALUES = st.one_of(st.sampled_from([0, -1, 0.0, -0.5, float("nan"), float("inf"), 1e308, 2e-12, "x", "", None]),
                           st.floats(), st.integers(-10**6, 10**6))


def _finite_numbers(obj, path="report") -> None:
    if isinstance(obj, float):
        # the one infinity by design: a profile without a fitted compute range is (0, inf)
        assert math.isfinite(obj) or (path.endswith("compute_range_s[1]") and obj == math.inf), \
            f"{path} = {obj} accepted"
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _finite_numbers(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _finite_numbers(v, f"{path}[{i}]")


@pytest.mark.usefixtures("calibration_engine")  # `calibrate fit` predicts through the engine
@SETTINGS
@example(kind="steps", edits=[], drop=None, rows=0, cut=None)  # an empty file used to write a NaN-error profile
@example(kind="collectives", edits=[], drop="nbytes", rows=4, cut=None)
@example(kind="compute", edits=[], drop=None, rows=4, cut=10)
@example(kind="compute", edits=[(1, 0, 1e+308)], drop=None, rows=2, cut=None)  # the fit's SVD failed on it
@example(kind="compute", edits=[(1, 1, 1e+308), (3, 0, 1e+308), (3, 2, 1e+308)], drop=None, rows=3, cut=None)
@example(kind="collectives", edits=[(3, 0, 5e-324)], drop=None, rows=4, cut=None)  # a subnormal time
@given(kind=st.sampled_from(sorted(TABLES)),
       edits=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3), PARQUET_VALUES), max_size=3),
       drop=st.none() | st.sampled_from(["placement", "step_time_s", "sync_time_s", "local_bsz", "model", "op",
                                         "nbytes", "time_s", "group_size", "gpu_type"]),
       rows=st.integers(0, 4), cut=st.none() | st.integers(0, 4000))
def test_measurement_parquet(kind, edits, drop, rows, cut):
    import pandas as pd

    from calibration.fit import build_profile, fit_files

    cols = {k: list(v)[:rows] for k, v in TABLES[kind].items()}
    names = sorted(cols)
    for c, r, v in edits:
        name = names[c % len(names)]
        if cols[name]:
            vals = list(cols[name])
            vals[r % len(vals)] = v
            cols[name] = vals
    cols.pop(drop, None)
    d = scratch_dir()
    f = d / "m.parquet"
    try:
        pd.DataFrame({k: pd.Series(v, dtype=object if any(isinstance(x, str) for x in v) else None)
                      for k, v in cols.items()}).to_parquet(f)
    except Exception:  # noqa: BLE001 (a column pyarrow cannot store, mixed types: nothing to fuzz)
        return
    if cut is not None:
        data = f.read_bytes()
        f.write_bytes(data[:cut % (len(data) + 1)])
    outcome(lambda: build_profile(fit_files([f])), _finite_numbers)


# ---- platforms TOML and profile TOML --------------------------------------------------------

def _toml_file(text: str, junk: int | None) -> Path:
    """`text` written to a fresh p.toml, with a non-UTF-8 byte at position `junk` (mod length) if given."""
    data = text.encode()
    if junk is not None:
        k = junk % (len(data) + 1)
        data = data[:k] + b"\xff" + data[k:]
    path = scratch_dir() / "p.toml"
    path.write_bytes(data)
    return path


@SETTINGS
@given(line_no=st.integers(0, 100), value=TOML_VALUES, junk=st.none() | st.integers(0, 10**6))
def test_platforms_toml(line_no, value, junk):
    from calibration.importers import DEFAULT_PLATFORMS_FILE, read_platforms

    path = _toml_file(_mutate(DEFAULT_PLATFORMS_FILE.read_text(), line_no, value), junk)

    def ok(m):
        assert m and all(isinstance(p, str) and p and isinstance(g, str) and g for p, g in m.values())

    outcome(lambda: read_platforms(path), ok)


@SETTINGS
@example(name="dgx-a100", line_no=3, value="0.5", junk=None)
@given(name=st.sampled_from(["dgx-a100", "rtx2080ti-pcie", "t4-pcie"]), line_no=st.integers(0, 300),
       value=TOML_VALUES, junk=st.none() | st.integers(0, 10**6))
def test_profile_toml(name, line_no, value, junk):
    import dataclasses

    from calibration.stepform import PROFILES_DIR, read_profile

    path = _toml_file(_mutate_quoted((PROFILES_DIR / f"{name}.toml").read_text(), line_no, value), junk)

    def ok(prof):
        _finite_numbers(dataclasses.asdict(prof) if dataclasses.is_dataclass(prof) else vars(prof), "profile")

    outcome(lambda: read_profile(path), ok)
