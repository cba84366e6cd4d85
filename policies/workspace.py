"""Per-policy scratch and per-job shapes of the round toolkit (`policies.round`).

`Workspace` holds the trace-sized arrays a policy instance reuses across its rounds (nothing
process-wide); `demands` the GPUs each job asks for; `shape_key` the failed-shape memo key.
"""

from __future__ import annotations

import numpy as np

from policies import _round_state_kernels as RS
from policies import _walk_kernels as WK
from policies import placement as P
from simcore.api import ClusterView


def demands(view: ClusterView) -> np.ndarray:
    """GPUs each job asks for: the requested count clipped to [min_gpus, max_gpus]."""
    j = view.jobs
    return np.clip(j.num_gpus, j.min_gpus, np.maximum(j.min_gpus, j.max_gpus)).astype(np.int64)


def shape_key(demand, gpu_type_req):
    """The failed-shape memo key of a (GPU count, required type) pair, for ints or int arrays
    (`Round.failed_before`): `_round_state_kernels.shape_key`, the one encoding, which the walk
    kernel and Tiresias' walk inputs use too."""
    if isinstance(demand, np.ndarray) or isinstance(gpu_type_req, np.ndarray):
        return RS.shape_key(np.asarray(demand, np.int64), np.asarray(gpu_type_req, np.int64))
    return int(RS.shape_key(int(demand), int(gpu_type_req)))


class Workspace:
    """Scratch a policy instance reuses across its rounds: the undecided mask (J bools, all
    False between rounds), the kernels' J-sized scratch (`mark`, all False; `rank`, all -1;
    each kernel returns them as it found them), the demands of the current request arrays,
    and the kernel placer's topology arrays of the current cluster.

    Owned by one policy instance, never shared between processes or policies, and used by
    one live round at a time (a policy that wants a trial round beside its real one makes it
    with `Round(view)`, which brings its own workspace). A round abandoned before
    `decision()` keeps its mask (the next round allocates a fresh one).
    """

    def __init__(self) -> None:
        self._dem_src: tuple = (None, None, None)
        self._dem: np.ndarray | None = None
        self._free: list[np.ndarray] = []
        self._mark: np.ndarray | None = None
        self._rank: np.ndarray | None = None
        self._topo_of = None
        self._topo: tuple | None = None
        self._walk: tuple | None = None
        self._defaults = (_NO_I64, _NO_I64, _NO_BOOL, _NO_BOOL)  # `walk_defaults`
        #: the failed-shape memo of the current round (`Round.failed_before`): keys, count
        self.memo = np.empty(64, np.int64)
        self.memo_n = np.zeros(1, np.int64)

    def walk_state(self, c, n_jobs: int) -> tuple:
        """The round's arrays besides the undecided mask, built once per (cluster, number of
        jobs): (cluster, J, whether the cluster has one GPU type — where the walk kernel's
        placer applies —, that placer's topology arguments, the walk's integer buffer `ibuf`,
        the GPU masks `masks` (claimed, held: `round_begin` fills them in place each round;
        the kernel placer's scratch pool), then views: counts, memo length, kept jobs,
        placement records, released jobs, victim candidates, their classes, the `rank`
        scratch, claimed, held; the round's usable GPUs per node `nfree`, int64, which
        `round_begin` starts from `node_free(c)`; last the GPUs the rounds touched since the
        last begin (`_walk_kernels.touched_part`: count, ids; -1 until a begin lists them)). Kernels take `ibuf` and `masks` whole
        (`_walk_kernels.walk_buffers`). The failed-shape memo gets room
        for one shape per job (the walk kernel records while it has room;
        `Round.note_failure` grows it beyond)."""
        w = self._walk
        if w is None or w[0] is not c or w[1] != n_jobs:
            g_n = c.num_gpus
            ibuf = np.zeros(WK.walk_buffer_size(n_jobs, g_n), np.int64)
            # the kernels' own layout function, run as Python (slices: the same views): once per
            # run, loading its compiled form from numba's cache would cost ~3-4 ms for nothing
            parts = WK.walk_buffers.py_func(ibuf, n_jobs, g_n)
            parts[-1][:] = -1  # rank
            touched = WK.touched_part.py_func(ibuf, g_n)
            touched[0] = -1  # no list of touched GPUs yet: the first round's begin passes over all
            masks = np.zeros((3, g_n), bool)
            nfree = np.zeros(c.node_num_gpus.shape[0], np.int64)
            w = self._walk = (c, n_jobs, len(c.gpu_type_names) <= 1, self.kernel_topo(c), ibuf, masks,
                              *parts, masks[0], masks[1], nfree, touched)
            self.memo_n = parts[1]
            if self.memo.shape[0] <= n_jobs:
                self.memo = np.empty(n_jobs + 1, np.int64)
        return w

    @staticmethod
    def node_free(c) -> np.ndarray:
        """The cluster's usable GPUs per node as `round_begin` takes them: the engine's counts
        (`ClusterArrays.node_free`), or an empty array for a view built without them, whose
        round counts them from the GPU arrays."""
        f = c.node_free
        return _NO_COUNTS if f is None else f

    def walk_defaults(self, n: int) -> tuple:
        """The walk's default inputs for n positions (`Round.walk`): classes all 0, shape keys
        all -1, kernel-placer masks all False and all True; slices of arrays kept across
        rounds (grown as needed), which callers must not modify."""
        d = self._defaults
        if d[0].shape[0] < n:
            m = max(n, 2 * d[0].shape[0])
            d = self._defaults = (np.zeros(m, np.int64), np.full(m, -1, np.int64), np.zeros(m, bool), np.ones(m, bool))
        return d[0][:n], d[1][:n], d[2][:n], d[3][:n]

    def demands(self, view: ClusterView) -> np.ndarray:
        """`demands(view)`, recomputed only when the engine hands over different request arrays
        (it reuses one `JobsView` a run). Callers must not modify the result."""
        j = view.jobs
        s = self._dem_src
        if s[0] is not j.num_gpus or s[1] is not j.min_gpus or s[2] is not j.max_gpus:
            self._dem_src = (j.num_gpus, j.min_gpus, j.max_gpus)
            self._dem = demands(view)
        return self._dem

    def take_mask(self, n: int) -> np.ndarray:
        """An all-False bool array of n entries (the round's undecided mask)."""
        while self._free:
            a = self._free.pop()
            if a.shape[0] == n:
                return a
        return np.zeros(n, bool)

    def give_back(self, a: np.ndarray) -> None:
        """Return a mask taken with `take_mask`, all False again."""
        self._free.append(a)

    def mark(self, n: int) -> np.ndarray:
        if self._mark is None or self._mark.shape[0] != n:
            self._mark = np.zeros(n, bool)
        return self._mark

    def rank(self, n: int) -> np.ndarray:
        """The J-sized scratch of `preempt_plan` (all -1 between calls)."""
        if self._rank is None or self._rank.shape[0] != n:
            self._rank = np.full(n, -1, np.int64)
        return self._rank

    def kernel_topo(self, c) -> tuple:
        """The topology arguments of the walk kernel's placer (`consolidate`; used only on a
        one-type cluster), built once per cluster."""
        if self._topo_of is not c:
            self._topo_of = c
            self._topo = (c.gpu_node, c.gpu_type, c.node_first_gpu, c.node_num_gpus, c.node_leaf, c.leaf_pod,
                          P._num_leaves(c), P._num_pods(c))
        return self._topo


def demands_cached(view: ClusterView, workspace: Workspace | None = None) -> np.ndarray:
    """`demands(view)` through a policy's `Workspace` (computed afresh without one)."""
    return workspace.demands(view) if workspace is not None else demands(view)


_NO_I64 = np.zeros(0, np.int64)
_NO_BOOL = np.zeros(0, bool)
_NO_COUNTS = np.zeros(0, np.int32)
_NO_COUNTS.flags.writeable = False  # typed as the engine's read-only counts: one compiled `round_begin`
