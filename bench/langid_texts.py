"""A fixed set of real short texts in 24 languages for the language-ID benchmark, from package data.

Two sources, both written by people and shipped inside installed packages (no download):
- "cldr": babel's CLDR names (countries, languages, currencies, stand-alone month and day names);
- "ui": Django's translated interface strings (its .mo catalogues), English from their msgids.
Printf/brace placeholders and HTML tags are removed (they are not language). Two kinds of text are
not "in" their language and are excluded from every backend's set alike, and counted (`excluded`):
- "shared": a text that occurs in the pools of two or more languages up to case and diacritics
  ("Canada", "Email", "Mai"; "Gâmbia" pt = "Gambia" en/it/...): it says nothing about its language;
- "untranslated": a Django string equal to its English msgid up to case and diacritics ("Email",
  "Slug"): the translator left the English source in place.
Sampling is seeded. A tuning sample (`build(..., avoid_seed=0)`) is drawn from what the report's
sample (seed 0) left, so that constants tuned on it never see a reported text.
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


def fold(text: str) -> str:
    """The text up to case and diacritics: what a reader would call "the same spelling".

    >>> fold("Gâmbia") == fold("gambia"), fold("Straße") == fold("STRASSE")
    (True, True)
    """
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


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


def ui_pool(language: str) -> tuple[set[str], int]:
    """Django's strings in `language` (for English, the msgids of the German catalogues), and how
    many translations were left equal to their English msgid (up to case and diacritics)."""
    locale = "de" if language == "en" else _LOCALE.get(language, language)
    texts: set[str] = set()
    untranslated: set[str] = set()
    for path in _django_catalogues(locale):
        with path.open("rb") as handle:
            # GNUTranslations has no public way to list its entries; _catalog maps msgid -> msgstr.
            catalogue = gettext.GNUTranslations(handle)._catalog
        for msgid, msgstr in catalogue.items():
            msgid = clean((msgid[0] if isinstance(msgid, tuple) else msgid).split("\x04")[-1])
            if language == "en":
                texts.add(msgid)  # "context\x04" prefix dropped above
            elif msgid:  # the "" entry is the catalogue's header
                text = clean(msgstr)
                (untranslated if fold(text) == fold(msgid) else texts).add(text)
    return texts, len(untranslated - texts)


def _pools() -> tuple[dict[tuple[str, str], set[str]], dict[str, Counter]]:
    """Texts with letters per (language, source), after the exclusions, and the counts excluded."""
    excluded: dict[str, Counter] = {"shared": Counter(), "shared only up to diacritics": Counter(), "untranslated": Counter()}
    pools = {}
    for lang in LANGUAGES:
        pools[lang, "cldr"] = {t for t in cldr_pool(lang) if _LETTER.search(t)}
        ui, excluded["untranslated"][lang] = ui_pool(lang)
        # Django's UI also lists language names: count each text once
        pools[lang, "ui"] = {t for t in ui if _LETTER.search(t)} - pools[lang, "cldr"]
    owners: dict[str, set[str]] = {}
    case_owners: dict[str, set[str]] = {}
    for (lang, _), pool in pools.items():
        for text in pool:
            owners.setdefault(fold(text), set()).add(lang)
            case_owners.setdefault(text.casefold(), set()).add(lang)
    for key, pool in pools.items():
        shared = {t for t in pool if len(owners[fold(t)]) > 1}
        excluded["shared"][key[0]] += len(shared)
        excluded["shared only up to diacritics"][key[0]] += sum(len(case_owners[t.casefold()]) == 1 for t in shared)
        pools[key] = pool - shared
    return pools, excluded


def build(
    per_source: int = 75, seed: int = 0, avoid_seed: int | None = None
) -> tuple[list[BenchText], dict[str, Counter]]:
    """Up to `per_source` texts per language and source, and the counts excluded per reason and
    language. With `avoid_seed`, the texts that seed would sample are left out of the pools first."""
    pools, excluded = _pools()
    texts: list[BenchText] = []
    for (lang, source), pool in sorted(pools.items()):
        kept = sorted(pool)
        if avoid_seed is not None:
            avoided = set(_sample(kept, per_source, avoid_seed, lang, source))
            kept = [t for t in kept if t not in avoided]
        texts += [BenchText(lang, source, t) for t in _sample(kept, per_source, seed, lang, source)]
    return texts, excluded


def _sample(kept: list[str], per_source: int, seed: int, lang: str, source: str) -> list[str]:
    rng = random.Random(f"{seed}/{lang}/{source}")
    return rng.sample(kept, min(per_source, len(kept)))
