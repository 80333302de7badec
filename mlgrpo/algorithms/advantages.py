"""compute_advantages: the one call a trainer makes to turn a batch's rewards into advantages.

    rewards -> non-finite rewards counted and set aside (NaN)
            -> group ids (cfg.group_by) and std-scope ids (cfg.std_scope)
            -> the registered estimator, once per reward column (each objective its own baseline)
            -> weighted sum of objectives -> relative/absolute mix -> temperature
            -> advantages, metrics, the inter-group regulariser's weights
    per-token (gae): a row with a non-finite token reward has no reward: it leaves the mask
            -> one GAE pass -> value targets (raw advantages + values) -> whitened over the std scope

Metrics are 0-d tensors on the rewards' device; the trainer converts them to numbers once per step,
so no host synchronisation happens here. Group health is of the (weighted) reward:
    adv/groups, adv/zero_std_groups (singletons included), adv/singleton_groups   baseline groups
    adv/frac_zero_std          share of rows in zero-std groups (TRL's frac_reward_zero_std)
    adv/frac_zero_std/<lang>   the same share among each language's rows
    adv/nonfinite_rewards      NaN (no reward) and +-inf rewards: left out, advantage 0 (per-token: rows)
    adv/nonfinite_advantages   advantages that came out non-finite and were set to 0 (should stay 0)
    adv/mean, adv/std, adv/abs_mean, adv/mean/<lang>, adv/std/<lang>    advantages per completion
                               (`per_completion_advantage`: for gae the mean over its scored tokens)
    adv/inter_group_var, adv/temperature (when the schedule is on)
Knows nothing about models, tokenizers, trainers or MLflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from mlgrpo.algorithms.config import AdvantageConfig
from mlgrpo.algorithms.estimators import EstimatorBatch, whiten_tokens
from mlgrpo.algorithms.group_stats import group_stats
from mlgrpo.algorithms.grouping import GROUP_KEYS, GroupKeys
from mlgrpo.algorithms.shaping import (
    InterGroupRows,
    inter_group_rows,
    inter_group_variance,
    mix_relative_absolute,
    scheduled_temperature,
    temperature_advantages,
)
from mlgrpo.algorithms.weighting import all_scored
from mlgrpo.errors import UserError


@dataclass(frozen=True)
class AdvantageResult:
    advantages: Tensor  # (N,) per completion, or (N, T) per token for gae; always finite
    metrics: dict[str, Tensor]  # name -> 0-d tensor
    # 0-d: inter_group_coef * variance of the group-mean advantages over whole groups (its value at ratio 1).
    regularizer: Tensor
    # The whole-group statistics each row carries into the loss (shaping.inter_group_change), when
    # inter_group_coef > 0; None otherwise.
    regularizer_rows: InterGroupRows | None = None
    # Per-token estimators only: (N, T) value targets, raw advantages + values, from the same GAE pass
    # (PPO's returns), and (N, T) the mask of the tokens that have a reward (unscored rows are 0).
    returns: Tensor | None = None
    mask: Tensor | None = None


def compute_advantages(
    rewards: Tensor,
    keys: GroupKeys,
    cfg: AdvantageConfig,
    *,
    step: int = 0,
    total_steps: int = 1,
    values: Tensor | None = None,
    mask: Tensor | None = None,
) -> AdvantageResult:
    """Advantages for one batch of N rows.

    rewards: (N,) one reward per completion; (N, K) with cfg.objective_weights (one column per
             objective); (N, T) per-token rewards for gae. NaN = no reward; +-inf is treated as NaN.
    keys:    the rows' group keys (GroupKeys.from_rows).
    step, total_steps: training progress, for the temperature schedule.
    values, mask: (N, T) critic values and completion mask, for gae.
    """
    spec = cfg.spec
    _check_shapes(rewards, keys, cfg, spec.per_token, values, mask)
    group_ids = GROUP_KEYS.get(cfg.group_by)(keys, cfg.grouping)
    scale_ids = _scope_ids(cfg.scale_scope, group_ids, keys)
    if spec.per_token:
        return _per_token_advantages(rewards, values, mask, spec, group_ids, scale_ids, keys, cfg)
    finite = torch.isfinite(rewards)
    clean = rewards.masked_fill(~finite, float("nan"))

    def estimate(column: Tensor) -> Tensor:
        return spec.fn(EstimatorBatch(column, group_ids, scale_ids, lengths=keys.completion_lengths), cfg.params)

    temperature = None
    if cfg.uses_temperature:
        temperature = scheduled_temperature(step, total_steps, cfg.temperature_start, cfg.temperature_end)
    advantages, scored = _outcome_advantages(clean, estimate, group_ids, cfg, temperature)
    bad = ~torch.isfinite(advantages)
    advantages = advantages.masked_fill(bad, 0.0)
    variance = inter_group_variance(advantages, group_ids)
    metrics = _metrics(advantages, scored, group_ids, keys, cfg)
    metrics["adv/nonfinite_rewards"] = (~finite).sum().to(advantages.dtype)
    metrics["adv/nonfinite_advantages"] = bad.sum().to(advantages.dtype)
    metrics["adv/inter_group_var"] = variance.detach()
    if temperature is not None:
        metrics["adv/temperature"] = advantages.new_full((), temperature)
    rows = inter_group_rows(advantages, group_ids) if cfg.inter_group_coef > 0 else None
    return AdvantageResult(advantages, metrics, cfg.inter_group_coef * variance, rows)


def _per_token_advantages(rewards: Tensor, values: Tensor, mask: Tensor, spec, group_ids: Tensor,
                          scale_ids: Tensor | None, keys: GroupKeys, cfg: AdvantageConfig) -> AdvantageResult:
    """GAE once: raw advantages -> value targets (raw + values) -> whitened advantages over the scope.

    A row with a non-finite token reward (NaN: no reward for the completion) leaves the mask: it gets
    advantage 0, is not in the whitening statistics and has no value target (mask 0), and is counted.
    """
    scored_rows = torch.isfinite(rewards).all(dim=1)
    live = mask.to(rewards.dtype) * scored_rows[:, None].to(rewards.dtype)
    clean = rewards.masked_fill(~scored_rows[:, None], 0.0)
    raw = spec.fn(EstimatorBatch(clean, group_ids, None, values, live), cfg.params)
    advantages = raw if scale_ids is None else whiten_tokens(raw, live, scale_ids, cfg.params)
    bad = ~torch.isfinite(advantages)
    advantages = advantages.masked_fill(bad, 0.0)
    scored = (clean * live).sum(dim=1).masked_fill(~scored_rows, float("nan"))  # return per completion
    metrics = _metrics(per_completion_advantage(advantages, live), scored, group_ids, keys, cfg)
    metrics["adv/nonfinite_rewards"] = (~scored_rows).sum().to(advantages.dtype)
    metrics["adv/nonfinite_advantages"] = bad.sum().to(advantages.dtype)
    metrics["adv/inter_group_var"] = advantages.new_zeros(())
    returns = (raw + values) * live
    return AdvantageResult(advantages, metrics, advantages.new_zeros(()), returns=returns, mask=live)


def _outcome_advantages(
    clean: Tensor, estimate, group_ids: Tensor, cfg: AdvantageConfig, temperature: float | None
) -> tuple[Tensor, Tensor]:
    """(advantages (N,), scored (N,)): the estimator per objective, weighted, mixed, tempered.

    scored is the (weighted) reward of each row, NaN where it has none (any objective missing).
    """
    if cfg.objective_weights is None:
        advantages, scored = estimate(clean), clean
    else:
        weights = cfg.objective_weights
        per_objective = torch.stack([estimate(clean[:, k]) for k in range(clean.shape[1])], dim=1)
        advantages, scored = all_scored(per_objective, weights), all_scored(clean, weights)
    advantages = mix_relative_absolute(advantages, scored, cfg.mix_lambda)
    if temperature is not None:
        unscored = advantages.masked_fill(torch.isnan(scored), float("nan"))  # left out of the softmax
        advantages = temperature_advantages(unscored, group_ids, temperature)
    return advantages, scored


def _scope_ids(scope: str, group_ids: Tensor, keys: GroupKeys) -> Tensor | None:
    if scope == "none":
        return None
    if scope == "group":
        return group_ids
    if scope == "language":
        return keys.lang_ids
    return torch.zeros_like(group_ids)  # "batch": one scope


def per_completion_advantage(advantages: Tensor, mask: Tensor | None = None) -> Tensor:
    """(N,) one advantage per completion: itself for outcome advantages (N,); for per-token advantages
    (N, T) the mean over the completion's tokens where `mask` is 1 (0 for a row with none).

    The one definition that adv/* metrics, the completions table and the inter-group regulariser read: an
    outcome advantage broadcast over a completion's tokens has that token mean too.
    >>> per_completion_advantage(torch.tensor([[1.0, 3.0, 7.0], [2.0, 0.0, 0.0]]), torch.tensor([[1, 1, 0], [0, 0, 0]]))
    tensor([2., 0.])
    """
    if advantages.dim() == 1:
        return advantages
    if mask is None:
        raise ValueError("per-token advantages (N, T) need their token mask to give one advantage per completion")
    mask = mask.to(advantages.dtype)
    return (advantages * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


def _metrics(
    per_row: Tensor, scored: Tensor, group_ids: Tensor, keys: GroupKeys, cfg: AdvantageConfig
) -> dict[str, Tensor]:
    """Group health of the (weighted) reward and statistics of the (N,) per-completion advantages,
    overall and per language."""
    reward_stats = group_stats(scored, group_ids, cfg.ddof)
    groups = reward_stats.table
    live = groups.count > 0
    dtype = per_row.dtype
    metrics = {
        "adv/groups": live.sum().to(dtype),
        "adv/zero_std_groups": (live & (groups.std == 0)).sum().to(dtype),
        "adv/singleton_groups": (groups.count == 1).sum().to(dtype),
        "adv/frac_zero_std": (reward_stats.std == 0).to(dtype).mean(),
        "adv/mean": per_row.mean(),
        "adv/std": per_row.std(correction=0) if per_row.numel() else per_row.new_zeros(()),
        "adv/abs_mean": per_row.abs().mean(),
    }
    by_language = group_stats(per_row, keys.lang_ids, 0, num_ids=len(keys.languages)).table
    flat = group_stats((reward_stats.std == 0).to(dtype), keys.lang_ids, 0, num_ids=len(keys.languages)).table
    for i, lang in enumerate(keys.languages):
        metrics[f"adv/mean/{lang}"] = by_language.mean[i]
        metrics[f"adv/std/{lang}"] = by_language.std[i]
        # DAPO's zero-variance groups, per language: the share of a language's rows without a GRPO signal
        metrics[f"adv/frac_zero_std/{lang}"] = flat.mean[i]
    return metrics


def _check_shapes(
    rewards: Tensor, keys: GroupKeys, cfg: AdvantageConfig, per_token: bool, values: Tensor | None, mask: Tensor | None
) -> None:
    n = keys.size
    if rewards.shape[:1] != (n,):
        raise UserError(f"rewards have {tuple(rewards.shape)} rows but the group keys describe {n} rows")
    if per_token:
        expected, what = 2, "(N, T) per-token rewards"
        if values is None or mask is None:
            raise UserError(f"estimator {cfg.estimator!r} needs values= and mask= of shape (N, T)")
    elif cfg.objective_weights is not None:
        expected, what = 2, f"(N, {len(cfg.objective_weights)}) rewards, one column per objective weight"
        if rewards.dim() == 2 and rewards.shape[1] != len(cfg.objective_weights):
            raise UserError(f"rewards have {rewards.shape[1]} objective columns but objective_weights has "
                            f"{len(cfg.objective_weights)} weights")
    else:
        expected, what = 1, "(N,) rewards (for several objectives set objective_weights)"
    if rewards.dim() != expected:
        raise UserError(f"estimator {cfg.estimator!r} expects {what}, got shape {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        raise UserError(f"rewards must be floating point, got {rewards.dtype}")
