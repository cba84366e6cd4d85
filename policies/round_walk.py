"""The walk of a scheduling round (`policies.round.Round.walk`): "for j in order: keep j if it
runs, else place it, preempting running jobs of a strictly higher class", in one numba kernel.

`RoundWalk` holds the walk's methods of `Round` (which inherits them): `walk` drives the walk
kernel (`policies._walk_kernels.walk_run`) and yields the jobs that need Python, `take_walk`
takes each kernel run's keeps, placements and preemptions into the round, `victims` and
`walk_failed` serve the caller of a yielded job. They read and change the round state that
`Round` sets up (see `policies.round`).
"""

from __future__ import annotations

import numpy as np

from policies import _walk_kernels as WK
from simcore.api import Allocation


class RoundWalk:
    """The walk's methods of `policies.round.Round` (mixed in: they use its round state)."""

    _walk_key = -1  # shape of the job `walk` yielded last
    _walk_victims: tuple | None = None  # (candidates, their classes, the job's class)

    def walk(self, order: np.ndarray, klass: np.ndarray | None = None, keys: np.ndarray | None = None,
             num_classes: int | None = None, kernel: np.ndarray | bool = False, preempt: bool = False,
             ran: int = -1, blocking: bool = False):
        """Walk `order` (all jobs of the round in priority order) doing "for j in order: keep j
        if it runs, else place it (preempting, with `preempt`, running jobs of a strictly
        higher class, lowest priority first)", yielding the jobs Python must handle; the
        caller `keep`s or places each (with `victims=r.victims`) before the walk goes on.

        The scan is one numba kernel (`_walk_kernels.walk_run`): it keeps running jobs as they
        are (all but the `slow` ones), passes over every job that holds nothing and cannot be
        placed now — its shape (`keys`, one int per position, or None) already failed on this
        pool (a failed attempt of a yielded job is reported with `walk_failed`), or the free
        GPUs plus all GPUs of the running jobs it may preempt are fewer than it needs — and
        places the jobs whose placer is the kernel one (`kernel`: per position, or for all;
        only honoured on a one-type cluster, where it means `consolidate` with no veto or tier
        cap), preempting as above. `klass[i]` is the preemption class of position i (default
        all zeros: no victims); `num_classes` (optional) an upper bound on `klass` + 1. Both
        skips are exact: the count bound is checked first by every placement and preemption
        attempt (before any random draw). So the walk costs Python time per job that needs
        Python only.

        `blocking` (head-of-line blocking, FIFO's rule): the first job that holds nothing and
        is passed over or not placed ends the walk; a caller whose yielded job is not placed
        stops iterating (no later job starts).

        `ran` (≥ 0): the caller's kernel, which began this round (`Round(begun=)`), already ran
        `walk_run` from position 0 on this round's arrays and the workspace's `walk_state`
        buffers, with these very inputs (int64 `order`, `klass`, `keys`; a bool `kernel` array
        already cleared off a one-type cluster; `num_classes` given; the memo emptied; with
        `preempt`, the victim candidates — the undecided jobs of `order` from the last position
        to the first, with their classes — written to buffers 8 and 9 and their number to
        `counts[3]`, as the walk kernel's first call would), and it returned `ran`: the walk
        takes its outcome instead of making that call. The same kernel, run from the policy's
        own per-call kernel (Tiresias), so a round that Python need not see costs one dispatch.
        """
        n = order.shape[0]
        if n == 0:
            return
        und = self.undecided
        ws = self._ws
        w = self._w
        counts, run_rev, run_cls = w[6], w[11], w[12]
        if ran >= 0:
            i = ran
        else:
            order, klass, keys, ncls, kfit = self._walk_inputs(order, klass, keys, num_classes, kernel, w[2])
            counts[3] = -1 if preempt else -2  # victim candidates: listed by the kernel's first call; -2: none
            i = WK.walk_run(order, 0, und, self._slow, klass, ncls, self.dem, self.view.jobs.gpu_type_req,
                            self.view.jobs.alloc_count, keys, ws.memo, self.online, self.owner, w[5], w[16], kfit,
                            blocking, w[3], w[4])
        while True:
            nrun = self.take_walk()
            if i >= n:
                return
            if ran >= 0:  # the later runs take the inputs as `walk_run` needs them
                order, klass, keys, ncls, kfit = self._walk_inputs(order, klass, keys, num_classes, kernel, w[2])
                ran = -1
            self._walk_key = int(keys[i])
            if preempt:
                self._walk_victims = (run_rev[:nrun].copy(), run_cls[:nrun].copy(), int(klass[i]))
            yield int(order[i])
            i = WK.walk_run(order, i + 1, und, self._slow, klass, ncls, self.dem, self.view.jobs.gpu_type_req,
                            self.view.jobs.alloc_count, keys, ws.memo, self.online, self.owner, w[5], w[16], kfit,
                            blocking, w[3], w[4])

    def take_walk(self) -> int:
        """Take the outcome of the walk kernel's last run (`walk_run`) from the workspace's
        buffers: its kept jobs, placements and preempted jobs; returns the number of victim
        candidates. `walk` calls it after each run; a policy whose own kernel ran the whole
        walk (`walk(ran=)` with nothing left for Python) may call it instead of `walk`."""
        w = self._w
        nk, nrec, nrel, nrun = w[6].tolist()
        self._n_und -= nk + nrel
        if nk:
            ks = w[8][:nk].copy()
            self._kept.append(ks)
            self._pending_arr.append(ks)
        if nrec:  # the kernel's placements (`_record` of a started job, batch kept), inlined
            rl = w[9][:nrec].tolist()
            cur, alloc, alloc_n, started = self._current, self.alloc, self._alloc_n, self.started
            x = 0
            while x < nrec:
                j = rl[x]
                m = rl[x + 1]
                e = x + 2 + m
                g = tuple(rl[x + 2:e])
                a = cur.get(j)
                if a is None or a.gpus != g:
                    a = _new(Allocation)  # `Allocation(g)` (ints already) without its __post_init__
                    a.__dict__.update(gpus=g, batch_size=None)
                alloc[j] = a
                alloc_n[j] = m
                started.append(j)
                x = e
        if nrel:
            self.released.extend(w[10][:nrel].tolist())
        return nrun

    def _walk_inputs(self, order, klass, keys, num_classes, kernel, one_type: bool) -> tuple:
        """`walk`'s inputs as `walk_run` takes them: int64 order, classes and shape keys (-1:
        none), the number of classes, and the per-position kernel-placer mask (all False off
        a one-type cluster). Inputs left at their defaults are slices of the workspace's
        constant arrays (`Workspace.walk_defaults`: the kernel only reads them)."""
        n = order.shape[0]
        order = _i64(order)
        zeros, none, no, yes = self._ws.walk_defaults(n)
        if klass is None:
            klass = zeros
            ncls = 1
        else:
            klass = _i64(klass)
            ncls = int(klass.max()) + 1 if num_classes is None else int(num_classes)
        keys = none if keys is None else _i64(keys)
        if kernel is False or not one_type:
            kfit = no
        elif kernel is True or type(kernel) is np.bool_:
            kfit = yes
        elif kernel.dtype == np.bool_ and kernel.flags.c_contiguous:
            kfit = kernel
        else:
            kfit = np.ascontiguousarray(kernel, bool)
        return order, klass, keys, ncls, kfit

    def victims(self) -> np.ndarray:
        """The victims of the job `walk` just yielded (running at the round's start, of a
        strictly higher class, lowest priority first); empty for a walk without `preempt`."""
        if self._walk_victims is None:
            return _NO_INT
        rev, cls, c = self._walk_victims
        return rev[cls > c]

    def walk_failed(self) -> None:
        """The job `walk` just yielded found no placement: skip its shape until the pool grows."""
        if self._walk_key >= 0:
            self.note_failure(self._walk_key)


def _i64(a) -> np.ndarray:
    """`a` as a contiguous int64 array (itself when it is one already: no call per walk)."""
    if type(a) is np.ndarray and a.dtype == np.int64 and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a, np.int64)



_new = object.__new__
_NO_INT = np.zeros(0, np.int64)
