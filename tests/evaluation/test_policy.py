"""evaluate_policy on a tiny random Qwen2 (byte-level BPE trained here) and real numbers-suite records."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mlgrpo.errors import UserError  # noqa: E402
from mlgrpo.evaluation import evaluate_policy  # noqa: E402
from mlgrpo.evaluation.safety import unsafe_label, unsafe_probabilities  # noqa: E402

LANGS = ["en", "ja", "ar", "sw", "ru"]


@pytest.fixture(scope="module")
def base_report(tiny_policy, numbers_eval):
    model, tokenizer = tiny_policy
    model.train()
    tokenizer.padding_side = "right"
    report = evaluate_policy(model, tokenizer, numbers_eval, max_new_tokens=6, samples_per_language=2)
    return report, model.training, tokenizer.padding_side


def test_per_language_scores_aggregates_and_samples(base_report, numbers_eval):
    report, _, _ = base_report
    assert list(report.per_language) == LANGS and report.rows == dict.fromkeys(LANGS, 8)
    for scores in report.per_language.values():
        assert {"exact_match", "token_f1", "rouge_l", "chrf", "bleu", "length_chars", "length_tokens"} <= set(scores)
        assert 0 <= scores["exact_match"] <= 1 and 0 <= scores["length_tokens"] <= 6
    assert set(report.aggregates["exact_match"]) == {"macro", "worst", "gap"}
    assert set(report.aggregates["length_tokens"]) == {"macro", "gap"}
    assert report.tokenizers == {"en": "13a", "ja": "ja-mecab", "ar": "13a", "sw": "13a", "ru": "13a"}
    assert len(report.samples) == 10 and {s["language"] for s in report.samples} == set(LANGS)
    first = report.samples[0]
    source = next(r for r in numbers_eval if r["id"] == first["id"])
    assert first["prompt"] == source["prompt"] and first["answers"] == source["answers"]
    assert {"completion", "exact_match", "token_f1", "length_tokens"} <= set(first)
    assert report.seconds > 0 and report.settings["max_new_tokens"] == 6
    flat = report.flat()
    assert flat["eval/exact_match/ja"] == report.per_language["ja"]["exact_match"]
    assert "eval/exact_match/macro" in flat and "eval/bleu/worst" in flat


def test_model_mode_and_tokenizer_padding_side_are_given_back(base_report, tiny_policy, numbers_eval):
    _, was_training_after, padding_after = base_report
    assert was_training_after is True and padding_after == "right"
    model, tokenizer = tiny_policy
    model.eval()
    evaluate_policy(model, tokenizer, numbers_eval[:2], max_new_tokens=2)
    assert model.training is False


def test_what_was_not_configured_is_not_measured_never_zero(base_report):
    report, _, _ = base_report
    for name in ("kl_ref", "toxicity", "toxic_rate", "reward_model", "pass_at_k", "reward"):
        assert name in report.not_measured
        assert not any(name in scores for scores in report.per_language.values())


def test_rewards_kl_pass_at_k_safety_and_reward_model(tiny_policy, other_policy, classifier_dir, numbers_eval):
    from mlgrpo.rewards import RewardSpec, build_reward_functions

    model, tokenizer = tiny_policy
    funcs, _ = build_reward_functions([RewardSpec("exact_match"), RewardSpec("length")])
    rows = numbers_eval[::4]
    report = evaluate_policy(model, tokenizer, rows, max_new_tokens=5, sampled_k=3, reward_funcs=funcs,
                             reward_weights=[1.0, 0.5], reference_model=other_policy,
                             safety_classifier=str(classifier_dir), reward_model=str(classifier_dir),
                             samples_per_language=1, seed=3)
    for scores in report.per_language.values():
        # The exact_match reward is the exact_match metric; TRL's total is em + 0.5 * length penalty.
        assert scores["reward/exact_match"] == scores["exact_match"]
        assert scores["reward/total"] == pytest.approx(scores["reward/exact_match"] + 0.5 * scores["reward/length"])
        assert scores["kl_ref"] > 0
        assert 0 <= scores["toxicity"] <= 1 and 0 <= scores["toxic_rate"] <= 1
        assert 0 <= scores["pass_at_1"] <= scores["pass_at_3"] <= 1
        assert "reward_model" in scores
    configured = {"kl_ref", "toxicity", "toxic_rate", "reward_model", "pass_at_k", "reward"}
    assert not configured & set(report.not_measured)
    assert all(len(s["sampled"]) == 3 for s in report.samples)
    # The toxicity of one sample is the classifier's softmax probability of "toxic" for its completion.
    sample = next(s for s in report.samples if s["completion"].strip())
    assert sample["toxicity"] == pytest.approx(unsafe_probabilities([sample["completion"]], str(classifier_dir))[0])


def test_safety_scores_by_hand_and_label_rules(classifier_dir):
    from transformers import AutoModelForSequenceClassification

    from mlgrpo.rewards.model import load_tokenizer

    text = "двадцать один"
    model = AutoModelForSequenceClassification.from_pretrained(classifier_dir)
    ids = load_tokenizer(classifier_dir)(text, return_tensors="pt")
    with torch.no_grad():
        expected = model(**ids).logits.softmax(-1)[0, 1].item()
    assert unsafe_probabilities([text, "  "], str(classifier_dir)) == [pytest.approx(expected, rel=1e-5), None]
    assert unsafe_probabilities([text], str(classifier_dir), label="neutral")[0] == pytest.approx(1 - expected,
                                                                                                   rel=1e-5)
    with pytest.raises(UserError, match="cannot tell which of its labels .LABEL_0, LABEL_1"):
        unsafe_label({0: "LABEL_0", 1: "LABEL_1"}, None)
    with pytest.raises(UserError, match="no label 'bad'"):
        unsafe_label({0: "neutral", 1: "toxic"}, "bad")
    with pytest.raises(UserError, match="not a saved model folder"):
        unsafe_probabilities(["x"], str(classifier_dir / "missing"))


@pytest.mark.parametrize(
    "kwargs, message",
    [({"records": []}, "no records"), ({"records": [{"language": "en"}]}, "have no prompt"),
     ({"max_new_tokens": 0}, "max_new_tokens must be"),
     ({"sampled_k": 2, "temperature": 0.0}, "temperature must be a positive number"),
     ({"reward_weights": [1.0]}, "1 reward weights for 0 reward functions")],
)
def test_bad_arguments_are_user_errors(tiny_policy, numbers_eval, kwargs, message):
    model, tokenizer = tiny_policy
    args = {"records": numbers_eval[:1], **kwargs}
    with pytest.raises(UserError, match=message):
        evaluate_policy(model, tokenizer, args.pop("records"), **args)
