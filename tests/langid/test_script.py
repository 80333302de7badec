from __future__ import annotations

import pytest

from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.langid.script import (
    SCRIPT_LANGUAGES,
    allowed_languages,
    coverage,
    foreign_share,
    script_scores,
    script_shares,
)


def allowed(text: str, *candidates: str) -> set[str]:
    return set(allowed_languages(text, script_shares(text), frozenset(candidates) or KNOWN_CODES))


def test_dense_scripts_weigh_three_letters_per_character():
    # "iPhone 的价格": 6 Latin letters, 3 Han characters x 3 = 9; total 15.
    assert script_shares("iPhone 的价格") == pytest.approx({"Latin": 6 / 15, "Han": 9 / 15})
    assert script_shares("12 !? 😀") == {}


def test_kana_makes_han_japanese_and_hangul_absorbs_hanja():
    assert script_shares("東京タワー") == {"Japanese": 1.0}
    assert script_shares("大韓民國 국회") == {"Hangul": 1.0}  # 4 Hanja + 2 Hangul syllables


def test_coverage_adds_the_shares_of_the_scripts_a_language_writes():
    # "Hello Привет": Latin 5/11, Cyrillic 6/11.
    shares = script_shares("Hello Привет")
    assert coverage(shares, frozenset({"en", "ru", "sr"})) == pytest.approx({"en": 5 / 11, "ru": 6 / 11, "sr": 1.0})
    assert foreign_share(shares, "ru") == pytest.approx(5 / 11)


def test_scripts_narrow_the_candidates():
    assert allowed("Доброе утро", "ru", "en", "de") == {"ru"}
    assert allowed("Guten Morgen", "ru", "en", "de") == {"en", "de"}
    assert allowed("Доброе утро", "en", "de") == set()
    # Han holds 9/15 of the weighted letters: Chinese stays possible, English (6/15) does not.
    assert allowed("iPhone 的价格", "en", "zh") == {"zh"}
    assert allowed("東京タワー", "zh", "ja") == {"ja"}
    assert allowed("东京", "zh", "ja") == {"zh", "ja"}


def test_letters_rule_out_languages_that_never_write_them():
    assert allowed("ٹوکیو", "ar", "fa", "ur") == {"ur"}  # Urdu's retroflex tteh
    assert allowed("کتاب", "ar", "fa", "ur") == {"fa", "ur"}  # keheh: not Arabic
    assert allowed("مدرسة", "ar", "fa", "ur") == {"ar", "ur"}  # teh marbuta: not Persian
    # Arabic kaf and yeh: Persian typed on an Arabic keyboard writes them (issue 28), so the model decides
    assert allowed("كتاب", "ar", "fa", "ur") == {"ar", "fa", "ur"}
    assert allowed("Київ", "ru", "uk") == {"uk"}
    assert allowed("объём", "ru", "uk") == {"ru"}
    # Both Russian-only and Ukrainian-only letters: ruling out both would leave nothing.
    assert allowed("объём Київ", "ru", "uk") == {"ru", "uk"}


def test_script_verdict_only_when_one_candidate_is_left():
    assert script_scores("안녕하세요", script_shares("안녕하세요"), KNOWN_CODES) == [("ko", 1.0)]
    text = "สวัสดี OK"  # 6 Thai letters (the vowel marks are not letters), 2 Latin: Thai covers 0.75
    assert script_scores(text, script_shares(text), frozenset({"th", "ko"})) == [("th", pytest.approx(0.75))]
    assert script_scores("Guten Tag", script_shares("Guten Tag"), frozenset({"de", "nl"})) == []


def test_latin_is_every_known_language_not_written_only_in_another_script():
    assert {"en", "de", "vi", "sw", "tr", "sr"} <= SCRIPT_LANGUAGES["Latin"]
    assert not {"ru", "el", "zh", "ja", "ko", "ar", "hi"} & SCRIPT_LANGUAGES["Latin"]


def test_latin_fast_path_agrees_with_the_script_table():
    # script_shares skips the per-character lookup when no character is beyond the Latin blocks;
    # every letter those blocks hold must then be Latin in mlgrpo.text's table.
    from mlgrpo.langid.script import _BEYOND_LATIN
    from mlgrpo.text import char_script

    for cp in [*range(0x250), *range(0x250, 0x2B0), *range(0x1E00, 0x1F00), *range(0x2000, 0x2070)]:
        ch = chr(cp)
        if not _BEYOND_LATIN.search(ch):
            assert char_script(ch) in {"Latin", "Common"}, hex(cp)
    assert script_shares("µ") == {"Other": 1.0}  # the micro sign is a Greek letter: not fast-pathed


def test_one_script_fast_path_agrees_with_counting_every_character():
    # script_shares answers a text whose characters are all of its first letter's script or common to every script
    # (ASCII and CJK punctuation, full-width forms) from one search in C; the definition counts character by
    # character. Texts of every script family, alone and mixed, with their punctuation and marks.
    from collections import Counter

    from mlgrpo.langid.script import DENSE_SCRIPTS, DENSE_WEIGHT
    from mlgrpo.text import char_script

    def counted(text: str) -> dict[str, float]:
        counts = Counter(char_script(ch) for ch in text)
        counts.pop("Common", None)
        if counts["Hiragana"] or counts["Katakana"]:
            counts["Japanese"] = counts.pop("Hiragana", 0) + counts.pop("Katakana", 0) + counts.pop("Han", 0)
        elif counts["Hangul"] and counts["Han"]:
            counts["Hangul"] += counts.pop("Han")
        weights = {s: n * (DENSE_WEIGHT if s in DENSE_SCRIPTS else 1) for s, n in counts.items() if n}
        return {s: w / sum(weights.values()) for s, w in weights.items()}

    texts = ["Доброе утро, как дела?", "Καλημέρα!", "שלום עולם", "مرحبا، كيف حالك؟", "١٢٣ مرحبا", "नमस्ते दुनिया।",
             "สวัสดีครับ", "ជំរាបសួរ", "안녕하세요.", "大韓民國 국회", "东京。「你好」", "ひらがな", "カタカナ、ﾊﾝｶｸ", "東京タワー",
             "〻々", "µ", "Привет world", "iPhone 的价格", "ʻOlelo Hawaiʻi", "m² Доброе", "ابجد 12% (abc)", "𠀀𠀁"]
    for text in texts:
        assert script_shares(text) == pytest.approx(counted(text)), text
