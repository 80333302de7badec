"""A policy's architecture without its weights: the config of a model spec, and its parameters counted on
torch's meta device (no memory, no file read beyond config.json), with and without a LoRA adapter.

Used for memory estimates before anything is built or downloaded: the tiny model's config comes from its
settings, gemma-3-270m's from the config shipped beside models/gguf.py, a folder's or a cached hub
model's from its config.json. Knows nothing about training or memory itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlgrpo.models.cache import default_models_dir


@dataclass(frozen=True)
class Architecture:
    config: Any  # a transformers PretrainedConfig
    tokenizer_folder: str | None  # where the tokenizer is on disk, if it is (None: not built or cached yet)


@dataclass(frozen=True)
class Counts:
    parameters: int  # distinct parameters (tied embeddings once)
    backbone: int  # the decoder without the LM head
    largest: int  # elements of the largest tensor (the embedding, for any real vocabulary)
    lora: int  # one adapter with the given settings; 0 without
    layers: int
    hidden: int
    vocab: int
    kv_width: int  # num_key_value_heads x head_dim


def architecture(spec: str) -> Architecture | None:
    """The config (and tokenizer folder) of a model spec, or None when it cannot be known offline yet
    (a hub model that is not cached, a GGUF file not converted)."""
    from transformers import AutoConfig

    from mlgrpo.models.loading import classify_spec

    kind, value = classify_spec(spec)
    if kind == "tiny":
        from mlgrpo.models.architecture import tiny_config
        from mlgrpo.models.cache import is_complete
        from mlgrpo.models.settings import folder_name, parse_options, settings_key

        settings = parse_options(value)
        folder = default_models_dir() / folder_name(settings)
        built = is_complete(folder, settings_key(settings))
        config = AutoConfig.from_pretrained(folder) if built else tiny_config(settings)
        return Architecture(config, str(folder) if built else None)
    if kind in ("packaged", "gguf"):
        from mlgrpo.models.gguf import PACKAGED, converted_folder

        folder = converted_folder(value)
        if folder is not None:
            return Architecture(AutoConfig.from_pretrained(folder), str(folder))
        if kind == "packaged":
            raw = json.loads(PACKAGED[value].config_path.read_text(encoding="utf-8"))
            return Architecture(AutoConfig.for_model(**raw), None)
        return None
    if kind == "local":
        return Architecture(AutoConfig.from_pretrained(value), value) if Path(value, "config.json").is_file() else None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(value, "config.json")
    if not isinstance(cached, str):
        return None
    return Architecture(AutoConfig.from_pretrained(Path(cached).parent), str(Path(cached).parent))


def count(config, lora: dict | None) -> Counts:
    """Parameter counts of a causal LM with `config`, built on the meta device, and of a LoRA adapter."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    parameters = sum(p.numel() for p in model.parameters())
    backbone = sum(p.numel() for p in model.base_model.parameters())
    largest = max(p.numel() for p in model.parameters())
    adapter = 0
    if lora:
        from peft import LoraConfig, get_peft_model

        peft = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **lora))
        adapter = sum(p.numel() for n, p in peft.named_parameters() if "lora_" in n)
    text = config.get_text_config()
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    return Counts(parameters=parameters, backbone=backbone, largest=largest, lora=adapter,
                  layers=text.num_hidden_layers, hidden=text.hidden_size, vocab=text.vocab_size,
                  kv_width=kv_heads * head_dim)
