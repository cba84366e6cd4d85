"""Network model speed: build a 100,000-GPU fabric (< 10 s, < 2 GB); all-reduce cost queries
(cached < 5 µs, uncached < 200 µs).

The fabric is `dgx-a100` resized to 12,500 nodes (100,000 GPUs, 3,125 leaves, 625 pods).
Queries use a 64-GPU job (8 full nodes over 2 leaves) with 20 DDP buckets (a ResNet-50-like
100 MB of gradients), the call the engine makes for every placement:

- cached: the same call again (result cache hit);
- new placement, known shape: the same shape on other nodes (numba shape pass + bucket
  evaluation; the engine's common case when jobs move);
- uncached: caches cleared before every call (shape pass, algorithm costs, evaluation);
- uncached 4,096-GPU job (512 nodes over 128 leaves, 26 pods);
- uncached ``multidim`` (ASTRA-sim style, the `dally-3tier` default) 1,024-GPU job on
  `dally-3tier` with 16 racks (the whole cluster).

Times are the median of many calls after warm-up (numba compiled). Memory is tracemalloc's
peak during the build (numpy allocations are traced).

Run: ``python -m benchmarks.bench_net``.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc

import numpy as np

_STATE: dict = {}


def _fabric():
    if "topo" not in _STATE:
        import netmodel
        from collectives import CommModel

        topo = netmodel.build_topology(netmodel.load_cluster("dgx-a100", num_nodes=12_500), check_graph=False)
        _STATE["topo"] = topo
        _STATE["comm"] = CommModel(topo)
        _STATE["buckets"] = np.full(20, 5e6)
    return _STATE["topo"], _STATE["comm"], _STATE["buckets"]


def _median_us(fn, n: int) -> float:
    fn()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples) * 1e6


def bench_build_100k() -> list[dict]:
    import netmodel

    spec = netmodel.load_cluster("dgx-a100", num_nodes=12_500)
    netmodel.build_topology(netmodel.load_cluster("dgx-a100"))   # warm imports
    tracemalloc.start()
    t0 = time.perf_counter()
    topo = netmodel.build_topology(spec)                           # with the networkx tree check
    secs = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrays = sum(v.nbytes for v in vars(topo).values() if isinstance(v, np.ndarray))
    detail = f"{topo.num_gpus} GPUs, {topo.num_nodes} nodes, {topo.num_leaves} leaves, {topo.num_links} links"
    return [dict(name="build 100k-GPU topology", value=secs, unit="s", target="< 10 s", detail=detail),
            dict(name="build 100k-GPU peak memory", value=peak / 2**20, unit="MiB", target="< 2048 MiB",
                 detail=f"arrays kept: {arrays / 2**20:.1f} MiB"),]


def bench_allreduce_cached() -> dict:
    _, comm, buckets = _fabric()
    gpus = np.arange(64 * 4, 64 * 4 + 64)           # nodes 32..39 = leaves 8, 9
    us = _median_us(lambda: comm.allreduce(gpus, 100e6, buckets), 20_000)
    return dict(name="allreduce query, cached", value=us, unit="µs", target="< 5 µs",
                detail="64 GPUs, 20 buckets, same call repeated")


def bench_allreduce_new_placement_known_shape() -> dict:
    _, comm, buckets = _fabric()
    comm.allreduce(np.arange(64), 100e6, buckets)
    starts = [8 * 4 * (2 * i + 1) for i in range(1, 1500)]   # 8 nodes over 2 leaves, always same shape
    placements = [np.arange(s, s + 64) for s in starts]
    it = iter(placements)
    us = _median_us(lambda: comm.allreduce(next(it), 100e6, buckets), 250)
    return dict(name="allreduce query, new placement of a known shape", value=us, unit="µs", target="< 200 µs",
                detail="numba shape pass + link mapping + bucket evaluation")


def bench_allreduce_uncached() -> list[dict]:
    _, comm, buckets = _fabric()
    out = []
    from collectives.shape import placement_shape

    for gpus in (np.arange(32, 32 + 64), np.arange(0, 4096) + 8 * 1000):
        sh = placement_shape(comm.topo, gpus)
        label = f"{gpus.size} GPUs ({sh.nodes.size} nodes, {sh.leaves.size} leaves, {sh.pods.size} pods)"
        def once(gpus=gpus):
            comm.clear_cache()
            comm.allreduce(gpus, 100e6, buckets)

        us = _median_us(once, 200 if gpus.size < 1000 else 20)
        out.append(dict(name=f"allreduce query, uncached, {gpus.size} GPUs", value=us, unit="µs",
                        target="< 200 µs", detail=label + ": shape pass, ring/tree/hierarchical costs, buckets"))
    return out


def bench_allreduce_multidim_uncached() -> dict:
    import netmodel
    from collectives import CommModel

    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier", num_leaves=16))
    comm = CommModel(topo)
    gpus = np.arange(topo.num_gpus)
    buckets = np.full(20, 5e6)

    def once():
        comm.clear_cache()
        comm.allreduce(gpus, 100e6, buckets)

    us = _median_us(once, 50)
    return dict(name=f"allreduce query, uncached, multidim, {gpus.size} GPUs", value=us, unit="µs",
                target="< 200 µs", detail="dally-3tier, 16 racks: shape pass, per-dimension levels, buckets")


def main() -> None:
    rows = []
    for fn in (bench_build_100k, bench_allreduce_cached, bench_allreduce_new_placement_known_shape,
               bench_allreduce_uncached, bench_allreduce_multidim_uncached):
        r = fn()
        rows.extend(r if isinstance(r, list) else [r])
    for r in rows:
        print(f"{r['name']:52s} {r['value']:12.3f} {r['unit']:4s} target {r['target']:12s} {r['detail']}")


if __name__ == "__main__":
    main()
