"""One reward per completion from the reward functions' columns: a weighted sum, with a rule for missing values.

Two rules, registered by name, both `(columns (N, F), weights (F,)) -> (N,)`:

    any_scored  TRL's rule for the reward it trains on (GRPOTrainer: nansum over the functions): a column
                that returned None (NaN) is skipped, and the row is NaN only when every column is.
    all_scored  every column must have a value, else the row is NaN: for objectives that each get their
                own baseline (AdvantageConfig.objective_weights), where a missing objective makes the
                weighted total meaningless.

Knows nothing about reward functions, trainers or MLflow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from mlgrpo.algorithms.registry import Registry

Weighting = Callable[[Tensor, Tensor], Tensor]
WEIGHTINGS: Registry[Weighting] = Registry("reward weighting")


def as_weights(weights: Sequence[float] | Tensor, like: Tensor) -> Tensor:
    """(F,) weights as a tensor on `like`'s device and dtype."""
    return torch.as_tensor(weights, dtype=like.dtype).to(like.device)


def _check(columns: Tensor, weights: Tensor) -> None:
    if columns.dim() != 2 or weights.shape != (columns.shape[1],):
        raise ValueError(f"weighted rewards: columns must be (N, F) with F weights, got {tuple(columns.shape)} "
                         f"and {tuple(weights.shape)}")


@WEIGHTINGS.register("any_scored")
def any_scored(columns: Tensor, weights: Tensor) -> Tensor:
    """sum_f w_f r_f over the columns that have a value; NaN where none has.

    >>> nan = float("nan")
    >>> any_scored(torch.tensor([[1.0, 0.5], [nan, 0.5], [nan, nan]]), torch.tensor([1.0, 2.0])).tolist()
    [2.0, 1.0, nan]
    """
    weights = as_weights(weights, columns)
    _check(columns, weights)
    total = (columns * weights).nansum(dim=1)
    return total.masked_fill(torch.isnan(columns).all(dim=1), float("nan"))


@WEIGHTINGS.register("all_scored")
def all_scored(columns: Tensor, weights: Tensor) -> Tensor:
    """sum_f w_f r_f; NaN where any column is NaN.

    >>> nan = float("nan")
    >>> all_scored(torch.tensor([[1.0, 0.5], [nan, 0.5]]), torch.tensor([1.0, 2.0])).tolist()
    [2.0, nan]
    """
    weights = as_weights(weights, columns)
    _check(columns, weights)
    return (columns * weights).sum(dim=1)
