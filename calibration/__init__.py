"""Model zoo, measurement (NCCL/gloo sweeps, step times), importers of measured sets, fitting, validation."""

import cosim  # noqa: F401  first: OpenBLAS' kernels and threads are set before numpy loads (cosim.blas)
