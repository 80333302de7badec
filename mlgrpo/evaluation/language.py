"""Which language the outputs are in: language consistency and code-switch rate.

Both read one number per output from mlgrpo.rewards.language_consistency (the reward the policy may
train on): the share of its letters in segments written in the row's language, decided by script
where the script settles it and by language ID otherwise (cached per text, so repeated outputs and
repeated evaluations cost nothing).

    language_consistency  per row, 0-1  1.0 when more than half of the output's letters are in the
                                        prompt's language (the output "is in" that language), else 0.0;
                                        a language's score is the share of its outputs in its language
    code_switch           per row, 0-1  the share of the output's letters in another language or script

Outputs without letters ("246", "", emoji) and rows without a language (or with one language ID does
not know) get None: their language cannot be told, which is not a switch.

The languages that compete for a segment are the evaluation's own languages plus English, the
language models most often drift into, so that an English answer to a Swahili prompt loses even
when English is not evaluated. Not every language ID knows: among ~100 languages short texts drown
(measured: Swahili number words got no Swahili probability at all, so every correct Swahili answer
counted as a switch). On the numbers suite's own references (21 languages + en competing) the
share judged in their language is 1.0 for most languages, 0.86 for ja (kanji-only numbers look
Chinese) and 0.51 for sw (language ID is weak on Swahili number words); English references in
Swahili rows score 0.02. Compare a language with itself over time, not with another language.
Pure functions; knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from mlgrpo.evaluation.inputs import language_of
from mlgrpo.evaluation.registry import register

# An output "is in" a language when more than this share of its letters are.
MAJORITY = 0.5


def identifiable(language: str) -> bool:
    """Whether language ID can answer for `language` (it knows its code)."""
    from mlgrpo.langid.codes import KNOWN_CODES

    return language in KNOWN_CODES


# Always among the competing languages (see the module docstring).
ALWAYS_COMPETING = ("en",)


@functools.lru_cache(maxsize=4)
def letter_shares(predictions: tuple[str, ...], languages: tuple[str, ...]) -> tuple[float | None, ...]:
    """Per output, the share of its letters in its row's language (None: no letters, or no known language).

    Cached for the last few calls: consistency and code-switch read the same shares.
    """
    from mlgrpo.rewards.language import language_consistency

    known = [lang if identifiable(lang) else None for lang in languages]
    candidates = sorted({lang for lang in known if lang} | set(ALWAYS_COMPETING))
    return tuple(language_consistency([""] * len(predictions), list(predictions), language=known,
                                      candidates=candidates))


def _shares(predictions: Sequence[str], records: Sequence[dict]) -> tuple[float | None, ...]:
    return letter_shares(tuple(predictions), tuple(language_of(r) for r in records))


@register("language_consistency", per_row=True, better="higher", scale="0-1", requires="language")
def language_consistency(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """1.0 when most of the output's letters are in the row's language, else 0.0; None without letters.

    Hand-worked, by script alone: "Γεια σου" in an "el" row is all Greek -> 1.0; "Hello κόσμε" has
    5 Greek letters of 10 -> not more than half -> 0.0; "42" has no letters -> None.

    >>> language_consistency(["Γεια σου", "Hello κόσμε", "42"], [{"language": "el"}] * 3)
    [1.0, 0.0, None]
    """
    return [None if s is None else float(s > MAJORITY) for s in _shares(predictions, records)]


@register("code_switch", per_row=True, better="lower", scale="0-1", requires="language")
def code_switch(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """The share of the output's letters that are not in the row's language (script or language ID).

    Hand-worked: "Hello κόσμε" in an "el" row: 5 Latin letters of 10 -> 0.5; "나는 Python을 좋아해"
    in a "ko" row: 6 Latin letters of 12 -> 0.5; "Γεια" -> 0.0.

    >>> code_switch(["Hello κόσμε", "나는 Python을 좋아해", "Γεια"],
    ...             [{"language": "el"}, {"language": "ko"}, {"language": "el"}])
    [0.5, 0.5, 0.0]
    """
    return [None if s is None else 1.0 - s for s in _shares(predictions, records)]
