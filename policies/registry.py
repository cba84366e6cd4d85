"""The policy registry and `make(name, **params)`.

Each policy module registers its class with one decorator line, `@POLICIES.register("fifo")`,
and keeps its parameters in a frozen dataclass `Config` beside it, derived from
`policies.config.PolicyConfig` (the shared fields and their checks). Every field is declared
with `param(default, help, unit=, source=, choices=)`; units are in the names (`interval_s`,
`thresholds_gpu_s`). `make` checks the parameter names (an unknown one is an `InputError`
listing the valid ones), converts text values from the command line and sweep files (`"60"`,
`"1h"` for a `_s` field, `"true"`, `"vgg*,alexnet*"` for a tuple) and validates them, naming
the policy and the field in the error. `cosim simulate --set POLICY.KEY=VALUE` and a sweep
file's `[policies.NAME]` tables both go through `make_config`.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any

from cosim.errors import InputError
from cosim.registry import Registry
from cosim.units import parse_seconds
from policies.config import ordered_fields, param, unit_of  # noqa: F401  (param: re-exported for policy modules)
from simcore.api import Policy

#: name → policy class (each class has a `Config` dataclass and `__init__(self, config)`)
POLICIES: Registry[type] = Registry("policy")


@dataclass(frozen=True)
class ParamInfo:
    name: str
    type: str
    default: Any
    help: str
    choices: tuple[Any, ...] | None
    unit: str = ""
    source: str | None = None


def _hints(cfg_cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cfg_cls)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def params_of(name: str) -> list[ParamInfo]:
    """The parameters of policy `name`: its own in declaration order, then the shared ones."""
    cfg_cls = POLICIES.get(name).Config
    hints = _hints(cfg_cls)
    return [
        ParamInfo(f.name, _type_name(hints[f.name]), f.default, f.metadata.get("help", ""), f.metadata.get("choices"),
                  unit_of(f), f.metadata.get("source"))
        for f in ordered_fields(cfg_cls)
    ]


def describe(name: str) -> str:
    """One-line description (first docstring line of the policy class)."""
    return POLICIES.help(name)


def _bad(policy: str, fname: str, expected: str, got: Any) -> InputError:
    return InputError.at(f"policy '{policy}'", field=fname, expected=expected, got=got)


def _coerce(policy: str, fname: str, tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
            if type(None) in args:
                return None
        return _coerce(policy, fname, inner[0], value)
    if origin is tuple:
        items = value.split(",") if isinstance(value, str) else value
        try:
            items = list(items)
        except TypeError:
            raise _bad(policy, fname, "a list (comma-separated)", value) from None
        elem = args[0] if args else str
        return tuple(_coerce(policy, fname, elem, v.strip() if isinstance(v, str) else v) for v in items if v != "")
    if tp is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise _bad(policy, fname, "true or false", value)
    if tp is int:
        if isinstance(value, bool):
            raise _bad(policy, fname, "an integer", value)
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise _bad(policy, fname, "an integer", value) from None
        if not f.is_integer():
            raise _bad(policy, fname, "an integer", value)
        return int(f)
    if tp is float:
        if isinstance(value, bool):
            raise _bad(policy, fname, "a number", value)
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
        if isinstance(value, str) and fname.endswith("_s"):  # durations: "90", "30m", "8h"
            try:
                return parse_seconds(value)
            except InputError:
                raise _bad(policy, fname, "a number of seconds or a duration like 30m, 8h", value) from None
        raise _bad(policy, fname, "a number", value)
    if tp is str:
        return str(value)
    return value


def make_config(name: str, **params: Any) -> Any:
    """The validated Config of policy `name` with `params` overriding its defaults."""
    cls = POLICIES.get(name)
    cfg_cls = cls.Config
    fields = {f.name: f for f in ordered_fields(cfg_cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        valid = ", ".join(fields) or "(none)"
        raise InputError.at(
            f"policy '{name}'", field=unknown[0], detail=f"unknown parameter; valid parameters: {valid} "
            f"(see `cosim policies show {name}`)"
        )
    hints = _hints(cfg_cls)
    values = {}
    for key, value in params.items():
        v = _coerce(name, key, hints[key], value)
        choices = fields[key].metadata.get("choices")
        if choices is not None:
            vals = v if isinstance(v, tuple) else (v,)
            for x in vals:
                if x not in choices:
                    raise _bad(name, key, "one of " + ", ".join(map(str, choices)), value)
        values[key] = v
    try:
        return cfg_cls(**values)
    except InputError:
        raise
    except (TypeError, ValueError) as exc:
        raise InputError.at(f"policy '{name}'", detail=str(exc)) from None


def make(name: str, **params: Any) -> Policy:
    """A fresh policy instance (policies keep per-run state: make one per simulation)."""
    cls = POLICIES.get(name)
    return cls(make_config(name, **params))
