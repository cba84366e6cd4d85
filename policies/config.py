"""Policy configuration: the base dataclass every policy's `Config` extends, and `param`.

Every policy keeps its parameters in a frozen dataclass beside its class. The fields all
policies share — when the policy runs (`interval_s`), the seed of its random choices
(`seed`) and, for most, the placement strategy of new jobs (`placement`) — are declared
once here with their validation; a policy's Config adds its own fields, each declared with
`param(default, help, unit=, source=, choices=)`, and its own checks in `validate()`.

The help text, unit and source of each field are what `cosim policies show NAME` prints,
and the Config's docstring and `reference` are the policy's user-facing description, so
they speak to users (what the parameter changes, in which unit, where the default comes
from), not about the implementation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cosim.columns import unit_from_name
from cosim.errors import InputError
from policies.placement import STRATEGIES

#: the shared fields, in the order `policies show` lists them (after a policy's own fields)
COMMON_FIELDS = ("placement", "interval_s", "seed")


def param(default: Any, help: str, *, choices: tuple[Any, ...] | None = None, unit: str | None = None,
          source: str | None = None) -> Any:
    """A Config field with its help text, unit, the source of its default and, for a closed
    set, the allowed values. `unit` defaults from the name (`_gpu_s` → GPU-s, `_s` → s)."""
    return field(default=default, metadata={"help": help, "choices": choices, "unit": unit, "source": source})


def unit_of(f: dataclasses.Field) -> str:
    """The unit of a Config field: declared, else read from the name's suffix."""
    if f.metadata.get("unit"):
        return f.metadata["unit"]
    return unit_from_name(f.name)


def ordered_fields(cfg_cls: type) -> list[dataclasses.Field]:
    """The fields of a Config, the policy's own first (declaration order), then the shared ones."""
    fields = dataclasses.fields(cfg_cls)
    own = [f for f in fields if f.name not in COMMON_FIELDS]
    return own + [f for name in COMMON_FIELDS for f in fields if f.name == name]


def policy_name_of(cfg_cls: type) -> str:
    """The registered name of the policy whose Config is `cfg_cls` (for error messages)."""
    from policies.registry import POLICIES

    for name in POLICIES.loaded():  # its module is imported (it defines cfg_cls): look no further
        if POLICIES.get(name).Config is cfg_cls:
            return name
    return cfg_cls.__name__


@dataclass(frozen=True)
class PolicyConfig:
    """Parameters every policy has."""

    #: the paper or system the policy reproduces (shown by `cosim policies show`)
    reference: ClassVar[str] = ""

    interval_s: float | None = param(None, "time between periodic rounds; none = the policy runs on events only")
    seed: int = param(0, "seed of the policy's random choices (the random placement strategy)")

    def __post_init__(self) -> None:
        self.check("interval_s", self.interval_s is None or self.interval_s > 0, "a positive number of seconds")
        self.validate()

    def validate(self) -> None:
        """A policy's own checks (override; report with `self.check`)."""

    def check(self, fname: str, ok: bool, expected: str) -> None:
        """Raise an InputError naming the policy and the field unless `ok`."""
        if not ok:
            raise InputError.at(f"policy '{policy_name_of(type(self))}'", field=fname, expected=expected,
                                got=getattr(self, fname))


@dataclass(frozen=True)
class PlacedConfig(PolicyConfig):
    """Parameters of a policy that places new jobs with one of the shared strategies."""

    placement: str = param("consolidate", "placement strategy for new jobs", choices=STRATEGIES)


def user_doc(cfg_cls: type) -> str:
    """The Config's own docstring (the policy's user-facing description), "" if it has none."""
    import inspect

    doc = cfg_cls.__dict__.get("__doc__") or ""
    if doc.startswith(cfg_cls.__name__ + "("):  # the signature dataclass writes when there is none
        return ""
    return inspect.cleandoc(doc)
