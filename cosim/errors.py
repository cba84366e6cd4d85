"""Errors a user sees.

`CosimError` is a `click.ClickException`, so the CLI prints it as one line on stderr and
exits with code 2 without a traceback, whichever command raised it. Library callers catch
it like any exception. Messages name the file, the row/record and the field, and say what
was expected (`InputError.at` builds that shape).
"""

from __future__ import annotations

import sys

import click


class CosimError(click.ClickException):
    """A problem with the user's input or request, reported in one line (exit code 2)."""

    exit_code = 2

    def show(self, file=None) -> None:  # one line, no usage block, no rich panel
        click.echo(f"error: {self.format_message()}", file=file or sys.stderr)


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
