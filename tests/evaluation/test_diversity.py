"""distinct-1, distinct-2 and length: hand-worked, per language, in scripts with and without spaces."""

from __future__ import annotations

import pytest

from mlgrpo.evaluation.diversity import distinct_1, distinct_2, distinct_n, length_chars


def test_distinct_hand_worked_per_language():
    # en: units "one two one" + "two" -> unigrams 4, distinct 2 -> 0.5; bigrams (one two), (two one) -> 2 of 2.
    # zh: 二十 + 二十 -> unigrams 4, distinct 2 -> 0.5; bigrams 二十, 二十 -> 1 of 2 -> 0.5.
    outputs = ["one two one", "two", "二十", "二十"]
    records = [{"language": "en"}] * 2 + [{"language": "zh"}] * 2
    assert distinct_1(outputs, records) == {"en": 0.5, "zh": 0.5}
    assert distinct_2(outputs, records) == {"en": 1.0, "zh": 0.5}


def test_ngrams_never_cross_outputs():
    # "a" + "b" have no bigram at all (each output has one unit), not the bigram (a b).
    assert distinct_n([("a",), ("b",)], 2) is None
    assert distinct_2(["a", "b"], [{"language": "en"}] * 2) == {}


def test_a_collapsed_policy_scores_low():
    same = ["mia moja"] * 10
    assert distinct_1(same, [{"language": "sw"}] * 10) == {"sw": pytest.approx(2 / 20)}


def test_length_in_code_points_of_the_stripped_output():
    # Thai "น้ำ" is 3 code points; Hindi "नमस्ते" is 6; an empty output is 0.
    assert length_chars([" น้ำ ", "नमस्ते", ""], [{}] * 3) == [3.0, 6.0, 0.0]
