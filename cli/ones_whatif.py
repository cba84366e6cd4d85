"""The ONES report's what-ifs and bound on the command line (`experiments.ones_whatif`):

    python -m cli.ones_whatif pow|host COSIM-ARGS…   # a cosim command with the what-if's scaling
    python -m cli.ones_whatif bound [ROWS]           # the bound of ONES' execution on the artifact's trace

The scaling applies in this process only, so a sweep must run with one worker (`-j 1`).
"""

from __future__ import annotations

import sys

from experiments.ones_whatif import MODES, applied, bound

USAGE = "usage: python -m cli.ones_whatif {pow|host} COSIM-ARGS… | bound [ROWS]"


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in (*MODES, "bound"):
        raise SystemExit(USAGE)
    mode, rest = args[0], args[1:]
    if mode == "bound":
        if rest and not (rest[0].isdigit() and int(rest[0]) > 0):
            raise SystemExit(f"error: ROWS: expected a positive integer, got {rest[0]!r}")
        b = bound(int(rest[0]) if rest else 50)
        print(f"phi {b['phi']:.3f}; mean per job: warm-up {b['warmup']:.0f} s, ONES' execution bound "
              f"{b['ones']:.0f} s, at the requested size {b['requested']:.0f} s")
        return
    if rest[:1] == ["sweep"] and not _one_worker(rest):
        raise SystemExit("error: the what-if applies in this process only: run the sweep with -j 1")
    from cli.app import main as cosim

    with applied(mode):
        sys.argv = ["cosim", *rest]
        cosim()


def _one_worker(args: list[str]) -> bool:
    for i, a in enumerate(args):
        if a in ("-j", "--workers") and i + 1 < len(args):
            return args[i + 1] == "1"
        if a.startswith("--workers="):
            return a.split("=", 1)[1] == "1"
    return False


if __name__ == "__main__":
    main()
