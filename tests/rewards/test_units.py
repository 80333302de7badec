"""The units language consistency counts (rewards/units.py): words, dense-script characters, and neutral
names, acronyms, numbers, URLs and code; and the dense-script weights, recomputed from Django's catalogues."""

from __future__ import annotations

import re

import pytest

from mlgrpo.rewards.units import DENSE_WEIGHTS, segments, units
from mlgrpo.text import char_script


def spans(text, latin_is_foreign=False):
    return [(s.group, s.text, round(s.weight, 2), s.neutral) for s in segments(text, latin_is_foreign)]


def test_one_unit_per_word_in_every_spaced_script():
    for text in ("mia tatu na themanini na nne", "Это поле обязательно", "Αυτό το πεδίο", "هذا الحقل مطلوب",
                 "השדה הזה", "यह फ़ील्ड आवश्यक है", "이 필드는 필수"):
        words = len(text.split())
        assert [u.weight for s in units(text, False) for u in s] == [1.0] * words, text


def test_dense_scripts_count_characters_weighed_in_words():
    # 4 Han characters * 0.61; Japanese with kana: 12 characters * 0.36; Thai: 7 letters * 0.28 (the vowel
    # sign U+0E37 is a mark, not a letter, as in the measurement of the weight)
    assert spans("笔刷管道", True) == [("CJK", "笔刷管道", 2.44, False)]
    assert spans("このフィールドは必須です", True) == [("CJK", "このフィールドは必須です", 4.32, False)]
    assert spans("คำตอบคือ", True) == [("Thai", "คำตอบคือ", 1.96, False)]


def test_names_acronyms_numbers_urls_and_code_do_not_vote():
    assert spans("GIMP 笔刷管道", True) == [("Latin", "GIMP", 1.0, True), ("CJK", "笔刷管道", 2.44, False)]
    assert spans("我喜欢 Google Chrome", True)[1:] == [("Latin", "Google Chrome", 2.0, True)]
    assert spans("PEM-kodierter Schlüssel") == [("Latin", "PEM", 1.0, True), ("Latin", "kodierter Schlüssel", 2.0, False)]
    found = segments("Öffne https://example.org/a?b=c oder foo_bar() mit iPhone 15")
    assert [(s.text.split(), s.weight, s.neutral) for s in found] == [(["Öffne", "oder", "mit"], 3.0, False),
                                                                      (["iPhone"], 1.0, True)]
    assert spans("123 + 4 = 127 !") == []
    # printf and strftime placeholders are code: a date format or a count carries no language; "50% hoy" keeps "hoy"
    assert spans(". %b, %Y") == [] and spans("%-d. %B %Y") == []
    assert [s.text.split() for s in segments("%(count)s objets supprimés, 50% hoy")] == [["objets", "supprimés"], ["hoy"]]


def test_a_latin_run_with_a_lower_case_word_is_foreign_text_in_a_non_latin_row():
    assert spans("Hello κόσμε", True) == [("Latin", "Hello", 1.0, True), ("Greek", "κόσμε", 1.0, False)]
    assert spans("Hello world κόσμε", True) == [("Latin", "Hello world", 2.0, False), ("Greek", "κόσμε", 1.0, False)]
    # In a Latin-script row capitals mean nothing (German nouns): only acronyms and camelCase are neutral.
    assert spans("Das Haus") == [("Latin", "Das Haus", 2.0, False)]


def test_segments_cut_at_script_changes_and_clauses_and_keep_digits_between():
    assert spans("今日はgood天気。Привет, мир! 2009年6月21日", True) == [
        ("CJK", "今日は", 1.08, False), ("Latin", "good", 1.0, False), ("CJK", "天気", 0.72, False),  # Japanese: kana
        ("Cyrillic", "Привет", 1.0, False), ("Cyrillic", "мир", 1.0, False), ("CJK", "年6月21日", 1.08, False)]


@pytest.mark.slow
@pytest.mark.parametrize("language, weight", [("zh", "Han"), ("ja", "Japanese"), ("th", "Thai"), ("km", "Khmer")])
def test_dense_weights_are_english_words_per_character_in_the_ui_catalogues(language, weight):
    """The weights in units.py, recomputed: English words of the msgids / letters of the translations, over
    Django's and Django REST framework's catalogues, placeholders and tags removed."""
    from mlgrpo.langid.corpus import catalogue_pairs, clean

    words = letters = 0
    dense = {"Han", "Hiragana", "Katakana", "Thai", "Khmer"}
    for package in ("django", "rest_framework"):
        for lang, english, translation in catalogue_pairs(package):
            if lang == language:
                words += len(re.findall(r"[^\W\d_]+", clean(english)))
                letters += sum(1 for ch in clean(translation) if char_script(ch) in dense and re.match(r"[^\W\d_]", ch))
    assert words / letters == pytest.approx(DENSE_WEIGHTS[weight], abs=0.02)
