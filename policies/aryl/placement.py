"""Aryl's placement (§5.3, §6): BFD with on-loan server groups, and which jobs may span GPU types.

Inelastic jobs go to training servers, elastic jobs' base workers to on-loan servers without
flexible workers, flexible workers to on-loan servers without base workers (the flexible group,
returned first without preemption), then the rest; best fit on one server when one holds the
gang, else the emptiest servers first. With `mix_types` a heterogeneous-capable job's gang may
span training and inference GPUs (`hetero_jobs` says which jobs; `hetero_base_training` puts
such an elastic job's base on training servers first). `Placement` is mixed into
`policies.aryl.policy.Aryl`.
"""

from __future__ import annotations

import numpy as np

from policies.aryl.config import HETERO_VC
from simcore.api import ClusterView


class Placement:
    """The `aryl` policy's gang placement and its heterogeneous-capable job mask."""

    def _sync_mix(self, view: ClusterView) -> None:
        """`_mix[j]`: job j may run a heterogeneous gang (mix_types; hetero_jobs picks which);
        recomputed only when the job table grows (the vc strings are compared once per job)."""
        jobs = view.jobs
        if self._mix.shape[0] == jobs.num_jobs:
            return
        mix = (jobs.gpu_type_req < 0) & bool(self.config.mix_types)
        if self.config.hetero_jobs == "vc":
            vc = jobs.vc if jobs.vc is not None else np.full(jobs.num_jobs, "", object)
            mix &= np.asarray(vc, object) == HETERO_VC
        self._mix = mix

    def _type_mask(self, c, t: int) -> np.ndarray:
        """`c.gpu_type == t`, computed once per type (GPU types do not change during a run)."""
        hit = self._type_masks.get(t)
        if hit is None or hit[0] is not c.gpu_type:
            hit = self._type_masks[t] = (c.gpu_type, c.gpu_type == t)
        return hit[1]

    def _place(self, view: ClusterView, j: int, k: int, role: str, avail: np.ndarray, inf: np.ndarray,
               has_base: np.ndarray, has_flex: np.ndarray, like: int = -1) -> np.ndarray | None:
        """k GPUs from `avail` for job j's `role` (inelastic|base|flex) by the tiered BFD rule;
        `like`: the GPU type the gang must keep (flexible workers of a running job)."""
        c = view.cluster
        req = int(view.jobs.gpu_type_req[j])
        mix = bool(self._mix[j])
        ok = avail
        if req >= 0:
            ok = ok & self._type_mask(c, req)
        if like >= 0 and not mix:
            ok = ok & self._type_mask(c, like)
        idx = np.flatnonzero(ok)
        if idx.size < k:
            return None
        nodes_of = c.gpu_node[idx]
        free = np.bincount(nodes_of, minlength=inf.shape[0])
        nodes = np.flatnonzero(free)
        if self.config.special_placement and role != "inelastic":
            other = has_flex if role == "base" else has_base
            on_inf = inf[nodes]
            if role == "base" and mix and self.config.hetero_base_training:
                on_inf = ~on_inf  # a heterogeneous-capable job's base goes to training servers first (§6)
            tier = np.where(on_inf, 0, 2) + other[nodes].astype(int)
        else:
            tier = inf[nodes].astype(int)
        types = [None] if mix or req >= 0 or like >= 0 else list(np.unique(c.gpu_type[idx]))
        if len(types) > 1:  # single-type gang: the type of the best tier first
            best_t = [int(tier[c.gpu_type[c.node_first_gpu[nodes]] == t].min()) for t in types]
            types = [t for _, t in sorted(zip(best_t, types), key=lambda x: (x[0], x[1]))]
        for t in types:
            sel = nodes if t is None else nodes[c.gpu_type[c.node_first_gpu[nodes]] == t]
            st = tier if t is None else tier[c.gpu_type[c.node_first_gpu[nodes]] == t]
            f = free[sel]
            if f.sum() < k:
                continue
            fits = f >= k
            if fits.any():  # best fit: best tier, then the fewest free GPUs that still hold k
                o = np.lexsort((sel[fits], f[fits], st[fits]))
                node = int(sel[fits][o[0]])
                return idx[nodes_of == node][:k]
            o = np.lexsort((sel, -f, st))
            take, left = [], k
            for node in sel[o].tolist():
                g = idx[nodes_of == node][:left]
                take.append(g)
                left -= g.size
                if left == 0:
                    return np.concatenate(take)
        return None
