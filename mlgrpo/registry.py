"""Name -> entry tables: the one helper behind every registry of mlgrpo, and its one "did you mean" rule.

Estimators, losses, group keys and KL estimators (algorithms/), language weightings (sampling/), reward
functions (rewards/), text metrics (evaluation/), language-ID backends (langid/) and data suites
(data/suites/) are each a `Registry`. Code looks an entry up by the name in its config; it never branches
on the name. Registering a name twice is a programming error and fails at import time (ValueError);
asking for an unknown name is a user error (UserError) whose one-line message suggests the closest name
(`did_you_mean`) and lists the valid ones in alphabetical order:

    unknown reward 'chrff' (did you mean 'chrf'?); valid rewards: chrf, exact_match, ...

Knows nothing about tensors, models or configs; imports nothing but the standard library and errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from mlgrpo.errors import UserError

T = TypeVar("T")

# difflib's similarity ratio a suggestion must reach: 0.5 suggests 'chrf' for 'chrF' and 'dr_grpo' for
# 'dr_gpro', and nothing for a name that shares a letter or two by chance.
CUTOFF = 0.5


def did_you_mean(word: object, choices: Iterable[str]) -> str | None:
    """The choice closest to `word` by spelling, or None when none is close enough.

    >>> did_you_mean("exact_mach", ["chrf", "exact_match"]), did_you_mean("bleu", ["chrf", "exact_match"])
    ('exact_match', None)
    """
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=CUTOFF)
    return match[0] if match else None


def unknown_message(kind: str, word: object, choices: Iterable[str], plural: str | None = None) -> str:
    """The one-line error for an unknown name: the closest valid one, then all of them.

    >>> unknown_message("reward", "chrff", ["exact_match", "chrf"])
    "unknown reward 'chrff' (did you mean 'chrf'?); valid rewards: chrf, exact_match"
    """
    choices = sorted(choices)
    close = did_you_mean(word, choices)
    hint = f" (did you mean {close!r}?)" if close else ""
    return f"unknown {kind} {word!r}{hint}; valid {plural or kind + 's'}: {', '.join(choices)}"


class Registry(Generic[T]):
    """A table of named entries of one kind ("advantage estimator", "reward", ...); iterated in registration
    order, listed (`names`, messages) alphabetically.

    plural: the kind's plural in messages, when adding an "s" is wrong.
    """

    def __init__(self, kind: str, plural: str | None = None) -> None:
        self.kind = kind
        self.plural = plural or kind + "s"
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered (registered twice: {self._entries[name]!r} "
                             f"and {entry!r}); pick another name")
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`: `@REGISTRY.register("name")`."""
        return lambda entry: self.add(name, entry)

    def get(self, name: str) -> T:
        """The entry registered as `name`; a UserError naming the closest valid name otherwise."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):  # TypeError: an unhashable value from a config file
            raise UserError(self.unknown_message(name)) from None

    __getitem__ = get

    def unknown_message(self, name: object) -> str:
        return unknown_message(self.kind, name, self._entries, self.plural)

    def copy(self) -> Registry[T]:
        """A registry of the same kind and entries (a test's private table)."""
        other: Registry[T] = Registry(self.kind, self.plural)
        other._entries = dict(self._entries)
        return other

    def names(self) -> tuple[str, ...]:
        """The registered names, alphabetically."""
        return tuple(sorted(self._entries))

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(self._entries.items())

    def values(self) -> Iterator[T]:
        return iter(self._entries.values())

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._entries
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
