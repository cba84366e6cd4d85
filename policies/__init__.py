"""Scheduling and placement policies behind `simcore.api.Policy`, looked up by name in a registry.

Use `policies.make(name, **params)` for a fresh, validated instance and `policies.POLICIES` to
list them; shared placement helpers live in `policies.placement`. Each policy class registers
itself with one decorator line beside it (`@POLICIES.register("fifo")`); `BUILTIN` below says
which module registers which names, so a policy's module is imported the first time its name
is looked up and a run loads only the policies it runs (tests/policies/test_lazy_registry.py
checks the table against the decorators). A new policy module: add it to `BUILTIN`.
"""

import cosim  # noqa: F401  first: points numba's kernel cache outside the package (cosim.numba_cache)

from policies.registry import POLICIES, describe, make, make_config, params_of

#: module (under policies.) → the policy names its import registers
BUILTIN: dict[str, tuple[str, ...]] = {
    "afs": ("afs",),
    "allox": ("allox",),
    "ares": ("ares", "ares-artifact"),
    "aryl": ("aryl",),
    "dally": ("dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated", "tiresias-dally-2das",
              "tiresias-dally"),
    "drl": ("drl",),
    "fft": ("fft", "tiresias-typed"),
    "fifo": ("fifo", "fifo-backfill"),
    "gandiva": ("gandiva",),
    "gavel": ("gavel",),
    "mechanisms_demo": ("mechanisms-demo",),
    "ones": ("ones",),
    "optimus": ("optimus",),
    "pal": ("pal",),
    "pollux": ("pollux",),
    "sjf": ("sjf", "srtf"),
    "srjf": ("srjf",),
    "themis": ("themis", "themis-ftf-lp"),
    "tiresias": ("tiresias", "tiresias-pollux"),
}
for _module, _names in BUILTIN.items():
    POLICIES.lazy(f"policies.{_module}", *_names)
#: test and demonstration policies: runnable by name, left out of `cosim policies list`
HIDDEN = ("mechanisms-demo",)
POLICIES.hide(*HIDDEN)

__all__ = ["BUILTIN", "HIDDEN", "POLICIES", "describe", "make", "make_config", "params_of"]
