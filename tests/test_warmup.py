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
    assert {g for g, *_ in warmup.entries()} == {0, 1}


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
