"""What a built-in suite is: its description (SuiteSpec), its items, and the registry of suites.

A suite family module (numbers, dates, ...) describes itself with a SuiteSpec and a `build(language)`
function that turns package data into Items for one language. This module holds those types, the
registry that rejects duplicate names, and the text clean-up every answer goes through. It knows
nothing about splits, prompts or records (see `loader`), nor about models, trainers or MLflow.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from types import MappingProxyType

from mlgrpo.registry import Registry
from mlgrpo.text import normalize

# The languages the suites are built for: six required by the project (zh ja ar hi ru sw), the
# other scripts it asks for (th ko el he bn fa uk), and large Latin-script languages for balance
# experiments. Every family covers all of them (ui has no "en": English is its source side).
LANGUAGES = (
    "en", "de", "es", "fr", "pt", "tr", "vi", "id", "sw",
    "ru", "uk", "el", "ar", "fa", "he", "hi", "bn", "th", "zh", "ja", "ko",
)  # fmt: skip


@dataclass(frozen=True)
class Source:
    """A package that ships the data, pinned to the installed version."""

    package: str  # distribution name, as pip knows it
    license: str  # of the data we use, with who holds it
    role: str  # what the suite takes from it
    install: str | None = None  # the command that adds it, for a package mlgrpo does not always install

    @property
    def installed(self) -> bool:
        try:
            version(self.package)
        except PackageNotFoundError:
            return False
        return True

    @property
    def version(self) -> str:
        return version(self.package) if self.installed else "not installed"

    def __str__(self) -> str:
        return f"{self.package} {self.version}"


@dataclass(frozen=True)
class Item:
    """One task item in one language: what the prompt shows and every accepted answer."""

    key: str  # stable id part and split key: the same in every language ("246", "DE", a hash)
    text: str  # what the prompt shows ("246", "DE", the English UI string)
    answers: tuple[str, ...]  # clean, deduplicated; answers[0] is the reference
    source: str  # packages the answers are drawn from, the reference's first ("unicode-rbnf 2.4.1, ...")
    solution: str | None = None  # a worked solution ending in the answer (gsm), for supervised training


@dataclass(frozen=True)
class LanguageItems:
    """All items of a suite in one language, in their natural order, and what building them found."""

    items: tuple[Item, ...]
    # Counted facts for the data card, e.g. {"num2words differs from CLDR (both accepted)": 891};
    # every entry a family skips is counted under a "skipped: ..." key.
    notes: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Built items are cached for the whole process and shared by every caller: read-only.
        object.__setattr__(self, "notes", MappingProxyType(dict(self.notes)))


@dataclass(frozen=True)
class SuiteSpec:
    """A built-in suite: what it asks, in which languages, from which packages, and how."""

    name: str  # also the record's `task`
    description: str  # one line
    languages: tuple[str, ...]
    sources: tuple[Source, ...]
    tag_word: str  # the word in tag prompts: "<de> number: 246 ->"
    instruct: str  # English instruction, with {text} and {language} (an English language name)
    fewshot_label: str  # what a few-shot line calls the item: "English: Save" / "German: Speichern"
    method: str  # how items and references are made (data card prose)
    known_problems: tuple[str, ...]  # data card prose; measured counts are added by the card
    build: Callable[[str], LanguageItems] = field(repr=False, compare=False)
    # language -> a native instruction, filled into `instruct` as {instruction} (gsm); None: English only.
    instruction: Callable[[str], str] | None = field(default=None, repr=False, compare=False)

    @property
    def license(self) -> str:
        return "; ".join(f"{s.package}: {s.license}" for s in self.sources)

    @property
    def missing(self) -> tuple[str, ...]:
        """The install commands of the optional sources that are not installed (empty: ready to build)."""
        return tuple(s.install or f"pip install {s.package}" for s in self.sources if not s.installed)


SUITES: Registry[SuiteSpec] = Registry("suite")


def register(spec: SuiteSpec) -> SuiteSpec:
    """Add a suite to the registry; a second suite with the same name is a programming error."""
    unknown = set(spec.languages) - set(LANGUAGES)
    if unknown:
        raise ValueError(f"suite {spec.name!r} lists languages outside LANGUAGES: {sorted(unknown)}")
    return SUITES.add(spec.name, spec)


def registered() -> dict[str, SuiteSpec]:
    """The registered suites by name, in registration order (a copy)."""
    return dict(SUITES.items())


# Invisible characters that packages put into answers but people do not type: zero-width space
# (CLDR RBNF marks Thai word breaks with it), soft hyphen, and bidi marks. ZWNJ (U+200C) stays:
# in Persian it is part of the spelling ("سه‌شنبه").
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u00ad\u200e\u200f\u061c\u2060\ufeff"))
_SPACES = re.compile(r"\s+")


def clean(text: str) -> str:
    """An answer as people write it: NFC, no invisible marks, any space run as one plain space.

    >>> clean("สอง\\u200bร้อย")
    'สองร้อย'
    >>> clean(" 5 марта 2024\\u202fг. ")
    '5 марта 2024 г.'
    """
    text = normalize(text).translate(_INVISIBLE)
    return _SPACES.sub(" ", text).strip()


def unique_answers(candidates: Iterable[str]) -> tuple[str, ...]:
    """Cleaned, non-empty, first occurrence kept: the first candidate becomes the reference."""
    seen: dict[str, None] = {}
    for candidate in candidates:
        answer = clean(candidate)
        if answer:
            seen.setdefault(answer, None)
    return tuple(seen)


def is_clean(text: str) -> bool:
    """True when `text` is already in the form `clean` gives (the tests check every answer)."""
    return bool(text) and text == clean(text)
