"""Shared fixtures. Real data lives in ../shared/data; tests that need it skip clearly when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

import cosim  # noqa: F401  before any test module loads numpy: cosim sets OpenBLAS' kernels (cosim.blas)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder as cosim finds it (`$COSIM_SHARED_DATA`, else ../shared/data beside the
    checkout: `cosim.paths.shared_data_dir`), or skip the test with a message saying what is missing."""
    from cosim.errors import InputError
    from cosim.paths import shared_data_dir

    try:
        return shared_data_dir()
    except InputError as e:
        pytest.skip(f"real data not found: {e}")


@pytest.fixture(scope="module")
def calibration_engine():
    """`calibration.fit` predicts through the engine factory the CLI installs for `cosim validate`
    and `calibrate fit` (`experiments.runner.engine_for`). Module-scoped, so it is in place before a
    module-scoped fixture that fits (pytest sets up wider scopes first); the factory found
    before is put back after the module, so no test depends on another having run first."""
    from calibration import fit
    from experiments.runner import engine_for

    before = fit._ENGINE
    fit.set_engine(engine_for)
    yield
    fit.set_engine(before)


@pytest.fixture(autouse=True, scope="session")
def _measured_cache_dir(tmp_path_factory):
    """Table-mode cache entries (`simcore.measured_cache`) of a test run go to a fresh temporary
    folder, not the user's ~/.cache/cosim/measured: tests start cold and leave nothing behind."""
    mp = pytest.MonkeyPatch()
    mp.setenv("COSIM_MEASURED_CACHE_DIR", str(tmp_path_factory.mktemp("measured-cache")))
    mp.setenv("COSIM_TRACE_CACHE_DIR", str(tmp_path_factory.mktemp("trace-cache")))  # traces.cache, alike
    yield
    mp.undo()
