"""What one rollout carries between the trainer's stages: the record the step trains on (Rollout), the
gathered rows' record (BatchRows) and the advantages computed for them (RolloutAdvantages).

N counts the rows of the gathered generation batch (all processes, TRL's order), B this process's rows, P the
prompt tokens, T the completion tokens, F the reward functions. Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from dataclasses import dataclass

import torch
from torch import Tensor

from mlgrpo.algorithms import InterGroupRows
from mlgrpo.errors import UserError

ROW_COLUMN = "mlgrpo_row"  # dataset row index, added when the sampler stratifies by earlier rewards


@dataclass
class BatchRows:
    """What the gathered batch knows about its rows (all processes, TRL's order)."""

    prompts: list[str]  # (N,) each row's prompt text (prompt_text), for grouping
    languages: list[str]  # (N,) each row's language code ("und" when unknown)
    dataset_rows: list[int] | None  # (N,) dataset index of each row, when the sampler needs rewards per row
    completion_lengths: list[int]  # (N,) completion tokens of each row
    # (B,) share of each of this process's completions in its row's language (None: no letters), being
    # measured in the background (MultilingualGRPOTrainer._consistency).
    consistency: Future | None
    rewards_per_func: Tensor  # (N, F) reward of each function (clipped where set), NaN where it returned None
    clip_metrics: dict[str, Tensor]  # rewards/<name>/clipped_low ... of the functions with bounds


@dataclass
class RolloutAdvantages:
    """What `_advantages` returns for one generation batch."""

    local: Tensor  # (B,) or (B, T): this process's rows, as the loss reads them
    per_row: Tensor  # (N,) one number per completion of the gathered batch (the mean over tokens for (N, T))
    metrics: dict[str, Tensor]
    regularizer_rows: InterGroupRows | None = None  # gathered; None when the inter-group regulariser is off
    old_values: Tensor | None = None  # (B, T) the critic's values at the rollout (PPO), this process's rows
    returns: Tensor | None = None  # (B, T) the critic's targets (PPO)
    value_mask: Tensor | None = None  # (B, T) tokens with a value target (PPO)


def fields_of(record) -> dict:
    """A dataclass's fields by name, the values themselves (dataclasses.asdict would deep-copy every tensor)."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def prompt_text(prompt) -> str:
    """A prompt as text for hashing and grouping: plain text, or the last user message of a conversation."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content", "")
        return content if isinstance(content, str) else str(content)
    return str(prompt)


# TRL's generation batch (GRPOTrainer._generate_and_score_completions) -> Rollout's fields. TRL's advantages
# are not taken: mlgrpo computes its own. TRL's per-row forward inputs go to `model_inputs`; any other field
# (images, which TRL splits by their grid, not by row) is refused by name.
TRL_FIELDS = {"prompt_ids": "prompt_ids", "prompt_mask": "prompt_mask", "completion_ids": "completion_ids",
              "completion_mask": "completion_mask", "tool_mask": "tool_mask", "old_per_token_logps": "old_logps",
              "ref_per_token_logps": "ref_logps", "sampling_per_token_logps": "sampling_logps",
              "importance_sampling_ratio": "importance_weights", "num_items_in_batch": "batch_tokens"}
FORWARD_FIELDS = ("token_type_ids", "mm_token_type_ids")


@dataclass
class Rollout:
    """Everything the step trains on, for this process's B rows: a whole rollout, or one micro-batch of it.

    The step (trainers/step.py) shuffles a rollout's rows and splits them into micro-batches (`shuffled`,
    `split`); every (B, ...) field travels with its row. Fields that an arm does not use are None.
    """

    prompt_ids: Tensor  # (B, P) int64 prompt tokens, left-padded
    prompt_mask: Tensor  # (B, P) 1 on prompt tokens
    completion_ids: Tensor  # (B, T) int64 sampled completion tokens (SFT: the target's), right-padded
    completion_mask: Tensor  # (B, T) 1 on completion tokens, up to and including the end token
    languages: list[str]  # (B,) each row's language code ("und" when unknown)
    advantages: Tensor | None = None  # (B,) A_i per completion, or (B, T) A_t per token (GAE); None: SFT
    rewards: Tensor | None = None  # (B, F) each reward function's value (clipped where set), NaN: no reward
    group_ids: Tensor | None = None  # (B,) int64 the row's baseline group in the rollout (grouping registry)
    tool_mask: Tensor | None = None  # (B, T) 0 on tool-output tokens inside a completion (TRL's tools)
    old_logps: Tensor | None = None  # (B, T) log pi_old(a_t|s_t) at the rollout; None: on-policy (the step's own)
    ref_logps: Tensor | None = None  # (B, T) log pi_ref(a_t|s_t), when the KL sits in the loss (beta > 0)
    sampling_logps: Tensor | None = None  # (B, T) log-probs of the inference engine that sampled (vLLM)
    importance_weights: Tensor | None = None  # (B, T) vLLM's pi_old / pi_sampler correction
    old_values: Tensor | None = None  # (B, T) V(s_t) of the critic at the rollout (PPO)
    returns: Tensor | None = None  # (B, T) the critic's targets, A_t + V(s_t) (PPO)
    value_mask: Tensor | None = None  # (B, T) 1 on tokens with a value target (PPO: rows with a reward)
    regularizer: InterGroupRows | None = None  # (B,) each: the inter-group regulariser's whole-group statistics
    batch_tokens: Tensor | None = None  # 0-d: completion tokens of the whole generation batch, all processes
    model_inputs: dict[str, Tensor] = dataclasses.field(default_factory=dict)  # (B, ...) TRL's extra forward inputs

    @property
    def loss_mask(self) -> Tensor:
        """(B, T) the completion tokens the policy trains on: completion_mask, without tool outputs."""
        return self.completion_mask if self.tool_mask is None else self.completion_mask * self.tool_mask

    @property
    def rows(self) -> int:
        return self.completion_ids.size(0)

    def sequences(self) -> tuple[Tensor, Tensor]:
        """((B, P + T) token ids, their attention mask): each prompt followed by its completion."""
        return (torch.cat([self.prompt_ids, self.completion_ids], dim=1),
                torch.cat([self.prompt_mask, self.completion_mask], dim=1))

    @classmethod
    def from_trl(cls, batch: dict, languages: list[str], **fields) -> Rollout:
        """The record of TRL's generation batch (its advantages left out), with mlgrpo's `fields` added."""
        unknown = sorted(set(batch) - set(TRL_FIELDS) - set(FORWARD_FIELDS) - {"advantages"})
        if unknown:
            raise UserError(f"mlgrpo's training step does not handle TRL's batch fields {', '.join(unknown)} (vision "
                            "or other multimodal inputs); train this model with a text-only dataset")
        return cls(**{TRL_FIELDS[key]: value for key, value in batch.items() if key in TRL_FIELDS},
                   model_inputs={key: batch[key] for key in FORWARD_FIELDS if batch.get(key) is not None},
                   languages=list(languages), **fields)

    def select(self, index: Tensor) -> Rollout:
        """The rows at `index` (B',) of every per-row field, in that order; 0-d fields unchanged."""
        return self._map(lambda x: x[index.to(x.device)], lambda xs: [xs[i] for i in index.tolist()])

    def shuffled(self) -> Rollout:
        """The rows in a random order, drawn from torch's global generator as TRL's shuffle_sequence_dict."""
        return self.select(torch.randperm(self.rows))

    def split(self, parts: int) -> list[Rollout]:
        """`parts` micro-batches of consecutive rows, B // parts each (TRL's split_tensor_dict)."""
        size = self.rows // parts
        return [self.select(torch.arange(i * size, (i + 1) * size)) for i in range(parts)]

    def to(self, device) -> Rollout:
        return self._map(lambda x: x.to(device), list, scalar=lambda x: x.to(device))

    def state(self) -> dict:
        """Tensors, strings and None only (torch.load(weights_only=True) reads it back: `from_state`)."""
        state = fields_of(self)
        if self.regularizer is not None:
            state["regularizer"] = fields_of(self.regularizer)
        return state

    @classmethod
    def from_state(cls, state: dict) -> Rollout:
        rows = state.get("regularizer")
        return cls(**{**state, "regularizer": None if rows is None else InterGroupRows(**rows)})

    def _map(self, per_row, strings, scalar=lambda x: x) -> Rollout:
        def apply(value):
            if value is None:
                return None
            if isinstance(value, list):
                return strings(value)
            if isinstance(value, dict):
                return {k: apply(v) for k, v in value.items()}
            if isinstance(value, InterGroupRows):
                return InterGroupRows(**{k: apply(v) for k, v in fields_of(value).items()})
            return scalar(value) if value.dim() == 0 else per_row(value)
        return dataclasses.replace(self, **{f.name: apply(getattr(self, f.name)) for f in dataclasses.fields(self)})
