"""Checks of command-line values done before any work, each failing as one named line.

The loaders check their files; these are the options a user types (`--seed -1`, `--costs -500`,
`-n 0`), which used to surface as a numpy ValueError deep in a run or be silently accepted.
"""

from __future__ import annotations

import math
from pathlib import Path

from cosim.errors import InputError

#: numpy's generators (default_rng) take any integer ≥ 0; the seed is stored in int64 Parquet columns
MAX_SEED = 2**63 - 1
#: `traces synth -n`: ten times the largest public trace (Philly, ~117k jobs) is far beyond any study
MAX_SYNTH_JOBS = 10_000_000


#: the whitespace a number's text may carry around it: ASCII's, as `float` and `int` read it
_ASCII_SPACE = " \t\n\r\x0b\x0c"


def parse_number(value: object, field: str | None, *, source: object = None, row: object = None, integer: bool = False,
                 minimum: float | None = None, maximum: float | None = None) -> float | int:
    """One cell or option text as a number: ASCII digits only (Python's `float`/`int` read
    "٣٦٠٠" as 3600), finite, an integer when `integer` ("0.5" is not node 0), within
    [minimum, maximum]. Anything else is one `InputError` naming source, row and field."""
    what = "an integer" if integer else "a number"
    lo, hi = (None if x is None else f"{x:,}" if isinstance(x, int) else f"{x:g}" for x in (minimum, maximum))
    if lo is not None and hi is not None:
        what += f" in [{lo}, {hi}]"
    elif lo is not None:
        what += f" ≥ {lo}"

    def bad() -> InputError:
        return InputError.at(source, row=row, field=field, expected=what + " in ASCII digits", got=value)

    if isinstance(value, bool):
        raise bad()
    if isinstance(value, (int, float)) or type(value).__module__ == "numpy":
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            raise bad() from None
    else:
        text = str(value).strip(_ASCII_SPACE)  # str.strip() also drops \x1c-\x1f and non-ASCII spaces
        if not text or not text.isascii() or "_" in text:  # int("1_000") is 1000; a file means no such thing
            raise bad()
        if integer and text.lstrip("+-").isdigit():  # exactly, not through a float (seeds up to 2**63)
            v = int(text)
        else:
            try:
                v = float(text)
            except (ValueError, OverflowError):
                raise bad() from None
    if isinstance(v, float) and (not math.isfinite(v) or (integer and v != int(v))):
        raise bad()
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise bad()
    return int(v) if integer else v


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
        float(costs)  # reads "٣٦٠٠" too: parse_number then refuses it
    except ValueError:
        return costs
    parse_number(costs, field, minimum=0.0)
    return costs


def read_csv_columns(path: str | Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of a small CSV a user names (`--capacity`, `--load-series`) as text cells, each
    row a {column: text} of `columns`; the numbers are parsed by the caller with `parse_number`.

    A missing file, an empty one, ragged rows, non-UTF-8 bytes or a missing column is one
    `InputError` naming the file (and the row where there is one)."""
    import csv

    p = Path(path)
    want = ",".join(columns)
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise InputError.at(p, expected=f"an existing CSV file with columns {want}") from None
    except IsADirectoryError:
        raise InputError.at(p, expected=f"a CSV file with columns {want}, not a folder") from None
    except UnicodeDecodeError as exc:
        raise InputError.at(p, expected=f"a UTF-8 CSV with columns {want}",
                            detail=f"undecodable byte at offset {exc.start}") from None
    except (csv.Error, OSError) as exc:
        raise InputError.at(p, expected=f"a CSV file with columns {want}", detail=str(exc).splitlines()[0][:200]) \
            from None
    rows = [r for r in rows if any(c.strip() for c in r)]  # blank lines carry nothing
    if not rows:
        raise InputError.at(p, expected=f"a header line {want}", detail="the file is empty")
    header = [c.strip() for c in rows[0]]
    for col in columns:
        if col not in header:
            raise InputError.at(p, field=col, expected=f"columns {want}", got=",".join(header)[:80])
    at = [header.index(c) for c in columns]
    out = []
    for i, r in enumerate(rows[1:], start=1):
        if len(r) != len(header):
            raise InputError.at(p, row=i, expected=f"{len(header)} cells like the header", got=len(r))
        out.append({c: r[j] for c, j in zip(columns, at)})
    return out
