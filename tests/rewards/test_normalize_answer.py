"""normalize_answer (mlgrpo/text.py), the comparison form behind exact_match and later eval metrics."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from mlgrpo.text import normalize_answer


def test_width_case_and_punctuation_in_several_scripts():
    assert normalize_answer("ＡＢＣ－１２３") == "abc 123"  # full-width forms (NFKC), full-width hyphen is Pd
    assert normalize_answer("STRASSE") == normalize_answer("Straße") == "strasse"  # casefold, not lower
    assert normalize_answer("«Москва»!") == "москва"  # guillemets are Pi/Pf
    assert normalize_answer("इक्कीस।") == "इक्कीस"  # the danda is punctuation (Po)
    assert normalize_answer("كم عمرك؟") == "كم عمرك"  # Arabic question mark


def test_digits_of_every_script_become_ascii():
    # Arabic-Indic, Devanagari, Bengali, Thai and full-width forms of 21
    for written in ("٢١", "२१", "২১", "๒๑", "２１"):
        assert normalize_answer(written) == "21", written


def test_symbols_are_kept():
    assert normalize_answer("25 °C") == "25 °c"
    assert normalize_answer("$5") != normalize_answer("5")


def test_arabic_optional_marks_are_dropped():
    # kataba with its three fathas, and a tatweel-stretched word
    assert normalize_answer("كَتَبَ") == normalize_answer("كتب") == "كتب"
    assert normalize_answer("جـــميل") == "جميل"


def test_language_specific_steps():
    # Spaces are not part of a Chinese, Japanese or Thai answer.
    assert normalize_answer("北京 市", "zh") == "北京市"
    assert normalize_answer("二 十 一", "ja") == "二十一"
    assert normalize_answer("ยี่ สิบ", "th") == "ยี่สิบ"
    assert normalize_answer("北京 市") == "北京 市"  # without a language, spaces count
    # Turkish: "I" is the capital of dotless "ı", and "İ" the capital of "i".
    assert normalize_answer("ISPARTA", "tr") == "ısparta"
    assert normalize_answer("İSTANBUL", "tr") == "istanbul"
    assert normalize_answer("ISPARTA", "de") == "isparta"


def test_hyphen_and_space_variants_agree():
    assert normalize_answer("twenty-one") == normalize_answer("twenty one") == normalize_answer(" Twenty  One. ")


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from([None, "zh", "tr", "de"]))
def test_idempotent_and_clean(text, language):
    once = normalize_answer(text, language)
    assert normalize_answer(once, language) == once
    assert once == once.strip() and "  " not in once
    assert not any(unicodedata.category(ch).startswith("P") for ch in once)
