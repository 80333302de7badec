"""The `numbers` suite: spell out a whole number from 0 to 999 in words.

Answers come from two human-written rule sets: CLDR's rule-based number format (via unicode-rbnf)
and num2words. This is the family a tiny model learns in minutes (../shared/research/stack.md), so
answers are kept clean and regular. Knows nothing about splits, prompts or records.
"""

from __future__ import annotations

from collections.abc import Callable

from mlgrpo.data.suites.base import LANGUAGES, Item, LanguageItems, Source, SuiteSpec, register, unique_answers

NUMBERS = range(1000)
# The plain cardinal comes first where CLDR has one: it is how a quantity is written (Chinese 一百零一
# for 101, where the counting form writes 一百〇一). Gendered and case forms (Russian genitive
# "двухсот сорока шести", Spanish feminine "doscientas") answer other questions: not accepted.
_RBNF_RULESETS = ("spellout-cardinal", "spellout-numbering")

RBNF = Source(
    "unicode-rbnf",
    "MIT (code); its rules are CLDR RBNF data, (c) Unicode, Inc., Unicode License v3",
    "CLDR spell-out rules: the reference wherever CLDR has the language",
)
NUM2WORDS = Source("num2words", "LGPL-2.1", "a second spelling; the reference where CLDR has no rules (bn)")
DISAGREE = "num2words differs from CLDR (both accepted)"


def _rbnf_speller(language: str) -> Callable[[int], list[str]] | None:
    from unicode_rbnf import RbnfEngine

    if language not in RbnfEngine.get_supported_languages():
        return None
    engine = RbnfEngine.for_language(language)
    names = [name for name in _RBNF_RULESETS if name in engine.rulesets]

    def spell(n: int) -> list[str]:
        forms = engine.format_number(n, ruleset_names=names).text_by_ruleset
        return [forms[name] for name in names if name in forms]

    return spell


def _num2words_speller(language: str) -> Callable[[int], str] | None:
    from num2words import CONVERTER_CLASSES, num2words

    if language not in CONVERTER_CLASSES:
        return None
    return lambda n: num2words(n, lang=language)


def build(language: str) -> LanguageItems:
    """Items 0..999 in `language`: the CLDR spellings first (the first is the reference), then num2words'."""
    rbnf, n2w = _rbnf_speller(language), _num2words_speller(language)
    if rbnf is None and n2w is None:
        raise ValueError(f"neither unicode-rbnf nor num2words spells numbers in {language!r}")
    source = ", ".join(str(s) for s, speller in ((RBNF, rbnf), (NUM2WORDS, n2w)) if speller)
    items, disagree = [], 0
    for n in NUMBERS:
        cldr = rbnf(n) if rbnf else []
        other = [n2w(n)] if n2w else []
        answers = unique_answers([*cldr, *other])
        disagree += bool(cldr and other and answers[0] != unique_answers(other)[0])
        items.append(Item(key=str(n), text=str(n), answers=answers, source=source))
    notes = {DISAGREE: disagree} if rbnf and n2w else {}
    return LanguageItems(tuple(items), notes)


SPEC = register(
    SuiteSpec(
        name="numbers",
        description="Spell out a whole number from 0 to 999 in words.",
        languages=LANGUAGES,
        sources=(RBNF, NUM2WORDS),
        tag_word="number",
        instruct="Write the number {text} in words in {language}. Answer with the words only.",
        fewshot_label="Number",
        method=(
            "Items are the whole numbers 0 to 999, the same 1,000 in every language. The reference is "
            "CLDR's plain `spellout-cardinal` rule set as unicode-rbnf renders it, or CLDR's "
            "`spellout-numbering` where the language has only gendered cardinals; the other of the "
            "two (where it differs: Chinese 一百〇一 beside 一百零一) and num2words' cardinal are "
            "further accepted answers. Where CLDR has no rules (bn) num2words gives the reference. "
            "Gendered and case forms are not accepted: a bare number is named in its counting form. Every "
            "answer is NFC with invisible marks removed (CLDR separates Thai words with U+200B) "
            "and single plain spaces."
        ),
        known_problems=(
            "The two sources follow different conventions and disagree often (see the Languages table): "
            "British 'and' in English num2words, Turkish compounds written as one word by num2words "
            "('ikiyüzkırkaltı'), spacing after Arabic 'و', the Ukrainian apostrophe (ʼ U+02BC in "
            "CLDR, ' in num2words), European (num2words) against Brazilian (CLDR) Portuguese. Both "
            "are accepted; the reference is always CLDR's.",
            "Chinese and Japanese spell most numbers identically (二百四十六), so the answer alone "
            "does not tell the two languages apart.",
            "Only the sources' spellings are accepted: other correct ones score as wrong, e.g. "
            "Chinese 两百四十六 for 246, which CLDR has only as an alternate rule set.",
        ),
        build=build,
    )
)
