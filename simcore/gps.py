"""The idealised fair-share reference for finish-time fairness (FTF).

FTF_j = JCT_j / JCT~_j, where JCT~_j is job j's completion time under instantaneous fair
sharing of the cluster (Ares §7; the same reference for every policy of a run, computed
once). We use a *fluid GPS* simulation, the recommended resolution of the Ares notes
(item 11): at every instant the M GPUs are water-filled over the active jobs — each gets
`min(demand_j, fair share)`, the share left by capped jobs going to the others — and a job
holding `x` of its `n_j` requested GPUs progresses at `x / n_j` of its speed at the
requested size. That speed is the job's solo, consolidated, uncontended speed (so a job
alone finishes in exactly its reference duration). No restart costs, no placement, no
network: it is the fluid ideal, which real schedulers can beat for some jobs (FTF < 1).

Capacity may change over time (nodes leaving and joining: Aryl's loaned servers, FFT's
churn): the reference then water-fills the GPUs online at each instant, a step function
given as (times, capacities). With no GPU online, no job progresses until capacity returns;
jobs that can never finish are NaN.

Event-exact: between arrivals, completions and capacity changes shares are constant; the
next completion is computed. Numba, O(distinct demands + log jobs) per event (per-class
virtual clocks).

The papers differ in their reference, so it is a named option of the run
(`RunConfig.ftf_reference`, `FTF_REFERENCES`):

- `gps` — the fluid GPS above, each job capped at its requested GPUs (cosim's default);
- `gps-uncapped` — the Ares paper's GPS (§2.3 and Eq. 2-3: resources "arbitrarily divisible",
  every active job gets M / N_t of the cluster): no per-job cap, speed linear in GPUs (a job
  alone takes the whole cluster and finishes in `solo_s · n_j / M`); it equals the paper's virtual
  clock, where job j finishes once it has received its GPU-time at its default count;
- `gps-artifact` — the Ares artifact's reference (sysdomlab/Ares simulator/policy/ares.py,
  `GPSSystem._get_step_time_with_fair_share`: `min(fair_share, max_replicas)` with
  `max_replicas = app.max_num_replicas` set in `_add_job`): each job capped at its model's
  largest profiled count (32-64, `traces.workload.ARES_ARTIFACT_MAX_GPUS`), speed linear in GPUs
  (the artifact interpolates measured step times; here only the cap differs from `gps-uncapped`);
- `gps-capped` — the same water-filling, each job capped at its *maximum* GPUs (elastic
  jobs, Pollux/Sia-style), speed linear in GPUs (a job on `x` GPUs runs `x / n_j` times its
  speed at its requested `n_j`: the fluid ideal of perfect scaling);
- `hetero-1-over-n` — each job alone on `1/N` of every GPU type, `N` the jobs active in the
  reference itself (Themis/Gavel/Sia finish-time fairness on heterogeneous clusters): job j
  takes up to `n_j` GPUs from its shares `C_k / N`, fastest type first, and runs at
  `Σ_k x_k · s_jk / n_j` of its reference speed, `s_jk` its speed on type k relative to the
  reference placement's (1 on a one-type cluster). Share left by a job is *not* handed to
  others (unlike GPS): that is the 1/N isolation the definition asks for.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cosim.nsort import unique_sorted


@njit(cache=True, no_cfunc_wrapper=True)
def _level(class_demand, class_count, capacity):  # pragma: no cover - compiled
    """Water level L: every active job gets min(demand, L); demands come in few distinct
    values (`class_demand`, ascending, with `class_count` active jobs each), so this costs
    O(classes), not a sort of the active jobs."""
    left = capacity
    n = 0
    for k in range(class_count.shape[0]):
        n += class_count[k]
    for k in range(class_demand.shape[0]):
        c = class_count[k]
        if c == 0:
            continue
        if class_demand[k] * n <= left:  # this class is capped at its demand
            left -= class_demand[k] * c
            n -= c
        else:
            return left / n
    return np.inf  # every job gets its full demand


@njit(cache=True, no_cfunc_wrapper=True)
def _heap_push(key, idx, base, size, k, j):  # pragma: no cover - compiled
    """Push (k, j) into the min-heap stored at key/idx[base : base + size]; returns new size."""
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if key[base + parent] <= k:
            break
        key[base + i] = key[base + parent]
        idx[base + i] = idx[base + parent]
        i = parent
    key[base + i] = k
    idx[base + i] = j
    return size + 1


@njit(cache=True, no_cfunc_wrapper=True)
def _heap_pop(key, idx, base, size):  # pragma: no cover - compiled
    """Remove the minimum of the heap at base (size > 0); returns new size."""
    size -= 1
    k, j = key[base + size], idx[base + size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and key[base + c + 1] < key[base + c]:
            c += 1
        if key[base + c] >= k:
            break
        key[base + i] = key[base + c]
        idx[base + i] = idx[base + c]
        i = c
    key[base + i] = k
    idx[base + i] = j
    return size


@njit(cache=True, no_cfunc_wrapper=True)
def _search_left(a, v):  # pragma: no cover - compiled
    """`np.searchsorted(a, v)` (side left) on ascending float `a`, NaN ordered last as numpy does."""
    lo = 0
    hi = a.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        x = a[mid]
        if x < v or (v != v and x == x):  # a[mid] strictly before v  # noqa: PLR0124 (NaN test)
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, no_cfunc_wrapper=True)
def gps_completion(submit, demand, solo_s, cap_t, cap_v):  # pragma: no cover - compiled
    """Completion times of jobs (sorted by `submit`) under fluid GPS.

    `demand[j]` GPUs requested, `solo_s[j]` seconds at that size. Capacity is `cap_v[i]`
    GPUs from time `cap_t[i]` until `cap_t[i + 1]` (`cap_t` ascending, `cap_t[0]` no later
    than the first submit). Jobs with a non-finite or non-positive `solo_s`, or zero
    demand, are skipped (NaN), as are jobs still running when capacity is 0 for good.

    All active jobs of one demand class progress at the same speed, so each class keeps a
    virtual clock `V_k` (full-speed seconds served to each of its jobs) and a min-heap of
    virtual finish times `V_k(arrival) + solo_j`: an event costs O(classes + log jobs).
    """
    n = submit.shape[0]
    done = np.full(n, np.nan)
    classes = unique_sorted(demand)
    nk = classes.shape[0]
    cls = np.empty(n, np.int64)
    for j in range(n):  # np.searchsorted(classes, demand): a loop compiles in a tenth of the time
        cls[j] = _search_left(classes, demand[j])
    total = np.zeros(nk, np.int64)
    for j in range(n):
        total[cls[j]] += 1
    base = np.zeros(nk, np.int64)
    for k in range(1, nk):
        base[k] = base[k - 1] + total[k - 1]
    hkey = np.empty(n)
    hidx = np.empty(n, np.int64)
    size = np.zeros(nk, np.int64)
    vclock = np.zeros(nk)
    speed = np.zeros(nk)
    nxt = np.int64(0)  # typed: a literal 0 made numba compile `_heap_push` twice
    t = 0.0
    active = 0
    ci = 0  # capacity interval: cap_t[ci] <= t < cap_t[ci + 1]
    ncap = cap_t.shape[0]
    while nxt < n or active > 0:
        if active == 0:
            t = max(t, submit[nxt])
        while ci + 1 < ncap and cap_t[ci + 1] <= t:
            ci += 1
        capacity = cap_v[ci]
        while nxt < n and submit[nxt] <= t:
            if solo_s[nxt] > 0.0 and solo_s[nxt] < np.inf and demand[nxt] > 0:
                k = cls[nxt]
                size[k] = _heap_push(hkey, hidx, base[k], size[k], vclock[k] + solo_s[nxt], nxt)
                active += 1
            elif solo_s[nxt] == 0.0:
                done[nxt] = submit[nxt]
            nxt += 1
        if active == 0:
            continue
        level = _level(classes, size, capacity)
        dt = np.inf
        for k in range(nk):
            if size[k] > 0:
                speed[k] = 1.0 if classes[k] <= level else level / classes[k]
                d = (hkey[base[k]] - vclock[k]) / speed[k] if speed[k] > 0.0 else np.inf
                if d < dt:
                    dt = d
        if dt < 0.0:
            dt = 0.0
        t_arr = submit[nxt] if nxt < n else np.inf
        if ci + 1 < ncap and cap_t[ci + 1] < t_arr:
            t_arr = cap_t[ci + 1]  # the shares change at the next capacity change too
        if t + dt > t_arr:
            dt = t_arr - t
        if not dt < np.inf:
            break  # no capacity, none to come: the active jobs never finish (NaN)
        t += dt
        for k in range(nk):
            if size[k] > 0:
                vclock[k] += dt * speed[k]
                while size[k] > 0:
                    j = hidx[base[k]]
                    if hkey[base[k]] - vclock[k] > 1e-9 * solo_s[j]:
                        break
                    done[j] = t
                    size[k] = _heap_pop(hkey, hidx, base[k], size[k])
                    active -= 1
    return done


def gps_jct(submit_s: np.ndarray, demand: np.ndarray, solo_s: np.ndarray, capacity_gpus: float,
            capacity_steps: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """GPS JCT per job (NaN where skipped), for jobs in any order.

    `capacity_steps` = (times, GPUs online from each time on), ascending times: the capacity
    then is `capacity_gpus` until the first time and the step function after it.
    """
    order = np.argsort(submit_s, kind="stable")
    sub = np.ascontiguousarray(submit_s[order], np.float64)
    cap_t, cap_v = np.array([-np.inf]), np.array([float(capacity_gpus)])
    if capacity_steps is not None and len(capacity_steps[0]):
        cap_t = np.concatenate([cap_t, np.asarray(capacity_steps[0], np.float64)])
        cap_v = np.concatenate([cap_v, np.asarray(capacity_steps[1], np.float64)])
    done = gps_completion(sub, np.ascontiguousarray(demand[order], np.float64),
                          np.ascontiguousarray(solo_s[order], np.float64), cap_t, cap_v)
    out = np.full(submit_s.shape[0], np.nan)
    out[order] = done - sub
    return out


def capacity_steps(changes, node_num_gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(times, GPUs online from then on) of a list of `(time_s, node, online)` changes,
    applied in the engine's order (time, node, online) to a cluster that starts all online."""
    online = np.ones(node_num_gpus.shape[0], bool)
    total = int(node_num_gpus.sum())
    times, caps = [], []
    for t, node, on in sorted(changes, key=lambda c: (c[0], c[1], c[2])):
        if online[node] != on:
            total += int(node_num_gpus[node]) * (1 if on else -1)
            online[node] = on
        if times and times[-1] == t:
            caps[-1] = total
        else:
            times.append(float(t))
            caps.append(total)
    return np.asarray(times, np.float64), np.asarray(caps, np.float64)


#: Values of `RunConfig.ftf_reference`.
FTF_REFERENCES = ("gps", "gps-uncapped", "gps-artifact", "gps-capped", "hetero-1-over-n")


@njit(cache=True, no_cfunc_wrapper=True)
def one_over_n_completion(submit, demand, solo_s, speed, order, cap_t, cap_v):  # pragma: no cover - compiled
    """Completion times (jobs sorted by `submit`) when each of the N active jobs runs alone on
    `cap_v[i, k] / N` GPUs of every type k (capacity step i from `cap_t[i]`).

    `speed[j, k]`: job j's speed on type k relative to its `solo_s` speed (0: cannot run
    there); `order[j]`: its types, fastest first. Event-exact: rates change only at
    arrivals, completions and capacity changes; O(active × types) per event.
    """
    n = submit.shape[0]
    nt = speed.shape[1]
    done = np.full(n, np.nan)
    left = np.ones(n)  # fraction of the job still to run
    act = np.empty(n, np.int64)
    na = 0
    rate = np.zeros(n)
    nxt = 0
    t = 0.0
    ci = 0
    ncap = cap_t.shape[0]
    while nxt < n or na > 0:
        if na == 0:
            t = max(t, submit[nxt])
        while ci + 1 < ncap and cap_t[ci + 1] <= t:
            ci += 1
        while nxt < n and submit[nxt] <= t:
            if solo_s[nxt] > 0.0 and solo_s[nxt] < np.inf and demand[nxt] > 0:
                act[na] = nxt
                na += 1
            elif solo_s[nxt] == 0.0:
                done[nxt] = submit[nxt]
            nxt += 1
        if na == 0:
            continue
        dt = np.inf
        for i in range(na):
            j = act[i]
            want = demand[j]
            r = 0.0
            for q in range(nt):
                k = order[j, q]
                if speed[j, k] <= 0.0 or want <= 0.0:
                    continue
                x = min(cap_v[ci, k] / na, want)
                r += x * speed[j, k]
                want -= x
            rate[j] = r / demand[j] / solo_s[j]  # fraction of the job per second
            if rate[j] > 0.0:
                d = left[j] / rate[j]
                if d < dt:
                    dt = d
        t_next = submit[nxt] if nxt < n else np.inf
        if ci + 1 < ncap and cap_t[ci + 1] < t_next:
            t_next = cap_t[ci + 1]
        if t + dt > t_next:
            dt = t_next - t
        if not dt < np.inf:
            break
        t += dt
        i = 0
        while i < na:
            j = act[i]
            left[j] -= rate[j] * dt
            if left[j] <= 1e-12 or (rate[j] > 0.0 and left[j] / rate[j] <= 1e-9 * solo_s[j]):
                done[j] = t
                na -= 1
                act[i] = act[na]
            else:
                i += 1
    return done


def capacity_steps_by_type(changes, node_num_gpus: np.ndarray, node_type: np.ndarray,
                           num_types: int) -> tuple[np.ndarray, np.ndarray]:
    """(times, GPUs online of each type from then on [steps, types]), starting from the whole
    cluster at −inf, of `(time_s, node, online)` changes in the engine's order."""
    node_type = np.asarray(node_type, np.int64)
    online = np.ones(node_num_gpus.shape[0], bool)
    cur = np.bincount(node_type, weights=node_num_gpus, minlength=num_types).astype(np.float64)
    times, caps = [-np.inf], [cur.copy()]
    for t, node, on in sorted(changes, key=lambda c: (c[0], c[1], c[2])):
        if online[node] != on:
            cur[node_type[node]] += float(node_num_gpus[node]) * (1 if on else -1)
            online[node] = on
        if times[-1] == t:
            caps[-1] = cur.copy()
        else:
            times.append(float(t))
            caps.append(cur.copy())
    return np.asarray(times, np.float64), np.vstack(caps)


def ftf_reference_jct(name: str, submit_s: np.ndarray, num_gpus: np.ndarray, max_gpus: np.ndarray,
                      solo_s: np.ndarray, node_num_gpus: np.ndarray, node_type: np.ndarray,
                      type_speed: np.ndarray | None = None, changes=(),
                      artifact_max_gpus: np.ndarray | None = None) -> np.ndarray:
    """Reference JCT per job (NaN where skipped) under the named reference (`FTF_REFERENCES`).

    `solo_s[j]`: job j alone at its requested `num_gpus[j]` on the reference placement;
    `type_speed[j, k]`: its speed on type k relative to that (None: 1 on every type, 0 for
    none); `changes`: capacity changes `(time_s, node, online)`; `artifact_max_gpus[j]`: job
    j's cap under `gps-artifact`.
    """
    from cosim.errors import InputError

    node_num_gpus = np.asarray(node_num_gpus)
    total = float(node_num_gpus.sum())
    demand = np.asarray(num_gpus, np.float64)
    if name == "gps":
        return gps_jct(submit_s, demand, solo_s, total, capacity_steps(changes, node_num_gpus) if changes else None)
    if name in ("gps-capped", "gps-uncapped", "gps-artifact"):  # linear in GPUs up to a per-job cap
        if name == "gps-uncapped":
            cap = np.full(demand.shape, max(total, 1.0))
        elif name == "gps-artifact":
            if artifact_max_gpus is None:
                raise InputError.at(field="ftf_reference", detail="gps-artifact needs each job's artifact GPU cap")
            cap = np.asarray(artifact_max_gpus, np.float64)
        else:
            cap = np.asarray(max_gpus, np.float64)
        cap = np.maximum(cap, demand)
        return gps_jct(submit_s, cap, np.asarray(solo_s, np.float64) * demand / cap, total,
                       capacity_steps(changes, node_num_gpus) if changes else None)
    if name == "hetero-1-over-n":
        nt = int(np.max(node_type)) + 1 if len(node_type) else 1
        if type_speed is None:
            type_speed = np.ones((submit_s.shape[0], nt))
        type_speed = np.ascontiguousarray(type_speed, np.float64)
        cap_t, cap_v = capacity_steps_by_type(changes, node_num_gpus, node_type, type_speed.shape[1])
        order = np.argsort(submit_s, kind="stable")
        sub = np.ascontiguousarray(submit_s[order], np.float64)
        sp = type_speed[order]
        ordk = np.ascontiguousarray(np.argsort(-sp, axis=1, kind="stable"), np.int64)
        done = one_over_n_completion(sub, np.ascontiguousarray(demand[order]),
                                     np.ascontiguousarray(np.asarray(solo_s, np.float64)[order]), sp, ordk,
                                     cap_t, np.ascontiguousarray(cap_v))
        out = np.full(submit_s.shape[0], np.nan)
        out[order] = done - sub
        return out
    raise InputError.at(field="ftf_reference", expected=", ".join(FTF_REFERENCES), got=name)
