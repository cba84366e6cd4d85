"""Cross-job link contention at iteration granularity: ``solve(...) -> (iter_s, exposed_comm_s)``.

Contract (docs/architecture.md, "Contention"): job j's iteration is a compute phase of
``C_j`` seconds; its gradient communication may start ``s_j`` seconds into it (backward
overlap, ``0 <= s_j <= C_j``) and takes ``M_j`` seconds alone, driving
``d_jl = link_bytes_jl / M_j`` bytes/s on each link l it crosses (CSR ``ptr``, ``link_ids``,
``link_demand_Bps``). Alone, ``t_iter = max(C_j, s_j + M_j)``; exposed communication is
``t_iter - C_j``. While several jobs communicate at once on shared links, each progresses at
``x_j`` of its solo speed, x the weighted max-min fair allocation of the link capacities.

How ``solve`` works:

1. Validate, then quantise every float input to 30 significant bits (relative 1e-9), so
   that numerically equal inputs that differ by rounding noise share a cache entry; all
   computation uses the quantised values, so a cached answer is bit-identical to a fresh one.
2. Split the jobs into groups, the connected components of the job-link graph over links
   used by two or more communicating jobs (``contention_groups``). Singletons, jobs with
   no communication, and everything when ``contention=False`` get the solo formula.
3. Each group is solved by the event-exact phase simulation (``contention_exact``) when it
   has at most ``exact_max_jobs`` jobs, otherwise by the duty-cycle fixed point
   (``contention_dutycycle``), and cached by its signature: the bytes of its quantised,
   group-local arrays (jobs in input order, links renumbered by first appearance) plus
   the options that change the answer. When one job changes, only its group's signature
   changes, so only that group is recomputed; identical groups elsewhere in the fabric
   share one entry.

Initial phase offsets (the steady state of the phase simulation depends on them; see
``contention_exact``): ``offsets="staggered"`` (default) starts the group's r-th job at
``frac(r * 0.618...) * its solo iteration time`` (golden-ratio spread: deterministic,
no two jobs synchronised, typical rather than worst case); ``"zero"`` starts all at 0
(fully synchronised: the worst case for identical jobs); ``"random"`` draws uniform
offsets from ``seed`` and the group's signature and averages ``offset_draws`` draws (the
quantity the duty-cycle solver estimates).

Solo demands above capacity (``d_jl > cap_l``) cannot occur if ``M_j`` came from the same
fabric, but are handled explicitly (``ContentionOptions.infeasible_demand``): ``"clip"``
(default) trusts ``M_j`` and caps ``d_jl`` at ``cap_l``, so a job alone always takes exactly its solo
time; ``"bound"`` trusts the bytes: the job's solo rate is ``u_j = min_l cap_l / d_jl < 1``,
i.e. its communication takes ``M_j / u_j`` even alone.
"""

from __future__ import annotations

import logging
import zlib
from collections import OrderedDict
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from numba import njit

from collectives.contention_dutycycle import NO_MEMO, LinkMemo, dutycycle_group, solve_large_groups
from collectives.contention_exact import simulate_group
from collectives.contention_groups import split_groups
from collectives.contention_options import _GH, ContentionOptions
from collectives.contention_validate import check_inputs

log = logging.getLogger(__name__)

GOLDEN = 0.6180339887498949
_MAX_ROUNDS = 10_000  # duty-cycle fixed-point rounds before giving up (logged)
_KEEP_BITS = 30  # mantissa bits kept by quantise()


def quantise(a: np.ndarray) -> np.ndarray:
    """Round float64 values to ``_KEEP_BITS`` mantissa bits (relative error <= 2**-31)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    drop = 52 - _KEEP_BITS
    u = a.view(np.uint64)
    half = np.uint64(1 << (drop - 1))
    mask = ~np.uint64((1 << drop) - 1)
    out = ((u + half) & mask).view(np.float64)
    return np.where(np.isfinite(a), out, a)


_Q_HALF = np.uint64(1 << (52 - _KEEP_BITS - 1))
_Q_MASK = np.uint64(((1 << 64) - 1) ^ ((1 << (52 - _KEEP_BITS)) - 1))


@njit(cache=True, no_cfunc_wrapper=True)
def _quantise_into(src, dst, half, mask):  # pragma: no cover - compiled
    """``quantise`` element by element (the same bit operations), ``src`` into ``dst``."""
    u = src.view(np.uint64)
    o = dst.view(np.uint64)
    for i in range(src.shape[0]):
        if np.isfinite(src[i]):
            o[i] = (u[i] + half) & mask
        else:
            dst[i] = src[i]


@njit(cache=True, no_cfunc_wrapper=True)
def _prepare_job(C, s, M, lids, dem, cap_q, half, mask):  # pragma: no cover - compiled
    """One job through ``solve``'s per-job steps: ``(ok, [C, min(s, C), M] quantised,
    demands quantised, some demand above its link's capacity)``. ``ok`` False: an input
    ``check_inputs`` would reject (the caller lets it say which)."""
    n = lids.shape[0]
    n_links = cap_q.shape[0]
    ok = (np.isfinite(C) and np.isfinite(s) and np.isfinite(M) and C >= 0.0 and s >= 0.0 and M >= 0.0
          and s <= C * (1 + 1e-9) + 1e-15 and dem.shape[0] == n)
    for i in range(n):
        if not ok:
            break
        lk = lids[i]
        if lk < 0 or lk >= n_links or not np.isfinite(dem[i]) or dem[i] < 0.0:
            ok = False
        for k in range(i):
            if lids[k] == lk:
                ok = False
    csm = np.empty(3)
    dq = np.empty(n)
    over = False
    if ok:
        raw = np.empty(3)
        raw[0] = C
        raw[1] = min(s, C)
        raw[2] = M
        _quantise_into(raw, csm, half, mask)
        _quantise_into(dem, dq, half, mask)
        for i in range(n):
            if dq[i] > 0.0 and dq[i] / cap_q[lids[i]] > 1.0:
                over = True
    return ok, csm, dq, over


def solo_iteration_s(compute_s, comm_start_s, comm_s) -> np.ndarray:
    """The no-contention iteration time ``max(C, s + M)``."""
    return np.maximum(compute_s, comm_start_s + comm_s)


def initial_offsets(mode: str, solo_iter_s: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Start times of the first iteration of a group's jobs (see the module docstring)."""
    n = solo_iter_s.shape[0]
    if mode == "zero":
        return np.zeros(n)
    if mode == "staggered":
        return np.mod(np.arange(n) * GOLDEN, 1.0) * solo_iter_s
    if mode == "random":
        assert rng is not None
        return rng.random(n) * solo_iter_s
    raise ValueError(mode)


class ContentionCache:
    """LRU map from a group signature to its iteration times (read-only arrays)."""

    def __init__(self, max_entries: int = 100_000):
        self.max_entries = max_entries
        self._d: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> np.ndarray | None:
        v = self._d.get(key)
        if v is None:
            self.misses += 1
            return None
        self._d.move_to_end(key)
        self.hits += 1
        return v

    def put(self, key: bytes, value: np.ndarray) -> None:
        value.setflags(write=False)
        self._d[key] = value
        if len(self._d) > self.max_entries:
            self._d.popitem(last=False)

    def clear(self) -> None:
        self._d.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._d)


DEFAULT_CACHE = ContentionCache()
_NO_LINKS = np.zeros(0, np.int64)
_STATS_KEYS = ("groups", "exact_groups", "dutycycle_groups", "cache_hits", "events", "link_evaluations",
               "jobs_in_groups")


def solve(
    compute_s,
    comm_start_s,
    comm_s,
    ptr,
    link_ids,
    link_demand_Bps,
    link_capacity_Bps,
    *,
    contention: bool = True,
    weight=None,
    options: ContentionOptions | None = None,
    cache: ContentionCache | None = DEFAULT_CACHE,
    stats: dict | None = None,
    **option_overrides,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean iteration time and exposed communication time of every job under contention.

    Inputs are per job (length J): ``compute_s`` (C), ``comm_start_s`` (s, 0 <= s <= C),
    ``comm_s`` (M, solo communication seconds), optional ``weight`` (> 0, max-min weight,
    default 1: equal fractions of solo speed); CSR ``ptr[J+1]``, ``link_ids[nnz]``,
    ``link_demand_Bps[nnz]`` (solo bytes/s of job j on each of its links, each link at most
    once per job); ``link_capacity_Bps[L]``. Returns float64 arrays
    ``(iter_s, exposed_comm_s)`` in input order.

    ``contention=False`` returns ``max(C, s+M)`` exactly. ``options`` (a
    ``ContentionOptions``) or keyword overrides of its fields (``exact_max_jobs=0``, ...)
    tune the solvers. ``cache``: where group results are kept (None: no caching).
    ``stats``: a dict filled with counts (groups, exact/dutycycle groups, cache hits,
    phase-simulation events, duty-cycle link evaluations, jobs in groups).
    """
    opt = options or ContentionOptions()
    if option_overrides:
        opt = replace(opt, **option_overrides)
    C, s, M, w, ptr, lids, dem, cap = check_inputs(
        compute_s, comm_start_s, comm_s, weight, ptr, link_ids, link_demand_Bps, link_capacity_Bps)
    if stats is not None:
        stats.update(dict.fromkeys(_STATS_KEYS, 0))
    if not contention or C.shape[0] == 0:
        it = solo_iteration_s(C, s, M)
        return it, it - C

    C, s, M, w, dem, cap = (quantise(a) for a in (C, s, M, w, dem, cap))
    M, dem = _feasible_demands(M, dem, cap, ptr, lids, opt.infeasible_demand)
    return _solve_groups(C, s, M, w, ptr, lids, dem, cap, opt, cache, stats)


def _solve_groups(C, s, M, w, ptr, lids, dem, cap, opt: ContentionOptions, cache: ContentionCache | None,
                  stats: dict | None, memo: LinkMemo | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2-3 of ``solve`` on validated, quantised, feasible inputs.

    ``memo``: link evaluations kept across calls, for a caller whose capacities and options
    are fixed (``PreparedContention``). With it, the duty-cycle groups are split off and
    solved in one kernel call (``solve_large_groups``), without ``cache``: their reuse comes
    link by link from the memo, while a whole group rarely recurs (5% of them in the full
    Philly run, against 44% of the phase-simulated ones), so building and storing its
    signature (kilobytes each) would cost time and memory for little. Same values either way.

    That kernel is called only once a group of more than ``exact_max_jobs`` jobs has come up
    (``memo.large_groups``, then on every call): until then the split alone (`split_groups`)
    is all a call needs, and a run that never has such a group (the default `cosim simulate`)
    never compiles the duty-cycle solver (≈ 4.6 s of CPU on a first run)."""
    info = None
    if memo is not None and memo.large_groups:
        it, (gjp, jobs, eptr, elink, edem, glp, lglob), info, todo = _solve_large(C, s, M, w, ptr, lids, dem, cap,
                                                                                  opt, memo)
    else:
        it = solo_iteration_s(C, s, M)
        gjp, jobs, eptr, elink, edem, glp, lglob = split_groups(cap.shape[0], ptr, lids, dem, M)
        if memo is not None and gjp.shape[0] > 1 and np.diff(gjp).max() > opt.exact_max_jobs:
            memo.large_groups = True  # from now on one kernel call splits and solves (see above)
            it, (gjp, jobs, eptr, elink, edem, glp, lglob), info, todo = _solve_large(C, s, M, w, ptr, lids, dem,
                                                                                      cap, opt, memo)
    if info is None or stats is not None:
        todo = range(gjp.shape[0] - 1)
    elif todo.shape[0] == 0:  # every group solved by the kernel, converged, within the memo
        return it, it - C
    else:  # a group the kernel solved needs Python only to widen the memo or log a non-convergence
        todo = todo.tolist()
    tags = opt.tags()
    for g in todo:
        a, b = gjp[g], gjp[g + 1]
        exact = (b - a) <= opt.exact_max_jobs
        if info is not None and info[g, 0] >= 0:  # solved by the kernel
            _note_dutycycle(int(b - a), *info[g].tolist(), memo, stats)
        else:
            gj = jobs[a:b]
            group = (C[gj], s[gj], M[gj], w[gj], eptr[a:b + 1] - eptr[a], elink[eptr[a]:eptr[b]],
                     edem[eptr[a]:eptr[b]], cap[lglob[glp[g]:glp[g + 1]]])
            key = b"|".join((tags[0] if exact else tags[1], *(x.tobytes() for x in group)))
            res = cache.get(key) if cache is not None else None
            if res is None:
                res = _solve_exact(group, key, opt, stats) if exact else _solve_dutycycle(group, opt, stats)
                res = np.maximum(res, it[gj])  # rounding can leave a hair below the solo time
                if cache is not None:
                    cache.put(key, res)
            elif stats is not None:
                stats["cache_hits"] += 1
            it[gj] = res
        if stats is not None:
            stats["groups"] += 1
            stats["jobs_in_groups"] += int(b - a)
            stats["exact_groups" if exact else "dutycycle_groups"] += 1
    return it, it - C


def _solve_large(C, s, M, w, ptr, lids, dem, cap, opt: ContentionOptions, memo: LinkMemo):
    """`solve_large_groups` with the memo: (iter_s, the split, per-group info, the groups left to Python)."""
    return solve_large_groups(C, s, M, w, ptr, lids, dem, *_large_args(cap, opt, memo))


def _large_args(cap, opt: ContentionOptions, memo: LinkMemo) -> tuple:
    """`solve_large_groups`'s arguments after the jobs' own seven: capacities, options, memo."""
    return (cap, opt.exact_max_jobs, _GH[0], _GH[1], opt.enum_max_others, opt.dp_max_others,
            opt.dutycycle_average == "work", opt.elsewhere_correction, opt.fixed_point_tol, _MAX_ROUNDS,
            *memo.arrays())


def _feasible_demands(M, dem, cap, ptr, lids, mode):
    """Make every solo demand fit its link ("clip": cap d; "bound": slow the job down)."""
    job_of_entry = np.repeat(np.arange(M.shape[0]), np.diff(ptr))
    ratio = np.divide(dem, cap[lids], out=np.zeros_like(dem), where=dem > 0)
    if not np.any(ratio > 1.0):
        return M, dem
    if mode == "clip":
        return M, np.minimum(dem, cap[lids])
    worst = np.ones(M.shape[0])
    np.maximum.at(worst, job_of_entry, ratio)
    return quantise(M * worst), quantise(dem / worst[job_of_entry])


def iteration_upper_bound_s(compute_s, comm_start_s, comm_s, ptr, link_ids, link_demand_Bps,
                            link_capacity_Bps, weight=None) -> np.ndarray:
    """An upper bound on every job's contended iteration time: all sharers on at once.

    If job j is limited by link l, max-min gives it the largest weighted rate on l, so
    ``cap_l = sum_k x_k d_kl <= (x_j / w_j) sum_k w_k d_kl`` and
    ``x_j >= w_j cap_l / sum_k w_k d_kl`` over *every* job k that ever uses l. Hence its
    communication takes at most ``rho_j M_j`` with
    ``rho_j = max(1, max_l sum_k w_k d_kl / (w_j cap_l))`` (demands clipped to capacity),
    and ``t_iter <= max(C_j, s_j + rho_j M_j)`` in every iteration. For n identical jobs
    with ``d = cap`` on one link this is ``n M``: communication fully serialised behind
    everyone else's. Holds for the phase simulation and the duty-cycle solver alike.
    """
    C, s, M, w, ptr, lids, dem, cap = check_inputs(
        compute_s, comm_start_s, comm_s, weight, ptr, link_ids, link_demand_Bps, link_capacity_Bps)
    job_of_entry = np.repeat(np.arange(C.shape[0]), np.diff(ptr))
    dem = np.minimum(dem, cap[lids])
    link_load = np.bincount(lids, weights=w[job_of_entry] * dem, minlength=cap.shape[0])
    ratio = np.where(dem > 0, link_load[lids] / (w[job_of_entry] * cap[lids]), 0.0)
    rho = np.ones(C.shape[0])
    np.maximum.at(rho, job_of_entry, ratio)
    return np.maximum(C, s + rho * M)


def _solve_exact(group, key: bytes, opt: ContentionOptions, stats: dict | None) -> np.ndarray:
    """Phase-simulate one group, averaging ``opt.offset_draws`` initial-offset draws."""
    C, s, M = group[:3]
    solo = solo_iteration_s(C, s, M)
    rng = np.random.default_rng([opt.seed, zlib.crc32(key)]) if opt.offsets == "random" else None
    total = np.zeros(C.shape[0])
    for _ in range(opt.offset_draws):
        off = initial_offsets(opt.offsets, solo, rng)
        mean, count, events, ok = simulate_group(*group, off, opt.warmup_iters, opt.window_iters, opt.rtol,
                                                 opt.max_iters, opt.max_events)
        if not ok:
            log.debug("phase simulation of a %d-job group stopped unsettled (%d events, min %d iters)",
                      C.shape[0], events, count.min())
        total += mean
        if stats is not None:
            stats["events"] += int(events)
    return total / opt.offset_draws


def _solve_dutycycle(group, opt: ContentionOptions, stats: dict | None) -> np.ndarray:
    """Duty-cycle fixed point of one group (large groups), without a memo."""
    res, rounds, ok, link_evals, need = dutycycle_group(
        *group, _GH[0], _GH[1], opt.enum_max_others, opt.dp_max_others, opt.dutycycle_average == "work",
        opt.elsewhere_correction, opt.fixed_point_tol, _MAX_ROUNDS, _NO_LINKS, *NO_MEMO)
    _note_dutycycle(group[0].shape[0], rounds, int(ok), link_evals, need, None, stats)
    return res


def _note_dutycycle(n_jobs: int, rounds: int, ok: int, link_evals: int, need: int, memo: LinkMemo | None,
                    stats: dict | None) -> None:
    """After a duty-cycle solve: widen the memo if a link outgrew it, log non-convergence,
    count the link evaluations."""
    if need and memo is not None:
        memo.widen(need)
    if not ok:
        log.warning("duty-cycle fixed point of a %d-job group stopped after %d rounds", n_jobs, rounds)
    if stats is not None:
        stats["link_evaluations"] += int(link_evals)


class JobInputs(NamedTuple):
    """One job's ``solve`` inputs, validated, quantised and made feasible
    (``PreparedContention.job``); ``link_ids`` int64, ``link_demand_Bps`` float64."""

    compute_s: float
    comm_start_s: float
    comm_s: float
    link_ids: np.ndarray
    link_demand_Bps: np.ndarray


class PreparedContention:
    """``solve`` for a caller that hands the same jobs over and over (the engine).

    ``solve`` validates, quantises and makes feasible every input on every call; an engine
    re-solving a 50-job group after each start or stop spends most of its time there. Each
    of those steps acts on one job's values alone (``s <= C`` clamp, 30-bit rounding, the
    ``infeasible_demand`` rule), so here they run once per job and placement (``job``), and
    ``solve`` takes the prepared values of any set of jobs, concatenated in input order. Its
    answer is bit-identical to ``solve`` on the raw inputs of the same jobs in the same order
    (same groups, same signatures, same cache entries; tested), with equal weights. It also
    keeps a ``LinkMemo`` (its capacities and options never change), so a re-solve copies
    the evaluations of links whose users did not change (bit for bit).
    """

    def __init__(self, link_capacity_Bps, options: ContentionOptions | None = None,
                 cache: ContentionCache | None = DEFAULT_CACHE) -> None:
        self.options = options or ContentionOptions()
        self.cache = cache
        empty = np.zeros(0)
        cap = check_inputs(empty, empty, empty, None, np.zeros(1, np.int64), np.zeros(0, np.int64), empty,
                           link_capacity_Bps)[7]
        self._cap_raw = cap
        self.link_capacity_Bps = quantise(cap)
        self.num_links = int(cap.shape[0])
        self.memo = LinkMemo(self.num_links)  # capacities and options are fixed here
        self._ones = np.ones(64)  # equal weights, sliced per solve (nothing writes them)

    def job(self, compute_s: float, comm_start_s: float, comm_s: float, link_ids, link_demand_Bps) -> JobInputs:
        """Check and prepare one job's inputs: what ``solve`` does to them, once (numba).

        An input ``solve`` would reject goes through ``check_inputs``, which raises the
        error naming the field (row 0)."""
        lids = np.ascontiguousarray(link_ids, dtype=np.int64)
        dem = np.ascontiguousarray(link_demand_Bps, dtype=np.float64)
        C, s, M = float(compute_s), float(comm_start_s), float(comm_s)
        ok = lids.ndim == 1 and dem.ndim == 1
        if ok:
            ok, csm, dem_q, over = _prepare_job(C, s, M, lids, dem, self.link_capacity_Bps, _Q_HALF, _Q_MASK)
        if not ok:
            n = lids.shape[0] if lids.ndim == 1 else 0
            check_inputs(np.array([C]), np.array([s]), np.array([M]), None, np.array([0, n], np.int64),
                         link_ids, link_demand_Bps, self._cap_raw)
            raise AssertionError("prepared contention: inputs check_inputs accepts were refused")
        if over:  # a solo demand above capacity: the infeasible-demand rule, as `solve` applies it
            m, dem_q = _feasible_demands(csm[2:], dem_q, self.link_capacity_Bps, np.array([0, lids.shape[0]], np.int64),
                                         lids, self.options.infeasible_demand)
            csm[2] = m[0]
        return JobInputs(float(csm[0]), float(csm[1]), float(csm[2]), lids, dem_q)

    def large_group_args(self) -> tuple | None:
        """For a caller that runs the duty-cycle kernel inside its own (the engine's re-solve,
        `simcore.kernels.linked_resolve`): `solve_large_groups`'s arguments after the jobs'
        own seven — capacities, options, this solver's memo — once ``solve`` itself has gone
        over to that kernel (a group above ``exact_max_jobs`` came up; None before, so a run
        without one never compiles it). Equal weights only, as ``solve``. Where the kernel
        leaves a group to Python (phase-simulated, unconverged, a memo to widen), the caller
        calls ``solve`` on the same jobs instead; it solves them again (the memo holds the
        kernel's link evaluations, so the duty-cycle groups cost little the second time)."""
        if not self.memo.large_groups:
            return None
        return _large_args(self.link_capacity_Bps, self.options, self.memo)

    def solve(self, compute_s: np.ndarray, comm_start_s: np.ndarray, comm_s: np.ndarray, ptr: np.ndarray,
              link_ids: np.ndarray, link_demand_Bps: np.ndarray,
              stats: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(iter_s, exposed_comm_s)`` of prepared jobs: float64 C/s/M, int64 CSR ``ptr`` and
        ``link_ids``, float64 demands, each job's entries as ``job`` returned them."""
        if stats is not None:
            stats.update(dict.fromkeys(_STATS_KEYS, 0))
        if compute_s.shape[0] == 0:
            it = solo_iteration_s(compute_s, comm_start_s, comm_s)
            return it, it - compute_s
        n = compute_s.shape[0]
        if self._ones.shape[0] < n:
            self._ones = np.ones(max(n, 2 * self._ones.shape[0]))
        return _solve_groups(compute_s, comm_start_s, comm_s, self._ones[:n], ptr, link_ids, link_demand_Bps,
                             self.link_capacity_Bps, self.options, self.cache, stats, self.memo)


#: Callers holding the bare ``solve`` (default options and cache) may prepare jobs once:
#: ``solve.prepared(link_capacity_Bps)`` is a ``PreparedContention`` answering exactly as
#: ``solve`` does. A wrapped solver (``functools.partial``, a test fake) has no such attribute.
solve.prepared = PreparedContention
