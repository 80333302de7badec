"""Completions of a policy for evaluation, and the policy's KL to a reference model on them.

Prompts are tokenized as TRL does (plain text with the tokenizer's defaults; chat messages through
the chat template with the generation prompt), left-padded in batches so that new tokens follow every
prompt, and generated under torch.no_grad on the model's device. Greedy by default; sampling (for
pass@k) uses temperature only, no top-k or top-p, like TRL's rollouts, inside a forked RNG so that
an evaluation in the middle of training leaves the training run's random state as it was.
Knows nothing about metrics, rewards or MLflow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from mlgrpo.errors import UserError


@dataclass
class Completions:
    texts: list[str]  # (N * samples) decoded completions, special tokens skipped; row i's samples are adjacent
    ids: list[list[int]]  # the completion's token ids, up to and including EOS when one was generated
    ended: list[bool]  # True when the completion stopped at EOS (False: cut at max_new_tokens)

    def lengths(self) -> list[int]:
        """Generated tokens per completion, EOS not counted."""
        return [len(ids) - int(ended) for ids, ended in zip(self.ids, self.ended)]


def prompt_token_ids(tokenizer, prompts: Sequence) -> list[list[int]]:
    """Token ids of each prompt: a string as the tokenizer encodes it, chat messages through its template."""
    out = []
    for index, prompt in enumerate(prompts):
        if isinstance(prompt, str):
            out.append(list(tokenizer(prompt)["input_ids"]))
        elif isinstance(prompt, (list, tuple)):
            rendered = tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=True,
                                                     return_dict=True)
            out.append(list(rendered["input_ids"]))
        else:
            raise UserError(f"record {index}: prompt is a {type(prompt).__name__}; it must be text or chat messages")
        if not out[-1]:
            raise UserError(f"record {index}: the prompt encodes to no tokens; give a non-empty prompt")
    return out


def left_pad(rows: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), each (B, T), padded on the left.

    >>> ids, mask = left_pad([[5, 6, 7], [8]], 0, "cpu")
    >>> ids.tolist(), mask.tolist()
    ([[5, 6, 7], [0, 0, 8]], [[1, 1, 1], [0, 0, 1]])
    """
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(list(row), dtype=torch.long)
            mask[i, width - len(row):] = 1
    return ids.to(device), mask.to(device)


def cut_at_eos(new_tokens: Sequence[int], eos_ids: frozenset[int]) -> tuple[list[int], bool]:
    """The generated ids up to and including the first EOS, and whether there was one.

    >>> cut_at_eos([4, 5, 2, 2, 2], frozenset({2})), cut_at_eos([4, 5], frozenset({2}))
    (([4, 5, 2], True), ([4, 5], False))
    """
    for i, token in enumerate(new_tokens):
        if token in eos_ids:
            return list(new_tokens[:i + 1]), True
    return list(new_tokens), False


def _eos_ids(model, tokenizer) -> frozenset[int]:
    ids = model.generation_config.eos_token_id
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return frozenset(ids)


def pad_id(tokenizer) -> int:
    """The id batches are padded with: the pad token, else EOS (as load_policy sets it)."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad is None:
        raise UserError("the tokenizer has neither a pad nor an EOS token; batched generation needs one "
                        "(set tokenizer.pad_token)")
    return pad


@contextlib.contextmanager
def _sampling_rng(seed: int, device: torch.device) -> Iterator[None]:
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


@torch.no_grad()
def generate(model, tokenizer, prompt_ids: Sequence[Sequence[int]], *, max_new_tokens: int, batch_size: int,
             sample: bool = False, samples: int = 1, temperature: float = 1.0, seed: int = 0, top_p: float = 1.0,
             top_k: int = 0) -> Completions:
    """Greedy completions, or (sample=True) `samples` sampled completions per prompt (top_p / top_k as TRL's
    rollouts take them from GRPOConfig; the defaults switch both off, as TRL's do).

    The caller puts the model in eval mode; this only generates.
    """
    pad, eos_ids = pad_id(tokenizer), _eos_ids(model, tokenizer)
    options = {"do_sample": False} if not sample else {
        "do_sample": True, "temperature": temperature, "top_k": top_k, "top_p": top_p, "num_return_sequences": samples}
    texts, ids, ended = [], [], []
    rng = _sampling_rng(seed, model.device) if sample else contextlib.nullcontext()
    with rng:
        for start in range(0, len(prompt_ids), batch_size):
            input_ids, mask = left_pad(prompt_ids[start:start + batch_size], pad, model.device)
            output = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                    pad_token_id=pad, eos_token_id=sorted(eos_ids) or None, **options)
            for row in output[:, input_ids.shape[1]:].tolist():
                row_ids, row_ended = cut_at_eos(row, eos_ids)
                ids.append(row_ids)
                ended.append(row_ended)
                texts.append(tokenizer.decode(row_ids, skip_special_tokens=True))
    return Completions(texts, ids, ended)


def _completion_logprobs(model, input_ids, mask, width: int) -> torch.Tensor:
    """(B, width, V) log-probabilities of the tokens after each of the last `width` positions."""
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding must not shift RoPE positions
    logits = model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                   logits_to_keep=width + 1).logits[:, :-1]
    return torch.log_softmax(logits.float(), dim=-1)


@torch.no_grad()
def completion_kl(model, reference, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]],
                  *, pad_id: int, batch_size: int = 8) -> list[float | None]:
    """Per completion, the mean over its tokens of KL(policy || reference) of the next-token distributions.

    Exact at each position (a sum over the whole vocabulary), not a sampled estimate: greedy
    completions are not samples of the policy, so log-ratio estimators (k1, k3) would be biased on
    them. None for an empty completion. Both models must share the tokenizer's vocabulary.
    """
    kls: list[float | None] = []
    for start in range(0, len(prompt_ids), batch_size):
        done = completion_ids[start:start + batch_size]
        width = max(len(c) for c in done)
        if width == 0:
            kls.extend([None] * len(done))
            continue
        rows = [list(p) + list(c) for p, c in zip(prompt_ids[start:start + batch_size], done)]
        logp = _completion_logprobs(model, *left_pad(rows, pad_id, model.device), width)
        logq = _completion_logprobs(reference, *left_pad(rows, pad_id, reference.device), width).to(logp.device)
        if logp.shape[-1] != logq.shape[-1]:
            raise UserError(f"the reference model has {logq.shape[-1]} output tokens and the policy "
                            f"{logp.shape[-1]}: KL needs models that share one vocabulary")
        per_position = (logp.exp() * (logp - logq)).sum(-1)  # (B, width)
        for row, completion in enumerate(done):
            n = len(completion)
            kls.append(per_position[row, width - n:].mean().item() if n else None)
    return kls
