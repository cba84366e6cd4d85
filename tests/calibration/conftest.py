"""Calibration predicts through the engine: install the factory the CLI installs."""

import pytest


@pytest.fixture(autouse=True, scope="module")
def _engine(calibration_engine):
    """Every calibration test module runs with `calibration_engine` (tests/conftest.py): before
    its module-scoped fixtures (a function-scoped install came after `test_onemodel.py`'s
    `fitted` when that module ran alone, e.g. under `-k`)."""
    yield
