"""The losses besides the policy's, as pure functions returning (loss, metrics), registered by name.

    LOSSES["policy"]       policy_loss.policy_loss: TRL's loss types (surrogate + normaliser, KL in the loss)
    LOSSES["entropy"]      policy_loss.entropy_bonus: -coef * mean token entropy
    LOSSES["value"]        value_loss: PPO's clipped value loss (the critic's)
    LOSSES["kl_penalty"]   ppo.kl_penalty: the per-token KL penalty of a KL placed in the reward
    LOSSES["sft"]          sft_cross_entropy: the supervised arm's token-mean cross-entropy
    LOSSES["inter_group"]  inter_group_loss: the inter-group regulariser's share of a micro-batch

Each loss's metrics are 0-d tensors named as logged (`ppo/value_loss`, `kl` ...). Names follow CleanRL's
ppo.py (v_loss_clipped, explained variance). Knows nothing about models, trainers or MLflow.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from mlgrpo.algorithms.advantages import per_completion_advantage
from mlgrpo.algorithms.policy_loss import entropy_bonus, policy_loss, sequence_log_ratio
from mlgrpo.algorithms.ppo import kl_penalty
from mlgrpo.algorithms.registry import Registry
from mlgrpo.algorithms.shaping import InterGroupRows, inter_group_change


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of x over positions where mask is 1; 0 when the mask is empty."""
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor, clip: float) -> tuple[Tensor, dict]:
    """PPO's clipped value loss (Schulman et al. 2017; as in OpenAI baselines and CleanRL):

        v_clipped = old + clamp(v - old, -clip, clip)
        loss = 0.5 * mean_masked(max((v - R)^2, (v_clipped - R)^2))

    values (N, T) current critic, old_values (N, T) critic at rollout time, returns (N, T) GAE targets,
    mask (N, T) 1 for completion tokens that have a target. Metrics: ppo/value_loss, and
    ppo/value_clipfrac (the share of tokens where the clipped error was the larger one).

    >>> v, old, R, m = torch.tensor([[1.0, 3.0]]), torch.tensor([[0.0, 0.0]]), torch.tensor([[2.0, 0.0]]), torch.ones(1, 2)
    >>> loss, metrics = value_loss(v, old, R, m, clip=0.5)
    >>> # token 1: v=1, clipped 0.5: errors 1 and 2.25 -> 2.25; token 2: v=3, clipped 0.5: errors 9, 0.25 -> 9
    >>> round(float(loss), 4), float(metrics["ppo/value_clipfrac"])   # 0.5 * (2.25 + 9) / 2 = 2.8125
    (2.8125, 0.5)
    """
    v_clipped = old_values + (values - old_values).clamp(-clip, clip)
    v_loss_unclipped = (values - returns) ** 2
    v_loss_clipped = (v_clipped - returns) ** 2
    v_loss = 0.5 * masked_mean(torch.maximum(v_loss_unclipped, v_loss_clipped), mask)
    clipfrac = masked_mean((v_loss_clipped > v_loss_unclipped).to(values.dtype), mask)
    return v_loss, {"ppo/value_loss": v_loss.detach(), "ppo/value_clipfrac": clipfrac.detach()}


def sft_cross_entropy(logits: Tensor, targets: Tensor, mask: Tensor) -> tuple[Tensor, dict]:
    """The supervised arm's loss: the token mean of -log p(target) over the micro-batch's masked tokens.

    logits (B, T, V) predicting targets (B, T) int64; mask (B, T) 1 for target tokens. Metrics: sft/nll
    (the loss) and sft/nll_rows, (B,) each row's token mean (per-language means are of rows).
    F.cross_entropy fuses the log-softmax: no second (B, T, V) tensor of log-probabilities.

    >>> logits = torch.log(torch.tensor([[[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]]]))   # p(target) 0.5, 0.1, pad
    >>> loss, m = sft_cross_entropy(logits, torch.tensor([[0, 1, 1]]), torch.tensor([[1.0, 1.0, 0.0]]))
    >>> round(loss.item(), 4), [round(x, 4) for x in m["sft/nll_rows"].tolist()]   # (ln 2 + ln 10) / 2
    (1.4979, [1.4979])
    """
    nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view_as(targets)
    mask = mask.to(nll.dtype)
    loss = (nll * mask).sum() / mask.sum().clamp(min=1.0)
    rows = (nll * mask).sum(1).detach() / mask.sum(1).clamp(min=1.0)
    return loss, {"sft/nll": loss.detach(), "sft/nll_rows": rows}


def inter_group_loss(logps: Tensor, old_logps: Tensor, mask: Tensor, advantages: Tensor, rows: InterGroupRows,
                     coef: float, scale: float) -> tuple[Tensor, dict]:
    """coef * this micro-batch's share of the inter-group regulariser (shaping.inter_group_change) * scale.

    logps, old_logps, mask (B, T); advantages (B,) or (B, T) (one per completion: per_completion_advantage);
    rows: the rollout's whole-group statistics of these B rows. The ratio is the sequence-level pi / pi_old.
    Summed over a rollout's micro-batches the gradient is the regulariser's; `scale` is the caller's factor
    that makes each optimiser step carry it (minibatches per rollout x processes, undoing DDP's mean).
    Metrics: adv/inter_group_change (the share before coef and scale).
    """
    ratio = torch.exp(sequence_log_ratio(logps, old_logps, mask))
    share = inter_group_change(per_completion_advantage(advantages, mask), ratio, rows)
    return coef * (share * scale), {"adv/inter_group_change": share.detach()}


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


Loss = Callable[..., tuple[Tensor, dict]]
LOSSES: Registry[Loss] = Registry("loss")
for _name, _loss in (("policy", policy_loss), ("entropy", entropy_bonus), ("value", value_loss),
                     ("kl_penalty", kl_penalty), ("sft", sft_cross_entropy), ("inter_group", inter_group_loss)):
    LOSSES.add(_name, _loss)
