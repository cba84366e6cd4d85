"""The fuzz run's seed for every generated test, and how many cases ran (the full run must reach ≥ 10,000)."""

from __future__ import annotations

from hypothesis import seed

from tests.fuzz._harness import COUNTS, IS_FULL, SEED


def pytest_report_header(config):
    return f"fuzz seed {SEED} (replay: COSIM_FUZZ_SEED={SEED})"


def pytest_collection_modifyitems(config, items):
    for item in items:
        fn = getattr(item, "obj", None)
        if fn is not None and hasattr(fn, "hypothesis"):  # a @given test: this run's seed
            seed(SEED)(fn)


def pytest_terminal_summary(terminalreporter):
    if COUNTS["cases"]:
        terminalreporter.write_line(f"fuzz: {COUNTS['cases']} cases ({COUNTS['accepted']} accepted and valid, "
                                    f"{COUNTS['rejected']} rejected in one line; "
                                    f"{'full run' if IS_FULL else 'fast slice; COSIM_FUZZ_FULL=1 for the full run'}); "
                                    f"seed {SEED} (replay: COSIM_FUZZ_SEED={SEED})")
