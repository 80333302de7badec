"""A learned reward: a local sequence-classification model scores prompt + completion.

The model is a directory saved with `save_pretrained` (weights, config and tokenizer); nothing is
downloaded. It is loaded once per (path, device) and reused, evaluated in batches without gradients.
Like TRL's own reward-model path, the scored text is the prompt followed directly by the completion
(through the tokenizer's chat template for conversational data), and the reward is a logit.
transformers and torch are imported only when a reward model is used.
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.registry import register
from mlgrpo.rewards.texts import as_text


def scored_texts(prompts: Sequence, completions: Sequence, chat_template=None) -> list[str]:
    """The texts the reward model reads: prompt + completion, or the chat rendered by `chat_template`
    (a callable taking a message list) when the data is conversational.

    >>> scored_texts(["2+2=", "Capital of Kenya: "], ["4", "Nairobi"])
    ['2+2=4', 'Capital of Kenya: Nairobi']
    """
    texts = []
    for prompt, completion in zip(prompts, completions, strict=True):
        if chat_template is not None and not isinstance(prompt, str) and not isinstance(completion, str):
            texts.append(chat_template(list(prompt) + list(completion)))
        else:
            texts.append(as_text(prompt) + as_text(completion))
    return texts


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


# Tokenizer classes that mean "exactly the pipeline in tokenizer.json".
_GENERIC_TOKENIZERS = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(folder: Path):
    """The tokenizer saved in `folder`, as saved.

    transformers 5.24's AutoTokenizer picks the model type's class (Qwen2Tokenizer for a Qwen2
    classifier) even when tokenizer_config.json names the generic class; that class rebuilds its own
    pre-tokenizer and adds tokens, so the ids no longer match the model's embeddings (measured on a
    byte-level BPE saved next to a Qwen2 config: different ids and a 301st token for 300 embeddings).
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config_file = folder / "tokenizer_config.json"
    declared = None
    if config_file.is_file():
        declared = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
    if declared in _GENERIC_TOKENIZERS:
        return PreTrainedTokenizerFast.from_pretrained(folder, local_files_only=True)
    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


def load_local_classifier(path: str, what: str):
    """(AutoModelForSequenceClassification, tokenizer) from a local folder, ready to score padded batches.

    Shared by the reward model and evaluation's safety classifier. `what` names the caller in errors.
    Nothing is downloaded; the tokenizer must fit the model's embeddings; a pad token is set (EOS when
    the tokenizer has none) and given to the model, since decoder classifiers find the last real token
    through pad_token_id.
    """
    from transformers import AutoModelForSequenceClassification

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise UserError(f"{what}: {path!r} is not a saved model folder (no config.json); give the local "
                        "folder written by save_pretrained (models are never downloaded)")
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True)
    tokenizer = load_tokenizer(folder)
    embeddings = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > embeddings:
        raise UserError(f"{what}: the tokenizer in {path!r} has {len(tokenizer)} tokens but the model only "
                        f"{embeddings} embeddings; save the tokenizer the model was trained with")
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise UserError(f"{what}: the tokenizer in {path!r} has neither a pad nor an eos token; "
                            "batches need one to pad with (set pad_token and save it again)")
        tokenizer.pad_token = tokenizer.eos_token
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


@functools.lru_cache(maxsize=2)
def load_reward_model(path: str, device: str = "auto"):
    """(model, tokenizer) from a local directory, in eval mode on `device`; cached, so loaded once."""
    model, tokenizer = load_local_classifier(path, "reward_model")
    # Keep the end of long inputs: the completion is at the end and it is what is being judged.
    tokenizer.truncation_side = "left"
    return model.to(_resolve_device(device)).eval(), tokenizer


def _check_model(params: Mapping[str, Any]) -> None:
    path = params.get("path")
    if not isinstance(path, (str, Path)):
        raise UserError(f"reward_model: params.path must be a local model directory, got {path!r}")
    batch_size, max_length = params.get("batch_size", 16), params.get("max_length", 512)
    if not (isinstance(batch_size, int) and batch_size > 0 and isinstance(max_length, int) and max_length > 0):
        raise UserError(f"reward_model: batch_size and max_length must be positive integers, got {batch_size!r} "
                        f"and {max_length!r}")
    model, _ = load_reward_model(str(path), params.get("device", "auto"))
    index = params.get("label_index", 0)
    if not isinstance(index, int) or not 0 <= index < model.config.num_labels:
        raise UserError(f"reward_model: label_index {index!r} is outside the model's {model.config.num_labels} "
                        "output(s)")


@register("reward_model", check=_check_model)
def reward_model(prompts: Sequence, completions: Sequence, *, path: str, batch_size: int = 16,
                 max_length: int = 512, device: str = "auto", label_index: int = 0,
                 add_special_tokens: bool = False, **_: Any) -> list[float | None]:
    """The logit `label_index` of a local sequence classifier for each prompt + completion.

    Inputs are scored `batch_size` at a time, right-padded and cut to `max_length` tokens from the
    left; padding does not change a score (tests check batched against one-by-one scoring). Special
    tokens are not added, as in TRL (chat templates carry their own); set `add_special_tokens` for an
    encoder classifier trained with them ([CLS] ... [SEP]). Its
    values come from a model, not from a rule, so there is no hand-worked value here; see
    `scored_texts` for what the model reads.
    """
    import torch

    model, tokenizer = load_reward_model(str(path), device)
    template = None
    if getattr(tokenizer, "chat_template", None):
        template = functools.partial(tokenizer.apply_chat_template, tokenize=False)
    texts = scored_texts(prompts, completions, template)
    rewards: list[float | None] = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start:start + batch_size], return_tensors="pt", padding=True,
                              padding_side="right", truncation=True, max_length=max_length,
                              add_special_tokens=add_special_tokens).to(model.device)
            logits = model(**batch).logits  # (batch, num_labels)
            rewards.extend(logits[:, label_index].float().tolist())
    return rewards
