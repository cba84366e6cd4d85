"""Per-kernel numba compile time of the default `cosim simulate` (target: first run ≤ 20 s).

Runs the default `simulate` in this process with an empty kernel cache and no priming, listens
to numba's `numba:compile` events and prints, per compiled function and signature, the process
CPU seconds of its compile with callees ("incl") and without the callees it compiled meanwhile
("own"), and the `numba:llvm_lock` share. Process CPU, not wall: the host is shared.

    python -m benchmarks.compile_profile                   # this checkout, table to stdout
    python -m benchmarks.compile_profile --repo /tmp/base  # another checkout (before/after)
    python -m benchmarks.compile_profile --top 40 --tsv out.tsv

It starts a child process with a fresh COSIM_NUMBA_CACHE_DIR and COSIM_PRIME=0 (so one process
compiles everything, as `--record-kernels` does).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _child(repo: Path, tsv: Path) -> None:
    sys.path.insert(0, str(repo))
    import numba.core.dispatcher as nd
    from numba.core import event as ev

    rows: list[tuple[str, str, str, float, float]] = []
    stack: list[list] = []  # [callee seconds] of the compiles in progress
    llvm = [0.0, 0.0]  # total, start
    original = nd.Dispatcher.compile

    def timed(self, sig):  # compile with its cache save; a cache hit or known signature is no row
        misses = sum(self._cache_misses.values())
        stack.append([0.0])
        t0 = time.process_time()
        try:
            return original(self, sig)
        finally:
            incl = time.process_time() - t0
            inner = stack.pop()[0]
            if sum(self._cache_misses.values()) > misses:
                fn = self.py_func
                rows.append((f"{fn.__module__}.{fn.__qualname__}", str(sig), "", incl, incl - inner))
                if stack:
                    stack[-1][0] += incl

    nd.Dispatcher.compile = timed
    from numba.core import caching

    saving = [0.0]
    save = caching.Cache.save_overload

    def timed_save(self, sig, data):  # writing the cache entry (object code, bitcode for linking)
        t0 = time.process_time()
        try:
            return save(self, sig, data)
        finally:
            saving[0] += time.process_time() - t0

    caching.Cache.save_overload = timed_save

    class Llvm(ev.Listener):
        def on_start(self, event):
            llvm[1] = time.process_time()

        def on_end(self, event):
            llvm[0] += time.process_time() - llvm[1]

    ev.register("numba:llvm_lock", Llvm())
    t0 = time.process_time()
    from cli.app import app

    try:
        app(["simulate"])
    except SystemExit:
        pass
    total = time.process_time() - t0
    lines = [f"# total\t{total:.3f}\tllvm\t{llvm[0]:.3f}\tsave\t{saving[0]:.3f}"]
    lines += [f"{n}\t{s}\t{i:.3f}\t{o:.3f}" for n, s, _, i, o in rows]
    tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")


def profile(repo: Path, tsv: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="cosim-numba-") as cache:
        env = dict(os.environ, COSIM_NUMBA_CACHE_DIR=cache, COSIM_PRIME="0")
        env.pop("NUMBA_CACHE_DIR", None)
        subprocess.run([sys.executable, "-m", "benchmarks.compile_profile", "--child", str(repo), "--tsv", str(tsv)],
                       cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)


def table(tsv: Path, top: int) -> str:
    lines = tsv.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:]]
    own_total = sum(float(r[3]) for r in rows)
    saved = f", cache writes {float(head[5]):.1f} s" if len(head) > 5 else ""
    out = [f"process CPU {float(head[1]):.1f} s, {len(rows)} compiles, {own_total:.1f} s compiling, "
           f"LLVM lock {float(head[3]):.1f} s{saved}"]
    per_fn: dict[str, list] = {}
    for name, _, incl, own in rows:
        acc = per_fn.setdefault(name, [0.0, 0.0, 0])
        acc[0] += float(incl)
        acc[1] += float(own)
        acc[2] += 1
    out.append(f"{'own s':>7} {'incl s':>7} {'sigs':>4}  function")
    for name, (incl, own, n) in sorted(per_fn.items(), key=lambda kv: -kv[1][1])[:top]:
        out.append(f"{own:7.2f} {incl:7.2f} {n:4d}  {name}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--tsv", type=Path)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.tsv)
        return 0
    if args.tsv is None:
        with tempfile.TemporaryDirectory() as tmp:
            tsv = Path(tmp) / "compiles.tsv"
            profile(args.repo.resolve(), tsv)
            print(table(tsv, args.top))
        return 0
    profile(args.repo.resolve(), args.tsv)
    print(table(args.tsv, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
