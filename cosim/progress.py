"""One line per phase on stderr when stderr is not a terminal (logs, CI, pipes).

On a terminal the commands show rich progress bars; piped, those stay silent, and a first
`cosim simulate` that spends a minute compiling kernels looked hung. `phase()` prints
`cosim [  1.2 s] <what is starting>` there instead, timed from the first phase of the command.
"""

from __future__ import annotations

import sys
import time

_T0 = time.perf_counter()


def phase(message: str) -> None:
    """Announce a phase on stderr unless stderr is a terminal (where progress bars show it)."""
    stream = sys.stderr
    try:
        if stream.isatty():
            return
    except (AttributeError, ValueError):
        return
    print(f"cosim [{time.perf_counter() - _T0:6.1f} s] {message}", file=stream, flush=True)
