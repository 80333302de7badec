"""What one rollout carries between the trainer's stages, besides TRL's batch dict: the gathered rows' record
(BatchRows), the advantages trained on (RolloutAdvantages), and the columns mlgrpo adds to TRL's batch.

N counts the rows of the gathered generation batch (all processes, TRL's order), B this process's rows, T the
completion tokens, F the reward functions. Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from torch import Tensor

from mlgrpo.algorithms import InterGroupRows

# The inter-group regulariser's whole-group statistics, one column per InterGroupRows field, added to the
# batch (TRL splits and shuffles every (B, ...) tensor of it into micro-batches).
INTER_GROUP_COLUMNS = {"group_ids": "mlgrpo_ig_group", "centred_mean": "mlgrpo_ig_centred",
                       "group_size": "mlgrpo_ig_size", "groups": "mlgrpo_ig_groups"}
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


def prompt_text(prompt) -> str:
    """A prompt as text for hashing and grouping: plain text, or the last user message of a conversation."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content", "")
        return content if isinstance(content, str) else str(content)
    return str(prompt)

