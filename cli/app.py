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


#: command name → the module registering it, for commands a process may register alone
#: (`_modules_for`): `cosim simulate …` then imports and builds one command, not all of them
SOLO_COMMANDS = {"simulate": "cli.simulate_cmd"}


def _modules_for(argv: list[str]) -> tuple[str, ...]:
    """The command modules this process needs: the one module of `SOLO_COMMANDS[argv[1]]`
    when the process was started as `cosim <that command> …`; anything else (`cosim --help`,
    options before the command, another command, in-process use) registers every module.

    A cached `cosim simulate` otherwise spends ≈ 0.03 s CPU importing the other ten command
    modules and building their click commands, which it never runs (part of every command's whole-process time)."""
    import os

    prog = os.path.basename(argv[0]) if argv else ""  # the `cosim` script, or `python -m cli.app`
    if prog in ("cosim", "app.py") and len(argv) > 1 and argv[1] in SOLO_COMMANDS:
        return (SOLO_COMMANDS[argv[1]],)
    return COMMAND_MODULES


def _register(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command group not written yet
            if exc.name != name:
                raise
            continue
        mod.register(app)
    _guard_all(app)


_register(_modules_for(__import__("sys").argv))


def main() -> None:
    """The `cosim` entry point: run the command, then leave without tearing the interpreter down.

    Python's own shutdown clears every module and frees every object one by one; after a
    `simulate` (≈ 1,300 modules, numba's compiled libraries, llvmlite's objects) that took
    ≈ 0.35 s of CPU, about a sixth of a warm run, for memory the OS takes back anyway. So once
    the command has finished, and no other thread is running, this runs what an ordinary exit
    runs that has an effect outside the process — the `atexit` handlers (temporary folders,
    multiprocessing and Ray clean-up, logging's flush) and flushing stdout/stderr — and
    ends the process with `os._exit`. An exception that escapes the command takes the ordinary
    path (its traceback); so does in-process use (`app(...)`, typer's test runner).

    Before the command, the process takes the runtime settings of a simulating process
    (`cosim.process_settings`: the garbage collector's and glibc malloc's thresholds).
    """
    from cosim import process_settings

    process_settings.apply()
    try:
        app()
    except SystemExit as exc:
        _exit_now(exc.code)
        raise
    _exit_now(0)


def _exit_now(code) -> None:
    """End the process with `code` (SystemExit's meaning) after the atexit handlers and a flush;
    returns (ordinary exit) when another thread still runs or `code` is not an int or None."""
    import threading

    if threading.active_count() > 1 or not (code is None or isinstance(code, int)):
        return
    import atexit
    import os
    import sys

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe (`cosim … | head`): nothing to deliver
            pass
    os._exit(code or 0)


if __name__ == "__main__":
    main()
