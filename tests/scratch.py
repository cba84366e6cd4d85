"""Fresh folders for tests that cannot take pytest's `tmp_path` (hypothesis runs many examples per
test function; module-level caches outlive one test). Every folder lies under one root per test
process, removed when the process exits, so a run leaves nothing in the system's temp folder
(the fuzz suite alone made ≈ 1,000 folders a run before)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_ROOT: list[Path] = []


def scratch_dir(prefix: str = "") -> Path:
    """A new empty folder, removed with the others at the end of the test process."""
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="cosim-tests-")))
        atexit.register(shutil.rmtree, _ROOT[0], ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_ROOT[0]))
