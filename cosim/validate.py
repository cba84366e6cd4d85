"""Checks of command-line values done before any work, each failing as one named line.

The loaders check their files; these are the options a user types (`--seed -1`, `--costs -500`,
`-n 0`), which used to surface as a numpy ValueError deep in a run or be silently accepted.
"""

from __future__ import annotations

import math

from cosim.errors import InputError

#: numpy's generators (default_rng) take any integer ≥ 0; the seed is stored in int64 Parquet columns
MAX_SEED = 2**63 - 1
#: `traces synth -n`: ten times the largest public trace (Philly, ~117k jobs) is far beyond any study
MAX_SYNTH_JOBS = 10_000_000


def check_seed(seed: int, field: str = "--seed") -> int:
    if not 0 <= int(seed) <= MAX_SEED:
        raise InputError.at(field=field, expected=f"an integer in [0, {MAX_SEED}]", got=seed)
    return int(seed)


def check_count(value: int | None, field: str, minimum: int = 1, maximum: int | None = None) -> int | None:
    """An optional integer count within [minimum, maximum] (the bound is named in the message)."""
    if value is None:
        return None
    if int(value) < minimum or (maximum is not None and int(value) > maximum):
        rng = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
        raise InputError.at(field=field, expected=f"an integer {rng}", got=value)
    return int(value)


def check_finite(value: float, field: str, *, minimum: float | None = None, source: object = None,
                 row: object = None) -> float:
    """A finite float (no inf/nan), at least `minimum` when given."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError.at(source, row=row, field=field, expected="a number", got=value) from None
    if not math.isfinite(v):
        raise InputError.at(source, row=row, field=field, expected="a finite number", got=value)
    if minimum is not None and v < minimum:
        raise InputError.at(source, row=row, field=field, expected=f"a number ≥ {minimum:g}", got=value)
    return v


def check_costs(costs: str, field: str = "--costs") -> str:
    """A preset name passes through (the simulator checks it); a number must be finite seconds ≥ 0."""
    try:
        float(costs)
    except ValueError:
        return costs
    check_finite(costs, field, minimum=0.0)
    return costs
