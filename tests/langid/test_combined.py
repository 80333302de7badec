"""The script backend and the default backend (script, then fastText, then lingua)."""

from __future__ import annotations

import pytest

from mlgrpo.langid import LanguageIdentifier
from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.langid.combined import mix
from mlgrpo.langid.models import fasttext_languages, langdetect_languages, lingua_languages
from mlgrpo.langid.registry import BACKENDS

from .conftest import LANGUAGES


def test_mix_is_a_renormalised_weighted_product_by_hand():
    # Equal weights: de ~ sqrt(0.5 * 0.9) = 3 sqrt(0.05), nl ~ sqrt(0.5 * 0.1) = sqrt(0.05): 3/4 and 1/4.
    assert mix([("de", 0.5), ("nl", 0.5)], [("de", 0.9), ("nl", 0.1)], 0.5, 0.0) == [
        ("de", pytest.approx(0.75)),
        ("nl", pytest.approx(0.25)),
    ]
    # Weight 1 on the first: the second is ignored. Floor 0: a zero in either vetoes the language.
    assert mix([("de", 0.8), ("nl", 0.2)], [("nl", 1.0)], 1.0, 0.0) == [("de", pytest.approx(0.8)), ("nl", pytest.approx(0.2))]
    assert mix([("de", 0.8), ("nl", 0.2)], [("nl", 1.0)], 0.5, 0.0) == [("nl", 1.0), ("de", 0.0)]
    # Floor 1: de ~ sqrt(1.8 * 1) = 1.342, nl ~ sqrt(1.2 * 2) = 1.549; de = 1.342 / 2.891 = 0.464.
    de = dict(mix([("de", 0.8), ("nl", 0.2)], [("nl", 1.0)], 0.5, 1.0))["de"]
    assert de == pytest.approx(1.8**0.5 / (1.8**0.5 + 2.4**0.5))


def test_script_backend_answers_only_where_the_script_decides(ui_texts):
    identifier = LanguageIdentifier(LANGUAGES, backend="script", min_confidence=0.0)
    for language, texts in ui_texts.items():
        for guess in identifier.identify_many(texts):
            assert guess.language in {language, "und"}, (language, guess)
    for language in ("el", "he", "hi", "th", "ja", "ko"):  # a script of their own among LANGUAGES
        assert {g.language for g in identifier.identify_many(ui_texts[language])} == {language}
    assert {g.language for g in identifier.identify_many(ui_texts["de"])} == {"und"}


def test_default_backend_identifies_every_real_sentence(ui_texts):
    identifier = LanguageIdentifier(LANGUAGES)
    for language, texts in ui_texts.items():
        assert [g.language for g in identifier.identify_many(texts)] == [language] * len(texts)


def test_default_answers_und_when_fasttext_is_sure_of_a_language_that_is_not_a_candidate():
    french = "Bonjour tout le monde, comment allez-vous aujourd'hui ?"
    assert LanguageIdentifier(["de", "fr"]).identify(french).language == "fr"
    assert LanguageIdentifier(["de"]).identify(french).language == "und"
    assert LanguageIdentifier(["de", "en"], min_confidence=0.0).identify(french).language == "und"


def test_the_script_decides_among_candidates_without_a_model():
    assert LanguageIdentifier(["ru", "en", "de"]).identify("Доброе утро").language == "ru"
    guess = LanguageIdentifier().identify("오늘은 날씨가 좋네요")
    assert guess.language == "ko" and guess.confidence == 1.0


def test_short_han_text_goes_to_a_model_when_zh_and_ja_are_both_candidates():
    identifier = LanguageIdentifier(["zh", "ja"], min_confidence=0.0)
    assert identifier.identify("这个字段是必填项。").language == "zh"
    assert identifier.identify("このフィールドは必須です。").language == "ja"


def test_script_and_default_backends_can_answer_every_known_code():
    # Both claim KNOWN_CODES without loading a model; that claim must match the models' own lists
    # (no known code that no model answers; test_codes checks that no model label is unknown).
    assert BACKENDS["script"].languages() == BACKENDS["default"].languages() == KNOWN_CODES
    assert fasttext_languages() | lingua_languages() | langdetect_languages() == KNOWN_CODES


def test_lingua_is_asked_unless_fasttext_is_practically_certain_where_it_compares_few_languages(monkeypatch):
    from mlgrpo.langid import combined
    from mlgrpo.langid.registry import Sample

    asked = []

    def lingua(sample, codes):
        asked.append(codes)
        return [("ur", 0.9), ("fa", 0.1)]

    monkeypatch.setattr(combined, "lingua_scores", lingua)
    # fastText 0.95 Persian among [fa, ur]: sure by FASTTEXT_SURE, not by FASTTEXT_SURE_FEW.
    monkeypatch.setattr(combined, "fasttext_masses", lambda text: {"fa": 0.95, "ur": 0.05})
    scores = combined.default_scores(Sample("انگریزی"), frozenset({"fa", "ur"}))
    assert asked == [frozenset({"fa", "ur"})] and scores[0][0] == "ur"
    # Practically certain: fastText's answer stands.
    monkeypatch.setattr(combined, "fasttext_masses", lambda text: {"fa": 0.9995, "ur": 0.0005})
    assert combined.default_scores(Sample("انگریزی"), frozenset({"fa", "ur"}))[0][0] == "fa"
    assert len(asked) == 1
    # Eleven Latin-script candidates: lingua is dear there, and 0.95 is sure enough.
    latin = frozenset("de en es fr id it pl pt sw tr vi".split())
    monkeypatch.setattr(combined, "fasttext_masses", lambda text: {"de": 0.95, "en": 0.05})
    assert combined.default_scores(Sample("Guten Tag"), latin)[0] == ("de", pytest.approx(0.95))
    assert len(asked) == 1
