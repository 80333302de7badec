"""language_consistency: the script fast path by hand, the identifier path on real text, the failures issue
12 names (Swahili numbers, a Chinese translation with a Latin product name, English and Portuguese answers
to Swahili and Spanish prompts), the numbers suite's references in all 21 languages, and the edges."""

from __future__ import annotations

import pytest

from mlgrpo.rewards import BadRewardError, RewardGuard, RewardSpec, build_reward_functions, language_consistency
from mlgrpo.rewards.language import _identifier, fast_verdict, language_probabilities
from mlgrpo.rewards.units import segments

# The experiment's languages, as a run would pass them.
LANGUAGES = ["sw", "en", "de", "zh", "ja", "ru", "uk", "es", "pt"]


def score(completions, languages, **params):
    return language_consistency([""] * len(completions), completions, language=languages, **params)


def test_script_alone_decides_where_it_can_without_loading_a_model():
    misses = _identifier.cache_info().misses
    completions = [
        "今日はいい天気です",  # ja row, kana: all Japanese -> 1
        "今日はいい天気です",  # zh row: kana is never Chinese -> 0
        "今日はgood天気",  # ja among [ja, en]: 今日は 3 * 0.36 + 天気 2 * 0.36 of that + good 1 -> 1.8 / 2.8
        "الجواب هو 21 apples",  # ar among [ar, en]: 2 Arabic words of 3 -> 2/3
        "उत्तर है twenty-one",  # hi among [hi, en]: 2 Devanagari words of 4 -> 1/2
        "Ответ: twenty",  # ru among [ru, en]: 1 of 2 -> 1/2
        "คำตอบคือ 21",  # th: Thai is written for Thai only -> 1
        "Γεια σου world",  # el: 2 of 3 -> 2/3
        "나는 Python을 좋아해",  # ko: Python is a name (neutral); 나는, 을, 좋아해 -> 1
    ]
    languages = ["ja", "zh", "ja", "ar", "hi", "ru", "th", "el", "ko"]
    expected = [1.0, 0.0, 1.8 / 2.8, 2 / 3, 0.5, 0.5, 1.0, 2 / 3, 1.0]
    for text, lang, want in zip(completions, languages, expected):
        assert score([text], [lang], candidates=[lang, "en"]) == pytest.approx([want]), (text, lang)
    assert _identifier.cache_info().misses <= misses + len(set(languages))  # identifiers only for candidate sets


def test_fast_verdicts():
    (latin,) = segments("Habari")
    (han,) = segments("北京", True)
    pool = tuple(sorted(LANGUAGES))
    assert fast_verdict(latin, "zh", pool) is False  # Latin is not a script of Chinese
    assert fast_verdict(latin, "sw", pool) is None  # several candidates write Latin: ask the identifier
    assert fast_verdict(latin, "sw", ("sw", "zh")) is True  # ... unless sw is the only Latin candidate
    assert fast_verdict(han, "zh", pool) is None  # Han alone may be Japanese


@pytest.mark.parametrize("text", ["mia tatu na themanini na nne", "thelathini na saba", "elfu moja"])
def test_correct_swahili_numbers_are_swahili(text):
    assert score([text], ["sw"], candidates=["en", "es", "ru", "ar", "ja", "sw"]) == [1.0]


def test_wrong_language_answers_are_not_in_the_row_language():
    # An English answer to a Swahili prompt, a Portuguese answer to a Spanish one (same message), a
    # Ukrainian answer to a Russian one, Chinese to Japanese.
    got = score(["three hundred and eighty-four", "Nome de usuário e senha", "Це поле обов'язкове.", "这个字段是必填项。"],
                ["sw", "es", "ru", "ja"], candidates=LANGUAGES)
    assert [g <= 0.5 for g in got] == [True] * 4, got
    assert score(["Nombre de usuario y contraseña", "Это поле обязательно."], ["es", "ru"], candidates=LANGUAGES) == [1.0, 1.0]


def test_a_chinese_translation_keeping_a_latin_product_name_is_chinese():
    # "GIMP" is an acronym: 4 Han characters vote; a name-only answer votes after all, and is not Chinese.
    assert score(["GIMP 笔刷管道", "使用 Google Chrome 打开", "Brush Pipe", "GIMP"], ["zh"] * 4, candidates=LANGUAGES) == [
        1.0, 1.0, 0.0, 0.0]


def test_a_word_several_languages_write_alike_counts_for_each():
    # "Juni" is German, Swedish, Indonesian and Swahili: the likeliest language is not Swahili (the model has
    # seen far less Swahili), so by probability a floor near that ratio would turn it against a Swahili row.
    # It is Swahili's month name (CLDR), so the lexicon counts it, whatever the floor; a text the lexicon
    # does not hold goes to the floor.
    probabilities = language_probabilities("Juni", tuple(sorted(LANGUAGES)), "default")
    ratio = probabilities["sw"] / max(p for c, p in probabilities.items() if c != "zh" and c != "ja")
    assert max(probabilities, key=probabilities.get) != "sw" and ratio < 1
    assert score(["21 Juni 1967", "21 Juni 1967"], ["sw", "de"], candidates=LANGUAGES) == [1.0, 1.0]
    assert score(["21 Juni 1967"], ["sw"], candidates=LANGUAGES, min_probability=1.0) == [1.0]
    # "Limpar" is Portuguese, not a common Spanish word: in a Spanish row it goes to the model and does not count
    assert score(["Limpar", "Limpar", "Limpiar"], ["es", "pt", "es"], candidates=LANGUAGES) == [0.0, 1.0, 1.0]


def test_a_text_of_common_words_of_the_row_language_counts_without_the_model():
    # every word is a common word of the row's language (wordfreq Zipf >= 4, or a CLDR month or day name):
    # "Sobre este documento" is Spanish and Portuguese alike, "14. September 1994" German as much as English.
    from mlgrpo.langid.lexicon import in_common_words

    assert in_common_words("Sobre este documento", "es") and in_common_words("Sobre este documento", "pt")
    assert score(["14. September 1994", "Sobre este documento", "19 November 2012"], ["de", "es", "de"],
                 candidates=LANGUAGES, min_probability=1.0) == [1.0, 1.0, 1.0]
    # ... but not in a language that is not written in its script, nor for a text with one uncommon word
    assert score(["September", "Limpar todos"], ["ru", "es"], candidates=LANGUAGES) == [0.0, 0.0]
    assert not in_common_words("Limpar todos", "es")


def test_a_loanword_the_row_language_writes_counts_beside_its_own_words():
    # Rule 5: "Email" is listed for Danish (wordfreq Zipf 3.7) and "valgfri" is Danish, so Danish UI text that
    # keeps the English term is Danish through and through; the English answer "Email (optional)" is not Danish
    # at all (no segment of it counts on its own), nor is "optional" beside Danish text (Danish does not list it).
    from mlgrpo.langid.lexicon import in_listed_words

    candidates = ["da", "sv", "en", "de", "nl"]
    assert in_listed_words("Email", "da", 3.5) and not in_listed_words("optional", "da", 3.5)
    assert score(["Email (valgfri)", "Email (optional)", "Adgangskode (optional)"], ["da"] * 3, candidates=candidates) == [
        1.0, 0.0, 0.5]


def test_han_numerals_and_dates_count_for_chinese_and_japanese_alike():
    # Both languages write these characters alike: they count in a zh row and in a ja row. A Chinese-only
    # simplified character still votes: 删除 (delete) is not Japanese.
    shared = ["第九十六万七千九百二十八", "二千二十六年三月五日"]
    assert score(shared * 2, ["zh", "zh", "ja", "ja"], candidates=LANGUAGES) == [1.0] * 4
    assert score(["删除"], ["ja"], candidates=LANGUAGES) == [0.0]


def test_japanese_words_of_chinese_characters_are_told_apart():
    # 名前 (name) and 最終更新 (last updated) are Japanese, 名字 and 最后更新 Chinese: each character of 名前 is
    # Chinese too, so characters alone let it through in a Chinese row; the model's n-grams and words do not.
    # Oscar's 郵便番号 (postcode) and 市区町村 (municipality) are Japanese words of characters Chinese writes too.
    japanese, chinese = ["名前", "最終更新", "郵便番号", "市区町村"], ["名字", "最后更新", "邮政编码"]
    assert score(japanese + chinese, ["ja"] * 4 + ["zh"] * 3, candidates=LANGUAGES) == [1.0] * 7
    assert score(japanese + chinese, ["zh"] * 4 + ["ja"] * 3, candidates=LANGUAGES) == [0.0] * 7


def test_same_script_languages_go_through_the_identifier():
    completions = [
        "Jibu ni ishirini na moja.",
        "The answer is twenty one.",
        "Jibu ni ishirini na moja. The answer is twenty one in English.",
        "我们今天去北京。",
        "Ответ: двадцать один.",
    ]
    got = score(completions, ["sw", "sw", "sw", "zh", "uk"], candidates=LANGUAGES)
    # sw sentence: 5 words; the English one 7 -> 5/12. Russian text in a "uk" row -> 0.
    assert got == pytest.approx([1.0, 0.0, 5 / 12, 1.0, 0.0])


def test_numbers_suite_references_score_in_their_language_in_all_21_languages():
    """Every language of the numbers suite, its own references (sampled), candidates = the suite's languages
    plus English as the evaluation passes them: at least 0.97 judged in the language (issue 12)."""
    import random

    from mlgrpo.data.suites.loader import get_spec, language_items

    spec = get_spec("numbers")
    candidates = sorted(set(spec.languages) | {"en"})
    low = {}
    for language in spec.languages:
        items = random.Random(language).sample(language_items("numbers", language).items, 60)
        got = score([item.answers[0] for item in items], [language] * len(items), candidates=candidates)
        share = sum(g > 0.5 for g in got if g is not None) / sum(g is not None for g in got)
        if share < 0.97:
            low[language] = share
    assert not low, low


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
    completion = [{"role": "assistant", "content": "나는 Python을 좋아해 very much"}]
    # 나는, 을, 좋아해 for; "very much" is a lower-case Latin run: 2 against -> 3/5
    assert funcs[0](prompts=[[{"role": "user", "content": "?"}]], completions=[completion], language=["ko"]) == [0.6]


def test_bad_parameters_are_refused_in_one_line():
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match="min_probability must be between 0 and 1"):
        build_reward_functions([RewardSpec("language_consistency", params={"min_probability": 2})])
    with pytest.raises(UserError, match="candidates must be a list"):
        build_reward_functions([RewardSpec("language_consistency", params={"candidates": "en,de"})])
