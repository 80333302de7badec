"""The `ui` suite: translate an English user-interface string, using Django's human translations.

Reads the compiled gettext catalogues in the Django wheel (django/conf/locale/<ll>/LC_MESSAGES/
django.mo and django/contrib/<app>/locale/...) with Python's gettext. A real parallel set for
translation-style rewards (chrF); exact match is strict for the long help texts. Knows nothing about
splits, prompts or records.
"""

from __future__ import annotations

import gettext
import hashlib
import importlib.util
import re
from pathlib import Path

from mlgrpo.data.suites.base import (
    LANGUAGES, Item, LanguageItems, Source, SuiteSpec, clean, register, unique_answers,
)  # fmt: skip

DJANGO = Source(
    "django",
    "BSD-3-Clause (code and translations, (c) Django Software Foundation and contributors)",
    "English UI strings and their human translations (gettext .mo catalogues)",
)
# Django's locale folder where it differs from the ISO 639-1 code: Chinese is Simplified.
_DJANGO_LOCALE = {"zh": "zh_Hans"}
_CONTEXT_SEPARATOR = "\x04"  # gettext stores "context\x04msgid" for entries with a msgctxt
# printf and str.format placeholders: an entry that is nothing else has no words to translate.
_PLACEHOLDER = re.compile(r"%\(\w+\)[sdfr]|%[sdfr%]|\{\w*\}")

SKIPPED_HEADER = "skipped: catalogue header"
SKIPPED_PLURAL = "skipped: plural entries"
SKIPPED_EMPTY = "skipped: empty translation"
SKIPPED_FORMAT = "skipped: placeholders only"
MERGED = "several translations (all accepted)"
SAME_AS_ENGLISH = "reference same as the English"


def catalogue_paths(language: str) -> list[Path]:
    """Django's catalogues for `language`: the core one first, then the contrib apps by name."""
    spec = importlib.util.find_spec("django")
    root = Path(spec.origin).parent
    folder = _DJANGO_LOCALE.get(language, language)
    core = root / "conf" / "locale" / folder / "LC_MESSAGES" / "django.mo"
    apps = sorted(root.glob(f"contrib/*/locale/{folder}/LC_MESSAGES/django.mo"))
    return [path for path in (core, *apps) if path.is_file()]


def _entries(path: Path) -> dict:
    with path.open("rb") as handle:
        # The public gettext API looks entries up but cannot list them; `_catalog` is the
        # parsed .mo file itself (stable since Python 2).
        return gettext.GNUTranslations(handle)._catalog


def _entry_order(entry: tuple) -> tuple:
    """Sort key: singular entries without a message context first, so that they give the reference."""
    key = entry[0]
    plural = isinstance(key, tuple)
    return (plural, not plural and _CONTEXT_SEPARATOR in key, str(key))


def _collect(paths: list[Path]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """English string -> its translations in catalogue order (no-context entries first)."""
    translations: dict[str, list[str]] = {}
    counts = dict.fromkeys((SKIPPED_HEADER, SKIPPED_PLURAL, SKIPPED_EMPTY, SKIPPED_FORMAT), 0)
    for path in paths:
        for key, message in sorted(_entries(path).items(), key=_entry_order):
            if isinstance(key, tuple):  # (msgid, n): a plural form; the prompt would need a count
                counts[SKIPPED_PLURAL] += key[1] == 0
                continue
            if key == "":
                counts[SKIPPED_HEADER] += 1
                continue
            english = clean(key.rpartition(_CONTEXT_SEPARATOR)[2])
            if not any(ch.isalpha() for ch in _PLACEHOLDER.sub("", english)):
                counts[SKIPPED_FORMAT] += 1
            elif not clean(message):
                counts[SKIPPED_EMPTY] += 1
            else:
                translations.setdefault(english, []).append(message)
    return translations, counts


def item_key(english: str) -> str:
    """A short stable id for an English string (its text has spaces and quotes)."""
    return hashlib.sha256(english.encode("utf-8")).hexdigest()[:12]


def build(language: str) -> LanguageItems:
    """Every translated, non-plural English string of Django's catalogues, in English sort order."""
    paths = catalogue_paths(language)
    if not paths:
        raise ValueError(f"the installed Django has no catalogue for {language!r}")
    translations, counts = _collect(paths)
    source = str(DJANGO)
    items, merged, same = [], 0, 0
    for english in sorted(translations):
        answers = unique_answers(translations[english])
        merged += len(answers) > 1
        same += answers[0] == english
        items.append(Item(key=item_key(english), text=english, answers=answers, source=source))
    notes = {**counts, MERGED: merged, SAME_AS_ENGLISH: same}
    return LanguageItems(tuple(items), notes)


SPEC = register(
    SuiteSpec(
        name="ui",
        description="Translate an English user-interface string (Django's human translations).",
        languages=tuple(language for language in LANGUAGES if language != "en"),
        sources=(DJANGO,),
        tag_word="ui",
        instruct=(
            'Translate this user-interface text from English into {language}: "{text}". '
            "Answer with the translation only."
        ),
        fewshot_label="English",
        method=(
            "Items are the English strings (msgid) of Django's catalogues: the core one "
            "(django/conf/locale) and those of the contrib apps, read with Python's gettext. The "
            "prompt shows the English string, the id holds a hash of it. The reference is its "
            "translation in the core catalogue, or in the first contrib app (by name) that has it; "
            "translations of the same English string in other apps or other message contexts are "
            "further accepted answers, since the prompt shows no context. Skipped and counted: "
            "plural entries (the prompt would need a count), entries with no words besides "
            "placeholders, empty translations, and the catalogue headers. Chinese is zh_Hans. "
            "Strings and answers are NFC with whitespace runs (multi-line help texts) as one space."
        ),
        known_problems=(
            "Coverage differs: hi, bn, th, sw and vi translate about two thirds of the strings that "
            "de or ja do, so languages differ in item count and in which items they have.",
            "Some references equal the English string (names such as 'Bengali' in German, and "
            "words left in English); they reward copying the prompt (see the Languages table).",
            "Exact match is strict for long help texts; placeholders such as %(value)s must be "
            "kept verbatim. Prefer chrF for this suite.",
            "Portuguese is Django's European pt, whereas CLDR's pt (numbers, dates, countries) is "
            "Brazilian.",
            "Near-duplicate English strings ('Enter a valid date.', 'Enter a valid date/time.') "
            "are separate items and may fall into different splits.",
        ),
        build=build,
    )
)
