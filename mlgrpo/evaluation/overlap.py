"""Metrics that compare an output with the row's accepted answers: exact match, token F1, ROUGE-L,
chrF and BLEU. Every accepted answer counts (a row's `answers`, else its `reference`).

    exact_match  per row, 0-1    mlgrpo.rewards.exact_match (normalize_answer: case, width,
                                 punctuation, digits, Arabic marks), the reward the policy trains on
    token_f1     per row, 0-100  SQuAD-style F1 of units (tokenization.units: words, or characters in
                                 CJK and Thai), best over the answers
    rouge_l      per row, 0-100  rouge-score's ROUGE-L F-measure over the same units, best answer
    chrf         per language    sacrebleu's corpus chrF (tokenizer-free; all answers as references)
    bleu         per language    sacrebleu's corpus BLEU with the language's tokenizer
                                 (tokenization.bleu_tokenizer; the choice is in the report)

chrF and BLEU are corpus statistics (n-gram counts summed over a language's rows, then one score),
as sacrebleu reports them; a mean of sentence scores (the chrf reward) is a different number.
Token F1 drops no articles (SQuAD drops English "a/an/the"; that list is English-only).
Rows without answers get None (per row) or are left out (per language).
Pure functions; knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

from mlgrpo.evaluation.inputs import answers_of, language_of, rows_by_language
from mlgrpo.evaluation.registry import register
from mlgrpo.evaluation.tokenization import TokenizerChoice, bleu_tokenizer, units
from mlgrpo.rewards.answers import exact_match as exact_match_reward


@register("exact_match", per_row=True, better="higher", scale="0-1", requires="answers|reference")
def exact_match(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """1.0 when the output equals an accepted answer after normalize_answer, else 0.0 (the reward).

    >>> exact_match(["٣", "Zwanzig."], [{"answers": ["3"], "language": "ar"}, {"reference": "zwanzig"}])
    [1.0, 1.0]
    """
    return exact_match_reward(
        [r.get("prompt") for r in records], predictions,
        answers=[r.get("answers") for r in records], reference=[r.get("reference") for r in records],
        language=[language_of(r) for r in records],
    )


def f1_of_units(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD's F1 of two unit sequences, 0-100; two empty sequences agree (100).

    Hand-worked, 二十一 against 二十: 2 shared characters, precision 2/3, recall 2/2,
    F1 = 2 * (2/3 * 1) / (2/3 + 1) = 0.8 -> 80.

    >>> round(f1_of_units(("二", "十", "一"), ("二", "十")), 4), f1_of_units((), ()), f1_of_units(("a",), ())
    (80.0, 100.0, 0.0)
    """
    if not predicted or not gold:
        return 100.0 if not predicted and not gold else 0.0
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 100.0 * 2 * precision * recall / (precision + recall)


@register("token_f1", per_row=True, better="higher", scale="0-100", requires="answers|reference")
def token_f1(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """Best F1 of the output's units against each accepted answer's units.

    Hand-worked: "twenty one" against "twenty-one" -> the same units -> 100; "二十一" against
    "二十" -> 80 (f1_of_units).

    >>> token_f1(["Twenty one", "二十一"], [{"answers": ["twenty-one"], "language": "en"},
    ...                                   {"answers": ["二十"], "language": "zh"}])
    [100.0, 80.0]
    """
    scores: list[float | None] = []
    for prediction, record in zip(predictions, records, strict=True):
        answers, language = answers_of(record), language_of(record)
        if not answers:
            scores.append(None)
            continue
        predicted = units(prediction, language)
        scores.append(max(f1_of_units(predicted, units(a, language)) for a in answers))
    return scores


class UnitTokenizer:
    """rouge-score's tokenizer interface (`tokenize(text) -> list[str]`) over `units`."""

    def __init__(self, language: str | None):
        self.language = language

    def tokenize(self, text: str) -> list[str]:
        return list(units(text, self.language))


@functools.lru_cache(maxsize=64)
def _rouge_scorer(language: str):
    from rouge_score.rouge_scorer import RougeScorer  # local: loads nltk and absl

    return RougeScorer(["rougeL"], tokenizer=UnitTokenizer(language))


@register("rouge_l", per_row=True, better="higher", scale="0-100", requires="answers|reference")
def rouge_l(predictions: list[str], records: Sequence[dict]) -> list[float | None]:
    """rouge-score's ROUGE-L F-measure x 100, best over the accepted answers.

    Hand-worked, "北京欢迎你" against "北京欢迎您": units 北 京 欢 迎 你 / 北 京 欢 迎 您, longest
    common subsequence 4 of 5 each way, F = 0.8 -> 80; an identical Chinese pair -> 100.

    >>> [round(s, 4) for s in rouge_l(["北京欢迎你", "北京"], [{"answers": ["北京欢迎您"], "language": "zh"},
    ...                                                 {"answers": ["北京"], "language": "zh"}])]
    [80.0, 100.0]
    """
    scores: list[float | None] = []
    for prediction, record in zip(predictions, records, strict=True):
        answers = answers_of(record)
        if not answers:
            scores.append(None)
            continue
        best = _rouge_scorer(language_of(record)).score_multi(answers, prediction)["rougeL"]
        scores.append(100.0 * best.fmeasure)
    return scores


def reference_streams(answer_lists: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """sacrebleu's reference layout: stream j holds every row's j-th answer, None where a row has fewer.

    >>> reference_streams([["a", "b"], ["c"]])
    [['a', 'c'], ['b', None]]
    """
    width = max(len(a) for a in answer_lists)
    return [[a[j] if j < len(a) else None for a in answer_lists] for j in range(width)]


def _scored_groups(predictions: Sequence[str], records: Sequence[dict]):
    """(language, outputs, answer lists) for each language, over its rows that have answers."""
    for language, rows in rows_by_language(records).items():
        answered = [(predictions[i], answers_of(records[i])) for i in rows]
        answered = [(p, a) for p, a in answered if a]
        if answered:
            yield language, [p for p, _ in answered], [a for _, a in answered]


def tokenizer_choices(records: Sequence[dict]) -> dict[str, TokenizerChoice]:
    """BLEU's tokenizer for each language of `records` that has answers (the sample: its first answers)."""
    choices = {}
    for language, rows in rows_by_language(records).items():
        sample = " ".join(a for i in rows[:50] for a in answers_of(records[i]))
        if sample:
            choices[language] = bleu_tokenizer(language, sample)
    return choices


@functools.lru_cache(maxsize=16)
def _bleu(tokenize: str):
    from sacrebleu.metrics import BLEU  # local: only evaluations that ask for BLEU pay for it

    return BLEU(tokenize=tokenize)


@functools.lru_cache(maxsize=1)
def _chrf():
    from sacrebleu.metrics import CHRF

    return CHRF()


@register("chrf", per_row=False, better="higher", scale="0-100", requires="answers|reference")
def chrf(predictions: list[str], records: Sequence[dict]) -> dict[str, float]:
    """sacrebleu's corpus chrF (character 6-grams, beta 2) per language; equals `sacrebleu.corpus_chrf`.

    >>> chrf(["abc", "一二三"], [{"answers": ["abc"], "language": "en"}, {"answers": ["一二三"], "language": "zh"}])
    {'en': 100.0, 'zh': 100.0}
    """
    return {language: _chrf().corpus_score(outputs, reference_streams(answers)).score
            for language, outputs, answers in _scored_groups(predictions, records)}


@register("bleu", per_row=False, better="higher", scale="0-100", requires="answers|reference")
def bleu(predictions: list[str], records: Sequence[dict]) -> dict[str, float]:
    """sacrebleu's corpus BLEU per language, with `tokenizer_choices`' tokenizer for the language.

    Chinese with the "zh" tokenizer: an identical output scores 100 (13a would make the whole line
    one token).

    >>> scores = bleu(["我住在北京市中心"], [{"answers": ["我住在北京市中心"], "language": "zh"}])
    >>> {k: round(v, 6) for k, v in scores.items()}
    {'zh': 100.0}
    """
    choices = tokenizer_choices(records)
    return {language: _bleu(choices[language].name).corpus_score(outputs, reference_streams(answers)).score
            for language, outputs, answers in _scored_groups(predictions, records)}
