"""FFT (ICS'25) and the baselines as FFT's evaluation runs them.

`core`: the per-round ILP, K(t), τ and ρ on arrays in round units; `policy`: the `fft`
policy (ClusterView → arrays, host placement); `tiresias_typed`: Tiresias with one queue per
GPU type and no cross-type migration (`tiresias-typed`).
"""

from policies.fft import policy, tiresias_typed  # noqa: F401  (registers fft, tiresias-typed)
