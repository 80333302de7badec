"""Whole translation catalogues for the consistency benchmark, split by source rather than by row.

A rule or a constant chosen on one project's wording must hold on another's, so the benchmark's splits are
whole packages (issue 28):
- TUNE_SOURCES: Sphinx's and django-allauth's catalogues, on which the judge's constants were chosen
  (`bench.bench_consistency --tune`; until issue 28 half of each was the test set);
- TEST_SOURCES: catalogues that nothing in mlgrpo trains or tunes on: django CMS's, Oscar's (e-commerce),
  humanize's (times, sizes, numbers in words) and edx-proctoring's (Open edX exams; the only PyPI catalogue with
  Swahili found that installs beside mlgrpo's pins: Kolibri's pins Django < 4) .mo files, and mkdocs-material's
  JSON-like locale templates.
  The dev extra installs them (pinned); none of them is a corpus source (`mlgrpo.langid.corpus.SOURCES`), and a
  test checks that none of their packages is read by it.
Every source gives (language, English, translation) triples, cleaned as the corpus cleans text
(`corpus.clean`); a translation spelled as its English (up to case and diacritics) was left untranslated and
is dropped, and so is one the language's training text holds (not unseen after all).
Knows nothing about the judge.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

from bench.langid_texts import LANGUAGES, _owners
from mlgrpo.langid import corpus

Triple = tuple[str, str, str]  # (language, English, translation)


def _catalogue(package: str, pattern: str = "locale/*/LC_MESSAGES/*.mo") -> Callable[[], list[Triple]]:
    return lambda: list(corpus.catalogue_pairs(package, pattern))


_MATERIAL_ENTRY = re.compile(r'^\s*"([\w.-]+)":\s*"((?:[^"\\]|\\.)*)",?\s*$', re.M)
# Keys of mkdocs-material's language files that hold configuration, not text ("rtl", a tokenizer's pattern).
_MATERIAL_CONFIG = ("language", "direction", "search.config")


def material_entries(path: Path) -> dict[str, str]:
    """key -> text of one of mkdocs-material's `partials/languages/*.html` (a Jinja dict literal of JSON strings)."""
    found = {}
    for key, value in _MATERIAL_ENTRY.findall(path.read_text(encoding="utf-8")):
        if not key.startswith(_MATERIAL_CONFIG):
            found[key] = json.loads(f'"{value}"')
    return found


def _material() -> list[Triple]:
    root = corpus._package_root("material")
    if root is None:
        return []
    folder = root / "templates" / "partials" / "languages"
    english = material_entries(folder / "en.html")
    triples = []
    for path in sorted(folder.glob("*.html")):
        language = corpus.catalogue_language(path.stem)
        if language is None or language == "en":
            continue
        triples += [(language, english[key], text) for key, text in material_entries(path).items() if key in english]
    return triples


TUNE_SOURCES: dict[str, Callable[[], list[Triple]]] = {
    "sphinx": _catalogue("sphinx"),
    "django-allauth": _catalogue("allauth"),
}
TEST_SOURCES: dict[str, Callable[[], list[Triple]]] = {
    "django-cms": _catalogue("cms"),
    "django-oscar": _catalogue("oscar"),
    "humanize": _catalogue("humanize"),
    "mkdocs-material": _material,
    "edx-proctoring": _catalogue("edx_proctoring"),  # Open edX's exam proctoring: the one with Swahili (sw_KE)
}
# The distribution behind each source, for the data card and the dev extra.
PACKAGES = {"sphinx": "sphinx", "django-allauth": "django-allauth", "django-cms": "django-cms",
            "django-oscar": "django-oscar", "humanize": "humanize", "mkdocs-material": "mkdocs-material",
            "edx-proctoring": "edx-proctoring"}


@functools.cache
def _trained(language: str) -> frozenset[str]:
    return frozenset(corpus.fold(t) for texts in corpus.texts(language, "train").values() for t in texts)


@functools.cache
def source_triples(name: str) -> tuple[Triple, ...]:
    """The source's cleaned (language, English, translation) triples in LANGUAGES, translated and unseen."""
    reader = {**TUNE_SOURCES, **TEST_SOURCES}[name]
    found = []
    for language, english, translation in reader():
        english, translation = corpus.clean(english), corpus.clean(translation)
        if (language in LANGUAGES and language != "en" and corpus.has_letters(translation)
                and corpus.fold(translation) != corpus.fold(english) and corpus.fold(translation) not in _trained(language)):
            found.append((language, english, translation))
    return tuple(dict.fromkeys(found))


@functools.cache
def owners(sources: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Folded spelling -> the LANGUAGES that write it anywhere: the corpus, Sphinx, allauth (`_owners`) and `sources`."""
    found = {key: set(value) for key, value in _owners().items()}
    for name in sources:
        for language, english, translation in source_triples(name):
            found.setdefault(corpus.fold(translation), set()).add(language)
            found.setdefault(corpus.fold(english), set()).add("en")
    return {key: frozenset(value) for key, value in found.items()}


def missing_languages(sources: tuple[str, ...]) -> list[str]:
    """The LANGUAGES (English aside) that none of `sources` has a translation in."""
    have = {language for name in sources for language, _, _ in source_triples(name)}
    return [language for language in LANGUAGES if language != "en" and language not in have]
