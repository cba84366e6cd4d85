"""Shared pieces of the fuzz suite: example budgets, hostile values, and the one assertion.

Every case must end in exactly one of two ways:

* it succeeds, and the result passes the target's validity checks (see each module); or
* it raises `cosim.errors.CosimError` whose message is one non-empty line (through the CLI:
  exit code 2, one `error: …` line, no traceback; click's usage errors for option types, e.g.
  `--nodes ''`, are the same shape: exit 2 and one `Error: Invalid value …` line after the usage).

Anything else — another exception type, a multi-line message, a traceback, exit code 1, or a
success whose result fails its checks ("nonsense accepted") — fails the test.

Budgets: the fast slice (CI, the default) runs `FAST` examples per test; `COSIM_FUZZ_FULL=1`
runs `FULL` per test (32 generated tests, most × 800: over 20,000 cases, plus the explicit
examples), e.g.

    COSIM_FUZZ_FULL=1 python -m pytest -q tests/fuzz

Seeds: every run draws a fresh seed, so each CI run tries other cases; it is printed in the
header and the summary (`fuzz seed N`), and `COSIM_FUZZ_SEED=N` replays that run's cases.
"""

from __future__ import annotations

import os
import random
from typing import Callable, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from cosim.errors import CosimError

#: this run's seed (conftest.py gives it to every generated test and prints it)
SEED = int(os.environ.get("COSIM_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
FULL = int(os.environ.get("COSIM_FUZZ_EXAMPLES", "800"))
FAST = 25
IS_FULL = os.environ.get("COSIM_FUZZ_FULL", "") not in ("", "0")
EXAMPLES = FULL if IS_FULL else FAST
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])

#: cases run in this pytest run (reported at the end by conftest.py)
COUNTS = {"cases": 0, "accepted": 0, "rejected": 0}

#: strings a user's file may hold where a number, a time or a name is expected
HOSTILE_TEXT = st.one_of(
    st.sampled_from(["", " ", "-1", "-0.5", "0", "0.0", "1.5", "nan", "NaN", "inf", "-inf", "Infinity", "1e400",
                     "1e-400", "2e-12", "99999999999", "4294967296", "None", "null", "NA", '"', ",", "x,y",
                     "2017-13-45 99:99:99", "2017-10-07", "2017-10-07 01:12:09+05:00", "2017-10-07T01:12:09Z",
                     "0x10", "1_000", "٣", "３", "²", "\x00", "\ufeff", "true", "1/0"]),
    st.text(max_size=10),
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)

T = TypeVar("T")


def one_line(message: str) -> None:
    assert message.strip(), "empty error message"
    assert "\n" not in message.strip(), f"multi-line error message: {message!r}"
    assert "Traceback" not in message, message


def outcome(call: Callable[[], T], check: Callable[[T], None]) -> T | None:
    """Run `call`: a CosimError must be one line; a result must pass `check`; nothing else is allowed."""
    COUNTS["cases"] += 1
    try:
        result = call()
    except CosimError as exc:
        one_line(exc.format_message())
        COUNTS["rejected"] += 1
        return None
    check(result)
    COUNTS["accepted"] += 1
    return result


def cli_outcome(args: list[str], check: Callable[[object], None] | None = None) -> object:
    """Invoke the CLI: exit 0 (then `check(result)`), or exit 2 with one `error:` line; never a traceback."""
    from typer.testing import CliRunner

    from cli.app import app

    COUNTS["cases"] += 1
    res = CliRunner().invoke(app, args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"uncaught {type(res.exception).__name__} for {args}: {res.exception}") from res.exception
    assert "Traceback" not in res.output, res.output
    if res.exit_code == 0:
        if check is not None:
            check(res)
        COUNTS["accepted"] += 1
    else:
        assert res.exit_code == 2, f"exit {res.exit_code} for {args}: {res.output}"
        # ours: one `error:` line; click's own usage errors (a non-integer for an int option): usage,
        # a hint and one `Error:` line
        errors = [ln for ln in res.output.splitlines() if ln.startswith(("error:", "Error:"))]
        assert len(errors) == 1, f"expected one error line for {args}: {res.output!r}"
        one_line(errors[0])
        COUNTS["rejected"] += 1
    return res
