"""The public identifier: screening, "und", mixed text, thresholds, errors, caching."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from mlgrpo.errors import UserError
from mlgrpo.langid import DEFAULT_MIN_CONFIDENCE, LangGuess, LanguageIdentifier, identify

EUROPEAN = ["de", "fr", "en", "es", "it", "nl", "ru", "el"]


@pytest.fixture(scope="module")
def identifier() -> LanguageIdentifier:
    return LanguageIdentifier(EUROPEAN)


def test_lang_guess_is_a_frozen_pair():
    guess = LangGuess("de", 0.9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        guess.language = "fr"
    assert dataclasses.astuple(guess) == ("de", 0.9)


@pytest.mark.parametrize(
    "text",
    [
        "", "  \n ", "1234 5678", "!!! ???", "😀🎉👍",
        "Ã‰tÃ© Ã  la plage, trÃ¨s agrÃ©able",  # UTF-8 read as cp1252
        "Привет мир".encode("cp1251").decode("latin-1"),
        "\ufffd\ufffd\ufffd\ufffd ab",
        "\ud800\udfff\ud801",
    ],
)
def test_und_with_zero_confidence_when_no_language_can_be_told(identifier, text):
    assert identifier.identify(text) == LangGuess("und", 0.0)


def test_a_lone_surrogate_in_real_text_is_ignored(identifier):
    assert identifier.identify("Heute ist das Wetter\ud800 in Berlin sehr schön.").language == "de"


def test_mixed_languages_are_und_but_foreign_terms_are_not(identifier):
    assert identifier.identify("Good morning, how are you today? Доброе утро, как у тебя дела?").language == "und"
    assert identifier.identify("Das ist ein sehr schöner Tag heute. C'est une très belle journée aujourd'hui.").language == "und"
    assert identifier.identify("Το input πρέπει να είναι ένα έγκυρο JSON dictionary.").language == "el"
    text = "Heute scheint die Sonne. Wir gehen in den Park. Danach essen wir zusammen Kuchen."
    assert identifier.identify(text).language == "de"


def test_the_mixed_check_scores_the_parts_of_a_batch_in_the_same_pass_as_its_texts():
    from mlgrpo.langid.registry import Backend

    calls = []

    def scores_many(samples, candidates):  # Cyrillic only: Russian; anything with Latin letters: English
        calls.append([s.text for s in samples])
        return [[("ru", 1.0)] if not any("a" <= ch.lower() <= "z" for ch in s.text) else [("en", 1.0)] for s in samples]

    identifier = LanguageIdentifier(["en", "ru"], min_confidence=0.0)
    identifier.backend = Backend("fake", "test double", lambda: frozenset({"en", "ru"}),
                                 lambda sample, candidates: scores_many([sample], candidates)[0], scores_many=scores_many)
    english = "This is a rather long English sentence about the weather today. And a short one."
    mixed = "Это довольно длинное русское предложение о погоде сегодня. Short English words."
    # The Russian part of the second holds over 40% of its letters: mixed, "und"; the English text agrees.
    assert [g.language for g in identifier.identify_many([english, mixed])] == ["en", "und"]
    assert len(calls) == 1
    assert calls[0][:2] == [english, mixed]
    assert sorted(calls[0][2:]) == sorted(["This is a rather long English sentence about the weather today.", "And a short one.",
                                           "Это довольно длинное русское предложение о погоде сегодня.", "Short English words."])


def test_low_confidence_is_und_at_the_threshold_and_a_language_below_it():
    # A three-letter name: the backends spread their probability over several languages.
    loose = LanguageIdentifier(EUROPEAN, min_confidence=0.0).identify("Mali")
    assert loose.language != "und" and loose.confidence < DEFAULT_MIN_CONFIDENCE
    assert LanguageIdentifier(EUROPEAN).identify("Mali") == LangGuess("und", 0.0)


def test_confidence_is_a_probability(identifier):
    guess = identifier.identify("Ceci est une phrase tout à fait ordinaire.")
    assert guess.language == "fr" and isinstance(guess.confidence, float) and 0.5 < guess.confidence <= 1.0


def test_identify_many_matches_identify_and_answers_repeats_from_the_cache(identifier):
    texts = ["Guten Morgen zusammen", "Buenos días a todos", "Guten Morgen zusammen", ""]
    guesses = identifier.identify_many(texts)
    assert [g.language for g in guesses] == ["de", "es", "de", "und"]
    assert guesses[0] is guesses[2]
    assert guesses == [identifier.identify(t) for t in texts]


def test_module_level_identify_narrows_with_candidates():
    assert identify("Guten Tag", candidates=["de", "nl"]).language == "de"
    assert identify("안녕하세요") == LangGuess("ko", 1.0)


def test_unknown_backend_names_the_closest_one():
    with pytest.raises(UserError, match="unknown language-ID backend 'fastext' \\(did you mean 'fasttext'.*langdetect"):
        LanguageIdentifier(backend="fastext")


def test_unknown_candidate_names_the_bad_code():
    with pytest.raises(UserError, match="unknown language code 'dx': did you mean da, de, dv"):
        LanguageIdentifier(["de", "dx"])


def test_a_backend_that_knows_none_of_the_candidates_is_refused():
    with pytest.raises(UserError, match="backend 'langdetect' cannot identify any of am, eo"):
        LanguageIdentifier(["eo", "am"], backend="langdetect")


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_min_confidence_must_be_a_probability(value):
    with pytest.raises(UserError, match="min_confidence"):
        LanguageIdentifier(min_confidence=value)


def test_non_string_text_is_a_type_error(identifier):
    with pytest.raises(TypeError, match="takes a str, got int"):
        identifier.identify(42)


def test_importing_langid_loads_no_model_library():
    code = (
        "import sys, mlgrpo.langid; from mlgrpo.langid import LanguageIdentifier; LanguageIdentifier(['de', 'fr']);"
        "print(sorted(m for m in ('lingua', 'fasttext', 'langdetect', 'torch', 'mlflow', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_preloads_a_detector_per_candidate_set():
    """load() builds one lingua detector with its models preloaded per set of two or more lingua candidates
    (lingua shares loaded models between detectors), and identification works after it."""
    from mlgrpo.langid import models

    models._lingua_preloaded.cache_clear()
    identifier = LanguageIdentifier(candidates=["de", "nl", "sw"], backend="lingua")
    identifier.load()
    assert models._lingua_preloaded.cache_info().currsize == 1
    identifier.load(["de", "nl"])  # another set: its own preloaded detector, models shared
    assert models._lingua_preloaded.cache_info().currsize == 2
    identifier.load(["de"])  # one lingua language: lingua compares none, nothing to load
    assert models._lingua_preloaded.cache_info().currsize == 2
    assert identifier.identify("Guten Morgen, wie geht es dir heute?").language == "de"
