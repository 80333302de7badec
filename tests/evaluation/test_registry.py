"""The metric registry: names, shapes, duplicates and helpful errors."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.evaluation import METRICS, evaluate_texts, get_metric, metric_names, register


def test_every_metric_of_the_issue_is_registered_with_a_direction():
    assert metric_names() == ["exact_match", "token_f1", "rouge_l", "chrf", "bleu", "language_consistency",
                              "code_switch", "distinct_1", "distinct_2", "length_chars"]
    assert get_metric("code_switch").better == "lower" and get_metric("length_chars").better is None
    assert not get_metric("bleu").per_row and get_metric("rouge_l").per_row


def test_a_duplicate_name_is_a_bug():
    with pytest.raises(ValueError, match="registered twice"):
        register("bleu", per_row=False, better="higher", scale="0-100")(lambda p, r: {})
    assert METRICS["bleu"].func.__module__ == "mlgrpo.evaluation.overlap"


def test_unknown_names_get_the_closest_valid_one():
    with pytest.raises(UserError, match="did you mean 'rouge_l'"):
        get_metric("rougeL")
    with pytest.raises(UserError, match="unknown metric 'blue'.*'bleu'"):
        evaluate_texts(["x"], [{"language": "en"}], metrics=["blue"])
