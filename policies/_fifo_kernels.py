"""numba kernel of FIFO's round (`policies.fifo.Fifo.decide`): the round's begin, the walk's
order and the walk's first run in one call, as Tiresias' `_round_kernel` does for its round.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from policies import _round_state_kernels as RS
from policies import _walk_kernels as WK
from simcore.api import JobState

_QUEUED = int(JobState.QUEUED)


@njit(cache=True, no_cfunc_wrapper=True)
def arrival_sorted(jobs, submit):  # pragma: no cover - compiled
    """`jobs` (job indices, ascending) by submit time, ties by job index: FIFO's arrival order,
    the one sort behind `fifo_round` and `fifo.arrival_order`. A stable sort of the ascending
    indices by time gives the index tie-break without a second key."""
    t = np.empty(jobs.shape[0])
    for i in range(jobs.shape[0]):
        t[i] = submit[jobs[i]]
    return jobs[np.argsort(t, kind="mergesort")]


@njit(cache=True, no_cfunc_wrapper=True)
def fifo_round(owner, online, running, active, state, submit, undecided, demand, type_req, alloc_count, memo, topo,
               ibuf, masks, node_free, nfree, order, klass, keys, kfit):  # pragma: no cover - compiled
    """FIFO's round up to the first job Python must handle, in one call:

    - the round's begin (`_round_state_kernels.round_begin`: the masks, `undecided` set for the
      `running` jobs, the per-node counts `nfree`), the jobs to check one by one (`slow_jobs`),
      the failed-shape memo emptied and no victim candidates (`counts[3] = -2`: FIFO preempts
      nobody), as `Round.__init__` and `Round.walk` set them up;
    - the walk's order written into `order`: the running jobs (ascending), which the walk keeps
      as they are, then the queued jobs of `active` (state QUEUED) by submit time, ties by job
      index (`arrival_sorted`, the order `fifo.arrival_order` gives FIFO-backfill);
    - the walk's first run (`_walk_kernels.walk_run`, head-of-line blocking) on that order with
      the walk's default inputs (`klass` zeros, `keys` -1, `kfit` the kernel-placer mask: all True
      where `consolidate` applies, else all False), each as long as `active` at least.

    Returns (`round_begin`'s count, the number of positions n of the order, the position the
    walk stopped at), for `Round(begun=)` and `Round.walk(order[:n], ran=)`. Keeping the running
    jobs in the walk instead of before it changes nothing: they come first, hold GPUs (so they
    never end a blocking walk), and a kept job's GPUs stay unusable to every placement either way.
    """
    n_jobs = undecided.shape[0]
    n_gpus = owner.shape[0]
    counts, memo_n, kept, rec, rel, run_rev, run_cls, rank = WK.walk_buffers(ibuf, n_jobs, n_gpus)
    n_off = RS.round_begin(owner, online, running, alloc_count, undecided, masks[0], masks[1], node_free, topo[0],
                           nfree, WK.touched_part(ibuf, n_gpus))
    slow = RS.slow_jobs(owner, online, n_jobs, n_off)
    memo_n[0] = 0
    counts[3] = -2
    nr = running.shape[0]
    for i in range(nr):
        order[i] = running[i]
    queue = np.empty(active.shape[0], np.int64)
    nq = 0
    for i in range(active.shape[0]):
        j = active[i]
        if state[j] == _QUEUED:
            queue[nq] = j
            nq += 1
    order[nr:nr + nq] = arrival_sorted(queue[:nq], submit)
    n = nr + nq
    start = n - n  # an int64, not the literal 0 (a literal compiles a second walk_run)
    blocking = n >= 0  # True, not a literal, for the same reason
    i = WK.walk_run(order[:n], start, undecided, slow, klass[:n], np.int64(1), demand, type_req, alloc_count,
                    keys[:n], memo, online, owner, masks, nfree, kfit[:n], blocking, topo, ibuf)
    return n_off, n, i
