"""Report how many generated cases the fuzz suite ran (the full run must reach ≥ 10,000)."""

from __future__ import annotations

from tests.fuzz._harness import COUNTS, IS_FULL


def pytest_terminal_summary(terminalreporter):
    if COUNTS["cases"]:
        terminalreporter.write_line(f"fuzz: {COUNTS['cases']} cases ({COUNTS['accepted']} accepted and valid, "
                                    f"{COUNTS['rejected']} rejected in one line; "
                                    f"{'full run' if IS_FULL else 'fast slice; COSIM_FUZZ_FULL=1 for the full run'})")
