"""The environment benchmark scripts give the processes they time: a user's shell, whatever the caller's.

Some shells and CI images set PYTHONDONTWRITEBYTECODE; it is removed here. A user's Python caches each module's bytecode
(`__pycache__`) on the first run and reads it afterwards; with the variable set, every run recompiles
each module edited since its .pyc was last written (all of cosim's in a fresh checkout: ≈ 0.2-0.3 s
of CPU), which is not what a user's second run costs.
"""

from __future__ import annotations

import os


def user_env(drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment less PYTHONDONTWRITEBYTECODE and the names in `drop`."""
    gone = {"PYTHONDONTWRITEBYTECODE", *drop}
    return {k: v for k, v in os.environ.items() if k not in gone}
