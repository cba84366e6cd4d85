"""Scheduling and placement policies behind `simcore.api.Policy`, looked up by name in a registry.

Importing this package registers every built-in policy. Use `policies.make(name, **params)`
for a fresh, validated instance and `policies.POLICIES` to list them; shared placement
helpers live in `policies.placement`.
"""

import cosim  # noqa: F401  first: points numba's kernel cache outside the package (cosim.numba_cache)

from policies.registry import POLICIES, describe, make, make_config, params_of

# built-in policies register themselves on import (one decorator line beside each class)
from policies import afs, allox, ares, aryl, dally, fft, fifo, gandiva, gavel, mechanisms_demo, ones, optimus, pal, pollux, sjf, srjf, themis, tiresias  # noqa: E402,F401  isort: skip

__all__ = ["POLICIES", "describe", "make", "make_config", "params_of"]
