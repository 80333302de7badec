"""How varied and how long the outputs are: distinct-1, distinct-2 and mean length in characters.

    distinct_1, distinct_2  per language, 0-1  distinct n-grams / all n-grams over the language's
                                               outputs (Li et al. 2016, "A Diversity-Promoting
                                               Objective"), n-grams of tokenization.units, never
                                               across two outputs; a collapsing policy repeats itself
    length_chars            per row            code points of the stripped output (words do not
                                               exist in every script; see mlgrpo.rewards.shape)

A language whose outputs hold no n-gram at all (all empty) has no distinct-n score.
Pure functions; knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlgrpo.evaluation.inputs import rows_by_language
from mlgrpo.evaluation.registry import register
from mlgrpo.evaluation.tokenization import units


def distinct_n(unit_lists: Sequence[Sequence[str]], n: int) -> float | None:
    """Distinct n-grams over all n-grams of the lists; None when there is no n-gram.

    Hand-worked, bigrams of (a b a b) and (a b): ab ba ab, ab -> 2 distinct of 4 = 0.5.

    >>> distinct_n([("a", "b", "a", "b"), ("a", "b")], 2), distinct_n([("a",)], 2)
    (0.5, None)
    """
    grams = [tuple(u[i:i + n]) for u in unit_lists for i in range(len(u) - n + 1)]
    return len(set(grams)) / len(grams) if grams else None


def _distinct(predictions: Sequence[str], records: Sequence[dict], n: int) -> dict[str, float]:
    scores = {}
    for language, rows in rows_by_language(records).items():
        score = distinct_n([units(predictions[i], language) for i in rows], n)
        if score is not None:
            scores[language] = score
    return scores


@register("distinct_1", per_row=False, better="higher", scale="0-1")
def distinct_1(predictions: list[str], records: Sequence[dict]) -> dict[str, float]:
    """Distinct units over all units, per language. "一 一 二" in Chinese: 2 distinct of 3.

    >>> {k: round(v, 4) for k, v in distinct_1(["一一", "二"], [{"language": "zh"}] * 2).items()}
    {'zh': 0.6667}
    """
    return _distinct(predictions, records, 1)


@register("distinct_2", per_row=False, better="higher", scale="0-1")
def distinct_2(predictions: list[str], records: Sequence[dict]) -> dict[str, float]:
    """Distinct unit bigrams over all bigrams, per language.

    >>> distinct_2(["one two one two", "one two"], [{"language": "en"}] * 2)
    {'en': 0.5}
    """
    return _distinct(predictions, records, 2)


@register("length_chars", per_row=True, better=None, scale="characters")
def length_chars(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """Code points of each stripped output: "  двадцать " -> 8, "二十一" -> 3.

    >>> length_chars(["  двадцать ", "二十一"], [{}, {}])
    [8.0, 3.0]
    """
    return [float(len(p.strip())) for p in predictions]

