"""language_consistency: the script fast path by hand, the identifier path on real text, and the edges."""

from __future__ import annotations

import pytest

from mlgrpo.rewards import BadRewardError, RewardGuard, RewardSpec, build_reward_functions
from mlgrpo.rewards.language import _identifier, fast_verdict, language_consistency, language_probabilities, segments


# The experiment's languages, as a run would pass them: the identifier then loads only their models.
LANGUAGES = ["sw", "en", "de", "zh", "ja", "ru", "uk"]


def score(completions, languages, **params):
    return language_consistency([""] * len(completions), completions, language=languages, **params)


def test_segments_cut_at_script_changes_and_sentence_ends():
    got = [(s.group, s.text, s.letters, s.kana) for s in segments("今日はgood天気。Привет, мир! 123")]
    assert got == [("CJK", "今日は", 3, True), ("Latin", "good", 4, False), ("CJK", "天気", 2, False),
                   ("Cyrillic", "Привет, мир", 9, False)]
    assert segments("123 + 4 = 127 !") == []


def test_script_alone_decides_where_it_can_without_loading_a_model():
    misses = _identifier.cache_info().misses
    completions = [
        "今日はいい天気です",  # ja row, kana: all Japanese -> 1
        "今日はいい天気です",  # zh row: kana is never Chinese -> 0
        "今日はgood天気",  # ja among [ja, en]: 今日は 3 + 天気 2 of 3 + 4 + 2 letters -> 5/9
        "الجواب هو 21 apples",  # ar among [ar, en]: الجواب 6 + هو 2 of 8 + 6 -> 8/14
        "उत्तर है twenty-one",  # hi among [hi, en]: उत्तर 5 + है 2 (vowel signs count) of 7 + 9 -> 7/16
        "Ответ: twenty",  # ru among [ru, en]: 5 of 5 + 6 -> 5/11
        "คำตอบคือ 21",  # th: Thai is written for Thai only -> 1
        "Γεια σου world",  # el: 7 of 7 + 5 -> 7/12
        "나는 Python을 좋아해",  # ko: 6 of 6 + 6 -> 1/2
    ]
    languages = ["ja", "zh", "ja", "ar", "hi", "ru", "th", "el", "ko"]
    expected = [1.0, 0.0, 5 / 9, 8 / 14, 7 / 16, 5 / 11, 1.0, 7 / 12, 0.5]
    for text, lang, want in zip(completions, languages, expected):
        assert score([text], [lang], candidates=[lang, "en"]) == pytest.approx([want]), (text, lang)
    assert _identifier.cache_info().misses == misses  # no identifier was built for any of them


def test_fast_verdicts():
    latin, = segments("Habari")
    han, = segments("北京")
    assert fast_verdict(latin, "zh", None) is False  # Latin is not a script of Chinese
    assert fast_verdict(latin, "sw", None) is None  # many languages write Latin: ask the identifier
    assert fast_verdict(latin, "sw", ["sw", "zh"]) is True  # ... unless sw is the only Latin candidate
    assert fast_verdict(han, "zh", None) is None  # Han alone may be Japanese
    assert fast_verdict(han, "xx", ["xx"]) is None  # a language we know no script of: identifier


def test_same_script_languages_go_through_the_identifier():
    completions = [
        "Jibu ni ishirini na moja.",
        "The answer is twenty one.",
        "Jibu ni ishirini na moja. The answer is twenty one in English.",
        "Die Antwort ist einundzwanzig. But in English the answer is twenty one, of course.",
        "我们今天去北京。",
        "答案是二十一。The answer is twenty one.",
        "Ответ: двадцать один.",
    ]
    languages = ["sw", "sw", "sw", "de", "zh", "zh", "uk"]
    got = score(completions, languages, candidates=LANGUAGES)
    # sw sentence: Jibu 4 + ni 2 + ishirini 8 + na 2 + moja 4 = 20 letters; the English one: 3 + 6 + 2 + 6 + 3
    # + 2 + 7 = 29 -> 20/49. German: Die 3 + Antwort 7 + ist 3 + einundzwanzig 13 = 26 of 26 + (But 3 + in 2
    # + English 7 + the 3 + answer 6 + is 2 + twenty 6 + one 3 + of 2 + course 6 = 40) -> 26/66. (The short
    # "But in English it is twenty one" gets p(de) = 0.050 from the default identifier: exactly on the
    # plausibility threshold, so it is no test of the rule.) 答案是二十一 is 6 of 6 + 20 -> 6/26. Russian
    # text in a "uk" row -> 0.
    assert got == pytest.approx([1.0, 0.0, 20 / 49, 26 / 66, 1.0, 6 / 26, 0.0])


def test_a_segment_counts_unless_its_language_is_implausible():
    # "Hotel" is spelled so in many languages: German is the most likely, Swahili still plausible.
    probabilities = language_probabilities("Hotel", tuple(LANGUAGES), "default")
    assert max(probabilities, key=probabilities.get) != "sw" and probabilities["sw"] >= 0.05
    assert score(["Hotel", "Hotel", "Hotel!"], ["sw", "de", "en"], candidates=LANGUAGES) == [1.0, 1.0, 1.0]
    # A stricter floor than Swahili's probability turns it against the row.
    strict = probabilities["sw"] + 0.01
    assert score(["Hotel"], ["sw"], candidates=LANGUAGES, min_probability=strict) == [0.0]


def test_a_row_language_outside_the_candidates_is_an_error():
    funcs, _ = build_reward_functions([RewardSpec("language_consistency", params={"candidates": ["en", "de"]})],
                                      RewardGuard("fail"))
    with pytest.raises(BadRewardError, match="row language 'sw' is not among the language identifier's candidates"):
        funcs[0](prompts=[""], completions=["Jibu ni ishirini na moja"], language=["sw"])


def test_not_applicable_rows():
    assert score(["", "123 !", "Hallo", "Hallo"], ["de", "de", "und", None]) == [None, None, None, None]
    assert language_consistency([""], ["Hallo"]) == [None]  # no language column at all


def test_built_and_conversational():
    funcs, _ = build_reward_functions([RewardSpec("language_consistency", params={"candidates": ["ko", "en"]})])
    completion = [{"role": "assistant", "content": "나는 Python을 좋아해"}]
    assert funcs[0](prompts=[[{"role": "user", "content": "?"}]], completions=[completion], language=["ko"]) == [0.5]


def test_load_models_loads_the_languages_that_share_a_script_with_another_candidate(monkeypatch):
    """The quickstart's languages: en, es and sw share Latin, so a segment in Latin needs the identifier;
    ru (Cyrillic), ar (Arabic) and ja (kana, or Han with no Chinese candidate) are decided by script."""
    from mlgrpo.langid import models
    from mlgrpo.rewards.language import load_models

    loaded = []
    preload = models._lingua_preloaded
    monkeypatch.setattr(models, "_lingua_preloaded", lambda codes: loaded.append(codes) or preload(codes))
    load_models(["en", "es", "ru", "ar", "ja", "sw"])
    assert loaded == [frozenset({"en", "es", "sw"})]
    loaded.clear()
    load_models(["ru", "uk", "el"])  # Cyrillic shared by ru and uk; Greek is el's alone
    assert loaded == [frozenset({"ru", "uk"})]
    loaded.clear()
    load_models(["el", "ko", "th"])  # every script decides: nothing to load
    assert loaded == []
