"""Integer and number options read in ASCII digits only.

click's INT and FLOAT types call Python's `int`/`float`, which read "٣٦٠٠" (Arabic-Indic
digits) or "３" (full-width) as numbers and "1_000" as 1000. Every numeric option of the CLI
takes these types instead (`click_type=ASCII_INT`), parsed by `cosim.validate.parse_number`,
the one parser the CSV readers use too; anything else is click's usual one-line usage error.

The types derive from the `ParamType` of the click that typer runs on: recent typer releases
carry their own copy of click (`typer._click`), earlier ones use the `click` package;
`typer.BadParameter` is that click's own class, so its module names the package. A type of
that same click is what typer's options take as they are: their help shows `<integer>` /
`<float>`, and a `cosim simulate` does not import a second click (≈ 0.01 s of its CPU).
"""

from __future__ import annotations

import importlib

import typer

from cosim.errors import InputError
from cosim.validate import parse_number

#: `types` of the click package typer runs on (`typer._click.types`, or `click.types` before typer's own copy)
_CLICK_TYPES = importlib.import_module(typer.BadParameter.__module__.rpartition(".")[0] + ".types")


class AsciiNumber(_CLICK_TYPES.ParamType):
    def __init__(self, integer: bool) -> None:
        self.integer = integer
        self.name = "integer" if integer else "float"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value) if self.integer else float(value)
        try:
            return parse_number(value, None, integer=self.integer)
        except InputError as exc:
            raise typer.BadParameter(exc.message, ctx=ctx, param=param) from None


ASCII_INT = AsciiNumber(integer=True)
ASCII_FLOAT = AsciiNumber(integer=False)
