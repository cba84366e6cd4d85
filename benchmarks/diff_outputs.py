"""Same outputs, file for file: run `cosim simulate` of two checkouts and compare every output.

Speed work must not change a single output. For each workload and
policy this runs the Pollux-workload command of `benchmarks.bench_peer_process` (`--perf
measured-pollux-sim --progress goodput --costs pollux-sim`, 16 x 4 T4) once in `--base` (e.g. a
`git worktree add /tmp/base main` copy) and once in `--repo` (default: this checkout), with the
same absolute trace path and `--out` folder name, and compares every file the two runs wrote:
each Parquet file's schema *with* its metadata (field metadata, `cosim.*` and pandas keys) and its
values (`pyarrow.Table.equals`: exact), and `config.json` byte for byte (not `.cosim.lock`, which
holds the writer's process id).

    python -m benchmarks.diff_outputs --base /tmp/base                     # w1-w5, both policies
    python -m benchmarks.diff_outputs --base /tmp/base --workloads 3 --policies tiresias-pollux

Exit status 1 when any file differs (each difference is printed), 0 when all are equal.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICIES = ("tiresias-pollux", "optimus")


def run(repo: Path, trace: Path, policy: str, out: Path) -> None:
    from benchmarks.bench_peer_process import cosim_cmd

    subprocess.run(cosim_cmd(trace, policy, out), cwd=repo, check=True, stdout=subprocess.DEVNULL)


def differences(a: Path, b: Path) -> list[str]:
    """Every difference between the output folders `a` and `b` (empty: identical)."""
    import pyarrow.parquet as pq

    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != ".cosim.lock")
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != ".cosim.lock")
    out = [f"only in one run: {sorted(set(map(str, fa)) ^ set(map(str, fb)))}"] if fa != fb else []
    for rel in sorted(set(fa) & set(fb)):
        pa_, pb_ = a / rel, b / rel
        if rel.suffix == ".parquet":
            ta, tb = pq.read_table(pa_), pq.read_table(pb_)
            if not ta.schema.equals(tb.schema, check_metadata=True):
                out.append(f"{rel}: schema or metadata differ:\n{ta.schema.to_string(show_schema_metadata=True)}\n"
                           f"---\n{tb.schema.to_string(show_schema_metadata=True)}")
            elif not ta.equals(tb):
                cols = [c for c in ta.column_names if not ta[c].equals(tb[c])]
                out.append(f"{rel}: values differ in {cols}")
        elif pa_.read_bytes() != pb_.read_bytes():
            out.append(f"{rel}: bytes differ")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the checkout to compare against (e.g. main)")
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--workloads", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    args = ap.parse_args(argv)
    from benchmarks.bench_peer_process import workload_path

    tmp = Path(tempfile.mkdtemp(prefix="diff-outputs-"))
    bad = 0
    try:
        for n in args.workloads:
            trace = workload_path(n).resolve()
            for policy in args.policies:
                outs = []
                for side, repo in (("base", args.base), ("repo", args.repo)):
                    out = tmp / side / "out"
                    run(repo.resolve(), trace, policy, out)
                    outs.append(tmp / f"{side}-w{n}-{policy}")
                    shutil.move(out, outs[-1])
                diff = differences(*outs)
                files = sum(1 for p in outs[0].rglob("*") if p.is_file())
                print(f"w{n} {policy}: {'IDENTICAL' if not diff else 'DIFFERENT'} ({files} files)", flush=True)
                for d in diff:
                    print("   ", d)
                bad += bool(diff)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
