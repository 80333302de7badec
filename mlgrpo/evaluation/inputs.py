"""What the metrics read: clean prediction strings, each row's language and accepted answers.

Bad outputs are scored, not dropped, and counted so that the report can say what happened:
    None                 scored as an empty output (a model that produced nothing got nothing right)
    lone surrogates      replaced by U+FFFD (they cannot be encoded; MeCab and sacrebleu would fail)
    chat messages        their text (TRL's conversational completions)
    runaway length       cut to MAX_OUTPUT_CHARS: generation never comes near it (max_new_tokens), and
                         beyond it some metrics turn quadratic (ROUGE-L's LCS table; MeCab on a
                         long run of kanji took 3 s for 60k characters)
Every prediction is NFC, as every record is (mlgrpo.data.records), so equal texts compare equal.
Pure functions; knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from mlgrpo.rewards.answers import accepted_answers
from mlgrpo.rewards.texts import as_text, base_language
from mlgrpo.text import normalize, scrub_surrogates

UNDETERMINED = "und"
MAX_OUTPUT_CHARS = 20_000
# mlgrpo.text.has_lone_surrogate loops in Python; this scan runs at C speed on every output.
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_predictions(predictions: Sequence[Any]) -> tuple[list[str], Counter]:
    """(NFC strings, counts of "none", "surrogates" and "cut" repairs). A non-text value is a TypeError.

    >>> clean_predictions([None, "e\\u0301", "a\\ud800"])
    (['', 'é', 'a�'], Counter({'none': 1, 'surrogates': 1}))
    """
    texts: list[str] = []
    counts: Counter = Counter()
    for index, prediction in enumerate(predictions):
        if prediction is None:
            counts["none"] += 1
            texts.append("")
            continue
        if not isinstance(prediction, (str, list, tuple)):
            raise TypeError(f"prediction {index} is a {type(prediction).__name__}; predictions must be strings "
                            "(or chat messages), None for a missing output")
        text = as_text(prediction)
        if _SURROGATE.search(text):
            counts["surrogates"] += 1
            text = scrub_surrogates(text)
        if len(text) > MAX_OUTPUT_CHARS:
            counts["cut"] += 1
            text = text[:MAX_OUTPUT_CHARS]
        texts.append(normalize(text))
    return texts, counts


def check_aligned(predictions: Sequence, records: Sequence) -> None:
    if len(predictions) != len(records):
        raise ValueError(f"{len(predictions)} predictions for {len(records)} records; give one prediction per record")


def language_of(record: Mapping[str, Any]) -> str:
    """The record's language as an ISO 639-1 code, or "und" when it has none.

    >>> language_of({"language": "zh-Hant"}), language_of({"language": None}), language_of({})
    ('zh', 'und', 'und')
    """
    return base_language(record.get("language")) or UNDETERMINED


def answers_of(record: Mapping[str, Any]) -> list[str]:
    """Every accepted answer of the record (`answers`, else its `reference`), NFC; [] when it has none."""
    return [normalize(str(a)) for a in accepted_answers(record.get("answers"), record.get("reference"))]


def rows_by_language(records: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Language -> indices of its rows, languages in order of first appearance.

    >>> rows_by_language([{"language": "sw"}, {"language": "ja"}, {"language": "sw"}])
    {'sw': [0, 2], 'ja': [1]}
    """
    groups: dict[str, list[int]] = {}
    for index, record in enumerate(records):
        groups.setdefault(language_of(record), []).append(index)
    return groups
