"""Shared fixtures. Real data lives in ../shared/data; tests that need it skip clearly when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.wiring import install

# simcore's runner takes the policy registry as an injected dependency (simcore imports no policy);
# tests that call `simcore.runner.run` without Backends get the project's registry, as the CLI does
install()

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ../shared/data, or skip the test with a message naming what is missing."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (clone with ../shared beside the repo)")
    return SHARED_DATA
