"""Fixtures for the traces tests: the small raw-format files in tests/fixtures/traces."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES
