"""evaluate_texts: per-language scores of existing outputs, the recorded tokenizers, and bad input."""

from __future__ import annotations

import time

import pytest

from mlgrpo.evaluation import evaluate_texts
from mlgrpo.evaluation.inputs import MAX_OUTPUT_CHARS


def test_correct_answers_score_full_marks_in_every_language(numbers_eval):
    outputs = [r["reference"] for r in numbers_eval]
    scores = evaluate_texts(outputs, numbers_eval, metrics=["exact_match", "token_f1", "rouge_l", "chrf"])
    for lang in ("en", "ja", "ar", "sw", "ru"):
        assert scores.per_language[lang] == pytest.approx(
            {"exact_match": 1.0, "token_f1": 100.0, "rouge_l": 100.0, "chrf": 100.0})
    assert scores.counts == dict.fromkeys(("en", "ja", "ar", "sw", "ru"), 8)


def test_per_language_means_hand_worked_and_the_bleu_tokenizers_recorded():
    records = [{"language": "zh", "answers": ["二十一"]}, {"language": "zh", "answers": ["三十"]},
               {"language": "th", "answers": ["ยี่สิบ"]}]
    scores = evaluate_texts(["二十一", "三", "ยี่สิบ"], records, metrics=["exact_match", "token_f1", "bleu"])
    # zh exact match: 1 and 0 -> 0.5. Token F1: 100 and (三 vs 三十: P 1, R 1/2 -> 66.67) -> 83.33.
    assert scores.per_language["zh"]["exact_match"] == 0.5
    assert scores.per_language["zh"]["token_f1"] == pytest.approx((100 + 200 / 3) / 2)
    assert scores.rows["exact_match"] == [1.0, 0.0, 1.0]
    assert scores.tokenizers == {"zh": "zh", "th": "char"}
    assert any(note.startswith("bleu/th: ") and "'char'" in note for note in scores.notes)


def test_none_empty_and_invalid_unicode_outputs_are_scored_and_noted():
    records = [{"language": "en", "answers": ["one"]}] * 3 + [{"language": "zh", "answers": ["二十一"]}]
    scores = evaluate_texts([None, "", "one\ud800", "二十一"], records)
    assert scores.rows["exact_match"] == [0.0, 0.0, 0.0, 1.0]  # "one�": the repair is not the answer
    assert scores.rows["token_f1"][2] == 100.0  # U+FFFD is not a unit: the word "one" still counts
    assert scores.predictions[2] == "one\ufffd"
    assert "1 output(s) were None; scored as empty outputs" in scores.notes
    assert any("lone surrogates" in note for note in scores.notes)


def test_a_very_long_output_is_cut_scored_quickly_and_the_cut_is_noted():
    records = [{"language": "en", "answers": ["twenty one"]}, {"language": "ja", "answers": ["二十一"]}]
    outputs = ["twenty one " * 20_000, "二十一" * 20_000]  # 220k and 60k characters
    started = time.perf_counter()
    scores = evaluate_texts(outputs, records)
    assert time.perf_counter() - started < 5
    assert scores.per_language["ja"]["length_chars"] == MAX_OUTPUT_CHARS
    # ROUGE-L of the cut Japanese output: LCS 3 of 20,000 units: P = 3/20000, R = 1.
    precision = 3 / MAX_OUTPUT_CHARS
    assert scores.per_language["ja"]["rouge_l"] == pytest.approx(100 * 2 * precision / (precision + 1))
    assert f"2 output(s) longer than {MAX_OUTPUT_CHARS} characters were cut to that length before scoring" \
        in scores.notes


def test_languages_without_a_tokenizer_or_language_id_fall_back_and_say_so():
    records = [{"language": "xx", "answers": ["hello world"]}, {"language": None, "answers": ["東京"]}]
    scores = evaluate_texts(["hello world", "東京"], records)
    assert scores.tokenizers == {"xx": "13a", "und": "char"}
    assert scores.per_language["xx"]["bleu"] == 0.0  # two words: no 3- or 4-grams in this tiny corpus
    assert scores.per_language["und"]["exact_match"] == 1.0
    assert "language_consistency" not in scores.per_language["xx"]
    notes = " | ".join(scores.notes)
    assert "no tokenizer for language 'xx'" in notes and "no tokenizer for language 'und'" in notes
    assert "not measured for und, xx" in notes


def test_rows_without_answers_are_left_out_of_reference_metrics_and_counted():
    records = [{"language": "en", "answers": ["one"]}, {"language": "en"}]
    scores = evaluate_texts(["one", "two"], records, metrics=["exact_match", "distinct_1"])
    assert scores.per_language["en"] == {"exact_match": 1.0, "distinct_1": 1.0}
    assert "1 row(s) have no answers or reference: left out of exact_match" in scores.notes


def test_misaligned_inputs_and_non_text_outputs_are_errors():
    with pytest.raises(ValueError, match="2 predictions for 1 records"):
        evaluate_texts(["a", "b"], [{"language": "en"}])
    with pytest.raises(TypeError, match="prediction 0 is a int"):
        evaluate_texts([3], [{"language": "en"}])
