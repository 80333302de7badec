"""Exact match, token F1, ROUGE-L, chrF and BLEU: hand-worked multilingual values, and sacrebleu's own
corpus scores where the tokenizer is the same."""

from __future__ import annotations

import pytest
import sacrebleu

from mlgrpo.evaluation.overlap import (
    bleu,
    chrf,
    exact_match,
    f1_of_units,
    reference_streams,
    rouge_l,
    token_f1,
)


def rows(language, *answer_lists):
    return [{"language": language, "answers": list(a)} for a in answer_lists]


@pytest.mark.parametrize(
    "output, answers, language, expected",
    [
        ("كَتَبَ", ["كتب"], "ar", 1.0),  # Arabic tashkeel is optional
        ("٢١", ["21"], "ar", 1.0),  # Arabic-Indic digits
        ("واحد وعشرون؟", ["واحد وعشرون"], "ar", 1.0),  # the Arabic question mark is punctuation
        ("इक्कीस।", ["इक्कीस"], "hi", 1.0),  # danda
        ("२१", ["21", "इक्कीस"], "hi", 1.0),  # Devanagari digits; any accepted answer
        ("\u0958िला", ["\u0915\u093cिला"], "hi", 1.0),  # precomposed क़ vs क + nukta: one letter after NFKC
        ("इक्कीस", ["बाईस"], "hi", 0.0),
        ("２０２４年", ["2024年"], "ja", 1.0),  # full width
        ("北 京", ["北京"], "zh", 1.0),
        ("Twenty-One!", ["twenty one"], "en", 1.0),
    ],
)
def test_exact_match_normalises_case_width_punctuation_digits(output, answers, language, expected):
    assert exact_match([output], rows(language, answers)) == [expected]


def test_exact_match_falls_back_to_the_reference_and_skips_rows_without_answers():
    records = [{"language": "de", "reference": "Zwanzig"}, {"language": "de"}]
    assert exact_match(["zwanzig", "x"], records) == [1.0, None]


def test_token_f1_hand_worked():
    # "nine hundred sixty" vs "nine hundred sixty-nine": 3 shared of 3 predicted and 4 gold units:
    # P = 1, R = 3/4, F1 = 2 * 0.75 / 1.75 = 0.857142...
    # Thai "ยี่สิบ" vs "ยี่สิบเอ็ด": units ยี่ สิ บ / ยี่ สิ บ เ อ็ ด: 3 shared, P = 1, R = 1/2, F1 = 2/3.
    got = token_f1(["nine hundred sixty", "ยี่สิบ", "二十一"],
                   rows("en", ["nine hundred sixty-nine"]) + rows("th", ["ยี่สิบเอ็ด"]) + rows("zh", ["二十一", "廿一"]))
    assert got == pytest.approx([100 * 6 / 7, 100 * 2 / 3, 100.0])
    assert f1_of_units(("a", "a", "b"), ("a", "b", "b")) == pytest.approx(100 * 2 / 3)  # multiset overlap 2


def test_token_f1_counts_repeated_units_once_per_match():
    # SQuAD counts the multiset intersection: "the the the" vs "the" shares 1 unit: P 1/3, R 1, F1 0.5.
    assert token_f1(["the the the"], rows("en", ["the"])) == [pytest.approx(50.0)]


def test_rouge_l_identical_chinese_pair_scores_100_where_rouge_scores_default_gives_0():
    from rouge_score.rouge_scorer import RougeScorer

    text = "北京是中国的首都"
    assert rouge_l([text], rows("zh", [text])) == [100.0]
    assert RougeScorer(["rougeL"]).score(text, text)["rougeL"].fmeasure == 0.0  # why the tokenizer matters


def test_rouge_l_hand_worked_in_several_scripts():
    # Thai: ยี่สิบเอ็ด (ยี่ สิ บ เ อ็ ด) vs ยี่สิบ (ยี่ สิ บ): LCS 3, P = 3/6, R = 3/3, F = 2/3.
    # Japanese: 三百五十一 vs 三百十一: LCS 三百十一 = 4, P = 4/5, R = 1, F = 8/9.
    # Arabic, best of two answers: "واحد وعشرون" equals the second answer after removing tashkeel.
    got = rouge_l(["ยี่สิบเอ็ด", "三百五十一", "واحد وعشرون"],
                  rows("th", ["ยี่สิบ"]) + rows("ja", ["三百十一"]) + rows("ar", ["اثنان", "وَاحِد وَعِشْرُونَ"]))
    assert got == pytest.approx([100 * 2 / 3, 100 * 8 / 9, 100.0])


def test_rouge_l_equals_rouge_score_on_plain_english():
    # Where rouge-score's own tokenizer keeps everything (lower-case ASCII words), the numbers agree.
    from rouge_score.rouge_scorer import RougeScorer

    pairs = [("the cat sat on the mat", "the cat lay on a mat"), ("one two three", "three two one")]
    ours = rouge_l([p for p, _ in pairs], rows("en", *[[t] for _, t in pairs]))
    theirs = [100 * RougeScorer(["rougeL"]).score(t, p)["rougeL"].fmeasure for p, t in pairs]
    assert ours == pytest.approx(theirs)


def test_reference_streams_pad_rows_with_fewer_answers():
    assert reference_streams([["a"], ["b", "c", "d"]]) == [["a", "b"], [None, "c"], [None, "d"]]


OUTPUTS = {  # language -> (outputs, accepted answers per output; 1 or 2, so sacrebleu sees padded streams)
    "zh": (["我住在北京市中心", "今天天气很好", "他们明天去上海"],
           [["我住在北京市中心"], ["今天天气不错", "今天天气很好啊"], ["他们后天去上海"]]),
    "ja": (["私は東京に住んでいます", "今日はいい天気です"], [["私は大阪に住んでいます"], ["今日は良い天気ですね"]]),
    "en": (["the cat sat on the mat", "twenty one"],
           [["the cat is on the mat", "a cat sat on the mat"], ["twenty-one"]]),
}
TOKENIZE = {"zh": "zh", "ja": "ja-mecab", "en": "13a"}


@pytest.mark.parametrize("language", sorted(OUTPUTS))
def test_bleu_and_chrf_equal_sacrebleus_corpus_scores(language):
    outputs, answers = OUTPUTS[language]
    records = rows(language, *answers)
    streams = reference_streams(answers)
    assert bleu(outputs, records)[language] == pytest.approx(
        sacrebleu.corpus_bleu(outputs, streams, tokenize=TOKENIZE[language]).score)
    assert chrf(outputs, records)[language] == pytest.approx(sacrebleu.corpus_chrf(outputs, streams).score)


def test_bleu_on_chinese_needs_the_zh_tokenizer():
    outputs, answers = OUTPUTS["zh"]
    ours = bleu(outputs, rows("zh", *answers))["zh"]
    default = sacrebleu.corpus_bleu(outputs, reference_streams(answers)).score  # 13a: one token per line
    assert ours > 30 and default < ours


def test_corpus_metrics_score_each_language_on_its_own_rows_and_skip_rows_without_answers():
    records = rows("zh", ["一二三四五"]) + rows("en", ["one two three four"]) + [{"language": "en"}]
    assert bleu(["一二三四五", "one two three four", "ignored"], records) == pytest.approx({"zh": 100.0, "en": 100.0})
    assert bleu(["x"], [{"language": "en"}]) == {}
