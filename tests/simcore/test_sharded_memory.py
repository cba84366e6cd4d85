"""Sharded data parallelism (ZeRO/FSDP) and tensor parallelism in the memory and comm model: FFT's LLM jobs fit T4/A10/V100 with their sharding and not without;
memory per GPU and the communication volume checked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import netmodel
from calibration import sharding, zoo
from cosim.errors import UnknownNameError
from simcore.perf import PerfModel
from simcore.prepare import canonical_models
from experiments.run_perf import _perf_packages
from experiments.runner import RunConfig
from tests.simcore.fakes import FakeComm, fake_topology

LLMS = ("gpt_neo_1.3b", "gpt_neo_2.7b", "opt_2.7b", "opt_6.7b")
#: published parameter counts (Hugging Face model cards / configs)
PUBLISHED_PARAMS = {"gpt_neo_1.3b": 1_315_575_808, "gpt_neo_2.7b": 2_651_307_520, "opt_2.7b": 2_651_596_800,
                    "opt_6.7b": 6_658_473_984}
SHAPES = {"gpt_neo_1.3b": (24, 2048), "gpt_neo_2.7b": (32, 2560), "opt_2.7b": (32, 2560), "opt_6.7b": (32, 4096)}


@pytest.fixture(scope="module")
def fft_perf() -> PerfModel:
    topo = netmodel.build_topology(netmodel.load_cluster("fft-hetero"))
    z, comm, solve, _ = _perf_packages(RunConfig())
    return PerfModel(topo, z, comm(topo), solve)


def _fits(perf: PerfModel, model: str, type_name: str, n: int, batch: int = 8) -> bool:
    t = perf.type_names.index(type_name)
    g = perf.consolidated_gpus(n, t)
    return g is not None and np.isfinite(perf.solo_iter_s(model, g, batch))


def test_llm_zoo_entries_are_the_published_models():
    for m in LLMS:
        s = zoo.get(m)
        assert s.params == PUBLISHED_PARAMS[m]
        assert (s.layers, s.hidden, s.seq_len) == (*SHAPES[m], 2048)
        # 6·N·T (Kaplan) + attention, ×4/3 for the recomputed forward (activation checkpointing)
        base = 6.0 * s.params * s.seq_len
        assert base * 4 / 3 <= s.flops_per_sample <= base * 4 / 3 * 1.2
        assert s.sharding == "zero3" and s.state_bytes_per_param == 16.0  # ZeRO: 2 + 2 + 12
        assert zoo.resolve(m.replace(".", "_")) == m  # gpt_neo_1_3b etc.


@pytest.mark.parametrize("model,gpu,n", [
    ("gpt_neo_1.3b", "T4", 4), ("gpt_neo_1.3b", "A10", 4), ("gpt_neo_1.3b", "V100-16GB", 4),
    ("gpt_neo_2.7b", "T4", 4), ("gpt_neo_2.7b", "A10", 4), ("gpt_neo_2.7b", "V100-16GB", 4),
    ("opt_2.7b", "T4", 4), ("opt_2.7b", "V100-16GB", 8), ("opt_6.7b", "A10", 8),
])
def test_llms_fit_with_their_sharding_and_not_without(fft_perf, model, gpu, n):
    """FFT runs GPT-Neo on 4 workers and OPT on 4 or 8 (Table 2): with FSDP full sharding they
    fit; with plain DDP (`#none`) the 16 B/param state alone exceeds the GPU."""
    assert _fits(fft_perf, model, gpu, n)
    assert not _fits(fft_perf, model + "#none", gpu, n)


def test_opt_6_7b_needs_more_than_8_small_gpus(fft_perf):
    """107 GB of state over 8 GPUs is 13.3 GB each, beyond a 16 GB GPU's usable 14.7 GB with
    buffers and overhead: FFT's memory mask excludes such types (§4.4.1)."""
    assert not _fits(fft_perf, "opt_6.7b", "T4", 8) and not _fits(fft_perf, "opt_6.7b", "V100-16GB", 8)


def test_memory_per_gpu_by_hand():
    """GPT-Neo 2.7B, FSDP over 4 GPUs, local batch 2 (mixed precision, Adam, checkpointing)."""
    s = zoo.get("gpt_neo_2.7b")
    psi, L, h, a, T = 2_651_307_520, 32, 2560, 20, 2048
    state = 16 * psi / 4  # (2 + 2 + 12)·Ψ / N_d
    buffers = 3 * 2 * 12 * h * h  # two gathered blocks + one block of gradients, fp16
    act = L * T * h * 2 + T * (17 * h + 2.5 * a * T) * 2  # checkpointed inputs + one layer
    want = (state + buffers) / 1e9 + 1.0 + 2 * act / 1e9
    assert s.memory_gb(2, 4) == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(13.9436, abs=1e-4)
    assert s.max_local_batch(16.0, 4) == 2  # T4: (14.72 − 12.077) / 0.933 = 2.8
    # ZeRO-1 keeps fp16 weights and grads whole: (2 + 2)·Ψ + 12·Ψ/4 = 7Ψ = 18.6 GB > 16 GB
    z1 = zoo.get("gpt_neo_2.7b#zero1")
    assert z1.static_memory_gb_at(4) == pytest.approx(7 * psi / 1e9 + 1.0)
    assert z1.max_local_batch(16.0, 4) == 0
    # ZeRO-2: 2Ψ + 14Ψ/4
    assert zoo.get("gpt_neo_2.7b#zero2").static_memory_gb_at(4) == pytest.approx(5.5 * psi / 1e9 + 1.0)
    # plain DDP and one GPU: the unsharded 16Ψ (FFT's 107 GB for OPT-6.7B)
    assert zoo.get("opt_6.7b#none").static_memory_gb_at(8) == pytest.approx(16 * 6_658_473_984 / 1e9 + 1.0)
    # fp32 Adam: 4 + 4 + 8
    assert zoo.get("bert_base").state_split == (4.0, 4.0, 8.0)


def test_tensor_parallel_memory_by_hand():
    """TP 2 halves every GPU's parameters; ZeRO-3 then shards over N_d = n/t."""
    s = zoo.get("gpt_neo_1.3b#zero3.tp2")
    psi, h = 1_315_575_808, 2048
    assert s.static_memory_gb_at(4) == pytest.approx((16 * psi / 2 / 2 + 3 * 2 * 12 * h * h / 2) / 1e9 + 1.0)
    full = zoo.get("gpt_neo_1.3b").activation_bytes_per_sample
    L, T, a = 24, 2048, 16
    assert s.activation_bytes_per_sample == pytest.approx(L * T * h * 2 + T * (17 * h + 2.5 * a * T) * 2 / 2)
    assert s.activation_bytes_per_sample < full


class _Zoo:
    """The real zoo's specs with a fake compute time, for the fake topology's types A/B."""

    resolve = staticmethod(zoo.resolve)
    get = staticmethod(zoo.get)

    @staticmethod
    def compute_time_s(model, gpu_type, local_batch):
        return 0.1 * local_batch


class _Recording(FakeComm):
    def __init__(self, topo):
        super().__init__(topo)
        self.sizes: list[tuple[int, float]] = []

    def allreduce(self, gpus, nbytes, bucket_bytes=None, algorithm="auto"):
        self.sizes.append((len(gpus), float(nbytes)))
        return super().allreduce(gpus, nbytes, bucket_bytes, algorithm)


def _perf(mem=(40.0, 40.0)):
    topo = fake_topology(nodes=2, gpus_per_node=4, mem_gb=mem)
    comm = _Recording(topo)
    return PerfModel(topo, _Zoo(), comm, None, contention=False), comm


def test_comm_volume_multiplier_by_hand():
    """ZeRO-3: all-gather forward + all-gather backward + reduce-scatter = 3Ψ against the
    all-reduce's 2Ψ → 1.5×; ZeRO-1/2 move the all-reduce volume (reduce-scatter + all-gather)."""
    grad = 2 * 1_315_575_808  # fp16 gradients
    assert sharding.DP_COMM_MULTIPLIER == {"none": 1.0, "zero1": 1.0, "zero2": 1.0, "zero3": 1.5}
    perf, comm = _perf()
    gpus = np.arange(8, dtype=np.int32)
    for name, mult in (("gpt_neo_1.3b", 1.5), ("gpt_neo_1.3b#zero2", 1.0), ("gpt_neo_1.3b#zero1", 1.0)):
        comm.sizes.clear()
        ph = perf.phases(name, gpus, 8)
        assert comm.sizes == [(8, grad * mult)]
        # the fake inter-node ring: 2(k−1)/k · bytes over 10 GB/s, k = 2 nodes
        assert ph.comm_s == pytest.approx(grad * mult / 10e9)


def test_tensor_parallel_traffic_by_hand():
    """TP 4 within a node: (4 + 2)·L all-reduces (fwd, bwd, recomputed fwd) of b·s·h fp16
    values among the 4 GPUs, on the critical path; data parallel over the 2 groups."""
    perf, comm = _perf()
    gpus = np.arange(8, dtype=np.int32)
    ph = perf.phases("gpt_neo_1.3b#zero3.tp4", gpus, 4)  # 2 DP ranks, local batch 2
    msg = 2 * 2048 * 2048 * 2.0
    assert (4, msg) in comm.sizes and (8, 2 * 1_315_575_808 * 1.5) in comm.sizes
    per_ar = 2 * 3 / 4 * msg / 100e9  # fake intra-node ring at 100 GB/s
    assert ph.compute_s == pytest.approx(0.1 * 2 / 4 + 6 * 24 * per_ar)
    # one TP group alone: no data-parallel collective
    comm.sizes.clear()
    ph1 = perf.phases("gpt_neo_1.3b#zero3.tp4", gpus[:4], 4)
    assert ph1.comm_s == 0.0 and all(n == 4 for n, _ in comm.sizes)
    # a GPU count that is not whole TP groups cannot run
    assert perf.phases("gpt_neo_1.3b#zero3.tp4", gpus[:6], 6) is None


def test_sharding_job_columns_and_bad_values():
    df = pd.DataFrame({"job_id": ["a", "b", "c", "d", "e"], "model": ["opt-2.7b"] * 5,
                       "sharding": ["fsdp", "zero2", None, "zero9", None],
                       "model_parallel": [None, 2, None, None, "x"]})
    out, bad = canonical_models(df, zoo)
    assert list(out["model"][:3]) == ["opt_2.7b", "opt_2.7b#zero2.tp2", "opt_2.7b"]
    assert [b.job_id for b in bad] == ["d", "e"] and "sharding='zero9'" in bad[0].reason
    with pytest.raises(UnknownNameError):
        zoo.resolve("opt_2.7b#zero4")
    assert zoo.with_precision("gpt2#zero1", "amp") == "gpt2@amp#zero1"
    assert zoo.compute_time_s("opt_2.7b#zero2.tp2", "t4", 2) == zoo.compute_time_s("opt_2.7b", "t4", 2)


def test_llm_jobs_pass_the_pre_run_check_only_with_sharding(fft_perf):
    """An FFT LLM job (4 T4 workers) through `build_jobs`: valid with its default FSDP, invalid
    (memory) when its trace row asks for plain DDP."""
    from simcore.prepare import build_jobs

    df = pd.DataFrame({"job_id": ["llm", "ddp"], "submit_time": [0.0, 0.0], "num_gpus": [4, 4],
                       "model": ["gpt_neo_2_7b", "gpt_neo_2_7b"], "gpu_type": ["T4", "T4"],
                       "global_batch": [8, 8], "total_iterations": [100.0, 100.0], "sharding": [None, "none"]})
    jobs, bad = build_jobs(df, fft_perf, zoo)
    assert [b.job_id for b in bad] == ["ddp"] and "does not fit GPU memory" in bad[0].reason
    i = list(jobs.job_id).index("llm")
    assert jobs.model[i] == "gpt_neo_2.7b" and np.isfinite(jobs.ref_iter_s[i])
    assert jobs.model[1 - i] == "gpt_neo_2.7b#none"
