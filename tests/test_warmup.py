"""cosim.warmup: the first `cosim simulate` compiles its kernels on two cores.

The list it compiles must be what the default run compiles from Python (else priming wastes
time on kernels nobody calls and the run still compiles the real ones); priming must leave
every listed kernel in the cache, loadable by a later process, and mark the cache once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cosim import warmup

REPO = Path(__file__).resolve().parents[1]


def _python(code_or_args, env=None, timeout=900):
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    done = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_list_is_what_the_default_run_compiles(tmp_path):
    """Every kernel signature the default simulate compiles from Python is listed, and nothing
    else (recorded in a fresh interpreter; a warm cache makes it a load, not a compile)."""
    raw = tmp_path / "kernels.tsv"
    env = dict(os.environ, COSIM_PRIME="0")
    _python(["-m", "benchmarks.bench_startup", "--capture", str(raw)], env=env)
    ran = {tuple(line.split("\t")[:3]) for line in raw.read_text(encoding="utf-8").splitlines()}
    listed = {(m, q, s) for _, _, m, q, s in warmup.entries()}
    assert ran, "the default run compiled no kernel from Python"
    assert ran == listed, (f"run but not listed: {sorted(ran - listed)}; listed but not run: {sorted(listed - ran)}; "
                           "rerun python -m benchmarks.bench_startup --record-kernels")
    assert len(warmup.units()) >= 2, "one unit: the worker and the CLI cannot share the compiles"


def test_prime_fills_the_cache_once(tmp_path):
    """Two small kernels, one per process: both end in the cache (a new process loads them
    without compiling), the stamp is written, and a second prime does nothing."""
    listing = tmp_path / "kernels.txt"
    listing.write_text("# test list\n"
                       "0\t0.1\tcosim.nsort\tsorted_copy\t(Array(float64, 1, 'C', False, aligned=True),)\n"
                       "1\t0.1\tcosim.nsort\tunique_sorted\t(Array(int64, 1, 'C', False, aligned=True),)\n",
                       encoding="utf-8")
    env = dict(os.environ, COSIM_NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    env["COSIM_PRIME"] = "1"  # prime even when the test host's cores are busy
    prime = f"from cosim import warmup; print(warmup.prime(path={str(listing)!r}))"
    assert _python(prime, env).split() == ["True"]
    assert list((tmp_path / "cache").glob("cosim-primed-*"))
    assert _python(prime, env).split() == ["False"]
    out = _python("import numpy as np\nfrom cosim import nsort\n"
                  "nsort.sorted_copy(np.array([2.0, 1.0])); nsort.unique_sorted(np.array([3, 1, 3]))\n"
                  "print(sum(nsort.sorted_copy.stats.cache_hits.values()), "
                  "sum(nsort.unique_sorted.stats.cache_hits.values()),"
                  "sum(nsort.sorted_copy.stats.cache_misses.values()))", env)
    assert out.split() == ["1", "1", "0"]


def test_units_are_claimed_once_heaviest_first(tmp_path, monkeypatch):
    """Each unit is compiled by the first process to claim it, heaviest first; a process that
    finds every unit claimed compiles nothing (the worker and the CLI never repeat a unit)."""
    listing = tmp_path / "kernels.txt"
    listing.write_text("0\t0.5\tm\tf\t(int64,)\n1\t2.0\tm\tg\t(int64,)\n1\t0.1\tm\th\t(int64,)\n"
                       "2\t1.0\tm\tk\t(int64,)\n", encoding="utf-8")
    assert warmup.units(listing) == [1, 2, 0]
    done = []
    monkeypatch.setattr(warmup, "_compile_rows", lambda rows: done.append([r[3] for r in rows]) or 0)
    (tmp_path / "claims").mkdir()
    os.close(os.open(tmp_path / "claims" / "2", os.O_CREAT))  # the other process took unit 2
    assert warmup.compile_claimed(tmp_path / "claims", listing) == 0
    assert done == [["g", "h"], ["f"]]
    assert warmup.compile_claimed(tmp_path / "claims", listing) == 0
    assert done == [["g", "h"], ["f"]]


def test_a_unit_waits_for_the_units_it_calls(tmp_path, monkeypatch):
    """A chain (unit 1 calls unit 0's kernels, unit 2 both) goes first, longest chain first;
    a unit whose callee unit the other process holds waits until that one is done (then it
    loads it), or until the other process has ended (then it compiles here)."""
    listing = tmp_path / "kernels.txt"
    listing.write_text("#after\t1\t0\n#after\t2\t0,1\n0\t7.5\tm\ta\t(int64,)\n1\t6.7\tm\tb\t(int64,)\n"
                       "2\t6.2\tm\tc\t(int64,)\n3\t12.2\tm\td\t(int64,)\n4\t8.8\tm\te\t(int64,)\n",
                       encoding="utf-8")
    assert warmup.after(listing) == {1: {0}, 2: {0, 1}}
    assert warmup.units(listing) == [0, 1, 3, 4, 2]  # chains 20.4, 12.9, then 12.2, 8.8, 6.2
    claims = tmp_path / "claims"
    claims.mkdir()
    os.close(os.open(claims / "0", os.O_CREAT))  # the other process compiles unit 0
    done = []

    def compile_rows(rows):
        done.append(rows[0][3])
        if rows[0][3] == "e":  # meanwhile the other process finishes unit 0
            os.close(os.open(claims / "0.done", os.O_CREAT))
        return 0

    monkeypatch.setattr(warmup, "_compile_rows", compile_rows)
    assert warmup.compile_claimed(claims, listing, other_alive=lambda: True, poll_s=0.001) == 0
    assert done == ["d", "e", "b", "c"]  # 1 and 2 waited for 0
    claims2 = tmp_path / "claims2"
    claims2.mkdir()
    os.close(os.open(claims2 / "0", os.O_CREAT))  # held by a process that then died
    done.clear()
    assert warmup.compile_claimed(claims2, listing, other_alive=lambda: False, poll_s=0.001) == 0
    assert done == ["d", "e", "b", "c"]


def test_stale_entry_does_not_stop_priming(tmp_path):
    listing = tmp_path / "kernels.txt"
    listing.write_text("0\t0.1\tcosim.nsort\tno_such_kernel\t(int64,)\n"
                       "1\t0.1\tcosim.no_such_module\tf\t(int64,)\n", encoding="utf-8")
    assert warmup.compile_group(None, listing) == 2


def test_prime_only_with_a_spare_core(tmp_path, monkeypatch):
    """A busy host (load at or above cores - 0.5) or COSIM_PRIME=0 compiles lazily: nothing primed,
    no stamp; COSIM_PRIME=1 overrides the load check."""
    listing = tmp_path / "kernels.txt"
    listing.write_text("0\t0.1\tcosim.nsort\tno_such_kernel\t(int64,)\n", encoding="utf-8")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(warmup, "_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    monkeypatch.delenv("COSIM_PRIME", raising=False)
    assert not warmup.spare_core()
    assert warmup.prime(path=listing) is False
    monkeypatch.setenv("COSIM_PRIME", "0")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    assert warmup.spare_core() and warmup.prime(path=listing) is False
    assert not list(tmp_path.glob("cosim-primed-*"))
