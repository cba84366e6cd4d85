"""A round loop over `policies.fft.core` for the FFT unit tests (the paper's worked examples
are stated in rounds and epochs, not on a cluster): jobs (arrival a, epochs W, d GPUs,
θ per type in epochs/round, migration rounds), per-type capacity; each round FFT's ILP picks
types, a job moving to a new type loses `mig` rounds of that round, and a job finishing
mid-round records its fractional completion time (its GPUs then idle until the next round,
notes A7). `srtf=True` replaces the ILP by overhead-agnostic SRTF (the Fig. 2 foil)."""

from __future__ import annotations

import numpy as np

from policies.fft import core


def run_rounds(a, W, d, theta, cap, mig=None, *, rounds=200, w_sw=1.0, w_fair=1.0, w_jct=1.0, srtf=False,
               k_rule="packing_ilp"):
    a, W = np.asarray(a, float), np.asarray(W, float)
    d = np.asarray(d, np.int64)
    theta = np.asarray(theta, float)
    cap = np.asarray(cap, float)
    J, M = theta.shape
    mig = np.zeros(J) if mig is None else np.asarray(mig, float)
    done = np.zeros(J)
    fin = np.full(J, np.nan)
    first = np.full(J, np.nan)
    last = np.full(J, -1, np.int64)
    rho = np.zeros(J)
    tau = np.full(J, np.nan)
    n_prev = -1
    hist = {"type": [], "rho": [], "k": [], "busy": []}
    for t in range(rounds):
        act = np.flatnonzero((a <= t) & np.isnan(fin))
        if act.size == 0 and np.all(np.isfinite(fin)):
            break
        if act.size != n_prev:  # A4: τ re-estimated when |A(t)| changes
            r = core.fair_rate(theta[act], d[act], cap, act.size)
            tau[act] = a[act] + W[act] / r
            n_prev = act.size
        sw = np.where((last[act, None] >= 0) & (np.arange(M)[None, :] != last[act, None]), mig[act, None], 0.0)
        choice = np.full(act.size, -1, np.int64)
        if srtf:  # shortest remaining time (on the job's best free type) first, migration-oblivious
            left = cap.copy()
            rem = (W[act] - done[act]) / theta[act].max(axis=1)
            for q in np.argsort(rem, kind="stable"):
                for i in np.argsort(-theta[act[q]], kind="stable"):
                    if theta[act[q], i] > 0 and d[act[q]] <= left[i]:
                        choice[q] = i
                        left[i] -= d[act[q]]
                        break
        elif act.size:
            c = core.round_costs(float(t), a[act], W[act], W[act], theta[act], d[act], rho[act], sw,
                                 w_jct=w_jct, w_sw=w_sw, w_fair=w_fair)
            choice, st = core.solve_round(c, d[act], cap, k_rule=k_rule)
            hist["k"].append(st["k"])
        got = np.zeros(act.size)
        run = choice >= 0
        got[run] = theta[act[run], choice[run]]
        hist["busy"].append(int(d[act[run]].sum()))
        rho[act] = core.rho_update(rho[act], float(t), a[act], tau[act], W[act], got)
        full = np.zeros(J, np.int64) - 1
        full[act] = choice
        hist["type"].append(full)
        hist["rho"].append(rho.copy())
        for q, j in enumerate(act.tolist()):
            i = int(choice[q])
            if i < 0:
                continue
            if np.isnan(first[j]):
                first[j] = t
            lost = mig[j] if (last[j] >= 0 and last[j] != i) else 0.0
            last[j] = i
            rate = theta[j, i]
            usable = max(1.0 - lost, 0.0)
            need = (W[j] - done[j]) / rate
            if need <= usable + 1e-12:
                fin[j] = t + lost + need
                done[j] = W[j]
            else:
                done[j] += usable * rate
    hist["type"] = np.array(hist["type"])
    hist["rho"] = np.array(hist["rho"])
    return {"finish": fin, "jct": fin - a, "first": first, "hist": hist, "tau": tau}
