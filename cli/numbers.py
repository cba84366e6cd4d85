"""Integer and number options read in ASCII digits only.

click's INT and FLOAT types call Python's `int`/`float`, which read "٣٦٠٠" (Arabic-Indic
digits) or "３" (full-width) as numbers and "1_000" as 1000. Every numeric option of the CLI
takes these types instead (`click_type=ASCII_INT`), parsed by `cosim.validate.parse_number`,
the one parser the CSV readers use too; anything else is click's usual one-line usage error.
"""

from __future__ import annotations

import click
import typer

from cosim.errors import InputError
from cosim.validate import parse_number


class AsciiNumber(click.ParamType):
    def __init__(self, integer: bool) -> None:
        self.integer = integer
        self.name = "integer" if integer else "float"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value) if self.integer else float(value)
        try:
            return parse_number(value, None, integer=self.integer)
        except InputError as exc:
            # typer runs its own copy of click: its BadParameter is the usage error it prints
            raise typer.BadParameter(exc.message, ctx=ctx, param=param) from None


ASCII_INT = AsciiNumber(integer=True)
ASCII_FLOAT = AsciiNumber(integer=False)
