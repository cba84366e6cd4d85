"""What-if query costs (targets): ≤ 20 µs per cached query, and a throughput matrix
of 1,000 jobs × 8 GPU types in ≤ 20 ms, so a policy (Gavel, FFT, AlloX) can ask per job per
round.

The cluster: 8 node types (A10, A100, H100, K80, P100, RTX 2080 Ti, T4, V100), 8 nodes × 4
GPUs each, PCIe hosts on a 100 Gb/s fabric; the real zoo and comm model (`calibration.zoo`,
`collectives.CommModel`), i.e. the perf model `cosim simulate` runs. 1,000 jobs of 12 zoo
models, 1/2/4/8 GPUs, the model's default batch or twice it.

Run: ``python -m benchmarks.run --only whatif``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

TYPES = (("a10", "A10", 24), ("a100", "A100-80GB", 80), ("h100", "H100-80GB", 80), ("k80", "K80", 12),
         ("p100", "P100", 16), ("rtx", "RTX2080Ti", 11), ("t4", "T4", 16), ("v100", "V100-32GB", 32))
MODELS = ("resnet50", "resnet18", "vgg16", "bert_base", "gpt2", "deepspeech2", "yolov3", "inception_v3",
          "densenet121", "mobilenet_v3", "transformer", "neumf")


def _cluster_toml() -> str:
    out = ['name = "whatif-8types"', 'description = "8 GPU types x 8 nodes x 4 GPUs"', "nodes_per_leaf = 8",
           "leaves_per_pod = 8"]
    for key, gpu, mem in TYPES:
        out += [f"[node_types.{key}]", f'gpu_type = "{gpu}"', f"gpu_mem_gb = {mem}", "gpus_per_node = 4",
                f"[node_types.{key}.intra]", 'kind = "pcie"', "gpu_GBps = 15.75", "host_bridge_GBps = 10.0",
                "latency_us = 5.0", f"[node_types.{key}.nic]", "count = 1", "gbps = 100", "gpudirect = false",
                "latency_us = 5.0"]
    for key, _, _ in TYPES:
        out += ["[[groups]]", f'name = "{key}"', f'node_type = "{key}"', "nodes = 8", "start_new_leaf = true"]
    for tier in ("leaf", "spine", "core"):
        out += [f"[tiers.{tier}]", f'name = "{tier}"', 'kind = "ethernet"', "port_gbps = 100", "latency_us = 1.0",
                "oversubscription = 1.0"]
    return "\n".join(out) + "\n"


def setup(num_jobs: int = 1000, seed: int = 0):
    """(WhatIf, job indices that can run) on the 8-type cluster with the real perf model."""
    import pandas as pd

    import netmodel
    from calibration import zoo
    from collectives import CommModel, CommParams
    from collectives.contention import solve
    from simcore.perf import PerfModel
    from simcore.prepare import build_jobs
    from simcore.whatif import WhatIf

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "whatif-8types.toml"
        path.write_text(_cluster_toml())
        topo = netmodel.build_topology(netmodel.load_cluster(str(path)))
    perf = PerfModel(topo, zoo, CommModel(topo, CommParams.for_cluster(topo.spec)), solve)
    rng = np.random.default_rng(seed)
    models = rng.choice(MODELS, num_jobs)
    batch = np.array([int(zoo.get(m).default_global_batch) for m in models]) * rng.choice([1, 2], num_jobs)
    gpus = rng.choice([1, 2, 4, 8], num_jobs, p=[0.5, 0.2, 0.2, 0.1])
    df = pd.DataFrame(dict(job_id=[f"j{i}" for i in range(num_jobs)], submit_time=np.arange(num_jobs, dtype=float),
                           num_gpus=gpus, model=models, global_batch=np.maximum(batch, gpus),
                           total_iterations=1000))
    jobs, _ = build_jobs(df, perf, zoo)
    ok = np.flatnonzero(jobs.state != 5).astype(np.int64)
    return WhatIf(jobs, perf, "bench"), ok


def bench_whatif_matrix_1000x8() -> dict:
    wi, _ = setup()
    idx = np.arange(1000, dtype=np.int64)
    t0 = time.perf_counter()
    m = wi.throughput_matrix(idx)
    cold = time.perf_counter() - t0
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        m = wi.throughput_matrix(idx)
    warm = (time.perf_counter() - t0) / reps
    return {"name": "whatif_matrix_1000x8", "value": warm, "unit": "s", "target": "≤ 0.02 s (cached, per round)",
            "detail": f"first call (fills the cache) {cold:.3f} s; {int(np.isnan(m).sum())} of {m.size} NaN"}


def bench_whatif_query() -> dict:
    wi, ok = setup()
    wi.throughput_matrix(ok)  # fills the count-form cache on each type
    rng = np.random.default_rng(1)
    js = rng.choice(ok, 20000).tolist()
    ts = rng.integers(0, len(TYPES), 20000).tolist()
    ng = wi.jobs.num_gpus
    t0 = time.perf_counter()
    for j, t in zip(js, ts):
        wi.iteration_time(j, ng.item(j), None, t)
    count_s = (time.perf_counter() - t0) / len(js)
    places = {j: tuple(range(4 * (j % 8) * 8, 4 * (j % 8) * 8 + ng.item(j))) for j in set(js)}
    for j, p in places.items():
        wi.goodput(j, p)
    t0 = time.perf_counter()
    for j in js:
        wi.goodput(j, places[j])
    ids_s = (time.perf_counter() - t0) / len(js)
    return {"name": "whatif_query", "value": max(count_s, ids_s), "unit": "s", "target": "≤ 20e-6 s per cached query",
            "detail": f"iteration_time(count, type) {count_s * 1e6:.2f} µs; goodput(GPU ids) {ids_s * 1e6:.2f} µs"}


if __name__ == "__main__":
    for f in (bench_whatif_matrix_1000x8, bench_whatif_query):
        print(f())
