"""Sharded data parallelism (ZeRO / FSDP) and tensor parallelism: memory and traffic per GPU.

Plain data parallelism keeps the whole training state on every GPU, so a 1.3B-parameter
model trained with Adam in mixed precision needs ~21 GB per GPU before any activation and
never fits a 16 GB T4 or V100. The LLM jobs of FFT (GPT-Neo 1.3B/2.7B, OPT 2.7B/6.7B on
4 or 8 workers) run sharded. The accounting is the ZeRO paper's (Rajbhandari et al., SC'20,
§5.1 and Fig. 1): Ψ parameters, `w` bytes of weights, `g` bytes of gradients and `K` bytes of
optimizer state per parameter (mixed precision with Adam: 2 + 2 + 12, the fp32 master copy,
momentum and variance; fp32 with Adam: 4 + 4 + 8; momentum SGD: 4 + 4 + 4), over N_d
data-parallel ranks:

    none   (DDP)          (w + g + K)·Ψ
    zero1  (P_os)         (w + g)·Ψ + K·Ψ/N_d
    zero2  (P_os+g)       w·Ψ + (g + K)·Ψ/N_d
    zero3  (P_os+g+p)     (w + g + K)·Ψ/N_d            (FSDP FULL_SHARD is the same partition)

ZeRO-3 also materialises the parameters of the block it is computing: we count two
transformer blocks of gathered weights (the current one and the prefetched next, FSDP's
default backward prefetch) and one block of unsharded gradients before its reduce-scatter,
`3·w·Ψ_block` (Ψ_block = 12·h² for a transformer block; the largest tensor otherwise).

Tensor (model) parallelism of degree t (Megatron-LM, Shoeybi et al. 2019) splits every
weight matrix over t GPUs of one node, so each GPU holds Ψ/t parameters and N_d = n/t. Its
activations: the per-layer working set is split over t; the checkpointed layer inputs
(s·h values per layer) are replicated (no sequence parallelism).

Communication per iteration (bytes each GPU moves, relative to DDP's all-reduce of the
gradients, which is a reduce-scatter plus an all-gather, 2Ψ·g):

    none, zero1, zero2    ×1.0  (reduce-scatter of gradients + all-gather of the updated
                                 parameters/optimizer shards: the all-reduce volume, ZeRO §7)
    zero3                 ×1.5  (all-gather of parameters in forward and again in backward
                                 + reduce-scatter of gradients: 3Ψ against 2Ψ, ZeRO §7.2.2)

Tensor parallelism adds, per transformer layer and micro-batch, two all-reduces of the
layer's activations (b·s·h values) in forward and two in backward, plus two more in the
recomputed forward with activation checkpointing: `(4 + 2·ckpt)·L` all-reduces of
`b·s·h·bytes` among the t GPUs of the group (Megatron-LM §3, Fig. 4). They sit on the
critical path (the next layer needs their result), so they add to the compute phase.
"""

from __future__ import annotations

#: sharding modes; "fsdp" is an alias of "zero3"
SHARDINGS = ("none", "zero1", "zero2", "zero3")
SHARDING_ALIASES = {"none": "none", "ddp": "none", "": "none", "zero1": "zero1", "zero-1": "zero1",
                    "zero2": "zero2", "zero-2": "zero2", "zero3": "zero3", "zero-3": "zero3", "fsdp": "zero3"}

#: data-parallel traffic relative to an all-reduce of the gradients (module docstring)
DP_COMM_MULTIPLIER = {"none": 1.0, "zero1": 1.0, "zero2": 1.0, "zero3": 1.5}


def canonical_sharding(name: str | None) -> str:
    """`none` | `zero1` | `zero2` | `zero3` for any accepted spelling; ValueError otherwise."""
    key = "" if name is None else str(name).strip().lower()
    if key not in SHARDING_ALIASES:
        raise ValueError(name)
    return SHARDING_ALIASES[key]


def state_bytes_per_gpu(params: float, w: float, g: float, k: float, sharding: str, dp_degree: int,
                        model_parallel: int = 1) -> float:
    """Bytes of weights + gradients + optimizer state one GPU holds (module docstring table):
    `params` split over `model_parallel` tensor-parallel ranks, then partitioned over
    `dp_degree` data-parallel ranks as the ZeRO stage says."""
    psi = float(params) / max(1, int(model_parallel))
    nd = max(1, int(dp_degree))
    if sharding == "none":
        return (w + g + k) * psi
    if sharding == "zero1":
        return (w + g) * psi + k * psi / nd
    if sharding == "zero2":
        return w * psi + (g + k) * psi / nd
    if sharding == "zero3":
        return (w + g + k) * psi / nd
    raise ValueError(sharding)


def zero3_working_bytes(block_params: float, w: float, model_parallel: int = 1) -> float:
    """Gathered-parameter and unsharded-gradient buffers of ZeRO-3/FSDP: two blocks of
    weights (current + prefetched) and one block of gradients, `3·w·Ψ_block/t`."""
    return 3.0 * w * float(block_params) / max(1, int(model_parallel))


def tp_allreduces_per_micro_batch(layers: int, checkpointing: bool) -> int:
    """All-reduces of layer activations per micro-batch under tensor parallelism:
    2 forward + 2 backward per layer, +2 for the recomputed forward when checkpointing."""
    return (4 + (2 if checkpointing else 0)) * int(layers)


def tp_message_bytes_per_sample(seq_len: int, hidden: int, bytes_per_value: float) -> float:
    """Bytes of one tensor-parallel all-reduce per sample: the layer output, s·h values."""
    return float(seq_len) * float(hidden) * float(bytes_per_value)
