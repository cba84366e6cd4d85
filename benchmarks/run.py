"""Discover and run the benchmarks, print a table, write Parquet with the machine description.

Every `benchmarks/bench_<area>.py` module defines functions `bench_<name>() -> dict` with keys
`name`, `value`, `unit`, `target` (a string such as "< 2 s") and `detail`. A function may also
return a list of such dicts (one measurement per size). A benchmark that raises is recorded
with `status="error"` and its message; the others still run.

    python -m benchmarks.run [--only NAME ...] [--out FILE.parquet]
    cosim bench [--only NAME] [--out FILE.parquet]

`--only` matches an area (`scale` for bench_scale.py), a function (`bench_scale_1m` or
`scale_1m`) or a shell pattern over `area.function` (`scale.*1m*`).
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import json
import logging
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Callable, Sequence

log = logging.getLogger(__name__)

BENCH_DIR = Path(__file__).resolve().parent
PACKAGES = ("cosim", "numpy", "numba", "scipy", "pandas", "pyarrow", "networkx", "typer", "matplotlib", "ray")
RESULT_KEYS = ("name", "value", "unit", "target", "detail")
COLUMNS = ("area", "function", "name", "value", "unit", "target", "detail", "status", "duration_s")


@dataclass(frozen=True)
class Benchmark:
    area: str  # "scale" for bench_scale.py
    function: str  # "bench_scale_1m"
    func: Callable[[], Any]

    @property
    def key(self) -> str:
        return f"{self.area}.{self.function}"


def discover(bench_dir: Path = BENCH_DIR, only: Sequence[str] = ()) -> list[Benchmark]:
    """All `bench_*` functions of all `bench_*.py` modules in `bench_dir`, sorted, filtered by `only`.

    Modules are imported as `benchmarks.bench_<area>`; the repository root is put on `sys.path`
    so this works from an installed `cosim` command too.
    """
    root = str(Path(bench_dir).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    pkg = Path(bench_dir).name
    found: list[Benchmark] = []
    for path in sorted(Path(bench_dir).glob("bench_*.py")):
        area = path.stem.removeprefix("bench_")
        try:
            module = importlib.import_module(f"{pkg}.{path.stem}")
        except Exception as exc:  # a broken module is reported as one failing benchmark
            found.append(Benchmark(area, "<import>", _raiser(exc)))
            continue
        for fname in sorted(vars(module)):
            func = getattr(module, fname)
            if fname.startswith("bench_") and callable(func) and getattr(func, "__module__", None) == module.__name__:
                found.append(Benchmark(area, fname, func))
    if only:
        found = [b for b in found if any(_matches(b, pat) for pat in only)]
    return found


def _raiser(exc: Exception) -> Callable[[], Any]:
    def f():
        raise exc

    return f


def _matches(b: Benchmark, pattern: str) -> bool:
    names = (b.area, b.function, b.function.removeprefix("bench_"), b.key)
    return any(n == pattern or fnmatch.fnmatchcase(n, pattern) for n in names)


def machine() -> dict[str, Any]:
    """CPU model, core count, memory, OS, Python and package versions of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = float("nan")
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        pass
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = importlib_metadata.version(p)
        except importlib_metadata.PackageNotFoundError:
            versions[p] = None
    return {"cpu_model": cpu, "cores": os.cpu_count() or 0, "memory_gb": round(mem_gb, 2),
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "packages": versions}


def run_one(b: Benchmark) -> list[dict[str, Any]]:
    """Run one benchmark function; its dict (or list of dicts) → rows, an exception → an error row."""
    t0 = time.perf_counter()
    try:
        out = b.func()
        results = out if isinstance(out, list) else [out]
        rows = []
        for r in results:
            if not isinstance(r, dict) or "name" not in r or "value" not in r:
                raise TypeError(f"{b.key} returned {type(r).__name__}, expected a dict with {', '.join(RESULT_KEYS)}")
            rows.append({"name": str(r["name"]), "value": _num(r["value"]), "unit": str(r.get("unit", "")),
                         "target": str(r.get("target", "")), "detail": str(r.get("detail", "")), "status": "ok"})
    except Exception as exc:
        log.debug("benchmark %s failed", b.key, exc_info=True)
        last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" ({Path(last.filename).name}:{last.lineno})" if last else ""
        rows = [{"name": b.function.removeprefix("bench_"), "value": float("nan"), "unit": "", "target": "",
                 "detail": f"{type(exc).__name__}: {exc}{where}", "status": "error"}]
    dt = time.perf_counter() - t0
    for r in rows:
        r.update(area=b.area, function=b.function, duration_s=dt)
    return rows


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def run_all(benchmarks: Sequence[Benchmark], on_result: Callable[[dict], None] | None = None) -> list[dict]:
    rows: list[dict] = []
    for b in benchmarks:
        for r in run_one(b):
            rows.append(r)
            if on_result:
                on_result(r)
    return rows


def write_results(rows: Sequence[dict], path: str | Path, mach: dict[str, Any] | None = None) -> Path:
    """Parquet: one row per measurement + the machine as columns and as `cosim.machine` metadata."""
    import pandas as pd
    import pyarrow as pa

    from cosim.atomic import write_parquet

    mach = mach or machine()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    df = pd.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], columns=list(COLUMNS))
    df["value"] = df["value"].astype("float64")
    df["duration_s"] = df["duration_s"].astype("float64")
    for k in ("cpu_model", "cores", "memory_gb", "os", "python"):
        df[k] = mach[k]
    df["packages"] = json.dumps(mach["packages"], sort_keys=True)
    df["run_at"] = stamp
    return write_parquet(pa.Table.from_pandas(df, preserve_index=False), path, {"machine": mach, "run_at": stamp})


def format_value(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.4g}" if abs(v) < 1e5 else f"{v:,.0f}"


def print_table(rows: Sequence[dict], mach: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"cosim benchmarks — {mach['cpu_model']}, {mach['cores']} cores, {mach['memory_gb']} GB, "
                    f"Python {mach['python']}")
    for c, just in (("benchmark", "left"), ("value", "right"), ("unit", "left"), ("target", "left"),
                    ("time", "right"), ("detail", "left")):
        t.add_column(c, justify=just, overflow="fold")
    for r in rows:
        style = "red" if r["status"] == "error" else None
        t.add_row(f"{r['area']}: {r['name']}", format_value(r["value"]), r["unit"], r["target"],
                  f"{r['duration_s']:.1f} s", r["detail"], style=style)
    console = Console()
    if not console.is_terminal:  # piped or captured: wide enough that details stay on one line or two
        console = Console(width=160)
    console.print(t)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], help="area, function or pattern (repeatable)")
    ap.add_argument("--out", type=Path, default=None, help="write results to this Parquet file")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    found = discover(only=args.only)
    if args.list:
        for b in found:
            print(b.key)
        return 0
    if not found:
        print(f"no benchmark matches {args.only}", file=sys.stderr)
        return 2
    mach = machine()
    rows = run_all(found)
    print_table(rows, mach)
    if args.out:
        write_results(rows, args.out, mach)
        print(f"wrote {args.out}")
    return 1 if any(r["status"] == "error" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
