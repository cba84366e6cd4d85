"""Root of the `cosim` CLI.

Every command module exposes `register(app)`; this file only assembles them, so adding a
command group touches one line here. Command modules import heavy packages inside the
command functions so `cosim --help` stays fast. Errors derived from `cosim.errors.CosimError`
print one line and exit with code 2.
"""

from __future__ import annotations

import errno
import functools
import importlib
import logging

import typer

from cosim import __version__
from cosim.errors import CosimError

#: command modules, in help order
COMMAND_MODULES = (
    "cli.simulate_cmd",
    "cli.traces_cmd",
    "cli.clusters_cmd",
    "cli.net_cmd",
    "cli.policies_cmd",
    "cli.calibrate_cmd",
    "cli.validate_cmd",
    "cli.sweep_cmd",
    "cli.report_cmd",
    "cli.reproduce_cmd",
    "cli.bench_cmd",
)

app = typer.Typer(
    name="cosim",
    help="Network-aware co-simulator for GPU clusters training deep-learning jobs.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cosim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress details to stderr."),
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


#: OS errors that are about the user's files or disk, not a bug: one line, exit 2, no traceback
USER_OS_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR,
                  errno.ENAMETOOLONG, errno.EFBIG, errno.EMFILE}

_USER_OS_TEXT = ("No space left on device", "Permission denied", "Read-only file system", "Disk quota exceeded")


def _guarded(callback):
    """Turn a CosimError (or a disk-full/permission OSError) raised by a command into one line on stderr, exit 2."""

    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except CosimError as exc:
            typer.echo(f"error: {exc.format_message()}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except OSError as exc:
            text = str(exc)
            if exc.errno not in USER_OS_ERRORS and not any(m in text for m in _USER_OS_TEXT):
                raise  # pyarrow's IO errors carry no errno, only the OS message
            where = exc.filename if exc.filename is not None else "output"
            typer.echo(f"error: {where}: {exc.strerror or text.splitlines()[0]}", err=True)
            raise typer.Exit(2) from None

    return run


def _guard_all(group: typer.Typer) -> None:
    """Wrap every command of `group` and its sub-groups (done once, after registration)."""
    for cmd in group.registered_commands:
        if cmd.callback is not None and not getattr(cmd.callback, "_cosim_guarded", False):
            cmd.callback = _guarded(cmd.callback)
            cmd.callback._cosim_guarded = True  # type: ignore[attr-defined]
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _guard_all(sub.typer_instance)


for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as exc:  # a command group not written yet
        if exc.name != _name:
            raise
        continue
    _mod.register(app)
_guard_all(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
