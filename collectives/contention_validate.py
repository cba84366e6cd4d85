"""Input checks for ``contention.solve``: an error naming the job/link and field, never a wrong number."""

from __future__ import annotations

import numpy as np
from numba import njit

from cosim.errors import InputError

_WHERE = "contention.solve"


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _float_array(a, field: str, n: int | None) -> np.ndarray:
    try:
        out = np.ascontiguousarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError.at(_WHERE, field=field, expected="an array of numbers",
                            got=type(a).__name__) from None
    if out.ndim != 1 or (n is not None and out.shape[0] != n):
        raise InputError.at(_WHERE, field=field, expected=f"a 1-D array of length {n}", got=out.shape)
    bad = ~np.isfinite(out)
    if bad.any():
        i = _first_bad(bad)
        raise InputError.at(_WHERE, row=i, field=field, expected="a finite number", got=float(out[i]))
    return out


@njit(cache=True)
def _first_duplicate_link(ptr, link_ids, n_links):
    """(job, link) of the first job listing a link twice, or (-1, -1)."""
    seen = np.full(n_links, -1, np.int64)
    for j in range(ptr.shape[0] - 1):
        for e in range(ptr[j], ptr[j + 1]):
            if seen[link_ids[e]] == j:
                return j, link_ids[e]
            seen[link_ids[e]] = j
    return -1, -1


def check_inputs(compute_s, comm_start_s, comm_s, weight, ptr, link_ids, link_demand_Bps, link_capacity_Bps):
    """Validate and convert the arrays of ``solve``; rows are job (or link, entry) numbers."""
    C = _float_array(compute_s, "compute_s", None)
    n = C.shape[0]
    s = _float_array(comm_start_s, "comm_start_s", n)
    M = _float_array(comm_s, "comm_s", n)
    w = np.ones(n) if weight is None else _float_array(weight, "weight", n)
    for arr, field in ((C, "compute_s"), (M, "comm_s"), (s, "comm_start_s")):
        if (arr < 0).any():
            i = _first_bad(arr < 0)
            raise InputError.at(_WHERE, row=i, field=field, expected="seconds >= 0", got=float(arr[i]))
    over = s > C * (1 + 1e-9) + 1e-15
    if over.any():
        i = _first_bad(over)
        raise InputError.at(_WHERE, row=i, field="comm_start_s", expected=f"<= compute_s ({C[i]!r})",
                            got=float(s[i]))
    s = np.minimum(s, C)
    if (w <= 0).any():
        i = _first_bad(w <= 0)
        raise InputError.at(_WHERE, row=i, field="weight", expected="> 0", got=float(w[i]))
    p = np.ascontiguousarray(ptr, dtype=np.int64)
    if p.ndim != 1 or p.shape[0] != n + 1 or p[0] != 0 or (np.diff(p) < 0).any():
        raise InputError.at(_WHERE, field="ptr", expected=f"non-decreasing offsets of length {n + 1} from 0",
                            got=p.tolist()[:8])
    cap = _float_array(link_capacity_Bps, "link_capacity_Bps", None)
    if (cap <= 0).any():
        i = _first_bad(cap <= 0)
        raise InputError.at(_WHERE, row=i, field="link_capacity_Bps", expected="bytes/s > 0",
                            got=float(cap[i]))
    nnz = int(p[-1])
    lids = np.ascontiguousarray(link_ids, dtype=np.int64)
    if lids.ndim != 1 or lids.shape[0] != nnz:
        raise InputError.at(_WHERE, field="link_ids", expected=f"a 1-D array of length ptr[-1]={nnz}",
                            got=lids.shape)
    out = (lids < 0) | (lids >= cap.shape[0])
    if out.any():
        i = _first_bad(out)
        raise InputError.at(_WHERE, row=i, field="link_ids", expected=f"a link id in [0, {cap.shape[0]})",
                            got=int(lids[i]))
    dem = _float_array(link_demand_Bps, "link_demand_Bps", nnz)
    if (dem < 0).any():
        i = _first_bad(dem < 0)
        raise InputError.at(_WHERE, row=i, field="link_demand_Bps", expected="bytes/s >= 0",
                            got=float(dem[i]))
    # (no entries, e.g. `PreparedContention` checking its capacities: no kernel call, so a
    # run that never meets bad inputs never loads this kernel)
    j, lk = _first_duplicate_link(p, lids, cap.shape[0]) if nnz else (-1, -1)
    if j >= 0:
        raise InputError.at(_WHERE, row=int(j), field="link_ids", expected="each link at most once per job",
                            got=int(lk))
    return C, s, M, w, p, lids, dem, cap
