"""Options from the method notes that reshape outcome advantages after the estimator.

- temperature: a softmax over each group's advantages whose temperature falls during training
  (T = 1 - 0.5 * step / total in the notes), against long-tailed rewards;
- relative/absolute mix: lambda * group-relative advantage + (1 - lambda) * the reward itself, for tasks
  where the absolute reward level carries signal that group-relative comparison removes;
- multiple objectives: each objective gets its own baseline, then the advantages are weighted
  (alpha * safety + (1 - alpha) * helpfulness; the weighting is weighting.all_scored);
- inter-group regulariser: the variance across groups of the group-mean advantage, a loss term against
  advantage drift between groups; `inter_group_rows` keeps the rollout's whole-group statistics on every
  row, so that a micro-batch (which holds fragments of groups) computes its exact share (`inter_group_change`).
All are pure functions of (N,) tensors and group ids, with no host synchronisation.
Knows nothing about models, prompts, languages or MLflow.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def inter_group_variance(advantages: Tensor, group_ids: Tensor) -> Tensor:
    """0-d: variance (ddof 0) across groups of each group's mean advantage, every group counted once.

    Differentiable in `advantages`: as a loss term it pulls the group means together when it is
    applied to a quantity that carries gradient. NaN rows are ignored; 0 for a single group.
    """
    group_means = group_stats(advantages, group_ids).table.mean  # NaN for slots without a group
    centre = torch.nanmean(group_means)
    return torch.nanmean((group_means - centre) ** 2)



@dataclass(frozen=True)
class InterGroupRows:
    """What each row of a rollout carries so that any subset of rows (a micro-batch) can compute its share
    of the inter-group regulariser: the whole-group statistics at the rollout (ratio 1)."""

    group_ids: Tensor  # (N,) int64 the row's baseline group
    centred_mean: Tensor  # (N,) m_g - c at the rollout: the group's mean advantage minus the mean of all groups'
    group_size: Tensor  # (N,) rows in the row's group (float)
    groups: Tensor  # (N,) G, the number of groups in the rollout, on every row (float)


def inter_group_rows(advantages: Tensor, group_ids: Tensor) -> InterGroupRows:
    """The rollout's group statistics for `inter_group_change`, per row. advantages (N,), finite."""
    stats = group_stats(advantages, group_ids)
    live = stats.table.count > 0
    n_groups = live.sum().to(advantages.dtype)
    centre = torch.where(live, stats.table.mean, 0.0).sum() / n_groups.clamp(min=1.0)
    return InterGroupRows(group_ids, stats.mean - centre, stats.count, n_groups.expand_as(advantages))


def inter_group_change(advantages: Tensor, ratio: Tensor, rows: InterGroupRows) -> Tensor:
    """0-d: var_g(m_g) with the given rows at `ratio`, minus its value at ratio 1; every other row of the
    rollout stays at ratio 1. m_g is group g's mean of ratio_i * A_i (the regulariser of the method notes).

    A micro-batch holds fragments of groups; this is exact for them without the other rows' ratios.
    With d_g = sum_{i in g, given} A_i (ratio_i - 1) / |g| (0 for groups with no given row), m_g = m0_g + d_g
    and, since the centred means sum to 0,
        var(m) - var(m0) = (2/G) sum_g (m0_g - c0) d_g + (1/G) sum_g d_g^2 - ((1/G) sum_g d_g)^2.
    Over all rows of a rollout it equals var(m) - var(m0) exactly; its gradient at ratio 1, summed over
    the micro-batches of a rollout, is the regulariser's gradient. advantages, ratio (B,) for B given rows.

    Hand-worked: A = [1, 3, -2], groups [a, a, b] (m0 = (2, -2), c0 = 0, G = 2); row 0 alone at ratio 2:
    d_a = 1 * (2 - 1) / 2 = 0.5: (2/2) * 2 * 0.5 + (1/2) * 0.25 - (0.5 / 2)^2 = 1 + 0.125 - 0.0625 = 1.0625;
    directly: m = (2.5, -2), var = 2.25^2 = 5.0625 against 4.
    >>> rows = inter_group_rows(torch.tensor([1.0, 3.0, -2.0]), torch.tensor([0, 0, 1]))
    >>> pick = torch.tensor([0])
    >>> sub = InterGroupRows(*(getattr(rows, f)[pick] for f in ("group_ids", "centred_mean", "group_size", "groups")))
    >>> inter_group_change(torch.tensor([1.0]), torch.tensor([2.0]), sub).item()
    1.0625
    """
    if advantages.numel() == 0:
        return advantages.new_zeros(())
    n_groups = rows.groups[0].clamp(min=1.0)
    per_row = advantages * (ratio - 1.0) / rows.group_size.clamp(min=1.0)
    stats = group_stats(per_row, rows.group_ids, 0)  # one slot per group present among the given rows
    live = stats.table.count > 0
    shift = torch.where(live, stats.table.mean * stats.table.count, 0.0)  # d_g: the sum over the given rows
    # (m0_g - c0) of each present group: the same on all its rows, so the slot mean is it.
    centred = torch.where(live, group_stats(rows.centred_mean, rows.group_ids, 0).table.mean, 0.0)
    linear = 2.0 / n_groups * (centred * shift).sum()
    return linear + (shift * shift).sum() / n_groups - (shift.sum() / n_groups) ** 2
