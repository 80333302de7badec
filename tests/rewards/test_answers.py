"""exact_match and chrf: hand-worked values in several scripts."""

from __future__ import annotations

import pytest

from mlgrpo.rewards.answers import accepted_answers, chrf, exact_match


def _em(completion, answers=None, reference=None, language=None, **params):
    return exact_match([""], [completion], answers=[answers or []], reference=[reference], language=[language],
                       **params)[0]


@pytest.mark.parametrize(
    "completion, answers, language, expected",
    [
        ("北京。", ["北京"], "zh", 1.0),  # the ideographic full stop is punctuation
        ("北 京", ["北京"], "zh", 1.0),  # spaces mean nothing in Chinese
        ("上海", ["北京"], "zh", 0.0),
        ("２０２４年", ["2024年"], "ja", 1.0),  # full-width digits
        ("٢١", ["21"], "ar", 1.0),  # Arabic-Indic digits
        ("كَتَبَ", ["كتب"], "ar", 1.0),  # tashkeel is optional
        ("Двадцать один", ["двадцать один"], "ru", 1.0),
        ("двадцать два", ["двадцать один"], "ru", 0.0),
        ("इक्कीस।", ["इक्कीस"], "hi", 1.0),
        ("२१", ["21"], "hi", 1.0),
        ("21", ["ishirini na moja", "21"], "sw", 1.0),  # any accepted answer will do
        ("Ishirini na moja!", ["ishirini na moja", "21"], "sw", 1.0),
        ("STRASSE", ["Straße"], "de", 1.0),
        ("ISPARTA", ["ısparta"], "tr", 1.0),  # Turkish dotless i
        ("ISPARTA", ["ısparta"], None, 0.0),  # ... which only the language tells
    ],
)
def test_exact_match_hand_worked(completion, answers, language, expected):
    assert _em(completion, answers, language=language) == expected


def test_falls_back_to_reference_and_none_without_either():
    assert _em("Nairobi", answers=[], reference="nairobi") == 1.0
    assert _em("Nairobi", answers=["", " "], reference="Nairobi") == 1.0  # blank answers are no answers
    assert _em("Nairobi") is None
    assert accepted_answers(["a", "b"], "c") == ["a", "b"]  # the reference is not added when answers exist


def test_absent_columns_mean_not_applicable():
    assert exact_match(["", ""], ["a", "b"]) == [None, None]


def test_answer_pattern_extracts_the_answer():
    pattern = r"<answer>(.*?)</answer>"
    assert _em("<think>٢٠ + ١</think><answer> ٢١ </answer>", ["21"], answer_pattern=pattern) == 1.0
    assert _em("<answer>22</answer>", ["21"], answer_pattern=pattern) == 0.0
    assert _em("21", ["21"], answer_pattern=pattern) == 0.0  # no tagged answer, no reward


def test_conversational_completions():
    completion = [{"role": "assistant", "content": "Nairobi."}]
    assert exact_match([[{"role": "user", "content": "?"}]], [completion], answers=[["Nairobi"]]) == [1.0]


def test_chrf_hand_worked():
    # "abc" vs "abd": orders 1-3 exist on both sides. 1-grams match 2/3 both ways, 2-grams 1/2, 3-grams 0;
    # mean P = mean R = (2/3 + 1/2 + 0) / 3 = 7/18, and F2 of P = R is P.
    # "猫" vs "猫が": only 1-grams on both sides: P = 1, R = 1/2; F2 = 5PR / (4P + R) = 2.5 / 4.5 = 5/9.
    # "кот" vs "кошка": 1-grams P 2/3 R 2/5, 2-grams P 1/2 R 1/4, 3-grams 0; mean P = 7/18, mean R = 0.65/3;
    # F2 = 5PR / (4P + R) = 0.4212963 / 1.7722222 = 0.2377220.
    scores = chrf([""] * 3, ["abc", "猫", "кот"], reference=["abd", "猫が", "кошка"])
    assert scores == pytest.approx([7 / 18, 5 / 9, 0.2377220], abs=1e-6)


def test_chrf_identity_whitespace_and_none():
    scores = chrf([""] * 4, ["مرحبا بالعالم", "नमस्ते", "Hallo Welt", "x"],
                  reference=["مرحبا بالعالم", "नमस्ते", "HalloWelt", None])
    assert scores[:3] == [1.0, 1.0, 1.0]  # chrF ignores whitespace by default
    assert scores[3] is None


def test_chrf_plus_plus_counts_words():
    # Same characters, different words: chrF is perfect, chrF++ (word 1- and 2-grams) is not.
    plain = chrf([""], ["Hallo Welt"], reference=["HalloWelt"])[0]
    plus = chrf([""], ["Hallo Welt"], reference=["HalloWelt"], word_order=2)[0]
    assert plain == 1.0 and plus < 1.0
