"""Text metrics over outputs that already exist: the registry's metrics, per language, with notes.

    scores = evaluate_texts(predictions, records, metrics=["exact_match", "bleu"])
    scores.per_language["zh"]["bleu"], scores.tokenizers["zh"], scores.notes

This is the generation-free half of the evaluation (evaluate_policy adds generation, rewards, KL,
safety); `mlgrpo eval`, the evaluate modules and the benchmark all go through it.
Knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Importing them registers the metrics; their order here is the order in which reports list them.
# isort: off
from mlgrpo.evaluation import overlap
from mlgrpo.evaluation import language  # noqa: F401
from mlgrpo.evaluation import diversity  # noqa: F401
# isort: on
from mlgrpo.evaluation.inputs import MAX_OUTPUT_CHARS, answers_of, check_aligned, clean_predictions, rows_by_language
from mlgrpo.evaluation.language import identifiable
from mlgrpo.evaluation.registry import get_metric, metric_names


@dataclass
class TextScores:
    per_language: dict[str, dict[str, float]]  # language -> metric -> value
    rows: dict[str, list[float | None]]  # per-row metric -> one value per prediction
    directions: dict[str, str | None]  # metric -> "higher" / "lower" / None
    tokenizers: dict[str, str] = field(default_factory=dict)  # language -> BLEU tokenizer
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # language -> rows
    predictions: list[str] = field(default_factory=list)  # the cleaned outputs that were scored


def mean_by_language(values: Sequence[float | None], groups: dict[str, list[int]]) -> dict[str, float]:
    """Mean of the non-None values of each language; a language with none has no entry.

    >>> mean_by_language([1.0, None, 0.0, None], {"en": [0, 2], "sw": [1, 3]})
    {'en': 0.5}
    """
    means = {}
    for lang, rows in groups.items():
        present = [values[i] for i in rows if values[i] is not None]
        if present:
            means[lang] = sum(present) / len(present)
    return means


def evaluate_texts(predictions: Sequence[Any], records: Sequence[dict],
                   metrics: Sequence[str] | None = None) -> TextScores:
    """Score `predictions` (one per record; None and invalid Unicode are repaired and noted) with the
    named metrics (default: every registered one), per language."""
    check_aligned(predictions, records)
    chosen = [get_metric(name) for name in (metric_names() if metrics is None else metrics)]
    texts, repairs = clean_predictions(predictions)
    groups = rows_by_language(records)
    per_language: dict[str, dict[str, float]] = {lang: {} for lang in groups}
    rows: dict[str, list[float | None]] = {}
    for metric in chosen:
        if metric.per_row:
            rows[metric.name] = metric.func(texts, records)
            by_language = mean_by_language(rows[metric.name], groups)
        else:
            by_language = metric.func(texts, records)
        for lang, value in by_language.items():
            per_language[lang][metric.name] = float(value)
    names = [m.name for m in chosen]
    scores = TextScores(per_language, rows, {m.name: m.better for m in chosen},
                        counts={lang: len(r) for lang, r in groups.items()}, predictions=texts)
    scores.notes = input_notes(repairs, records, names)
    if "bleu" in names:
        choices = overlap.tokenizer_choices(records)
        scores.tokenizers = {lang: choice.name for lang, choice in choices.items()}
        scores.notes += [f"bleu/{lang}: {choice.reason}" for lang, choice in choices.items() if choice.fallback]
    return scores


def input_notes(repairs, records: Sequence[dict], names: Sequence[str]) -> list[str]:
    """What a reader of the scores must know about the inputs: repairs, cuts, rows left out."""
    notes = []
    if repairs["none"]:
        notes.append(f"{repairs['none']} output(s) were None; scored as empty outputs")
    if repairs["surrogates"]:
        notes.append(f"{repairs['surrogates']} output(s) held lone surrogates (invalid Unicode); replaced by "
                     "U+FFFD before scoring")
    if repairs["cut"]:
        notes.append(f"{repairs['cut']} output(s) longer than {MAX_OUTPUT_CHARS} characters were cut to that length "
                     "before scoring")
    needs_answers = [n for n in names if get_metric(n).requires == "answers|reference"]
    unanswered = sum(not answers_of(r) for r in records)
    if needs_answers and unanswered:
        notes.append(f"{unanswered} row(s) have no answers or reference: left out of {', '.join(needs_answers)}")
    needs_language = [n for n in names if get_metric(n).requires == "language"]
    unknown = sorted(lang for lang in rows_by_language(records) if not identifiable(lang))
    if needs_language and unknown:
        notes.append(f"{', '.join(needs_language)}: not measured for {', '.join(unknown)} (no language, or one that "
                     "language ID does not know)")
    return notes
