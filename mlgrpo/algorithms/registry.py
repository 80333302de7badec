"""Name -> entry tables through which trainers and configs find algorithms.

A trainer looks an estimator (or a group key) up by the name in its config; it never branches on the name.
Registering a name twice is a programming error and fails at import time; asking for an unknown name is a
user error whose message lists the valid names and suggests the closest one.
Knows nothing about tensors, models or configs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from mlgrpo.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    """A table of named entries of one kind ("estimator", "group key", ...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered ({self._entries[name]!r}); pick another name")
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`: `@REGISTRY.register("name")`."""
        return lambda entry: self.add(name, entry)

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UserError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        valid = ", ".join(sorted(self._entries))
        close = difflib.get_close_matches(str(name), list(self._entries), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"unknown {self.kind} {name!r}: {hint}valid names are {valid}"

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
