from __future__ import annotations

import pytest

from mlgrpo.langid.screen import letter_weight, parts, screen, sentence_break

GARBLED = [
    "Ã‰tÃ© Ã  la plage, trÃ¨s agrÃ©able",  # UTF-8 read as cp1252
    "中文字符测试".encode("utf-8").decode("latin-1"),
    "这是一个中文句子".encode("gbk").decode("latin-1"),  # ftfy cannot undo this one
    "Привет мир".encode("cp1251").decode("latin-1"),  # "Ïðèâåò ìèð"
    "日本語のテキスト".encode("shift_jis").decode("cp1252", errors="replace"),
    "Gu\ufffd\ufffden T\ufffdg",  # a lossy decode: 3 of 11 characters lost
    "\ud800\udc00\ud83d",  # lone surrogates only
]


@pytest.mark.parametrize("text", ["", "   \n\t", "12345", "3.14 + 2 = 5.14", "!!! ... ???", "😀🎉👍", "— • —"])
def test_text_without_letters_cannot_be_identified(text):
    assert screen(text) is None


@pytest.mark.parametrize("text", GARBLED)
def test_garbled_text_cannot_be_identified(text):
    assert screen(text) is None


@pytest.mark.parametrize("text", ["Þórður fór heim", "Ærø og Fanø", "naïve café", "Tiếng Việt có dấu", "İstanbul'da güzel bir gün"])
def test_real_accented_latin_text_is_not_taken_for_mojibake(text):
    assert screen(text) == text


def test_lone_surrogates_and_stray_replacement_characters_are_removed():
    cleaned = screen("Das ist ein ganz normaler deutscher Satz\ud800 mit Fehler\ufffd.")
    assert cleaned == "Das ist ein ganz normaler deutscher Satz  mit Fehler ."
    cleaned.encode("utf-8")  # writable: no surrogate left


def test_screen_applies_nfc():
    assert screen("Cafe\u0301 noir") == "Caf\u00e9 noir"


def test_letter_weight_and_parts_by_hand():
    # "Good morning, how are you?": 4 + 7 + 3 + 3 + 3 = 20 letters; "Доброе утро, как дела?": 6+4+3+4 = 17.
    assert parts("Good morning, how are you? Доброе утро, как дела?", 12) == [
        ("Good morning, how are you?", 20),
        ("Доброе утро, как дела?", 17),
    ]
    assert letter_weight("东京 Tokyo") == 2 * 3 + 5


def test_one_word_terms_and_short_runs_are_not_parts():
    # "PostgreSQL" has 10 letters and one word; "Το" is too short.
    assert parts("Το input πρέπει να είναι έγκυρο PostgreSQL", 12) == [("πρέπει να είναι έγκυρο", 19)]
    # A dense-script run needs no spaces: 5 characters weigh 15.
    assert parts("Python 是一种编程语言", 12) == [("是一种编程语言", 21)]


def test_sentence_breaks():
    assert sentence_break("Erster Satz. Zweiter Satz")
    assert sentence_break("第一句。第二句")
    assert sentence_break("line one\nline two")
    assert not sentence_break("3.14 is pi")
