"""Calibration predicts through the engine: install the factory the CLI installs."""

import pytest


@pytest.fixture(autouse=True)
def _engine():
    from calibration import fit
    from simcore.runner import engine_for

    fit.set_engine(engine_for)
    yield
