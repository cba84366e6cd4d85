"""`CommModel`: the cost of a collective for a job's placement, per gradient bucket, cached.

The engine calls, for every job placement::

    cost = comm.allreduce(gpus, grad_bytes, bucket_bytes)   # gpus: int array of GPU ids
    cost.seconds, cost.link_ids, cost.link_bytes              # → contention kernel

and may call it as often as it likes: three caches make repeated calls cheap.

1. *Result cache* keyed by (operation, the exact GPU id bytes, bytes, buckets, algorithm): a
   repeated query is a dict lookup and returns the same read-only `CollectiveCost` (a few µs).
2. *Placement cache* keyed by the GPU id bytes: shape + real link ids (one numba pass).
3. *Shape cache* keyed by the placement's shape signature (GPUs per node, per leaf, per pod,
   node types and uplink classes — `collectives.shape`): the α, β and per-link byte
   coefficients of every (algorithm, protocol). A new placement with a known shape costs only
   the numba shape pass and the bucket evaluation.

Buckets (DDP): every bucket is its own collective call and pays the per-call and per-step
latency, so a model with many small gradient tensors pays latency many times. `bucket_bytes`
may be an array (the sizes of the model's buckets; scaled so they sum to `nbytes`, which lets a
caller pass fp16 sizes with the same partition), a number (a bucket cap: ⌊nbytes/cap⌋ full
buckets and the remainder) or None (`CommParams.bucket_bytes`, 25 MiB).

Algorithm selection (``algorithm="auto"``; the call's argument wins over `CommParams.algorithm`,
which is used when the call says "auto"): like NCCL's tuner, for every bucket the model predicts
the time of every applicable (algorithm, protocol) pair — ring, double binary tree, hierarchical
× LL, LL128, Simple — and takes the fastest. Consequences: single-node placements use the ring
(trees and hierarchy need ≥ 2 nodes); small multi-node buckets use the tree or hierarchical
with LL (fewest latency-bound steps: log₂n or n instead of p); large buckets use ring or
hierarchical with Simple (full bandwidth). The reported algorithm is the one that took the
largest share of the time. ``multidim`` (ASTRA-sim style per-dimension reduce-scatter /
all-gather, `collectives.multidim`) models a simulator, not NCCL: it is used only when asked
for (the call or `CommParams.algorithm`, e.g. the `dally-3tier` preset), never by "auto". An explicit algorithm that does not apply (tree on one node) falls
back to the ring, and the result says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from collectives.algorithms import OPS, algorithm_costs, node_attributes, protocol_array, scalar_params
from collectives.params import ALGORITHMS, CommParams
from collectives.shape import Shape, placement_shape
from cosim.errors import InputError


@dataclass(frozen=True)
class CollectiveCost:
    """Cost of one collective call (all buckets). Arrays are read-only (results are cached).

    link_bytes[i]: bytes this call puts on link link_ids[i] in each direction (wire bytes,
    protocol overhead included) — the input to `collectives.contention`.
    bus_bandwidth_Bps: nccl-tests' bus bandwidth (all-reduce: S/t · 2(p−1)/p).
    """

    seconds: float
    algorithm: str
    link_ids: np.ndarray
    link_bytes: np.ndarray
    bus_bandwidth_Bps: float
    protocol: str = ""
    num_gpus: int = 0


@dataclass
class _ShapeCost:
    names: tuple[str, ...]
    alpha: np.ndarray      # [A, 3] seconds per call
    beta: np.ndarray       # [A, 3] seconds per byte
    wire: np.ndarray       # [3] wire bytes per payload byte
    coef: np.ndarray       # [A, K] bytes per message byte on each local link
    num_gpus: int


@njit(cache=True, no_cfunc_wrapper=True)
def _eval_buckets(alpha, beta, wire, only, sizes, mult, coef, ids):
    """Σ over buckets of min over (algorithm, protocol) of α + β·size; `only` ≥ 0 restricts to
    one algorithm. Returns (seconds, dominant algorithm, dominant protocol, link ids, wire bytes)
    with links that carry nothing dropped."""
    A, Pn = alpha.shape
    t_alg = np.zeros(A)
    b_alg = np.zeros(A)
    t_pro = np.zeros(Pn)
    total = 0.0
    for j in range(sizes.shape[0]):
        s = sizes[j]
        m = mult[j]
        if m <= 0.0 or s <= 0.0:
            continue
        best = 1e300
        ba = 0
        bp = 0
        for a in range(A):
            if only >= 0 and a != only:
                continue
            for p in range(Pn):
                t = alpha[a, p] + beta[a, p] * s
                if t < best:
                    best = t
                    ba = a
                    bp = p
        total += m * best
        t_alg[ba] += m * best
        t_pro[bp] += m * best
        b_alg[ba] += m * s * wire[bp]
    K = coef.shape[1]
    link = np.zeros(K)
    for a in range(A):
        if b_alg[a] > 0:
            for i in range(K):
                link[i] += b_alg[a] * coef[a, i]
    n = 0
    for i in range(K):
        if link[i] > 0:
            n += 1
    out_ids = np.empty(n, np.int32)
    out_bytes = np.empty(n)
    n = 0
    for i in range(K):
        if link[i] > 0:
            out_ids[n] = ids[i]
            out_bytes[n] = link[i]
            n += 1
    # np.argmax written out (first maximum, or the first NaN): numba's compiles two more
    # functions (0.2 s of a first run)
    if A == 0 or Pn == 0:
        raise ValueError("attempt to get argmax of an empty sequence")
    a_best = 0
    for a in range(1, A):
        if t_alg[a] > t_alg[a_best] or (np.isnan(t_alg[a]) and not np.isnan(t_alg[a_best])):
            a_best = a
    p_best = 0
    for p in range(1, Pn):
        if t_pro[p] > t_pro[p_best] or (np.isnan(t_pro[p]) and not np.isnan(t_pro[p_best])):
            p_best = p
    return total, a_best, p_best, out_ids, out_bytes


_PROTOCOL_NAMES = ("ll", "ll128", "simple")
_BUS_FACTOR = {"allreduce": lambda p: 2 * (p - 1) / p, "reduce_scatter": lambda p: (p - 1) / p,
               "all_gather": lambda p: (p - 1) / p, "broadcast": lambda p: 1.0,
               "all_to_all": lambda p: (p - 1) / p}


class CommModel:
    """Collective costs on one `netmodel.Topology` with one `CommParams`."""

    def __init__(self, topology, params: CommParams | None = None, *, cache_size: int = 200_000):
        self.topo = topology
        self.params = params if params is not None else CommParams.for_cluster(topology.spec)
        self.cache_size = int(cache_size)
        self._results: dict = {}
        self._placements: dict = {}
        self._shapes: dict = {}
        self._bucket_frac: dict = {}
        self._by_shape: dict = {}  # (op, shape key, bytes, buckets, algorithm) → shape-only results
        # per node type × GPUs used: per-GPU ring bandwidth in bytes/s
        spec = topology.spec
        gmax = int(topology.node_gpus_max.max())
        table = np.zeros((len(topology.node_type_names), gmax + 1))
        for ti, tname in enumerate(topology.node_type_names):
            nt = spec.node_types[tname]
            for k in range(1, nt.gpus_per_node + 1):
                table[ti, k] = nt.intra.ring_GBps(k, nt.gpus_per_node) * 1e9
        self._ring_Bps = table
        self._proto = protocol_array(self.params)
        self._wire = 1.0 / self._proto[:, 0]
        self._scalars = scalar_params(self.params)
        self._node_attr = node_attributes(topology)

    # ------------------------------------------------------------------ public operations
    def allreduce(self, gpus: np.ndarray, nbytes: float, bucket_bytes=None, algorithm: str = "auto") -> CollectiveCost:
        """All-reduce of `nbytes` of gradients over `gpus` (see module docstring for buckets)."""
        return self.collective("allreduce", gpus, nbytes, bucket_bytes, algorithm)

    def reduce_scatter(self, gpus, nbytes, bucket_bytes=None, algorithm="auto") -> CollectiveCost:
        """Reduce-scatter of an `nbytes` buffer per GPU (ring or hierarchical)."""
        return self.collective("reduce_scatter", gpus, nbytes, bucket_bytes, algorithm)

    def all_gather(self, gpus, nbytes, bucket_bytes=None, algorithm="auto") -> CollectiveCost:
        """All-gather producing an `nbytes` buffer on every GPU (ring or hierarchical)."""
        return self.collective("all_gather", gpus, nbytes, bucket_bytes, algorithm)

    def broadcast(self, gpus, nbytes, bucket_bytes=None, algorithm="auto") -> CollectiveCost:
        """Broadcast of `nbytes` from the first GPU (pipelined ring/chain)."""
        return self.collective("broadcast", gpus, nbytes, bucket_bytes, algorithm)

    def all_to_all(self, gpus, nbytes, bucket_bytes=None, algorithm="auto") -> CollectiveCost:
        """All-to-all where every GPU sends `nbytes` in total (nbytes/p to each peer)."""
        return self.collective("all_to_all", gpus, nbytes, bucket_bytes, algorithm)

    def collective(self, op: str, gpus, nbytes: float, bucket_bytes=None, algorithm: str = "auto") -> CollectiveCost:
        try:
            bkey = (None if bucket_bytes is None else
                    bucket_bytes.tobytes() if isinstance(bucket_bytes, np.ndarray) else float(bucket_bytes))
            gkey = gpus.tobytes()
            key = (op, gkey, gpus.dtype.char, nbytes, bkey, algorithm)
            hit = self._results.get(key)
            if hit is not None:
                return hit
        except AttributeError:  # gpus given as a list: normalise and go the slow way
            gpus = np.asarray(gpus, dtype=np.int64)
            return self.collective(op, gpus, nbytes, bucket_bytes, algorithm)
        result = self._compute(op, gpus, nbytes, bucket_bytes, algorithm, bkey, gkey)
        if len(self._results) >= self.cache_size:
            self._results.clear()
        self._results[key] = result
        return result

    def clear_cache(self) -> None:
        self._results.clear()
        self._placements.clear()
        self._shapes.clear()
        self._bucket_frac.clear()
        self._by_shape.clear()

    # ------------------------------------------------------------------ internals
    def _placement(self, gpus: np.ndarray, gkey: bytes | None = None) -> tuple[Shape, np.ndarray]:
        pkey = (gpus.tobytes() if gkey is None else gkey, gpus.dtype.char)
        hit = self._placements.get(pkey)
        if hit is not None:
            return hit
        shape = placement_shape(self.topo, gpus)
        ids = shape.link_ids
        if len(self._placements) >= self.cache_size:
            self._placements.clear()
        self._placements[pkey] = (shape, ids)
        return shape, ids

    def _shape_cost(self, op: str, shape: Shape) -> _ShapeCost:
        skey = (op, shape.key)
        hit = self._shapes.get(skey)
        if hit is not None:
            return hit
        names, alpha, beta, coef = algorithm_costs(self.topo, shape, op, self._node_attr, self._ring_Bps,
                                                   self._scalars, self._proto)
        sc = _ShapeCost(names, alpha, beta, self._wire, coef, shape.num_gpus)
        if len(self._shapes) >= self.cache_size:
            self._shapes.clear()
        self._shapes[skey] = sc
        return sc

    def _multidim_shape_cost(self, op: str, shape: Shape) -> _ShapeCost | None:
        """The ``multidim`` collective as a one-algorithm `_ShapeCost` (only the Simple
        protocol row is finite: no NCCL protocols in an ASTRA-sim style model)."""
        skey = (op, shape.key, "multidim")
        if skey in self._shapes:
            return self._shapes[skey]
        # imported here and in `multidim_stages`: only runs that ask for ``multidim`` need it, and
        # importing it (two frozen dataclasses, Dally's `AstraSystem`) took ≈ 1.4 ms CPU of every
        # cached `cosim simulate` that does not
        from collectives.multidim import multidim_cost

        res = multidim_cost(self.topo, shape, op, self.params)
        sc = None
        if res is not None:
            a, b, coef, _levels = res
            alpha = np.array([[np.inf, np.inf, a]])
            beta = np.array([[b, b, b]])
            sc = _ShapeCost(("multidim",), alpha, beta, self._wire, coef[None, :], shape.num_gpus)
        if len(self._shapes) >= self.cache_size:
            self._shapes.clear()
        self._shapes[skey] = sc
        return sc

    def multidim_stages(self, gpus, nbytes: float, op: str = "allreduce") -> tuple[np.ndarray, np.ndarray]:
        """The ``multidim`` collective of one `nbytes` message as ASTRA-sim's pipeline stages:
        (seconds[j], queue[j]) in execution order — reduce-scatter through the levels, an
        all-reduce phase (reduce-scatter + all-gather) on the outermost, all-gather back; queue
        = the level (dimension) whose one collective engine a stage occupies. The per-call
        ``base_latency_s`` is added to the first stage. Sum of seconds = the all-reduce time of
        `allreduce(..., algorithm="multidim")` on a uniform placement."""
        from collectives.multidim import level_phases, multidim_cost

        shape, _ = self._placement(np.asarray(gpus, dtype=np.int64))
        res = multidim_cost(self.topo, shape, op, self.params)
        if res is None or not res[3]:
            return np.zeros(0), np.zeros(0, np.int64)
        ph = level_phases(res[3], int(shape.counts.min()))
        S = float(nbytes)
        rs = [(q, a + b * S) for q, a, b in ph]
        if op == "allreduce":
            stages = rs[:-1] + [(rs[-1][0], 2 * rs[-1][1])] + rs[-2::-1]
        else:
            stages = rs if op == "reduce_scatter" else rs[::-1]
        secs = np.array([t for _, t in stages])
        secs[0] += self.params.base_latency_s
        return secs, np.array([q for q, _ in stages], np.int64)

    def _buckets(self, nbytes: float, bucket_bytes, bkey) -> tuple[np.ndarray, np.ndarray]:
        total = float(nbytes)
        if not math.isfinite(total) or total < 0:
            raise InputError.at(field="nbytes", expected="a finite non-negative byte count", got=nbytes)
        if isinstance(bucket_bytes, np.ndarray) and bucket_bytes.ndim == 1:
            hit = self._bucket_frac.get(bkey)
            if hit is None:   # a model's bucket partition: validated once, kept as fractions
                sizes = bucket_bytes.astype(np.float64)
                if not np.isfinite(sizes).all() or (sizes < 0).any() or not sizes.sum() > 0:
                    raise InputError.at(field="bucket_bytes", expected="non-negative bucket sizes with a positive sum")
                hit = (sizes / sizes.sum(), np.ones(sizes.shape[0]))
                if len(self._bucket_frac) >= 4096:
                    self._bucket_frac.clear()
                self._bucket_frac[bkey] = hit
            return hit[0] * total, hit[1]
        cap = float(self.params.bucket_bytes if bucket_bytes is None else np.asarray(bucket_bytes).reshape(-1)[0])
        if not cap > 0:
            raise InputError.at(field="bucket_bytes", expected="a positive bucket size", got=bucket_bytes)
        full = math.floor(total / cap)
        rem = total - full * cap
        return np.array([cap, rem]), np.array([float(full), 1.0 if rem > 0 else 0.0])

    def _compute(self, op: str, gpus: np.ndarray, nbytes: float, bucket_bytes, algorithm: str, bkey,
                 gkey: bytes | None = None) -> CollectiveCost:
        if op not in OPS:
            raise InputError.at(field="operation", expected=" | ".join(OPS), got=op)
        if algorithm == "auto":
            algorithm = self.params.algorithm
        if algorithm != "auto" and algorithm not in ALGORITHMS:
            raise InputError.at(field="algorithm", expected="auto | " + " | ".join(ALGORITHMS), got=algorithm)
        shape, ids = self._placement(gpus, gkey)
        # Everything below but the link ids depends on the shape alone (the shape cost is
        # keyed by it too, its link columns in the order of `ids`): evaluated once per
        # (op, shape, size, buckets, algorithm), with link *positions*, which a new placement
        # of a known shape maps to its own link ids.
        rkey = (op, shape.key, nbytes, bkey, algorithm)
        hit = self._by_shape.get(rkey)
        if hit is None:
            sc = self._multidim_shape_cost(op, shape) if algorithm == "multidim" else None
            if sc is None:   # multidim not requested, or no multidim form of this op (→ the ring)
                sc = self._shape_cost(op, shape)
            sizes, mult = self._buckets(nbytes, bucket_bytes, bkey)
            only = -1
            if algorithm != "auto":   # not applicable here (e.g. tree on one node): the ring, index 0
                only = sc.names.index(algorithm) if algorithm in sc.names else 0
            positions = np.arange(sc.coef.shape[1], dtype=np.int32)
            seconds, a_best, p_best, pos, link_bytes = _eval_buckets(sc.alpha, sc.beta, sc.wire, only, sizes,
                                                                     mult, sc.coef, positions)
            link_bytes.flags.writeable = False
            hit = (seconds, sc.names[a_best], p_best, pos, link_bytes, sc.num_gpus)
            if len(self._by_shape) >= self.cache_size:
                self._by_shape.clear()
            self._by_shape[rkey] = hit
        seconds, name, p_best, pos, link_bytes, p = hit
        link_ids = ids[pos]  # int32, like the ids
        link_ids.flags.writeable = False
        bus = (float(nbytes) / seconds * _BUS_FACTOR[op](p)) if seconds > 0 and p > 1 else 0.0
        return CollectiveCost(seconds=float(seconds), algorithm=name, link_ids=link_ids,
                              link_bytes=link_bytes, bus_bandwidth_Bps=bus,
                              protocol=_PROTOCOL_NAMES[p_best] if seconds > 0 else "", num_gpus=p)
