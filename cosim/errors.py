"""Errors a user sees.

The CLI (`cli/app.py`) wraps every command so a `CosimError` prints as one line on stderr
(`error: ...`) and exits with code 2 without a traceback, whichever command raised it.
Library callers catch it like any exception. Messages name the file, the row/record and the field, and say what
was expected (`InputError.at` builds that shape).
"""

from __future__ import annotations

import sys


class CosimError(Exception):
    """A problem with the user's input or request, reported in one line (exit code 2)."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message

    def show(self, file=None) -> None:
        """Print the one-line form the CLI uses."""
        print(f"error: {self.message}", file=file or sys.stderr)


class InputError(CosimError):
    """Bad input data: names where (file, row, field) and what was expected."""

    @classmethod
    def at(
        cls,
        file: object = None,
        *,
        row: object = None,
        field: str | None = None,
        expected: str | None = None,
        got: object = None,
        detail: str | None = None,
    ) -> "InputError":
        where = []
        if file is not None:
            where.append(str(file))
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        parts = [": ".join(where)] if where else []
        if expected is not None:
            msg = f"expected {expected}"
            if got is not None:
                msg += f", got {got!r}"
            parts.append(msg)
        if detail:
            parts.append(detail)
        return cls(": ".join(parts) if parts else "invalid input")


class UnknownNameError(CosimError):
    """A name (policy, cluster preset, model, format …) that is not registered."""

    def __init__(self, kind: str, name: str, valid: list[str] | tuple[str, ...]):
        self.kind, self.name, self.valid = kind, name, tuple(valid)
        super().__init__(f"unknown {kind} '{name}'; valid: {', '.join(sorted(valid))}")


class PolicyError(CosimError):
    """A policy returned an invalid decision or raised; names the policy, job and time."""
