"""Parameter counts on the meta device equal those of the real model, with and without LoRA."""

from __future__ import annotations

from mlgrpo.models.architecture import init_model, tiny_config
from mlgrpo.models.settings import TinySettings
from mlgrpo.models.shape import architecture, count
from mlgrpo.models.tokenizer import train_tokenizer

LORA = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}


def test_meta_counts_are_the_real_model_s():
    from peft import LoraConfig, get_peft_model

    settings = TinySettings(hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128, vocab_size=300)
    tokenizer = train_tokenizer(["<en> number: 1 -> one", "<ru> number: 2 -> два"] * 20, settings.vocab_size)
    model = init_model(settings, tokenizer)
    counted = count(model.config, LORA)
    assert counted.parameters == sum(p.numel() for p in model.parameters())
    assert counted.backbone == sum(p.numel() for p in model.model.parameters())
    assert counted.largest == model.model.embed_tokens.weight.numel() == max(p.numel() for p in model.parameters())
    assert (counted.layers, counted.hidden, counted.vocab, counted.kv_width) == (2, 64, len(tokenizer), 64)
    peft = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **LORA))
    assert counted.lora == sum(p.numel() for n, p in peft.named_parameters() if "lora_" in n)
    assert count(model.config, None).lora == 0


def test_tiny_shape_without_a_tokenizer_uses_the_vocabulary_setting():
    settings = TinySettings(vocab_size=512)
    assert tiny_config(settings).vocab_size == 512 and tiny_config(settings).hidden_size == settings.hidden_size


def test_architectures_known_before_anything_is_built_or_downloaded(monkeypatch, tmp_path):
    monkeypatch.setenv("MLGRPO_CACHE", str(tmp_path))  # nothing built or converted here
    gemma = architecture("gemma-3-270m")  # the config shipped beside models/gguf.py
    assert gemma.tokenizer_folder is None and gemma.config.num_hidden_layers == 18
    assert count(gemma.config, None).parameters == 268_098_176
    tiny = architecture("tiny:hidden_size=128,num_layers=2")
    assert tiny.tokenizer_folder is None and tiny.config.hidden_size == 128
    assert architecture("mlgrpo-test/not-in-any-cache") is None  # a hub model that is not cached
