"""Reward clipping and winsorising per reward function: the method notes' fix for long-tailed rewards.

One reward model that now and then scores a completion at +40 where the others sit in [0, 1] drags its
group's mean and std with it, and every other completion of the group gets an advantage near zero.
Bounding each reward function's values before they are summed keeps such outliers from setting the
scale. Two kinds of bound, per column, combined when both are given (the tighter bound wins):

    fixed       [min, max]: the reward's known range (a reward model's plausible scores)
    quantiles   [q_lower, q_upper] of the column's values in this generation batch (winsorising, Tukey
                1962): the batch's own tails, whatever the reward's scale

Rewards that did not apply (NaN, TRL's None) stay NaN and take no part in the quantiles.
Pure tensor math on the tensors' device: `(N, F)` columns in, `(N, F)` out, with counts for the logs.
Knows nothing about reward functions, trainers or MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class ColumnBounds:
    """The bounds of one reward column; None: unbounded on that side."""

    min: float | None = None
    max: float | None = None
    lower_quantile: float | None = None
    upper_quantile: float | None = None


@dataclass(frozen=True)
class ClippedRewards:
    rewards: Tensor  # (N, F) the bounded rewards; NaN where the input was NaN
    low: Tensor  # (F,) the lower bound each column was clipped at (-inf: none)
    high: Tensor  # (F,) the upper bound (+inf: none)
    clipped_low: Tensor  # (F,) share of the column's scored rows raised to `low`
    clipped_high: Tensor  # (F,) share lowered to `high`


def column_bounds(values: Tensor, bounds: ColumnBounds) -> tuple[float, float]:
    """(low, high) for one column's (N,) values: the fixed bounds, tightened by the batch's quantiles.

    Quantiles interpolate linearly between order statistics (torch.quantile, numpy's default).
    Hand-worked: values 0, 1, ..., 10 (11 rows), quantiles 0.1 and 0.9 sit at positions 0.1 x 10 = 1 and
    0.9 x 10 = 9, so (1.0, 9.0); with a fixed max 5 as well the upper bound is min(9, 5) = 5.

    >>> column_bounds(torch.arange(11.0), ColumnBounds(lower_quantile=0.1, upper_quantile=0.9, max=5.0))
    (1.0, 5.0)
    """
    low = -math.inf if bounds.min is None else float(bounds.min)
    high = math.inf if bounds.max is None else float(bounds.max)
    scored = values[~torch.isnan(values)].double()
    if scored.numel():
        if bounds.lower_quantile is not None:
            low = max(low, torch.quantile(scored, bounds.lower_quantile).item())
        if bounds.upper_quantile is not None:
            high = min(high, torch.quantile(scored, bounds.upper_quantile).item())
    return low, high


def clip_rewards(columns: Tensor, bounds: Sequence[ColumnBounds | None]) -> ClippedRewards:
    """Each column of (N, F) `columns` clamped to its bounds (None: left as it is).

    Hand-worked, one column bounded to [0, 1] and one left alone: rows (-0.5, 7), (0.5, NaN), (3.0, 2):
    -0.5 -> 0 and 3.0 -> 1, so a third of the first column's three scored rows was raised and a third
    lowered; the NaN stays NaN and the second column is unchanged.

    >>> out = clip_rewards(torch.tensor([[-0.5, 7.0], [0.5, float("nan")], [3.0, 2.0]]),
    ...                    [ColumnBounds(min=0.0, max=1.0), None])
    >>> out.rewards.tolist(), [round(x, 4) for x in out.clipped_low.tolist()], out.high.tolist()
    ([[0.0, 7.0], [0.5, nan], [1.0, 2.0]], [0.3333, 0.0], [1.0, inf])
    """
    if columns.dim() != 2 or columns.shape[1] != len(bounds):
        raise ValueError(f"clip_rewards: columns must be (N, F) with F bounds, got {tuple(columns.shape)} and "
                         f"{len(bounds)}")
    pairs = [(-math.inf, math.inf) if b is None else column_bounds(columns[:, f], b) for f, b in enumerate(bounds)]
    low = torch.tensor([p[0] for p in pairs], dtype=columns.dtype, device=columns.device)
    high = torch.tensor([p[1] for p in pairs], dtype=columns.dtype, device=columns.device)
    scored = (~torch.isnan(columns)).sum(0).clamp(min=1).to(columns.dtype)
    clipped_low = (columns < low).sum(0).to(columns.dtype) / scored  # NaN compares False: never counted
    clipped_high = (columns > high).sum(0).to(columns.dtype) / scored
    bounded = torch.minimum(torch.maximum(columns, low), high)  # maximum/minimum propagate NaN
    return ClippedRewards(bounded, low, high, clipped_low, clipped_high)
