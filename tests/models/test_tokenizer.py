"""The byte-level BPE tokenizer: lossless in every script, no unknown token, digits and CJK split,
and the same tokens whether used as trained or as AutoTokenizer loads it back."""

from __future__ import annotations

import pytest

from mlgrpo.data.suites import available_suites, load_suite
from mlgrpo.models.tokenizer import EOS_TOKEN, PAD_TOKEN, mismatches, train_tokenizer


@pytest.fixture(scope="module")
def loaded(built):
    """The test build's tokenizer, as the rest of the platform (AutoTokenizer) reads it."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(built[1])


@pytest.fixture(scope="module")
def trained():
    """A tokenizer straight from training, on a few suite languages (no save, no load)."""
    languages = ["en", "ja", "ru", "ar"]
    records = load_suite("numbers", languages=languages, per_language=dict.fromkeys(languages, 200))
    return train_tokenizer([r["prompt"] + " " + r["reference"] for r in records], 600)


def _suite_texts(per_language: int) -> list[str]:
    """Prompts and answers of the suites in every language they have: 21 languages, 16 scripts.

    Dates are left out only for time: their text adds month names, in scripts already covered.
    """
    texts = []
    for name in ("numbers", "countries", "ui"):
        spec = available_suites()[name]
        counts = dict.fromkeys(spec.languages, per_language)
        records = load_suite(name, languages=list(spec.languages), split="eval", per_language=counts)
        texts += [text for r in records for text in (r["prompt"], *r["answers"])]
    return texts


def test_every_script_round_trips_without_unknown_tokens(loaded):
    # The test build saw only en, ja and ru; every other script must fall back to bytes, losslessly.
    texts = _suite_texts(per_language=3) + ["ไทย 😀 \u200c\t\n  two  spaces ", "é"]
    assert loaded.backend_tokenizer.model.unk_token is None  # byte-level BPE has no unknown token
    for text in texts:
        ids = loaded(text)["input_ids"]
        assert loaded.decode(ids) == text, text
        assert loaded.unk_token_id not in ids


def test_text_is_composed_to_nfc(loaded):
    # "e" + combining acute (NFD) comes back as the single code point "é", as mlgrpo.text.normalize does.
    assert loaded.decode(loaded("e\u0301")["input_ids"]) == "\u00e9"


def test_autotokenizer_cuts_the_same_tokens_as_training(trained, tmp_path):
    from transformers import AutoTokenizer, Qwen2Config

    trained.save_pretrained(tmp_path)
    Qwen2Config().save_pretrained(tmp_path)  # AutoTokenizer picks its class from the model type
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(loaded).__name__ == "Qwen2Tokenizer"  # the class that rebuilds its own pre-tokenizer
    texts = _suite_texts(per_language=20)
    assert len(texts) > 2000
    assert mismatches(trained, loaded, texts) == []


def test_mismatches_finds_a_tokenizer_that_cuts_differently(trained):
    other = train_tokenizer(["totally different text"] * 20, 300)
    assert mismatches(trained, other, ["<en> number: 5 -> five", ""]) == ["<en> number: 5 -> five"]


def test_special_tokens(loaded):
    assert (loaded.pad_token, loaded.eos_token) == (PAD_TOKEN, EOS_TOKEN)
    assert loaded.convert_tokens_to_ids([PAD_TOKEN, EOS_TOKEN]) == [0, 1]
    assert loaded.padding_side == "left"
    assert loaded(EOS_TOKEN)["input_ids"] == [1]  # one token, never split into bytes


def test_digits_and_cjk_characters_are_single_tokens(trained):
    tokens = trained.convert_ids_to_tokens(trained("246 二百")["input_ids"])
    # "Ġ" is the byte-level spelling of the space; each Han character is its 3 UTF-8 bytes merged.
    assert tokens == ["2", "4", "6", "Ġ", "äºĮ", "çĻ¾"]


def test_chat_template_puts_the_answer_after_a_space_and_ends_with_eos(loaded):
    messages = [{"role": "user", "content": "<en> number: 3 ->"}, {"role": "assistant", "content": "three"}]
    assert loaded.apply_chat_template(messages, tokenize=False) == f"<en> number: 3 -> three{EOS_TOKEN}"


def test_training_is_deterministic():
    texts = [r["prompt"] + " " + r["reference"] for r in load_suite("numbers", languages=["sw", "ar"])]
    first, second = train_tokenizer(texts, 500), train_tokenizer(texts, 500)
    assert first.backend_tokenizer.to_str() == second.backend_tokenizer.to_str()
