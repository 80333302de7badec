"""Greedy completions and exact match: the measurement that decides when the warm start stops.

A completion matches when, cut at EOS, stripped of surrounding whitespace and NFC-normalised, it
equals one of the record's accepted answers. This is the build's own yardstick for "the starting
reward is neither 0 nor saturated"; the platform's reward functions live elsewhere.
Knows nothing about training, TRL or the cache.
"""

from __future__ import annotations

from collections import defaultdict

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from mlgrpo.text import normalize


def is_exact_match(completion: str, answers: list[str]) -> bool:
    """
    >>> is_exact_match(" forty-two ", ["forty-two", "forty two"])
    True
    >>> is_exact_match("forty", ["forty-two"])
    False
    """
    text = normalize(completion.strip())
    return any(text == normalize(answer.strip()) for answer in answers)


@torch.inference_mode()
def greedy_completions(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: list[str],
    *,
    max_new_tokens: int,
    batch_size: int = 128,
) -> list[str]:
    """Greedy decoding of each prompt; returns the new text only, without special tokens."""
    was_training = model.training
    model.eval()
    outputs: list[str] = []
    try:
        for start in range(0, len(prompts), batch_size):
            # Left padding: new tokens go on the right of every row, after its last prompt token.
            chunk = prompts[start : start + batch_size]
            batch = tokenizer(chunk, return_tensors="pt", padding=True, padding_side="left")
            batch = batch.to(model.device)
            generated = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
            new_tokens = generated[:, batch["input_ids"].shape[1] :]
            outputs += tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
    finally:
        model.train(was_training)
    return outputs


def exact_match_by_language(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    records: list[dict],
    *,
    max_new_tokens: int,
) -> tuple[dict[str, float], list[str]]:
    """Share of records answered exactly, per language, and the completions in record order."""
    completions = greedy_completions(
        model, tokenizer, [r["prompt"] for r in records], max_new_tokens=max_new_tokens
    )
    hits: dict[str, list[bool]] = defaultdict(list)
    for record, completion in zip(records, completions):
        hits[record["language"]].append(is_exact_match(completion, record["answers"]))
    return {lang: sum(h) / len(h) for lang, h in sorted(hits.items())}, completions


def macro_mean(by_language: dict[str, float]) -> float:
    """Mean over languages, each counted once whatever its number of records.

    >>> macro_mean({"en": 0.5, "ja": 0.25})
    0.375
    """
    return sum(by_language.values()) / len(by_language) if by_language else 0.0
