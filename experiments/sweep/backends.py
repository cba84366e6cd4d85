"""Where cells run: in this process, in a spawned process pool, or as Ray tasks.

Every backend is a generator of `(cell, result)` pairs in completion order; the driver
does the bookkeeping (rows, summary, progress) so all backends record results the same
way. Work items are `(cell, trace_spec)`; `root` is the sweep folder.

- `inprocess` (one worker): no pickling, no start-up cost; what tests and `--workers 1` use.
- `local`: `concurrent.futures.ProcessPoolExecutor` on the *spawn* start method (safe with
  numba, threads and macOS). Workers commit their own cell folders. A worker that dies
  (out of memory, a crash in native code) breaks the pool: the cells that were in flight are
  retried once in a fresh pool and recorded as failed if the pool breaks again. Workers stop
  when the sweep's main process dies (`watch_parent`), so a killed sweep leaves no process
  committing cells into a folder whose lock is gone.
- `ray`: the same `run_cell` as a Ray task per cell. Workers return the cell's files as
  bytes and the driver commits them, so workers on other hosts need no shared filesystem
  for outputs (trace files given by path must still be readable there).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from cosim.errors import CosimError
from experiments.sweep.cell import Runner, coordinate_row, run_cell
from experiments.sweep.config import Cell
from experiments.sweep.store import commit_cell

log = logging.getLogger(__name__)

Work = tuple[Cell, str]
#: a cell may break the process pool this many times before it is recorded as failed
MAX_POOL_BREAKS = 2


def run_inprocess(work: Sequence[Work], root: Path, runner: Runner, write_decisions: bool,
                  metadata: Mapping[str, Any]) -> Iterator[tuple[Cell, dict]]:
    for cell, spec in work:
        yield cell, run_cell(cell, spec, str(root), runner, write_decisions, metadata)


def in_worker(fn: Callable[..., Any], *args) -> Any:
    """`fn(*args)` in a sweep worker, local or Ray: the worker first takes a simulating process's
    runtime settings, as `cosim` itself does (`cosim.process_settings`: GC and malloc thresholds;
    the malloc ones cut a Pollux cell's system time from ≈ 10 % of its CPU to ≈ 1 %). Idempotent
    and a few microseconds, so per task: Ray starts and reuses its workers itself."""
    from cosim.process_settings import apply

    apply()
    return fn(*args)


#: how often a local worker checks that the sweep's main process is alive (seconds)
PARENT_POLL_S = 0.5


def watch_parent(parent_pid: int) -> None:
    """A local pool worker's initializer: end this worker when the sweep's main process
    (`parent_pid`) dies, instead of running on and committing cells after its lock is gone.

    On Linux the kernel sends SIGKILL at once (`prctl(PR_SET_PDEATHSIG)`; the pool's processes
    are started by the main thread, which lives as long as the process); everywhere, a daemon
    thread also polls the parent every `PARENT_POLL_S` and exits the worker (`os._exit`) when
    it has gone. A cell cut short leaves only a scratch folder, which `--resume` removes."""
    import sys

    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):  # no prctl: the polling thread alone
            pass
    if os.getppid() != parent_pid:  # it died before the worker got here
        os._exit(1)

    def poll() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=poll, name="cosim-parent-watch", daemon=True).start()


def run_local(work: Sequence[Work], root: Path, runner: Runner, write_decisions: bool, metadata: Mapping[str, Any],
              workers: int) -> Iterator[tuple[Cell, dict]]:
    pending = list(work)
    breaks: dict[str, int] = {}
    ctx = multiprocessing.get_context("spawn")
    while pending:
        retry: list[Work] = []
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=watch_parent,
                                   initargs=(os.getpid(),))
        try:
            futures = {pool.submit(in_worker, run_cell, c, s, str(root), runner, write_decisions, dict(metadata)): (c, s)
                       for c, s in pending}
            not_done = set(futures)
            while not_done:
                done, not_done = wait(not_done, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: futures[f][0].index):
                    cell, spec = futures[fut]
                    try:
                        yield cell, fut.result()
                    except BrokenProcessPool as exc:
                        breaks[cell.cell_id] = breaks.get(cell.cell_id, 0) + 1
                        if breaks[cell.cell_id] >= MAX_POOL_BREAKS:
                            yield cell, _failed(root, cell, f"worker process died: {exc}", metadata)
                        else:
                            retry.append((cell, spec))
        finally:  # on Ctrl-C: drop queued cells, let running ones commit (or die), then stop
            pool.shutdown(wait=True, cancel_futures=True)
        pending = sorted(retry, key=lambda w: w[0].index)
        if pending:
            log.warning("a sweep worker died; retrying %d in-flight cells in a fresh pool", len(pending))


def _failed(root: Path, cell: Cell, error: str, metadata: Mapping[str, Any]) -> dict:
    row = coordinate_row(cell)
    row.update(status="error", error=error, wall_s=float("nan"))
    commit_cell(root, cell.cell_id, row, None, metadata)
    return {"row": row}


def import_ray():
    """Import ray or stop with the install hint (ray is the optional `cosim[ray]` extra)."""
    try:
        import ray
    except ImportError:
        raise CosimError("the ray backend needs Ray: pip install 'cosim[ray]'") from None
    return ray


def run_ray(work: Sequence[Work], root: Path, runner: Runner, write_decisions: bool, metadata: Mapping[str, Any],
            address: str | None, workers: int | None) -> Iterator[tuple[Cell, dict]]:
    """Cells as Ray tasks; joins the cluster at `address`, or reuses/starts a local instance."""
    ray = import_ray()
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kwargs["address"] = address
        elif workers:
            kwargs["num_cpus"] = workers
        try:
            ray.init(**kwargs)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise CosimError(f"cannot connect to Ray at {address or 'a local instance'}: {exc}") from None
    remote = ray.remote(num_cpus=1, max_retries=1)(in_worker)
    meta = dict(metadata)
    refs = {remote.remote(run_cell, c, s, None, runner, write_decisions, meta): c for c, s in work}
    not_done = list(refs)
    try:
        while not_done:
            done, not_done = ray.wait(not_done, num_returns=1)
            for ref in done:
                cell = refs[ref]
                try:
                    result = ray.get(ref)
                except Exception as exc:  # the task itself died (worker crash): record, go on
                    yield cell, _failed(root, cell, f"ray task failed: {type(exc).__name__}: {exc}", metadata)
                    continue
                commit_cell(root, cell.cell_id, result["row"], result.get("files") or {}, metadata)
                yield cell, {"row": result["row"]}
    finally:  # interrupted: cancel what has not finished (its results would have nowhere to go)
        for ref in not_done:
            ray.cancel(ref, force=True)
