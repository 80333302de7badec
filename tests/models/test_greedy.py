"""Exact match and greedy completions: hand-worked matching rules, and batched (left-padded)
generation equal to generating one prompt at a time."""

from __future__ import annotations

import pytest

from mlgrpo.data.suites import load_suite
from mlgrpo.models.greedy import exact_match_by_language, greedy_completions, is_exact_match, macro_mean


@pytest.mark.parametrize(
    ("completion", "answers", "expected"),
    [
        (" forty-two", ["forty-two"], True),  # the space the prompt leaves before the answer
        ("forty-two\n", ["forty two", "forty-two"], True),  # any accepted answer
        ("forty-two and more", ["forty-two"], False),  # no prefix credit
        ("caf\u00e9", ["cafe\u0301"], True),  # NFC: composed and decomposed é are one answer
        ("", ["zero"], False),
    ],
)
def test_is_exact_match(completion, answers, expected):
    assert is_exact_match(completion, answers) is expected


def test_macro_mean_counts_each_language_once():
    # 3 languages: (1.0 + 0.5 + 0.0) / 3 = 0.5, whatever the record counts behind each share.
    assert macro_mean({"en": 1.0, "ja": 0.5, "ru": 0.0}) == pytest.approx(0.5)
    assert macro_mean({}) == 0.0


@pytest.fixture(scope="module")
def model_and_tokenizer(built):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(built[1]), AutoTokenizer.from_pretrained(built[1])


def test_batched_generation_equals_one_prompt_at_a_time(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    prompts = [r["prompt"] for r in load_suite("numbers", languages=["en", "ja", "ru"], split="eval")[::40]]
    lengths = {len(tokenizer(p)["input_ids"]) for p in prompts}
    assert len(lengths) > 1, "prompts of one length would not exercise the left padding"
    alone = [greedy_completions(model, tokenizer, [p], max_new_tokens=6)[0] for p in prompts]
    tokenizer.padding_side = "right"  # a caller's setting must not break batched generation
    try:
        batched = greedy_completions(model, tokenizer, prompts, max_new_tokens=6)
    finally:
        tokenizer.padding_side = "left"
    assert batched == alone
    assert model.training is False  # from_pretrained gives eval mode, and the call restored it


def test_generation_restores_training_mode(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    model.train()
    try:
        greedy_completions(model, tokenizer, ["<en> number: 5 ->"], max_new_tokens=2)
        assert model.training is True
    finally:
        model.eval()


def test_exact_match_by_language_scores_what_was_generated(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    records = load_suite("numbers", languages=["en", "ru"], split="eval", per_language={"en": 3, "ru": 2})
    outputs = greedy_completions(model, tokenizer, [r["prompt"] for r in records], max_new_tokens=6)
    # Make the records' answers what the model says for the first en and the first ru record only.
    records[0]["answers"] = [outputs[0]]
    records[3]["answers"] = [outputs[3]]
    by_language, completions = exact_match_by_language(model, tokenizer, records, max_new_tokens=6)
    assert completions == outputs
    assert by_language == {"en": pytest.approx(1 / 3), "ru": pytest.approx(1 / 2)}
