"""The engine: job and cluster state arrays, events, the round loop, metrics and writers.

`simcore.api` is the contract with policies (ClusterView in, Decision out); it imports
nothing heavy so policies can depend on it without pulling in the engine.
"""

import cosim  # noqa: F401  first: points numba's kernel cache outside the package (cosim.numba_cache)
