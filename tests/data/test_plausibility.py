"""The judge between decodings: real text must outscore the same bytes read with a wrong codec."""

from __future__ import annotations

import math

import babel
import pytest

from mlgrpo.data.plausibility import (
    MODEL_LOCALES,
    _cldr_strings,
    character_log_likelihood,
    log_likelihood,
    odd_word_cost,
)


def test_odd_word_cost_counts_mixed_scripts_and_inner_capitals():
    # One odd word costs log(1e-6) = -13.8155 nats; ASCII-only words are never odd.
    assert odd_word_cost("Amйrique du Nord") == pytest.approx(math.log(1e-6))  # Latin + Cyrillic
    assert odd_word_cost("dÚcembre, fÚvrier") == pytest.approx(2 * math.log(1e-6))  # capital after small
    assert odd_word_cost("東京タワー 서울特別市 Ölçek McDonald") == 0.0  # kana+Han, Hangul+Han, Latin


def test_ascii_costs_nothing_and_letters_cost_something():
    assert character_log_likelihood("plain ASCII, 123!") == 0.0
    assert character_log_likelihood("été") < 0.0


@pytest.mark.parametrize("text,codec,wrong", [
    ("Amérique du Nord", "cp1252", "cp1251"),
    ("Pèlerinage à Lourdes", "cp1252", "cp1250"),
    ("Türkiye Cumhuriyeti, Kıbrıs", "cp1254", "cp1252"),
    ("中华人民共和国", "gbk", "big5"),
    ("日本国の東京都", "shift_jis", "cp1252"),
    ("대한민국", "euc_kr", "gbk"),
    ("Ελληνική Δημοκρατία", "iso8859_7", "cp1251"),
    ("ประเทศไทย", "tis_620", "iso8859_2"),
    ("المملكة العربية السعودية", "cp1256", "cp1252"),
])
def test_real_text_beats_its_misreading(text, codec, wrong):
    misread = text.encode(codec).decode(wrong, "replace")
    assert misread != text
    assert log_likelihood(text) > log_likelihood(misread)


def test_models_never_saw_territory_names():
    # Tests check detection on territory names: they must be held out of the models.
    for locale in ("fr", "zh", "ru"):
        seen = set(_cldr_strings(babel.Locale.parse(locale)))
        new_zealand = babel.Locale.parse(locale).territories["NZ"]
        assert seen and new_zealand not in seen


def test_every_model_locale_parses():
    for locale in MODEL_LOCALES:
        assert babel.Locale.parse(locale).territories
