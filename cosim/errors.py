"""Errors a user sees.

The CLI (`cli/app.py`) wraps every command so a `CosimError` prints as one line on stderr
(`error: ...`) and exits with code 2 without a traceback, whichever command raised it.
Library callers catch it like any exception. Messages name the file, the row/record and the field, and say what
was expected (`InputError.at` builds that shape).
"""

from __future__ import annotations

import sys

#: characters that `str.splitlines` breaks a line at; a value quoted from a user's file may hold any of them
_LINE_BREAKS = {ch: ch.encode("unicode_escape").decode("ascii")
                for ch in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
_LINE_BREAK_TABLE = str.maketrans(_LINE_BREAKS)


def one_line(message: str) -> str:
    """`message` with every line break written as its escape (`\\n`), so that it prints as one line."""
    return message.translate(_LINE_BREAK_TABLE)


class CosimError(Exception):
    """A problem with the user's input or request, reported in one line (exit code 2).

    The message is kept to one line whatever it quotes: a key or value from a user's file that holds a
    line break is shown with the break escaped (`\\n`).
    """

    exit_code = 2

    def __init__(self, message: str):
        message = one_line(str(message))
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
