"""The language-ID benchmark's ambiguity accounting (bench/bench_langid.py), on hand-made examples.

A text attested verbatim in the source data of several candidate languages has no single right
answer: the benchmark finds its owners, drops it from the unambiguous accuracy, and judges the
per-language floor there; strict accuracy (every text, its source language only) is kept beside it.
"""

from __future__ import annotations

import pytest

from bench.bench_langid import (
    UNAMBIGUOUS_HEADERS,
    accuracy,
    attestation_key,
    attested,
    ceiling,
    goal_lines,
    owned_accuracy,
    owners,
    unambiguous_rows,
)
from bench.langid_texts import BenchText
from mlgrpo.langid import LangGuess


def test_attestation_key_is_nfc_casefold_without_placeholders():
    assert attestation_key("Ja\u0301n") == attestation_key("JÁN") == "ján"  # NFC, then casefold
    assert attestation_key("%(count)s  Jan <b></b>") == "jan"
    assert attestation_key("Gâmbia") != attestation_key("Gambia")  # diacritics still count


def test_owners_are_the_languages_whose_data_holds_the_same_string():
    jan, maret, mai = BenchText("id", "cldr", "Jan"), BenchText("id", "cldr", "Maret"), BenchText("de", "cldr", "Mai")
    data = {"id": {"jan", "maret"}, "en": {"jan", "june"}, "de": {"januar"}, "fr": {"mai"}}
    found = owners([jan, maret, mai], data)
    assert found[jan] == {"id", "en"}
    assert found[maret] == {"id"}
    assert found[mai] == {"de", "fr"}  # its own language counts even when its set lacks it


def test_real_source_data_attests_a_string_in_two_languages():
    # Django's English msgid "jan" and its Indonesian translation "Jan" (an abbreviated month).
    assert "jan" in attested("en") and "jan" in attested("id")
    assert "kiswahili" in attested("sw") and "kiswahili" not in attested("en")


def _guess(language: str) -> LangGuess:
    return LangGuess(language, 1.0)


def test_unambiguous_accuracy_drops_ambiguous_texts_and_strict_keeps_them():
    texts = [
        BenchText("en", "ui", "jan"),  # also Indonesian: ambiguous
        BenchText("en", "ui", "Save"),
        BenchText("en", "ui", "Delete"),
        BenchText("id", "ui", "Simpan"),
    ]
    owner = owners(texts, {"en": {"jan", "save", "delete"}, "id": {"jan", "simpan"}})
    default = [_guess("id"), _guess("en"), _guess("de"), _guess("id")]
    guesses = {name: default for name in ("script", "langdetect", "lingua", "fasttext", "default")}
    guesses["fasttext"] = [_guess("en"), _guess("en"), _guess("en"), _guess("en")]
    clear = lambda t: len(owner[t]) == 1  # noqa: E731

    assert accuracy(texts, default) == 0.5  # strict: "jan" guessed id is wrong
    assert accuracy(texts, default, clear) == pytest.approx(2 / 3)  # "jan" dropped
    assert owned_accuracy(texts, default, owner) == 0.75  # "jan" guessed id is one of its owners
    assert ceiling(texts, guesses, clear) == 1.0  # fastText right on "Delete", lingua (= default) on the rest

    rows = {row[0]: dict(zip(UNAMBIGUOUS_HEADERS, row)) for row in unambiguous_rows(texts, guesses, owner)}
    assert rows["en"]["unambiguous texts"] == 2 and rows["en"]["ambiguous (dropped)"] == 1
    assert rows["en"]["default"] == 0.5 and rows["en"]["default, strict (all texts)"] == pytest.approx(1 / 3)
    assert rows["id"]["unambiguous texts"] == 1 and rows["id"]["default"] == 1.0
    assert rows["all"]["ambiguous (dropped)"] == 1


def test_the_floor_goal_is_judged_on_unambiguous_texts(monkeypatch):
    import bench.bench_langid as bench

    monkeypatch.setattr(bench, "LANGUAGES", ("en", "id"))
    texts = [BenchText("en", "ui", "jan"), BenchText("en", "ui", "Save"), BenchText("id", "ui", "Simpan")]
    owner = owners(texts, {"en": {"jan", "save"}, "id": {"jan", "simpan"}})
    right = [_guess("id"), _guess("en"), _guess("id")]  # wrong only on the ambiguous "jan"
    guesses = {name: right for name in ("script", "langdetect", "lingua", "fasttext", "default")}
    cpu = {name: 1.0 for name in guesses} | {"langdetect": 30.0}
    lines = goal_lines(texts, guesses, cpu, owner)
    floor = next(line for line in lines if "judged on the unambiguous texts" in line)
    assert "met." in floor and "Strictly, on all texts: 1 below: en 0.500" in floor
    assert any("30.0x langdetect" in line and "met" in line for line in lines)
