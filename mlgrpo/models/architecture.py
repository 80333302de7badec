"""The tiny policy's architecture: a Qwen2 decoder sized by TinySettings.

Qwen2 because it is a plain modern decoder (RoPE, RMSNorm, SwiGLU, grouped-query attention) that
TRL, PEFT and generation all support, so a tiny model exercises the same code paths as a real one.
Knows nothing about data, training or the cache.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedTokenizerBase, Qwen2Config, Qwen2ForCausalLM

from mlgrpo.models.settings import TinySettings


def tiny_config(settings: TinySettings, tokenizer: PreTrainedTokenizerBase | None = None) -> Qwen2Config:
    """The Qwen2 config of a tiny model; without a tokenizer (shape only) the vocabulary is settings.vocab_size."""
    return Qwen2Config(
        vocab_size=len(tokenizer) if tokenizer is not None else settings.vocab_size,
        hidden_size=settings.hidden_size,
        intermediate_size=settings.intermediate_size,
        num_hidden_layers=settings.num_layers,
        num_attention_heads=settings.num_heads,
        num_key_value_heads=settings.num_heads,
        max_position_embeddings=settings.max_positions,
        # Tied input/output embeddings: at hidden 128 an untied head would be a fifth of the model.
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id if tokenizer is not None else None,
        eos_token_id=tokenizer.eos_token_id if tokenizer is not None else None,
        bos_token_id=None,
        use_cache=True,
    )


def init_model(settings: TinySettings, tokenizer: PreTrainedTokenizerBase) -> Qwen2ForCausalLM:
    """Fresh weights drawn from `settings.seed` (the same seed gives the same tensors)."""
    torch.manual_seed(settings.seed)
    model = Qwen2ForCausalLM(tiny_config(settings, tokenizer))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in model.parameters())
