"""The on-disk cache of table mode (`simcore.measured_cache`): built once, reused while the CSVs
are unchanged, rebuilt (never trusted) when stale, corrupt or of another format, and loaded
without pandas or scipy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simcore.measured_cache as mc
import simcore.perf_measured as pm
from cosim.errors import InputError
from simcore import goodput
from simcore.perf_measured import MeasuredTables
from tests.simcore.test_perf_backends import CIFAR, write_tables

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv(mc.ENV, str(d))
    return d


@pytest.fixture
def root(tmp_path):
    return write_tables(tmp_path / "data", platforms=("aws",), apps=("cifar10", "ncf"))


def _lookups(tables: MeasuredTables) -> list[tuple[float, float]]:
    t = tables.get(CIFAR, "aws")
    return [t.step_sync(np.array(c), b) for c in ([1, 4], [2, 2], [3, 3, 2], [4, 4, 4, 4]) for b in (8, 40, 128)]


def _count_builds(monkeypatch) -> list[int]:
    calls = [0]
    real = pm.table_arrays

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(pm, "table_arrays", counting)
    return calls


def test_built_once_then_loaded_with_the_same_numbers(cache, root, monkeypatch):
    calls = _count_builds(monkeypatch)
    first = _lookups(MeasuredTables(root))
    assert calls[0] == 1 and len(list(cache.glob("table-cifar10-aws-*.arrays"))) == 1
    second = _lookups(MeasuredTables(root))  # a new run: from the cache
    assert calls[0] == 1 and second == first
    monkeypatch.delenv(mc.ENV)
    monkeypatch.setattr(mc, "cache_dir", lambda: None)  # no writable folder: built in memory, same numbers
    assert _lookups(MeasuredTables(root)) == first and calls[0] == 2


def test_an_entry_of_the_first_format_is_replaced(cache, root):
    """An `.npz` entry (FORMAT_VERSION 1) is not read, and is removed once its new entry is written."""
    first = _lookups(MeasuredTables(root))
    entry = next(cache.glob("table-cifar10-aws-*.arrays"))
    entry.unlink()
    old = entry.with_suffix(".npz")
    old.write_bytes(b"PK an old zip entry")
    assert _lookups(MeasuredTables(root)) == first
    assert entry.is_file() and not old.exists()


def test_changed_csv_is_reread(cache, root, monkeypatch):
    calls = _count_builds(monkeypatch)
    t = MeasuredTables(root).get(CIFAR, "aws")
    f = root / "pollux-sia" / "cifar10" / "placements-aws.csv"
    text = f.read_text().splitlines()
    head, first = text[0], text[1].split(",")
    first[1] = str(float(first[1]) * 3)  # step_time of the first row (local_bsz 8 on placement 1)
    f.write_text("\n".join([head, ",".join(first), *text[2:]]) + "\n")
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    t2 = MeasuredTables(root).get(CIFAR, "aws")
    assert calls[0] == 2
    assert t2.by_key["1"][1][0] == pytest.approx(3 * t.by_key["1"][1][0])
    assert len(list(cache.glob("table-cifar10-aws-*.arrays"))) == 1  # the entry was replaced, not added


@pytest.mark.parametrize("damage", ["garbage", "truncated", "npz", "missing array", "bad shape", "old format"])
def test_corrupt_or_foreign_entries_are_rebuilt(cache, root, monkeypatch, damage):
    calls = _count_builds(monkeypatch)
    want = _lookups(MeasuredTables(root))
    (entry,) = cache.glob("table-cifar10-aws-*.arrays")
    if damage == "garbage":
        entry.write_bytes(b"not an entry at all")
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    elif damage == "npz":  # the format before FORMAT_VERSION 2, under the new name
        with open(entry, "wb") as fh:
            np.savez(fh, _stamp=np.array(mc.stamp([root / "pollux-sia" / "cifar10" / "placements-aws.csv"])))
    else:
        want_stamp = json.loads(entry.read_bytes()[8:8 + int.from_bytes(entry.read_bytes()[:8], "little")])["stamp"]
        arrays = {k: np.array(v) for k, v in mc._read(entry, want_stamp, ()).items()}
        if damage == "missing array":
            del arrays["tri_transform"]
        elif damage == "bad shape":
            arrays["key_start"] = arrays["key_start"][:-1]
        else:
            monkeypatch.setattr(mc, "FORMAT_VERSION", mc.FORMAT_VERSION + 1)
        mc._write(entry, want_stamp, arrays)
    assert _lookups(MeasuredTables(root)) == want and calls[0] == 2
    assert _lookups(MeasuredTables(root)) == want and calls[0] == 2  # the rebuilt entry is used again


def test_bad_csv_is_an_input_error_and_writes_nothing(cache, root):
    f = root / "pollux-sia" / "cifar10" / "placements-aws.csv"
    f.write_text(f.read_text().replace("\n8,", "\n-8,", 1))
    with pytest.raises(InputError, match="local_bsz"):
        MeasuredTables(root).get(CIFAR, "aws")
    assert not list(cache.glob("table-cifar10-aws-*.arrays"))


def test_validation_stats_cached(cache, tmp_path, monkeypatch):
    d = tmp_path / "app"
    d.mkdir()
    for b, k in ((32, 1.0), (128, 2.0)):
        (d / f"validation-{b}.csv").write_text("progress,grad_sqr,grad_var\n" + "".join(
            f"{10.0 * (e + 1) * k},{1.0 / (e + 1)},{0.5 * k}\n" for e in range(4)))
    calls = [0]
    real = goodput._read_validation
    monkeypatch.setattr(goodput, "_read_validation", lambda files: (calls.__setitem__(0, calls[0] + 1), real(files))[1])
    a = goodput.load_app(d)
    b = goodput.load_app(d, epochs=3)
    assert calls[0] == 1 and b.epochs == 3 and a.epochs == 4
    assert np.array_equal(a.grad_sqr[:, :3], b.grad_sqr) and a.epoch_end.tolist() == [10.0, 20.0, 30.0, 40.0]
    with pytest.raises(InputError, match="at least 5 rows"):  # checked on the cached rows too
        goodput.load_app(d, epochs=5)
    (d / "validation-64.csv").write_text("progress,grad_sqr,grad_var\n1,nan,1\n")  # a new file: a new stamp
    with pytest.raises(InputError, match="finite non-negative"):
        goodput.load_app(d)


def test_cached_load_imports_neither_pandas_nor_scipy(cache, root):
    _lookups(MeasuredTables(root))  # build the entry here
    code = ("import sys; from pathlib import Path; import numpy as np; "
            "from simcore.perf_measured import MeasuredTables; "
            f"t = MeasuredTables(Path({str(root)!r})).get('resnet18_cifar', 'aws'); "
            "print(t.step_sync(np.array([3, 3, 2]), 40), t.step_sync(np.array([1, 4]), 40)); "
            "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_entry_round_trip_keeps_every_array_exactly(tmp_path):
    """`_write` then `_read`: same dtype, shape and values for every kind the cache stores
    (0-d, empty, strings, booleans, a Fortran-ordered input), as aligned writable C arrays;
    another stamp reads as no entry."""
    arrays = {"f8": np.linspace(0.0, 1.0, 7), "i4": np.arange(24, dtype=np.int32).reshape(2, 3, 4),
              "scalar": np.array(17), "empty": np.zeros((0, 3)), "names": np.array(["1", "22", "4444"]),
              "mask": np.array([[True, False, True]]), "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3))}
    entry = tmp_path / "e.arrays"
    mc._write(entry, "stamp-a", arrays)
    got = mc._read(entry, "stamp-a", arrays)
    assert set(got) == set(arrays)
    for k, a in arrays.items():
        g = got[k]
        assert g.dtype == a.dtype and g.shape == a.shape and np.array_equal(g, a), k
        assert g.flags.c_contiguous and g.flags.aligned and g.flags.writeable, k
    assert mc._read(entry, "stamp-b", arrays) is None
    assert mc._read(entry, "stamp-a", [*arrays, "absent"]) is None
