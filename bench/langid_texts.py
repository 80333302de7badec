"""A fixed set of real short texts in 24 languages for the language-ID benchmark, from package data.

Two sources, both written by people and shipped inside installed packages (no download):
- "cldr": babel's CLDR names (countries, languages, currencies, stand-alone month and day names);
- "ui": Django's translated interface strings (its .mo catalogues), English from their msgids.
Printf/brace placeholders and HTML tags are removed (they are not language). A text that occurs, up
to case, in the pools of two or more languages ("Canada", "Email", "Mai") says nothing about its
language: it is excluded from every pool and counted (`excluded`). Sampling is seeded.
"""

from __future__ import annotations

import gettext
import random
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = tuple(
    "ar bn de el en es fa fr he hi id it ja ko pl pt ru sw th tr uk ur vi zh".split()
)
_LOCALE = {"zh": "zh_Hans"}  # babel and Django name Simplified Chinese this way

_PLACEHOLDER = re.compile(r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[sdifr]|%[-#0 +]*\d*(?:\.\d+)?[sdifr]|\{[^{}]*\}|<[^>]+>")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class BenchText:
    language: str  # ISO 639-1 code of the text
    source: str  # "cldr" or "ui"
    text: str


def clean(text: str) -> str:
    """The text without placeholders and tags, NFC, whitespace collapsed."""
    text = _PLACEHOLDER.sub(" ", text)
    return " ".join(unicodedata.normalize("NFC", text).split())


def cldr_pool(language: str) -> set[str]:
    from babel import Locale

    locale = Locale.parse(_LOCALE.get(language, language))
    names = [*locale.territories.values(), *locale.languages.values(), *locale.currencies.values()]
    for table in (locale.months, locale.days):
        for context in ("stand-alone", "format"):
            names += table[context]["wide"].values()
    return {clean(n) for n in names}


def _django_catalogues(locale: str) -> list[Path]:
    import django

    root = Path(django.__file__).parent
    return sorted(root.glob(f"**/locale/{locale}/LC_MESSAGES/*.mo"))


def ui_pool(language: str) -> set[str]:
    """Django's strings in `language`; for English, the msgids of the German catalogues."""
    locale = "de" if language == "en" else _LOCALE.get(language, language)
    texts: set[str] = set()
    for path in _django_catalogues(locale):
        with path.open("rb") as handle:
            # GNUTranslations has no public way to list its entries; _catalog maps msgid -> msgstr.
            catalogue = gettext.GNUTranslations(handle)._catalog
        for msgid, msgstr in catalogue.items():
            if language == "en":
                msgid = msgid[0] if isinstance(msgid, tuple) else msgid
                texts.add(clean(msgid.split("\x04")[-1]))  # drop the "context\x04" prefix
            elif msgid:  # the "" entry is the catalogue's header
                texts.add(clean(msgstr))
    return texts


def build(per_source: int = 75, seed: int = 0) -> tuple[list[BenchText], dict[str, int]]:
    """Up to `per_source` texts per language and source, and how many were excluded per language."""
    pools = {
        (lang, source): {t for t in pool(lang) if _LETTER.search(t)}
        for lang in LANGUAGES
        for source, pool in (("cldr", cldr_pool), ("ui", ui_pool))
    }
    for lang in LANGUAGES:  # Django's UI also lists language names: count each text once
        pools[lang, "ui"] -= pools[lang, "cldr"]
    owners: dict[str, set[str]] = {}
    for (lang, _), pool in pools.items():
        for text in pool:
            owners.setdefault(text.casefold(), set()).add(lang)
    excluded: Counter = Counter()
    texts: list[BenchText] = []
    for (lang, source), pool in sorted(pools.items()):
        kept = sorted(t for t in pool if len(owners[t.casefold()]) == 1)
        excluded[lang] += len(pool) - len(kept)
        rng = random.Random(f"{seed}/{lang}/{source}")
        chosen = rng.sample(kept, min(per_source, len(kept)))
        texts += [BenchText(lang, source, t) for t in chosen]
    return texts, dict(excluded)
