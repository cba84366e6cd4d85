"""The live progress bar of `cosim simulate` (policies × jobs finished), drawn only where a
console shows it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _console_shows_live() -> bool:
    """Whether rich would draw the bar: on a terminal or in Jupyter. Elsewhere (a pipe, a log)
    the transient bar prints nothing, yet its refresh thread renders it ten times a second."""
    from rich.console import Console

    console = Console()
    return console.is_terminal or console.is_jupyter


class RunProgress:
    """A rich progress bar (stderr) over policies × jobs finished; no-op when disabled."""

    def __init__(self, enabled: bool, num_policies: int, num_jobs: int) -> None:
        self.p = None
        if enabled and _console_shows_live():
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.p = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                              TimeElapsedColumn(), transient=True)
            self.p.start()
        self.num_jobs = num_jobs
        self.tasks: dict[str, Any] = {}

    def callback(self, name: str) -> Callable[[float, int, int], None] | None:
        if self.p is None:
            return None
        self.tasks[name] = self.p.add_task(name, total=self.num_jobs)
        return lambda now, done, total: self.p.update(self.tasks[name], completed=done)

    def done(self, name: str) -> None:
        if self.p is not None and name in self.tasks:
            self.p.update(self.tasks[name], completed=self.num_jobs)

    def close(self) -> None:
        if self.p is not None:
            self.p.stop()
