"""PPO's critic losses and diagnostics: pure functions over (N, T) tensors with a completion mask.

Names follow CleanRL's ppo.py (v_loss_clipped, explained variance). Knows nothing about models or MLflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of x over positions where mask is 1; 0 when the mask is empty."""
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


@dataclass(frozen=True)
class ValueLoss:
    loss: Tensor  # 0-d, differentiable in `values`
    clipfrac: Tensor  # 0-d share of tokens where the clipped error was the larger one


def clipped_value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor, clip: float) -> ValueLoss:
    """PPO's clipped value loss (Schulman et al. 2017; as in OpenAI baselines and CleanRL):

        v_clipped = old + clamp(v - old, -clip, clip)
        loss = 0.5 * mean_masked(max((v - R)^2, (v_clipped - R)^2))

    values (N, T) current critic, old_values (N, T) critic at rollout time, returns (N, T) GAE targets,
    mask (N, T) 1 for completion tokens.

    >>> v, old, R, m = torch.tensor([[1.0, 3.0]]), torch.tensor([[0.0, 0.0]]), torch.tensor([[2.0, 0.0]]), torch.ones(1, 2)
    >>> out = clipped_value_loss(v, old, R, m, clip=0.5)
    >>> # token 1: v=1, clipped 0.5: errors 1 and 2.25 -> 2.25; token 2: v=3, clipped 0.5: errors 9, 0.25 -> 9
    >>> round(float(out.loss), 4), float(out.clipfrac)   # 0.5 * (2.25 + 9) / 2 = 2.8125; clipped wins once
    (2.8125, 0.5)
    """
    v_clipped = old_values + (values - old_values).clamp(-clip, clip)
    v_loss_unclipped = (values - returns) ** 2
    v_loss_clipped = (v_clipped - returns) ** 2
    v_loss = 0.5 * masked_mean(torch.maximum(v_loss_unclipped, v_loss_clipped), mask)
    clipfrac = masked_mean((v_loss_clipped > v_loss_unclipped).to(values.dtype), mask)
    return ValueLoss(v_loss, clipfrac.detach())


def explained_variance(values: Tensor, returns: Tensor, mask: Tensor) -> Tensor:
    """1 - Var(R - V) / Var(R) over masked tokens: 1 is a perfect critic, 0 no better than a constant.

    NaN when the returns have no variance (nothing to explain).

    >>> R = torch.tensor([[1.0, 2.0, 3.0]]); m = torch.ones(1, 3)
    >>> float(explained_variance(R.clone(), R, m)), float(explained_variance(torch.full((1, 3), 2.0), R, m))
    (1.0, 0.0)
    """
    mask = mask.to(returns.dtype)
    def var(x: Tensor) -> Tensor:
        mean = masked_mean(x, mask)
        return masked_mean((x - mean) ** 2, mask)

    total = var(returns)
    return torch.where(total > 0, 1 - var(returns - values) / torch.where(total > 0, total, 1.0), float("nan"))
