"""Options from the method notes that reshape outcome advantages after the estimator.

- temperature: a softmax over each group's advantages whose temperature falls during training
  (T = 1 - 0.5 * step / total in the notes), against long-tailed rewards;
- relative/absolute mix: lambda * group-relative advantage + (1 - lambda) * the reward itself, for tasks
  where the absolute reward level carries signal that group-relative comparison removes;
- multiple objectives: each objective gets its own baseline, then the advantages are weighted
  (alpha * safety + (1 - alpha) * helpfulness);
- inter-group regulariser: the variance across groups of the group-mean advantage, a loss term against
  advantage drift between groups.
All are pure functions of (N,) tensors and group ids, with no host synchronisation.
Knows nothing about models, prompts, languages or MLflow.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from mlgrpo.algorithms.group_stats import group_max, group_stats


def scheduled_temperature(step: int, total_steps: int, start: float, end: float) -> float:
    """Linear schedule from `start` at step 0 to `end` at `total_steps` (held there after).

    >>> scheduled_temperature(50, 100, 1.0, 0.5)  # 1 - 0.5 * 50 / 100
    0.75
    """
    if total_steps < 1 or step < 0:
        raise ValueError(f"temperature schedule needs step >= 0 and total_steps >= 1, got {step}/{total_steps}")
    progress = min(step / total_steps, 1.0)
    return start + (end - start) * progress


def temperature_advantages(advantages: Tensor, group_ids: Tensor, temperature: float) -> Tensor:
    """A'_i = n * softmax_group(A / T)_i - 1 = exp(A_i / T) / mean_group(exp(A / T)) - 1.

    The notes' exp(A / T), normalised within the group so that the result is again an advantage:
    its group mean is 0, a zero-std group stays at exactly 0, the ordering is kept, and a lower T puts
    more of the weight on the group's best samples. The group max is subtracted before exp (which the
    normalisation cancels), so no T overflows. advantages (N,), NaN rows ignored and returned as 0.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    z = advantages / temperature
    weights = torch.exp(z - group_max(z, group_ids))
    shaped = weights / group_stats(weights, group_ids).mean - 1.0
    return shaped.masked_fill(torch.isnan(advantages), 0.0)


def mix_relative_absolute(relative: Tensor, absolute: Tensor, lam: float) -> Tensor:
    """lam * relative + (1 - lam) * absolute; lam = 1 keeps the group-relative advantage alone.

    relative, absolute (N,); a NaN absolute reward (no reward) contributes 0.
    """
    if lam == 1.0:
        return relative
    return lam * relative + (1.0 - lam) * absolute.nan_to_num(nan=0.0)


def combine_objectives(per_objective: Tensor, weights: Sequence[float]) -> Tensor:
    """sum_k weights[k] * per_objective[:, k]: per_objective (N, K) advantages, each against its own
    baseline; weights K numbers (kept on the host: no copy to the device). Returns (N,)."""
    if per_objective.dim() != 2 or per_objective.shape[1] != len(weights):
        raise ValueError(f"combine_objectives: {tuple(per_objective.shape)} advantages for {len(weights)} weights")
    return sum(w * per_objective[:, k] for k, w in enumerate(weights))


def inter_group_variance(advantages: Tensor, group_ids: Tensor) -> Tensor:
    """0-d: variance (ddof 0) across groups of each group's mean advantage, every group counted once.

    Differentiable in `advantages`: as a loss term it pulls the group means together when it is
    applied to a quantity that carries gradient. NaN rows are ignored; 0 for a single group.
    """
    group_means = group_stats(advantages, group_ids).table.mean  # NaN for slots without a group
    centre = torch.nanmean(group_means)
    return torch.nanmean((group_means - centre) ** 2)
