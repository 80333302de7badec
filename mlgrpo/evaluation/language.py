"""Which language the outputs are in: language consistency and code-switch rate.

Both read one number per output from mlgrpo.rewards.language_consistency (the reward the policy may
train on): the share of its words in the row's language (DeepSeek-R1's "proportion of target language
words"; characters weighed in words in scripts written without spaces; names, acronyms, numbers, URLs
and code do not vote), decided by script where the script settles it and by language ID otherwise
(cached per segment, so repeated outputs and repeated evaluations cost nothing).

    language_consistency  per row, 0-1  1.0 when more than half of the output's words are in the
                                        prompt's language (the output "is in" that language), else 0.0;
                                        a language's score is the share of its outputs in its language
    code_switch           per row, 0-1  the share of the output's words in another language or script

Outputs with nothing that votes ("246", "", emoji) and rows without a language (or with one language ID
does not know) get None: their language cannot be told, which is not a switch.

The languages that compete for a segment are the evaluation's own languages plus English, the
language models most often drift into, so that an English answer to a Swahili prompt loses even
when English is not evaluated. How well this is measured (correct text, neighbours' translations,
English answers, in 27 languages): reports/benchmarks.md, `python -m bench.bench_consistency`.
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
    """Per output, the share of its words in its row's language (None: nothing votes, or no known language).

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
    """1.0 when most of the output's words are in the row's language, else 0.0; None when nothing votes.

    Hand-worked, by script alone: "Γεια σου" in an "el" row is all Greek -> 1.0; "Hello world κόσμε" has
    1 Greek word of 3 -> not more than half -> 0.0; "42" has no words -> None.

    >>> language_consistency(["Γεια σου", "Hello world κόσμε", "42"], [{"language": "el"}] * 3)
    [1.0, 0.0, None]
    """
    return [None if s is None else float(s > MAJORITY) for s in _shares(predictions, records)]


@register("code_switch", per_row=True, better="lower", scale="0-1", requires="language")
def code_switch(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """The share of the output's words that are not in the row's language (script or language ID).

    Hand-worked: "Hello world κόσμε" in an "el" row: 2 Latin words of 3 -> 2/3; "나는 Python을 좋아해"
    in a "ko" row: Python is a name and does not vote -> 0.0; "Γεια" -> 0.0.

    >>> [round(x, 4) for x in code_switch(["Hello world κόσμε", "나는 Python을 좋아해", "Γεια"],
    ...             [{"language": "el"}, {"language": "ko"}, {"language": "el"}])]
    [0.6667, 0.0, 0.0]
    """
    return [None if s is None else 1.0 - s for s in _shares(predictions, records)]
