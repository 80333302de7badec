"""The `countries` suite: name a country or territory, given its ISO 3166-1 alpha-2 code.

Names are CLDR's (via babel); the ISO 3166 translations that pycountry ships (Debian iso-codes, read
with gettext) are further accepted answers. Answers must be memorised, not composed: tiny models do
not learn them in minutes (../shared/research/stack.md). Knows nothing about splits, prompts or records.
"""

from __future__ import annotations

import gettext

from mlgrpo.data.suites.base import LANGUAGES, Item, LanguageItems, Source, SuiteSpec, register, unique_answers

BABEL = Source(
    "babel",
    "BSD-3-Clause (code); its data is CLDR, (c) Unicode, Inc., Unicode License v3",
    "CLDR territory names: the reference",
)
PYCOUNTRY = Source(
    "pycountry",
    "LGPL-2.1 (its translations come from Debian iso-codes, LGPL-2.1)",
    "the ISO 3166-1 code list, and translated ISO names as further accepted answers",
)
PYCOUNTRY_ADDS = "pycountry adds other names (accepted)"
PYCOUNTRY_MISSING = "pycountry has no translation"
PYCOUNTRY_ENGLISH = "pycountry gives the English name (not accepted)"


class _Untranslated(gettext.NullTranslations):
    """Fallback that answers "" so that a name missing from a catalogue is seen, not echoed in English."""

    def gettext(self, message: str) -> str:
        return ""


def _english_names(country) -> list[str]:
    """ISO's own names (English): the common name where ISO has one, and the short name."""
    return [name for name in (getattr(country, "common_name", None), country.name) if name]


def _pycountry_names(language: str):
    """A function from a pycountry country to its ISO names in `language` ([] when untranslated)."""
    import pycountry

    if language == "en":
        return _english_names
    try:
        catalogue = gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[language])
    except FileNotFoundError:
        return lambda country: []
    catalogue.add_fallback(_Untranslated())
    return lambda country: [catalogue.gettext(name) for name in _english_names(country)]


def build(language: str) -> LanguageItems:
    """Every ISO 3166-1 country in `language`, by code: CLDR's name first, then pycountry's."""
    import pycountry
    from babel import Locale

    cldr_names = Locale.parse(language).territories
    iso_names = _pycountry_names(language)
    source = f"{BABEL}, {PYCOUNTRY}"
    items, adds, missing, copies = [], 0, 0, 0
    for country in sorted(pycountry.countries, key=lambda c: c.alpha_2):
        code = country.alpha_2
        if code not in cldr_names:
            raise ValueError(f"babel has no {language!r} name for ISO 3166-1 code {code}")
        translated = [name for name in iso_names(country) if name]
        # A "translation" equal to ISO's English name where CLDR's differs is an untranslated copy
        # (pycountry's Swahili catalogue has "Germany" for Germany): accepting it would reward English.
        english = set() if language == "en" else set(_english_names(country)) - {cldr_names[code]}
        extra = [name for name in translated if name not in english]
        answers = unique_answers([cldr_names[code], *extra])
        adds += len(answers) > 1
        missing += not translated
        copies += len(extra) < len(translated)
        items.append(Item(key=code, text=code, answers=answers, source=source))
    notes = {PYCOUNTRY_ADDS: adds, PYCOUNTRY_MISSING: missing, PYCOUNTRY_ENGLISH: copies}
    return LanguageItems(tuple(items), notes)


SPEC = register(
    SuiteSpec(
        name="countries",
        description="Name a country or territory, given its ISO 3166-1 alpha-2 code.",
        languages=LANGUAGES,
        sources=(BABEL, PYCOUNTRY),
        tag_word="country",
        instruct=(
            "What is the name of the country or territory with the ISO 3166-1 code {text} in "
            "{language}? Answer with the name only."
        ),
        fewshot_label="Country code",
        method=(
            "Items are the ISO 3166-1 alpha-2 codes that pycountry lists, the same in every language; "
            "the prompt shows the code. The reference is CLDR's territory name in the language "
            "(babel's `Locale.territories`). pycountry's translations of the ISO short name and of "
            "the common name, where its gettext catalogue has them, are further accepted answers "
            "(for en: ISO's own names). A name missing from a catalogue is skipped, never replaced "
            "by the English one, and a catalogue entry that only repeats the English name is not "
            "accepted (counted). Answers are NFC with single plain spaces."
        ),
        known_problems=(
            "Names are memorised, not composed: a model of a few million parameters does not learn "
            "them in minutes (held-out exact match stayed 0 in our trials). Use this suite with "
            "pretrained models.",
            "ISO names include catalogue-style inversions and official forms ('Åland, Îles', "
            "'Bolivia, Plurinational State of'); they are accepted because they are human "
            "translations, but they are never the reference.",
            "pycountry's Swahili catalogue lacks about half of the names, and its Vietnamese names "
            "are mostly older Sino-Vietnamese forms ('A Phú Hãn' for Afghanistan) that CLDR does not "
            "use (see the Languages table).",
            "Names spelled the same in several languages ('Angola', Chinese and Japanese Han names) "
            "say nothing about the language of an answer (see the Languages table).",
        ),
        build=build,
    )
)
