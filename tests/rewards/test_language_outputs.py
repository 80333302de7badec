"""language_consistency on text shaped like a policy model's output, not a translator's (issue 28, item 3).

Each case: the row's language, a completion, and the verdict a reader would give: "in" (> 0.5, the
answer is in the row's language), "out" (<= 0.5) or None (nothing in it says a language: the row is left
out of the metric and of the reward's mean). Kinds: truncated answers, repeated tokens, a translation with
one English word, numbers and dates only, mixed scripts, and a neighbour's or English answer. The verdicts
the judge gets wrong are marked as known failures (strict: the mark fails once the judge gets them right),
each with why; docs/language.md ("The judge on model output") lists them.
"""

from __future__ import annotations

import pytest

from mlgrpo.rewards import language_consistency

# An experiment's languages, with the neighbours that compete for Latin, Cyrillic, Han and Arabic text.
CANDIDATES = ["en", "de", "nl", "fr", "es", "pt", "ru", "uk", "zh", "ja", "sw", "ar", "fa", "hi"]

CASES = [
    # truncated answers: what was written is in the language
    ("truncated", "de", "Die Hauptstadt von Frankreich ist Pa", "in"),
    ("truncated", "ru", "Столица Франции — Пари", "in"),
    ("truncated", "es", "La respuesta correcta es cuarenta y", "in"),
    ("truncated", "fr", "La réponse est quarante-d", "in"),
    ("truncated", "sw", "Jibu sahihi ni arobaini na", "in"),
    ("truncated", "ja", "日本の首都は東", "in"),
    ("truncated", "zh", "法国的首都是巴", "in"),
    # repeated tokens (a degenerate policy): the repeated word's language
    ("repeated", "de", "der der der der der der der der", "in"),
    ("repeated", "es", "hola hola hola hola hola hola", "in"),
    ("repeated", "ru", "ответ ответ ответ ответ ответ", "in"),
    ("repeated", "ja", "ですですですですですです", "in"),
    ("repeated", "zh", "的的的的的的的的", "in"),
    ("repeated", "de", "Die Antwort ist 42 42 42 42 42 42 42 42", "in"),
    ("repeated", "es", "La respuesta es 42</s><s><s><s>", "in"),
    ("repeated", "en", "die die die die", "in"),  # English "die" as well as German: an English row's word
    pytest.param("repeated", "de", "the the the the the the", "out", marks=pytest.mark.xfail(
        strict=True, reason="'the' is a common word of German in wordfreq (Zipf >= 4), so rule 2 counts it with no model")),
    # a translation with one English word: still the language
    ("one English word", "de", "Die Antwort ist leider wrong, bitte versuche es noch einmal.", "in"),
    ("one English word", "fr", "La réponse est correcte, mais le format est weird.", "in"),
    ("one English word", "es", "La respuesta es correcta, pero el formato es weird.", "in"),
    ("one English word", "ru", "Ответ правильный, но формат немного weird.", "in"),
    ("one English word", "sw", "Jibu ni sahihi lakini format si nzuri.", "in"),
    # numbers and dates only: nothing says a language, unless a month is spelled out
    ("numbers and dates", "es", "42", None),
    ("numbers and dates", "de", "2024-03-15", None),
    ("numbers and dates", "de", "15.03.2024 – 16.03.2024", None),
    ("numbers and dates", "fr", "3,14159", None),
    ("numbers and dates", "de", "...", None),
    ("numbers and dates", "de", "", None),
    ("numbers and dates", "ja", "2024年3月15日", "in"),  # 年 月 日: Chinese and Japanese write them alike
    ("numbers and dates", "zh", "2024年3月15日", "in"),
    ("numbers and dates", "de", "14. März 2024", "in"),
    ("numbers and dates", "fr", "14 mars 2024", "in"),
    ("numbers and dates", "sw", "14 Machi 2024", "in"),
    ("numbers and dates", "de", "March 14, 2024", "out"),
    # mixed scripts: names and acronyms do not vote; a word in another script does
    ("mixed scripts", "ja", "答えはPythonです", "in"),
    ("mixed scripts", "zh", "请使用GitHub账号登录", "in"),
    ("mixed scripts", "hi", "उत्तर है 42 apples", "in"),  # 2 Devanagari words of 3
    ("mixed scripts", "hi", "Answer: बयालीस", "in"),  # "Answer:" is a label; the answer is Hindi
    ("mixed scripts", "ru", "Ответ: forty-two", "out"),
    ("mixed scripts", "ja", "The answer is 東京", "out"),
    ("mixed scripts", "ar", "The answer is ٤٢", "out"),
    # a neighbour's or an English answer
    ("wrong language", "de", "Het antwoord is tweeënveertig", "out"),
    ("wrong language", "es", "A resposta é quarenta e dois", "out"),
    ("wrong language", "zh", "答えは東京です", "out"),
    ("wrong language", "ja", "答案是：42", "out"),
    ("wrong language", "uk", "Відповідь: сорок два", "in"),
    pytest.param("wrong language", "ru", "Відповідь: сорок два", "out", marks=pytest.mark.xfail(
        strict=True, reason="'сорок два' is spelled alike in Russian and Ukrainian, so 2 of its 3 words count for a "
                            "Russian row (the word share the metric measures); only 'Відповідь' is Ukrainian")),
    ("wrong language", "de", "the answer", "out"),
    ("right language", "en", "The answer is 42.", "in"),
    ("right language", "pt", "A resposta é quarenta e dois", "in"),
    ("right language", "ar", "الجواب هو اثنان وأربعون", "in"),
]


def verdict(score: float | None) -> str | None:
    return None if score is None else "in" if score > 0.5 else "out"


@pytest.mark.parametrize(("kind", "language", "completion", "expected"), CASES)
def test_model_like_outputs_get_the_verdict_a_reader_gives(kind, language, completion, expected):
    (score,) = language_consistency([""], [completion], language=[language], candidates=CANDIDATES)
    assert verdict(score) == expected, (kind, language, completion, score)


def test_one_english_word_lowers_the_share_only_where_the_language_does_not_write_it():
    """Russian does not write 'weird' (6 voting words, one English): 5/6. German lists 'wrong' as a loanword
    (rule 5 of `mlgrpo.rewards.language`), so its sentence counts whole."""
    got = language_consistency([""] * 2, ["Ответ правильный, но формат немного weird.",
                                          "Die Antwort ist leider wrong, bitte versuche es noch einmal."],
                               language=["ru", "de"], candidates=CANDIDATES)
    assert got == [pytest.approx(5 / 6), 1.0]
