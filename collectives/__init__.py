"""Collective costs for a placement (ring, tree, hierarchical) and cross-job link contention.

    comm = collectives.CommModel(topology)               # params from the preset's [comm]
    cost = comm.allreduce(gpus, grad_bytes, bucket_bytes)  # CollectiveCost, cached by shape

The contention kernel lives in `collectives.contention` (imported on its own).
"""

import cosim  # noqa: F401  first: points numba's kernel cache outside the package (cosim.numba_cache)

from collectives.model import CollectiveCost, CommModel
from collectives.params import ALGORITHMS, CommParams

__all__ = ["ALGORITHMS", "CollectiveCost", "CommModel", "CommParams"]
