"""Placement shapes written as text (`cosim net allreduce --placement`) → GPU ids.

SHAPE lists GPUs per node: ``,`` separates nodes under one leaf (rack), ``/`` separates leaves,
and ``|`` separates pods. ``8`` is one full node, ``4,4`` two nodes under one leaf, ``4/4`` two
nodes under different leaves, ``8,8/8,8`` four nodes in two leaves, ``8|8`` two pods. Each
group is mapped to the first unused leaf / node (in id order) that can hold it, and takes the
first GPUs of each node, so the same text always names the same GPUs.
"""

from __future__ import annotations

import numpy as np

from cosim.errors import InputError


def parse_shape(text: str) -> list[list[list[int]]]:
    """'8,8/8|4' → [[[8, 8], [8]], [[4]]] (pods → leaves → GPUs per node)."""
    try:
        pods = [[[int(x) for x in leaf.split(",")] for leaf in pod.split("/")] for pod in str(text).split("|")]
    except ValueError:
        raise InputError.at(field="placement", expected="GPUs per node like 8, 4,4, 4/4 or 8,8/8,8",
                            got=text) from None
    if any(c <= 0 for pod in pods for leaf in pod for c in leaf):
        raise InputError.at(field="placement", expected="positive GPU counts per node", got=text)
    return pods


def placement_gpus(topo, text: str) -> np.ndarray:
    """GPU ids for a placement shape on `topo`; a one-line InputError when it does not fit."""
    pods = parse_shape(text)
    name = topo.spec.name

    def fail(why: str) -> InputError:
        return InputError.at(field="placement", expected=f"a shape that fits cluster '{name}' ({why})", got=text)

    maxg = int(topo.node_num_gpus.max())
    if max(c for pod in pods for leaf in pod for c in leaf) > maxg:
        raise fail(f"its nodes have at most {maxg} GPUs")
    leaves_of_pod: dict[int, list[int]] = {}
    for leaf, pod in enumerate(topo.leaf_pod.tolist()):
        leaves_of_pod.setdefault(pod, []).append(leaf)
    bounds = np.searchsorted(topo.node_leaf, np.arange(topo.num_leaves + 1))
    gpus: list[np.ndarray] = []
    pod_ids = sorted(leaves_of_pod)
    pi = 0
    for pod_spec in pods:
        while True:  # first pod (in order) whose leaves can hold every leaf group
            if pi >= len(pod_ids):
                need = max(len(pod) for pod in pods)
                raise fail(f"needs {len(pods)} pod(s) with {need} leaf group(s) that have enough nodes; it has "
                           f"{len(pod_ids)} pod(s) of up to {max(len(v) for v in leaves_of_pod.values())} "
                           f"leaves of up to {topo.spec.nodes_per_leaf} nodes")
            chosen = _fit_pod(topo, bounds, leaves_of_pod[pod_ids[pi]], pod_spec)
            pi += 1
            if chosen is not None:
                break
        gpus.extend(chosen)
    return np.concatenate(gpus).astype(np.int64)


def _fit_pod(topo, bounds, leaves: list[int], pod_spec: list[list[int]]) -> list[np.ndarray] | None:
    out: list[np.ndarray] = []
    li = 0
    for leaf_spec in pod_spec:
        while True:
            if li >= len(leaves):
                return None
            got = _fit_leaf(topo, bounds, leaves[li], leaf_spec)
            li += 1
            if got is not None:
                break
        out.extend(got)
    return out


def _fit_leaf(topo, bounds, leaf: int, counts: list[int]) -> list[np.ndarray] | None:
    nodes = range(int(bounds[leaf]), int(bounds[leaf + 1]))
    out: list[np.ndarray] = []
    it = iter(nodes)
    for c in counts:
        for node in it:
            if topo.node_num_gpus[node] >= c:
                first = int(topo.node_first_gpu[node])
                out.append(np.arange(first, first + c))
                break
        else:
            return None
    return out
