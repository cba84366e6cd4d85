"""Parsing of sizes and durations given by users ("100MB", "1GiB", "8h", "90s")."""

from __future__ import annotations

import math
import re

from cosim.errors import InputError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "k": 10**3, "m": 10**6, "g": 10**9,
}
_TIME_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*"


def parse_bytes(text: str | int | float, field: str = "size") -> float:
    """'100MB' → 1e8, '1GiB' → 2**30, '4096' → 4096. Decimal units are powers of 10."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(_NUM, str(text))
        unit = m.group(2).lower() if m else None
        if not m or unit not in _SIZE_UNITS:
            raise InputError.at(field=field, expected="a size like 4096, 100MB or 1GiB", got=text)
        value = float(m.group(1)) * _SIZE_UNITS[unit]
    if not math.isfinite(value) or value < 0:  # "1e400MB" overflows to inf
        raise InputError.at(field=field, expected="a finite non-negative size", got=text)
    return value


def parse_seconds(text: str | int | float, field: str = "duration") -> float:
    """'8h' → 28800, '30m' → 1800, '45' → 45 (seconds)."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(_NUM, str(text))
        unit = m.group(2).lower() if m else None
        if not m or unit not in _TIME_UNITS:
            raise InputError.at(field=field, expected="a duration like 45, 30m, 8h or 2d", got=text)
        value = float(m.group(1)) * _TIME_UNITS[unit]
    if not math.isfinite(value) or value < 0:  # "1e400h" overflows to inf
        raise InputError.at(field=field, expected="a finite non-negative duration", got=text)
    return value
