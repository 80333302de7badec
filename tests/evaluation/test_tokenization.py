"""Units for ROUGE-L / token F1 / distinct-n in every script, and BLEU's tokenizer per language."""

from __future__ import annotations

import pytest

from mlgrpo.evaluation.tokenization import (
    UNSPACED_RANGES,
    UNSPACED_SCRIPTS,
    bleu_tokenizer,
    units,
)
from mlgrpo.text import char_script


@pytest.mark.parametrize(
    "text, language, expected",
    [
        # Chinese and Japanese: one unit per character; Latin words inside stay words.
        ("我爱北京。", "zh", ("我", "爱", "北", "京")),
        ("我用 Python 和 Java", "zh", ("我", "用", "python", "和", "java")),
        ("東京に住んでいます", "ja", ("東", "京", "に", "住", "ん", "で", "い", "ま", "す")),
        ("ｶﾀｶﾅ", "ja", ("カ", "タ", "カ", "ナ")),  # half-width katakana -> full width (NFKC)
        # Thai: a consonant keeps its vowel signs and tone marks; SARA AM stays whole after NFKC.
        ("น้ำ", "th", ("น้ำ",)),
        ("สวัสดี", "th", ("ส", "วั", "ส", "ดี")),
        # Devanagari: vowel signs and virama do not cut a word; the danda is punctuation.
        ("नमस्ते दुनिया।", "hi", ("नमस्ते", "दुनिया")),
        ("२१ रुपये", "hi", ("21", "रुपये")),  # Devanagari digits -> ASCII
        # Arabic: tashkeel and tatweel dropped, Arabic-Indic digits -> ASCII, "؟" is punctuation.
        ("كَتَبَ الـولد ٣ كتب؟", "ar", ("كتب", "الولد", "3", "كتب")),
        # Turkish dotted/dotless i, Korean words by spaces, German case folding.
        ("IRMAK İzmir", "tr", ("ırmak", "izmir")),
        ("안녕 하세요", "ko", ("안녕", "하세요")),
        ("Straße twenty-one", "de", ("strasse", "twenty", "one")),
        ("", "en", ()),
        ("!!! ... 🙂", "en", ()),
    ],
)
def test_units_keep_every_script(text, language, expected):
    assert units(text, language) == expected


def test_unspaced_ranges_agree_with_mlgrpo_text_scripts():
    # Every code point in the ranges is in an unspaced script by mlgrpo.text, and the BMP holds no
    # other code point that mlgrpo.text puts in one.
    inside = {cp for lo, hi in UNSPACED_RANGES for cp in range(lo, hi + 1)}
    disagree = [hex(cp) for cp in range(0x10000) if (char_script(chr(cp)) in UNSPACED_SCRIPTS) != (cp in inside)]
    assert disagree == []
    assert char_script("\U00020000") in UNSPACED_SCRIPTS and 0x20000 in inside


@pytest.mark.parametrize(
    "language, name, fallback",
    [("zh", "zh", False), ("ja", "ja-mecab", False), ("de", "13a", False), ("ar", "13a", False),
     ("hi", "13a", False), ("sw", "13a", False), ("th", "char", True), ("km", "char", True)],
)
def test_bleu_tokenizer_per_language(language, name, fallback):
    choice = bleu_tokenizer(language)
    assert (choice.name, choice.fallback) == (name, fallback)


def test_unknown_language_falls_back_by_script_and_says_so():
    han = bleu_tokenizer("und", "東京都")
    latin = bleu_tokenizer("xx", "hello world")
    empty = bleu_tokenizer(None, "")
    assert (han.name, latin.name, empty.name) == ("char", "13a", "13a")
    assert han.fallback and latin.fallback and empty.fallback
    assert "'xx'" in latin.reason and "Latin" in latin.reason
    assert "Han" in han.reason


def test_korean_without_mecab_ko_falls_back_to_13a_and_says_so():
    import importlib.util

    choice = bleu_tokenizer("ko")
    if importlib.util.find_spec("mecab_ko") is None:
        assert (choice.name, choice.fallback) == ("13a", True) and "mecab-ko" in choice.reason
    else:
        assert choice.name == "ko-mecab" and not choice.fallback


def test_ja_mecab_is_what_sacrebleu_splits_japanese_with():
    from sacrebleu.tokenizers.tokenizer_ja_mecab import TokenizerJaMecab

    # Words, not characters: MeCab with IPAdic.
    assert TokenizerJaMecab()("私は東京に住んでいます。") == "私 は 東京 に 住ん で い ます 。"
