"""The places where mlgrpo relies on trl.GRPOTrainer's private behaviour (trl 1.16), in one file.

Each is pinned by tests/trainers/test_trl_hooks.py against stock TRL, so that a TRL upgrade that moves
one fails there, by name, rather than silently in a trainer:

- `PolicyLogpsCapture`: TRL's `_compute_loss` computes the policy's per-token log-probs with one call of
  `_get_per_token_logps_and_entropies` (with gradient). The inter-group regulariser reads that result
  instead of running a second forward pass of the policy.
- `replace_advantage_logs`: after `_generate_and_score_completions`, TRL has appended one value to
  `_metrics[mode]["reward_std"]` and `["frac_reward_zero_std"]` (of its own prompt groups) and the
  gathered advantages to `_logs["advantages"]` (the completions table). mlgrpo's advantages replace TRL's,
  so these are replaced by the values of the advantages trained on.
- `completion_log_rows` / `replace_completion_logs`: TRL's completions table (`_logs`: prompt, completion,
  rewards[name], extra[column], images) is a set of deques of one generation batch's rows, extended by each
  `_generate_and_score_completions`. Dynamic sampling calls it once per refill round and trains on a
  selection of their rows, so the table is rewritten with the rows trained on.
- `EpochSeekingRepeatSampler`: TRL's RepeatSampler draws epoch e's order as the e-th permutation of one
  generator seeded once.
- `set_group_size`: TRL reads `self.num_generations` afresh on every `_generate_and_score_completions` (the
  generation call's num_generations, used by vLLM to keep one prompt per group; the reward grouping
  `view(-1, num_generations)` behind its reward_std and frac_reward_zero_std logs). It caches it only in
  the train sampler (`_get_train_sampler`, replaced by mlgrpo's when a schedule is set), in
  `get_train_dataloader`'s iterable-dataset path (a schedule refuses iterable datasets) and in
  `num_generations_eval`'s default (evaluation keeps the first size). So setting the attribute before each
  rollout's generation is enough for a group-size schedule.
Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor
from trl.trainer.utils import RepeatSampler


class PolicyLogpsCapture:
    """Mixin for a trl.GRPOTrainer subclass: `with self.capturing_policy_logps() as found:` collects the
    (B, T) log-probs every gradient-carrying call of `_get_per_token_logps_and_entropies` returns."""

    _captured_logps: list[Tensor] | None = None

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(model, *args, **kwargs)
        if self._captured_logps is not None and torch.is_grad_enabled():
            self._captured_logps.append(out[0])
        return out

    @contextmanager
    def capturing_policy_logps(self) -> Iterator[list[Tensor]]:
        self._captured_logps = found = []
        try:
            yield found
        finally:
            self._captured_logps = None


def replace_advantage_logs(trainer, mode: str, advantages: Sequence[float], reward_std: float,
                           frac_zero_std: float) -> None:
    """TRL's logged advantage statistics of the generation batch just scored, replaced by mlgrpo's.

    advantages: one number per completion of the gathered batch, in TRL's order (the completions table's
    `advantage` column); reward_std: std of the reward the advantages come from; frac_zero_std: share of
    completions in baseline groups without reward spread (adv/frac_zero_std).
    """
    metrics = trainer._metrics[mode]
    for name, value in (("reward_std", reward_std), ("frac_reward_zero_std", frac_zero_std)):
        if metrics[name]:
            metrics[name][-1] = float(value)
    logged = trainer._logs["advantages"]
    for _ in range(min(len(advantages), len(logged))):
        logged.pop()
    logged.extend(float(a) for a in advantages)


def _row_columns(trainer) -> dict[tuple[str, ...], object]:
    logs = trainer._logs
    columns = {("prompt",): logs["prompt"], ("completion",): logs["completion"], ("images",): logs["images"]}
    columns.update({("rewards", name): column for name, column in logs["rewards"].items()})
    columns.update({("extra", name): column for name, column in logs["extra"].items()})
    return columns


def completion_log_rows(trainer, n: int) -> dict[tuple[str, ...], list]:
    """The last `n` rows of each column of TRL's completions table (those of the batch just scored); columns
    with fewer rows (images of a text-only run) are left out."""
    return {key: list(column)[-n:] for key, column in _row_columns(trainer).items() if len(column) >= n}


def replace_completion_logs(trainer, rows: dict[tuple[str, ...], list], n: int) -> None:
    """The last `n` rows of each column in `rows` replaced by the given ones (the rows trained on)."""
    columns = _row_columns(trainer)
    for key, values in rows.items():
        column = columns[key]
        for _ in range(min(n, len(column))):
            column.pop()
        column.extend(values)


def drop_round_metrics(trainer, mode: str, rounds: int) -> None:
    """TRL's group statistics of `rounds` extra scored batches removed, so that one value per rollout is left
    for `replace_advantage_logs` to replace (the others describe groups that were not trained on)."""
    for name in ("reward_std", "frac_reward_zero_std"):
        values = trainer._metrics[mode][name]
        del values[max(0, len(values) - rounds):]


class EpochSeekingRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler, same orders, that can start at any epoch.

    HF's Trainer, resuming inside epoch e >= 1, iterates none of the epochs before it, and does not reach
    the sampler's set_epoch through the loader that skips the trained batches: TRL's own sampler would then
    draw epoch 0's order again (measured: parameters 2.5e-4 to 9.4e-4 apart from the uninterrupted run
    after 1-2 more steps). set_epoch(e) seeds again and draws the e permutations before, so epoch e's order
    comes from any start.
    """

    def set_epoch(self, epoch: int) -> None:
        if self.shuffle and self.seed is not None:
            self.generator.manual_seed(self.seed)
            for _ in range(epoch):
                torch.randperm(self.num_samples, generator=self.generator)


def set_group_size(trainer, size: int) -> None:
    """The group size TRL generates and groups the next rollout with (see the module docstring)."""
    trainer.num_generations = size
