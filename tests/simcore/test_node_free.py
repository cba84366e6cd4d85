"""The cluster state's per-node usable-GPU counts (`ClusterState.node_free`) equal a recount
from the GPU arrays after any sequence of holds, releases and capacity changes."""

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.state import ClusterState


def _cluster(sizes: list[int]) -> ClusterState:
    num = np.asarray(sizes, np.int32)
    first = np.concatenate(([0], np.cumsum(num)[:-1])).astype(np.int32)
    topo = SimpleNamespace(gpu_node=np.repeat(np.arange(num.shape[0], dtype=np.int32), num),
                           node_first_gpu=first, node_num_gpus=num)
    return ClusterState.from_topology(topo)


def _recount(c: ClusterState) -> np.ndarray:
    """Usable GPUs per node counted one node at a time (independent of `free_recount`)."""
    return np.array([int((c.gpu_online[g] & (c.gpu_owner[g] < 0)).sum())
                     for g in (c.node_gpus(n) for n in range(c.node_free.shape[0]))], np.int32)


ops = st.lists(st.tuples(st.sampled_from(("hold", "release", "off", "on")), st.integers(0, 10**6),
                         st.integers(1, 8)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.sampled_from((1, 2, 4, 8)), min_size=1, max_size=12), ops=ops)
def test_kept_counts_equal_recount(sizes, ops):
    c = _cluster(sizes)
    held: dict[int, tuple[int, ...]] = {}
    next_job = 0
    assert c.node_free.tolist() == list(sizes)
    for op, seed, k in ops:
        rng = np.random.default_rng(seed)
        if op == "hold":  # the engine holds only free, online GPUs
            usable = np.flatnonzero(c.gpu_online & (c.gpu_owner < 0))
            if usable.shape[0] == 0:
                continue
            gpus = tuple(sorted(rng.choice(usable, min(k, usable.shape[0]), replace=False).tolist()))
            c.hold(next_job, gpus)
            held[next_job] = gpus
            next_job += 1
        elif op == "release" and held:
            j = sorted(held)[seed % len(held)]
            c.release(held.pop(j))
        elif op in ("off", "on"):
            node = seed % len(sizes)
            if op == "off":  # the engine evicts a node's jobs before it goes offline
                gpus = set(c.node_gpus(node).tolist())
                for j in [j for j, g in held.items() if gpus & set(g)]:
                    c.release(held.pop(j))
            c.set_online(c.node_gpus(node), op == "on")
        assert np.array_equal(c.node_free, _recount(c)), (op, c.node_free, _recount(c))
        assert np.array_equal(c.free_recount(), _recount(c))


def test_release_of_offline_gpus_keeps_them_unusable():
    """GPUs released while offline (held across a node's removal) do not count as usable."""
    c = _cluster([4, 4])
    c.hold(0, (4, 5))
    c.set_online(c.node_gpus(1), False)
    assert c.node_free.tolist() == [4, 0]
    c.release((4, 5))
    assert c.node_free.tolist() == [4, 0]
    c.set_online(c.node_gpus(1), True)
    assert c.node_free.tolist() == [4, 4]


def test_recount_after_direct_writes():
    c = _cluster([2, 4])
    c.gpu_online[2:6] = False
    assert c.node_free.tolist() == [2, 4]
    c.recount_free()
    assert c.node_free.tolist() == [2, 0]
