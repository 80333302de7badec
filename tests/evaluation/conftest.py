"""Shared test material: real suite records, a tiny random Qwen2 policy with a byte-level BPE trained
here (no hub, seconds), and a tiny text classifier saved to a folder (safety and reward-model paths)."""

from __future__ import annotations

import pytest

LANGUAGES = ("en", "ja", "ar", "sw", "ru")


@pytest.fixture(scope="session")
def numbers_eval() -> list[dict]:
    """8 eval-split records per language of LANGUAGES from the numbers suite (real CLDR/num2words answers)."""
    from mlgrpo.data.suites import load_suite

    return load_suite("numbers", split="eval", per_language=dict.fromkeys(LANGUAGES, 8))


@pytest.fixture(scope="session")
def tiny_policy(numbers_eval):
    """(model, tokenizer): hidden 32, 1 layer, random weights; the tokenizer knows the suite's text."""
    from mlgrpo.data.suites import load_suite
    from mlgrpo.models.architecture import init_model
    from mlgrpo.models.settings import TinySettings
    from mlgrpo.models.tokenizer import train_tokenizer

    train = load_suite("numbers", per_language=dict.fromkeys(LANGUAGES, 40))
    tokenizer = train_tokenizer([f"{r['prompt']} {r['reference']}" for r in train + numbers_eval], 400)
    settings = TinySettings(languages=LANGUAGES, vocab_size=400, hidden_size=32, num_layers=1, num_heads=2,
                            intermediate_size=64, max_positions=64)
    return init_model(settings, tokenizer), tokenizer


@pytest.fixture(scope="session")
def other_policy(tiny_policy):
    """A second random model (another seed) with the same tokenizer: a reference that differs."""
    import dataclasses

    from mlgrpo.models.architecture import init_model
    from mlgrpo.models.settings import TinySettings

    settings = TinySettings(languages=LANGUAGES, vocab_size=400, hidden_size=32, num_layers=1, num_heads=2,
                            intermediate_size=64, max_positions=64)
    return init_model(dataclasses.replace(settings, seed=1), tiny_policy[1])


@pytest.fixture(scope="session")
def classifier_dir(tmp_path_factory, tiny_policy):
    """A saved 2-label Qwen2 sequence classifier (labels "neutral", "toxic") with the policy's tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForSequenceClassification

    tokenizer = tiny_policy[1]
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128, num_labels=2,
                         id2label={0: "neutral", 1: "toxic"}, label2id={"neutral": 0, "toxic": 1},
                         pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("classifier")
    Qwen2ForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
