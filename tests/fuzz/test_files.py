"""Fuzz the user files other than traces: capacity CSV, cluster TOML, sweep TOML.

Cases: a capacity CSV of 0–5 rows of hostile cells (empty file, empty time, `inf`, `nan`, text,
negative or huge node indices); a shipped cluster preset or the example sweep with one
`key = value` line's value replaced by a hostile TOML literal (`inf`, `nan`, `-1`, `0`, `1e308`,
10**8 nodes, wrong types) or with a non-UTF-8 byte inserted.

Checks on an accepted input: capacity rows have a finite time ≥ 0, an integer node ≥ 0 and a
bool; a cluster (loaded, topology built and `[comm]` read into CommParams, as a run does) has
only finite numbers, positive sizes, at most `MAX_CLUSTER_GPUS` GPUs; a sweep expands to ≥ 1 cell. A rejection must be one `CosimError` line
(for a sweep file with non-UTF-8 bytes: `cosim sweep` exits 2 with one line before any run).
"""

from __future__ import annotations

import dataclasses
import math
import re
from importlib import resources
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz._harness import HOSTILE_TEXT, SETTINGS, cli_outcome, outcome
from tests.scratch import scratch_dir

REPO = Path(__file__).resolve().parents[2]
TOML_VALUES = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "+nan", "0", "-1", "0.0", "-0.5", "1e308", "1e-300", "100000000",
                     "9223372036854775807", '"x"', '""', "true", "[]", "{}", '"٣"', "[1, 2]", '"inf"']),
    st.integers(-10**9, 10**9).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
KEY_LINE = re.compile(r"^(\s*[A-Za-z_][\w.-]*\s*=\s*)(.+?)\s*(#.*)?$")
PRESETS = ("dgx-a100", "dally-3tier", "fft-hetero", "v100-nvlink", "philly")


def _mutate(text: str, line_no: int, value: str) -> str:
    lines = text.splitlines()
    keyed = [i for i, ln in enumerate(lines) if KEY_LINE.match(ln) and not ln.lstrip().startswith("#")]
    i = keyed[line_no % len(keyed)]
    lines[i] = KEY_LINE.sub(lambda m: m.group(1) + value, lines[i])
    return "\n".join(lines) + "\n"


def _write(data: bytes, name: str) -> Path:
    d = scratch_dir()
    p = d / name
    p.write_bytes(data)
    return p


# ---- capacity CSV ---------------------------------------------------------------------------

def _capacity_ok(rows) -> None:
    for t, n, o in rows:
        assert isinstance(t, float) and math.isfinite(t) and t >= 0, t
        assert isinstance(n, int) and n >= 0, n
        assert isinstance(o, bool)


@SETTINGS
@example(rows=[("", "1", "0")], header=True)  # the case: an empty time used to stop the run at 0 events
@example(rows=[], header=False)  # an empty file used to be a pandas EmptyDataError
@given(rows=st.lists(st.tuples(HOSTILE_TEXT | st.integers(0, 10**6).map(str), HOSTILE_TEXT | st.integers(0, 64).map(str),
                               HOSTILE_TEXT | st.sampled_from(["0", "1", "true", "false"])), max_size=5),
       header=st.booleans())
def test_capacity_csv(rows, header):
    from experiments.run_inputs import load_capacity

    text = ("time_s,node,online\n" if header else "") + "".join(f"{t},{n},{o}\n" for t, n, o in rows)
    p = _write(text.encode("utf-8", errors="surrogatepass"), "cap.csv")
    outcome(lambda: load_capacity(p), _capacity_ok)


# ---- cluster TOML ---------------------------------------------------------------------------

def _finite_everywhere(obj, path="spec") -> None:
    if isinstance(obj, float):
        assert math.isfinite(obj), f"{path} = {obj} accepted"
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _finite_everywhere(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _finite_everywhere(v, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _finite_everywhere(v, f"{path}.{k}")


def _cluster_ok(result) -> None:
    from netmodel.spec import MAX_CLUSTER_GPUS

    spec, topo, comm = result
    # `[comm]` stays a raw table in the spec; CommParams validates it (as every run does), so check that
    _finite_everywhere(dataclasses.replace(spec, comm={}))
    _finite_everywhere(comm, "comm")
    assert 1 <= spec.num_gpus <= MAX_CLUSTER_GPUS
    assert all(g.nodes >= 1 and g.gpus_per_node >= 1 for g in spec.groups)
    assert topo.describe()["gpus"] == spec.num_gpus


def _load_cluster(p: Path):
    """What a run does with a cluster file: load it, build the topology, read its [comm] parameters."""
    import netmodel
    from collectives import CommParams

    spec = netmodel.load_cluster(str(p))
    return spec, netmodel.build_topology(spec, check_graph=False), CommParams.for_cluster(spec, None)


@SETTINGS
@example(preset="dgx-a100", line_no=0, value="100000000", junk=None)  # resolves to the nodes line below
@given(preset=st.sampled_from(PRESETS), line_no=st.integers(0, 200), value=TOML_VALUES,
       junk=st.none() | st.integers(0, 10**6))
def test_cluster_toml(preset, line_no, value, junk):
    text = (resources.files("netmodel") / "presets" / f"{preset}.toml").read_text()
    if value == "100000000" and line_no == 0:  # the case: nodes = 100000000
        text = re.sub(r"(?m)^(\s*nodes\s*=\s*)\d+", r"\g<1>100000000", text)
    else:
        text = _mutate(text, line_no, value)
    data = text.encode()
    if junk is not None:
        k = junk % (len(data) + 1)
        data = data[:k] + b"\xff" + data[k:]
    p = _write(data, "c.toml")
    outcome(lambda: _load_cluster(p), _cluster_ok)


@SETTINGS
@given(nodes=st.integers(-10, 10**9) | st.sampled_from([0, 1, 16384, 16385, 10**8]),
       preset=st.sampled_from(("dgx-a100", "t4-pcie")))
def test_cluster_resize(nodes, preset):
    """`--nodes N` on a preset: a positive size up to the bound, or one line naming the bound."""
    import netmodel

    from collectives import CommParams

    outcome(lambda: (lambda s: (s, netmodel.build_topology(s, check_graph=False), CommParams.for_cluster(s, None)))(
        netmodel.load_cluster(preset, num_nodes=nodes)), _cluster_ok)


# ---- sweep TOML -----------------------------------------------------------------------------

def _sweep_ok(cfg) -> None:
    cells = cfg.cells()
    assert len(cells) >= 1
    for c in cells:
        assert isinstance(c.seed, int) and 0 <= c.seed < 2**63, f"seed {c.seed} accepted"


@SETTINGS
@given(line_no=st.integers(0, 50), value=TOML_VALUES, which=st.sampled_from(["sweep_small.toml", "sweep_grid.toml"]))
def test_sweep_toml(line_no, value, which):
    from experiments.sweep import load_sweep

    p = _write(_mutate((REPO / "examples" / which).read_text(), line_no, value).encode(), "s.toml")
    outcome(lambda: load_sweep(p), _sweep_ok)


@SETTINGS
@given(at=st.integers(0, 10**6), byte=st.integers(0x80, 0xFF))
def test_sweep_toml_not_utf8(at, byte, tmp_path_factory):
    text = (REPO / "examples" / "sweep_small.toml").read_bytes()
    k = at % (len(text) + 1)
    p = _write(text[:k] + bytes([byte]) + text[k:], "s.toml")
    out = tmp_path_factory.mktemp("sweep")
    res = cli_outcome(["sweep", str(p), "--out", str(out / "o")])
    assert res.exit_code == 2  # never a run: the file is rejected before
