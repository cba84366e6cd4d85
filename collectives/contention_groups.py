"""Interacting groups of jobs: connected components of the job-link graph (numba).

Two jobs interact only through a link both of them load, so the groups are the connected
components of the bipartite job-link graph restricted to links used by at least two
communicating jobs. A link that only one job uses cannot slow it below its solo speed
(its solo demand fits, see ``contention.solve``), so such links are dropped from the
group's description; a job left without shared links is a singleton and gets the solo
formula.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True)
def find(parent, i):
    """Root of i's set, halving the path on the way."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True, no_cfunc_wrapper=True)
def union(parent, a, b):
    """Join the sets of a and b; the smaller root becomes the root (deterministic groups)."""
    ra = find(parent, a)
    rb = find(parent, b)
    if ra != rb:
        if ra < rb:
            parent[rb] = ra
        else:
            parent[ra] = rb


@njit(cache=True, no_cfunc_wrapper=True)
def split_groups(n_links, ptr, link_ids, demand_Bps, comm_s):
    """Connected components with at least two jobs, as concatenated group-local CSR arrays.

    Returns ``(grp_job_ptr, jobs, ent_ptr, ent_link, ent_demand, grp_link_ptr, link_global)``:
    group g owns ``jobs[grp_job_ptr[g]:grp_job_ptr[g+1]]`` (increasing input order); job
    number i of that concatenation owns entries ``ent_ptr[i]:ent_ptr[i+1]`` whose link
    numbers ``ent_link`` are local to the group (first-appearance order) and map back to
    global link ids through ``link_global[grp_link_ptr[g] + local]``.
    """
    n_jobs = ptr.shape[0] - 1
    users = np.zeros(n_links, np.int64)
    first = np.full(n_links, -1, np.int64)
    parent = np.arange(n_jobs)
    for j in range(n_jobs):
        if comm_s[j] <= 0.0:
            continue
        for e in range(ptr[j], ptr[j + 1]):
            if demand_Bps[e] <= 0.0:
                continue
            lk = link_ids[e]
            users[lk] += 1
            if first[lk] < 0:
                first[lk] = j
            else:
                union(parent, first[lk], j)
    size = np.zeros(n_jobs, np.int64)
    root = np.empty(n_jobs, np.int64)
    for j in range(n_jobs):
        root[j] = find(parent, j)
        size[root[j]] += 1
    gid_of_root = np.full(n_jobs, -1, np.int64)
    n_groups = 0
    for j in range(n_jobs):  # roots are the smallest index of their component
        if root[j] == j and size[j] >= 2:
            gid_of_root[j] = n_groups
            n_groups += 1
    grp_job_ptr = np.zeros(n_groups + 1, np.int64)
    for j in range(n_jobs):
        g = gid_of_root[root[j]]
        if g >= 0:
            grp_job_ptr[g + 1] += 1
    for g in range(n_groups):
        grp_job_ptr[g + 1] += grp_job_ptr[g]
    fill = grp_job_ptr[:-1].copy()
    jobs = np.empty(grp_job_ptr[n_groups], np.int64)
    for j in range(n_jobs):
        g = gid_of_root[root[j]]
        if g >= 0:
            jobs[fill[g]] = j
            fill[g] += 1
    n_ent = 0
    for i in range(jobs.shape[0]):
        j = jobs[i]
        for e in range(ptr[j], ptr[j + 1]):
            if demand_Bps[e] > 0.0 and users[link_ids[e]] >= 2:
                n_ent += 1
    ent_ptr = np.zeros(jobs.shape[0] + 1, np.int64)
    ent_link = np.empty(n_ent, np.int64)
    ent_demand = np.empty(n_ent)
    grp_link_ptr = np.zeros(n_groups + 1, np.int64)
    link_global = np.empty(n_ent, np.int64)
    local = np.full(n_links, -1, np.int64)
    k = 0
    nl = 0
    for g in range(n_groups):
        start_links = nl
        for i in range(grp_job_ptr[g], grp_job_ptr[g + 1]):
            j = jobs[i]
            for e in range(ptr[j], ptr[j + 1]):
                lk = link_ids[e]
                if demand_Bps[e] > 0.0 and users[lk] >= 2:
                    if local[lk] < 0:
                        local[lk] = nl - start_links
                        link_global[nl] = lk
                        nl += 1
                    ent_link[k] = local[lk]
                    ent_demand[k] = demand_Bps[e]
                    k += 1
            ent_ptr[i + 1] = k
        for p in range(start_links, nl):
            local[link_global[p]] = -1
        grp_link_ptr[g + 1] = nl
    return grp_job_ptr, jobs, ent_ptr, ent_link, ent_demand, grp_link_ptr, link_global[:nl]
