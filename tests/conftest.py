"""Shared fixtures. Real data lives in ../shared/data; tests that need it skip clearly when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ../shared/data, or skip the test with a message naming what is missing."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (clone with ../shared beside the repo)")
    return SHARED_DATA
