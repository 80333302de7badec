"""Real texts for the language-ID and consistency benchmarks, none of them seen by mlgrpo's language model.

Four kinds, in 27 languages (LANGUAGES), from data that ships in installed packages:
- "ui": Django's and Django REST framework's UI translations from the corpus's *test* split
  (`mlgrpo.langid.corpus`: the model trains on the train split only);
- "ui-unseen": the UI translations of Sphinx and django-allauth, catalogues the model never trains on
  (the dev extra installs them): how it does on software it has not seen;
- "words": CLDR calendar words, units and relative dates, and number words, from the test split;
- "names": CLDR names of countries, languages, scripts, currencies and cities, and pycountry's, from
  the test split. Names say little about their language ("Kuwaiti dinar", "Kiabkhazi"): reported apart.
A text is ambiguous when its folded spelling (case and diacritics aside) is written by two or more of
the languages anywhere in these sources ("Canada", "Email"): it has no single right answer and is left
out, counted. Sampling is seeded; "tune" draws the same kinds from the tune split (and from the unseen
catalogues' other half), for choosing constants; "test" is what the reports show.
"""

from __future__ import annotations

import functools
import random
import zlib
from collections import Counter
from dataclasses import dataclass

from mlgrpo.langid import corpus

LANGUAGES = tuple("ar bn da de el en es fa fr he hi id it ja ko nl pl pt ru sv sw th tr uk ur vi zh".split())
KINDS = ("ui", "ui-unseen", "words", "names")
UNSEEN_PACKAGES = {"sphinx": "locale/*/LC_MESSAGES/*.mo", "allauth": "locale/*/LC_MESSAGES/*.mo"}


@dataclass(frozen=True)
class BenchText:
    language: str  # ISO 639-1 code of the text
    kind: str  # one of KINDS
    text: str


def unseen_pairs() -> list[tuple[str, str, str, str]]:
    """(package, language, English msgid, translation) of the unseen catalogues, cleaned."""
    pairs = []
    for package, pattern in UNSEEN_PACKAGES.items():
        for language, english, translation in corpus.catalogue_pairs(package, pattern):
            pairs.append((package, language, corpus.clean(english), corpus.clean(translation)))
    return pairs


def _unseen_half(text: str) -> str:
    """Unseen catalogues have no corpus split: half of them (by hash) is for tuning, half for the test."""
    return "tune" if zlib.crc32(corpus.fold(text).encode("utf-8")) % 2 else "test"


@functools.cache
def pools(split: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """(language, kind) -> the split's texts with letters, ambiguous ones left out."""
    found: dict[tuple[str, str], set[str]] = {}
    for language in LANGUAGES:
        by_source = corpus.texts(language, split)
        found[language, "ui"] = set(by_source["django"]) | set(by_source["drf"])
        found[language, "words"] = set(by_source["words"]) | set(by_source["numbers"])
        found[language, "names"] = (set(by_source["names"]) | set(by_source["pycountry"])) - found[language, "words"]
        found[language, "ui-unseen"] = set()
    trained = {language: {corpus.fold(t) for texts in corpus.texts(language, "train").values() for t in texts}
               for language in LANGUAGES}
    for _, language, english, translation in unseen_pairs():
        for lang, text in ((language, translation), ("en", english)):
            if lang in LANGUAGES and corpus.has_letters(text) and _unseen_half(text) == split and (
                    lang == "en" or corpus.fold(translation) != corpus.fold(english)) and corpus.fold(text) not in trained[lang]:
                found[lang, "ui-unseen"].add(text)  # a string the corpus also has for the language is not unseen
    owners = _owners()
    return {key: tuple(sorted(t for t in texts if len(owners.get(corpus.fold(t), ())) <= 1))
            for key, texts in found.items()}


@functools.cache
def _owners() -> dict[str, frozenset[str]]:
    """Folded spelling -> the LANGUAGES that write it anywhere in the sources (every split)."""
    owners: dict[str, set[str]] = {}
    for language in LANGUAGES:
        for texts in corpus.texts(language).values():
            for text in texts:
                owners.setdefault(corpus.fold(text), set()).add(language)
    for _, language, english, translation in unseen_pairs():
        for lang, text in ((language, translation), ("en", english)):
            if lang in LANGUAGES:
                owners.setdefault(corpus.fold(text), set()).add(lang)
    return {key: frozenset(v) for key, v in owners.items()}


def ambiguous_counts(split: str) -> Counter:
    """Texts left out as ambiguous, per language (all kinds)."""
    owners = _owners()
    counts: Counter = Counter()
    for language in LANGUAGES:
        for texts in corpus.texts(language, split).values():
            counts[language] += sum(len(owners[corpus.fold(t)]) > 1 for t in texts)
    return counts


def sample(split: str = "test", per_kind: int = 100, seed: int = 0) -> list[BenchText]:
    """Up to `per_kind` texts per language and kind, drawn with `seed`."""
    texts = []
    for (language, kind), pool in sorted(pools(split).items()):
        rng = random.Random(f"{seed}/{split}/{language}/{kind}")
        texts += [BenchText(language, kind, t) for t in rng.sample(pool, min(per_kind, len(pool)))]
    return texts
