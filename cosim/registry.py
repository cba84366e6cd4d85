"""One generic registry for every extension point (policies, trace formats, presets …).

Each implementation registers with one decorator line next to its definition; lookups of
an unknown name raise `UnknownNameError` listing the valid names.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from cosim.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._help: dict[str, str] = {}

    def register(self, name: str, help: str = "") -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' registered twice")
            self._items[name] = obj
            doc = help or (getattr(obj, "__doc__", None) or "").strip().splitlines()[:1]
            self._help[name] = doc if isinstance(doc, str) else (doc[0] if doc else "")
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, list(self._items)) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def help(self, name: str) -> str:
        self.get(name)
        return self._help[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
