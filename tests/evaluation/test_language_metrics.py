"""Language consistency and code-switch rate: by script where the script decides, by language ID
otherwise, on real suite answers."""

from __future__ import annotations

import pytest

from mlgrpo.evaluation.language import code_switch, language_consistency


def test_hand_worked_by_script():
    # el: "Γεια σου" all Greek -> in el, no switch; "Hello world κόσμε": 2 Latin words of 3 -> not in el,
    # switch 2/3. ja: "二十一です" all CJK with kana -> ja. ar: "واحد and" -> 1 Arabic word of 2 -> not more
    # than half, switch 1/2. Digits only -> None.
    outputs = ["Γεια σου", "Hello world κόσμε", "二十一です", "واحد and", "2024"]
    records = [{"language": lang} for lang in ("el", "el", "ja", "ar", "ar")]
    assert language_consistency(outputs, records) == [1.0, 0.0, 1.0, 0.0, None]
    assert code_switch(outputs, records) == pytest.approx([0.0, 2 / 3, 0.0, 0.5, None])


def test_english_answers_to_swahili_prompts_count_as_switches(numbers_eval):
    # A policy collapsing into English: English number words in Swahili rows. English is always among
    # the competing languages, even when the evaluation does not include it.
    english = [r["reference"] for r in numbers_eval if r["language"] == "en"]
    sw_rows = [{"language": "sw"}] * len(english) + [{"language": "ja"}]
    scores = language_consistency(english + ["二十一"], sw_rows)
    assert sum(scores[:-1]) / len(english) <= 0.2
    own = [r["reference"] for r in numbers_eval if r["language"] == "ru"]
    assert language_consistency(own, [{"language": "ru"}] * len(own)) == [1.0] * len(own)


def test_rows_without_a_known_language_are_not_scored():
    records = [{"language": None}, {"language": "und"}, {"language": "xx"}, {}]
    assert language_consistency(["hello"] * 4, records) == [None] * 4
    assert code_switch(["hello"] * 4, records) == [None] * 4


def test_empty_outputs_have_no_language():
    assert language_consistency(["", "   ", "🙂"], [{"language": "en"}] * 3) == [None, None, None]
