"""Rewards that compare a completion with the row's accepted answers or its reference.

exact_match: 1.0 when the normalised completion equals any normalised accepted answer, else 0.0.
chrf: sentence chrF of the completion against the reference, scaled to 0..1. chrF counts character
n-grams and needs no tokenizer, so one setting is right for every script (stack.md: BLEU with the
default tokenizer gives 0.0 on Chinese).
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.registry import register
from mlgrpo.rewards.texts import as_text, base_language, column, has_value
from mlgrpo.text import normalize_answer


def accepted_answers(answers: Any, reference: Any) -> list[str]:
    """The row's accepted answers: every non-blank entry of `answers`, else the reference alone.

    >>> accepted_answers(["двадцать один", ""], "x"), accepted_answers([], "21"), accepted_answers(None, None)
    (['двадцать один'], ['21'], [])
    """
    listed = [a for a in (answers or []) if has_value(a)]
    if listed:
        return listed
    return [reference] if has_value(reference) else []


def _check_answer_pattern(params: Mapping[str, Any]) -> None:
    pattern = params.get("answer_pattern")
    if pattern is None:
        return
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise UserError(f"exact_match: answer_pattern {pattern!r} is not a valid regular expression: {exc}") from None
    if compiled.groups < 1:
        raise UserError(f"exact_match: answer_pattern {pattern!r} needs a group around the answer, e.g. "
                        r"'<answer>(.*?)</answer>'")


@register("exact_match", requires=("answers|reference",), optional=("language",), check=_check_answer_pattern)
def exact_match(prompts: Sequence, completions: Sequence, *, answers: Sequence | None = None,
                reference: Sequence | None = None, language: Sequence | None = None,
                answer_pattern: str | None = None, **_: Any) -> list[float | None]:
    """1.0 if the completion is one of the accepted answers, after `normalize_answer`; else 0.0.

    Accepted answers are the row's `answers`, or its `reference` when `answers` is empty; a row with
    neither gets None (not applicable). With `answer_pattern` (a regex with one group), the answer
    is the first group of its first match in the completion, and no match scores 0.0.

    Hand-worked: "Zwanzig." normalises to "zwanzig" = "zwanzig" -> 1.0; "٣" normalises to "3",
    which is not "4" -> 0.0; the third row has no answers and no reference -> None.

    >>> exact_match(["", "", ""], ["Zwanzig.", "٣", "x"], answers=[["zwanzig"], [], []],
    ...             reference=["zwanzig", "4", None], language=["de", "ar", "de"])
    [1.0, 0.0, None]
    """
    n = len(completions)
    rows = zip(completions, column(answers, n), column(reference, n), column(language, n))
    pattern = re.compile(answer_pattern, re.S) if answer_pattern else None
    rewards: list[float | None] = []
    for completion, row_answers, row_reference, row_language in rows:
        accepted = accepted_answers(row_answers, row_reference)
        if not accepted:
            rewards.append(None)
            continue
        text = as_text(completion)
        if pattern is not None:
            match = pattern.search(text)
            if match is None:
                rewards.append(0.0)
                continue
            text = match.group(1) or ""
        lang = base_language(row_language)
        candidate = normalize_answer(text, lang)
        hit = any(candidate == normalize_answer(str(a), lang) for a in accepted)
        rewards.append(1.0 if hit else 0.0)
    return rewards


@functools.lru_cache(maxsize=8)
def _chrf_metric(char_order: int, word_order: int, beta: int):
    from sacrebleu.metrics import CHRF  # local: only runs that use chrF pay for sacrebleu

    return CHRF(char_order=char_order, word_order=word_order, beta=beta)


def _check_chrf(params: Mapping[str, Any]) -> None:
    for key, low in (("char_order", 1), ("word_order", 0), ("beta", 1)):
        value = params.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            raise UserError(f"chrf: {key} must be an integer >= {low}, got {value!r}")


@register("chrf", requires=("reference",), check=_check_chrf)
def chrf(prompts: Sequence, completions: Sequence, *, reference: Sequence | None = None,
         char_order: int = 6, word_order: int = 0, beta: int = 2, **_: Any) -> list[float | None]:
    """sacrebleu's sentence chrF (chrF++ with word_order=2) against the reference, divided by 100.

    Rows without a reference get None. Hand-worked for "abc" against "abd", where only the orders
    both sides have count (sacrebleu's effective order): 1-grams match 2 of 3 each way, 2-grams 1 of
    2, 3-grams 0 of 1; mean precision = mean recall = (2/3 + 1/2 + 0) / 3 = 7/18, and F2 of equal
    precision and recall is that value, 0.3889. An exact copy scores 1.0.

    >>> [round(r, 4) for r in chrf(["", ""], ["abc", "一二三"], reference=["abd", "一二三"])]
    [0.3889, 1.0]
    """
    metric = _chrf_metric(char_order, word_order, beta)
    rewards: list[float | None] = []
    for completion, row_reference in zip(completions, column(reference, len(completions))):
        if not has_value(row_reference):
            rewards.append(None)
            continue
        score = metric.sentence_score(as_text(completion), [str(row_reference)]).score
        rewards.append(score / 100.0)
    return rewards
