"""The script, ngram and default backends, the failures issue 12 names, and honest confidence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlgrpo.langid import LanguageIdentifier
from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.langid.combined import in_scripts_of, softmax_rows
from mlgrpo.langid.models import fasttext_languages, hedged, langdetect_languages, lingua_languages
from mlgrpo.langid.registry import BACKENDS, Sample, calibrate

from .conftest import LANGUAGES

ISSUE_CANDIDATES = ["en", "es", "ru", "ar", "ja", "sw"]
SWAHILI = ("mia tatu na themanini na nne", "thelathini na saba", "elfu moja")  # 384, 37, 1000


def test_softmax_and_calibration_by_hand():
    # exp(0) : exp(-ln 3) = 3 : 1
    assert softmax_rows(["de", "nl"], np.array([[0.0, -math.log(3)], [-math.log(3), 0.0]])) == [
        [("de", pytest.approx(0.75)), ("nl", pytest.approx(0.25))], [("nl", pytest.approx(0.75)), ("de", pytest.approx(0.25))]]
    # temperature 2: sqrt(0.8) : sqrt(0.2) = 2 : 1
    assert calibrate([("de", 0.8), ("nl", 0.2)], 2.0) == [("de", pytest.approx(2 / 3)), ("nl", pytest.approx(1 / 3))]
    assert calibrate([("de", 0.8), ("nl", 0.2)], 1.0) == [("de", 0.8), ("nl", 0.2)]


@pytest.mark.parametrize("backend", ["default", "ngram"])
def test_calibrating_in_the_softmax_is_calibrating_after_it(backend):
    """The backends that calibrate inside their softmax (`calibrated_many`) give what `calibrate` gives on
    their raw scores: the temperatures fitted on raw scores mean the same."""
    found = BACKENDS[backend]
    samples = [Sample(t) for t in ("Nome do usuário", "Имя пользователя", "名前", "mia tatu na themanini na nne", "Kiel vi fartas?")]
    candidates = frozenset(LANGUAGES)
    expected = [calibrate(scores, found.temperature) for scores in found.scores_many(samples, candidates)]
    got = found.probabilities_many(samples, candidates)
    assert [[code for code, _ in s] for s in got] == [[code for code, _ in s] for s in expected]
    assert [[p for _, p in s] for s in got] == [pytest.approx([p for _, p in s], abs=1e-9) for s in expected]
    assert found.probabilities(samples[0], candidates) == got[0]


def test_hedged_fasttext_keeps_the_mass_outside_the_candidates_shared_evenly():
    # en 0.02 + 0.98 / 2 = 0.51, sw 0.0 + 0.49: a sliver stays a sliver, not certainty.
    assert hedged({"en": 0.02, "tl": 0.98}, frozenset({"en", "sw"})) == [("en", 0.51), ("sw", 0.49)]
    assert hedged({"en": 0.7, "sw": 0.3}, frozenset({"en", "sw"})) == [("en", 0.7), ("sw", 0.3)]


@pytest.mark.parametrize("text", SWAHILI)
def test_the_three_swahili_numbers_are_swahili(text):
    guess = LanguageIdentifier(ISSUE_CANDIDATES).identify(text)
    assert guess.language == "sw", guess


@pytest.mark.parametrize("backend", ["fasttext", "default", "ngram", "lingua"])
def test_restriction_never_makes_a_sliver_certain(backend):
    """fastText lite gives these Swahili numbers almost no mass on any candidate; restricted and
    renormalised that was "en, 1.0". No backend may be sure of a language that is wrong here."""
    identifier = LanguageIdentifier(ISSUE_CANDIDATES, backend=backend, min_confidence=0.0)
    for text in SWAHILI:
        guess = identifier.identify(text)
        assert guess.language == "sw" or guess.confidence < 0.9, (backend, text, guess)


def test_script_letters_of_other_scripts_are_cut_for_the_model():
    sample = Sample("Wagtail 表单")
    assert in_scripts_of(sample.text, sample.shares, frozenset({"zh", "ja"})).strip() == "表单"
    assert LanguageIdentifier(["zh", "ja", "en"]).identify("同時被給予 tabularcolumns 及 :widths: 選項。").language == "zh"
    assert LanguageIdentifier(["zh", "ja", "en"]).identify("GIMP 笔刷管道").language == "zh"


def test_script_backend_answers_only_where_the_script_decides(ui_texts):
    identifier = LanguageIdentifier(LANGUAGES, backend="script", min_confidence=0.0)
    for language, texts in ui_texts.items():
        for guess in identifier.identify_many(texts):
            assert guess.language in {language, "und"}, (language, guess)
    for language in ("el", "he", "hi", "th", "ja", "ko"):  # a script of their own among LANGUAGES
        assert {g.language for g in identifier.identify_many(ui_texts[language])} == {language}
    assert {g.language for g in identifier.identify_many(ui_texts["de"])} == {"und"}


@pytest.mark.parametrize("backend", ["default", "ngram"])
def test_backend_identifies_every_real_sentence(ui_texts, backend):
    identifier = LanguageIdentifier(LANGUAGES, backend=backend)
    for language, texts in ui_texts.items():
        assert [g.language for g in identifier.identify_many(texts)] == [language] * len(texts)


def test_close_neighbours_are_told_apart():
    identifier = LanguageIdentifier(["es", "pt", "it", "ca", "gl"])
    assert identifier.identify("Nome de usuário e palavra-passe").language == "pt"
    assert identifier.identify("Nombre de usuario y contraseña").language == "es"
    identifier = LanguageIdentifier(["ru", "uk", "be", "bg"])
    assert identifier.identify("Це поле обов'язкове.").language == "uk"
    assert identifier.identify("Это поле обязательно.").language == "ru"


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
    assert identifier.identify("删除").language == "zh"  # simplified: Chinese, not Japanese


def test_batches_and_single_texts_agree(ui_texts):
    texts = [t for group in ui_texts.values() for t in group]
    identifier = LanguageIdentifier(LANGUAGES)
    together = identifier.identify_many(texts)
    identifier.clear_cache()
    alone = [identifier.identify(t) for t in texts]
    assert [(g.language, round(g.confidence, 9)) for g in together] == [(g.language, round(g.confidence, 9)) for g in alone]


def test_script_and_default_backends_can_answer_every_known_code():
    # Both claim KNOWN_CODES without loading a model; that claim must match the models' own lists
    # (no known code that no model answers; test_codes checks that no model label is unknown).
    assert BACKENDS["script"].languages() == BACKENDS["default"].languages() == KNOWN_CODES
    assert fasttext_languages() | lingua_languages() | langdetect_languages() == KNOWN_CODES
    assert {"sw", "zh", "ja", "ko", "th", "he", "ar", "hi"} <= BACKENDS["ngram"].languages() <= KNOWN_CODES


def test_han_of_numerals_and_dates_alone_is_as_chinese_as_japanese():
    from mlgrpo.langid.combined import chinese_or_japanese

    shared, chinese = chinese_or_japanese(["第九十六万七千九百二十八", "删除"])
    assert dict(shared) == {"ja": 0.5, "zh": 0.5}
    assert dict(chinese)["zh"] > 0.9


def test_model_scores_do_not_depend_on_which_languages_were_loaded_before():
    """Scores read the candidates' own rows from the memory-mapped model: a candidate set's scores are the
    same whatever was scored before, and each language's column is the same in any set where the language
    model reads every text for every candidate (by default it skips candidates that trail and texts whose
    best candidate leads by far: then a column depends on its rivals, never on what was scored before)."""
    import math

    from mlgrpo.langid.trained import Scorer, model_dir, scorer

    scorer()  # built once per machine
    texts = ["Nome do usuário", "名前", "Jina la mtumiaji", "42"]
    fresh = Scorer(model_dir())
    alone = fresh.log_scores(texts, ("zh", "ja"))
    fresh.log_scores(texts, ("pt", "es", "sw", "en"))
    again = fresh.log_scores(texts, ("zh", "ja"))
    assert alone.shape == (4, 2) and np.array_equal(alone, again)
    every = {"lm_top": 3, "lm_margin": math.inf}
    both = fresh.log_scores(texts, ("ja", "pt", "zh"), **every)
    assert np.array_equal(both[:, [2, 0]], fresh.log_scores(texts, ("zh", "ja"), **every))


def test_a_word_a_language_never_wrote_gives_it_no_evidence():
    # Model v4 hashed words weakly into buckets: Portuguese "dica" shared a key with "rico", "haga" and "that" and
    # read 6.1 nats of Spanish evidence. A fingerprinted table stores each word it was given, and no other.
    from mlgrpo.langid.trained import scorer

    model = scorer()
    words = (model.log_scores(["dica", "dica rico"], ("es", "pt"), with_lm=False)
             - model.log_scores(["dica", "dica rico"], ("es", "pt"), with_lm=False, with_words=False))
    assert words[0, 0] == 0 and words[0, 1] > 2  # Spanish never writes "dica"; Portuguese does
    assert words[1, 0] > 2  # "rico" is Spanish
