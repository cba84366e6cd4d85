"""One generic registry for every extension point (policies, trace formats, presets …).

Each implementation registers with one decorator line next to its definition; lookups of
an unknown name raise `UnknownNameError` listing the valid names.

A registry can also know names before their module is imported (`lazy(module, *names)`): the
module is imported the first time one of its names is looked up. The policy registry uses
this so a command loads only the policies it runs — importing all of them (≈ 50 modules,
their dataclasses and numba dispatchers) cost a warm `cosim simulate` ≈ 0.2 s of CPU.
"""

from __future__ import annotations

import importlib
from typing import Callable, Generic, Iterator, TypeVar

from cosim.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._help: dict[str, str] = {}
        self._lazy: dict[str, str] = {}  # name → module whose import registers it
        self._hidden: set[str] = set()  # test and demo entries: looked up by name, not listed

    def register(self, name: str, help: str = "") -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' registered twice")
            self._items[name] = obj
            doc = help or (getattr(obj, "__doc__", None) or "").strip().splitlines()[:1]
            self._help[name] = doc if isinstance(doc, str) else (doc[0] if doc else "")
            return obj

        return deco

    def lazy(self, module: str, *names: str) -> None:
        """Declare that importing `module` registers `names`; it is imported on first lookup."""
        for name in names:
            self._lazy[name] = module

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            pass
        module = self._lazy.get(name)
        if module is None:
            raise UnknownNameError(self.kind, name, self.names()) from None
        importlib.import_module(module)
        if name not in self._items:  # the declaration and the module disagree: a bug, not bad input
            raise LookupError(f"{self.kind} '{name}': importing {module} did not register it")
        return self._items[name]

    def load_all(self) -> None:
        """Import every module declared with `lazy` (what importing them all at once did)."""
        for name in self.names():
            self.get(name)

    def loaded(self) -> list[str]:
        """The names registered so far (their modules imported), without importing any."""
        return sorted(self._items)

    def names(self) -> list[str]:
        return sorted(self._items.keys() | self._lazy.keys())

    def hide(self, *names: str) -> None:
        """Mark `names` as test or demonstration entries: `get` still finds them, `listed` leaves them out."""
        self._hidden.update(names)

    def listed(self) -> list[str]:
        """The names a user is shown (`names` without the hidden ones)."""
        return [n for n in self.names() if n not in self._hidden]

    def help(self, name: str) -> str:
        self.get(name)
        return self._help[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
