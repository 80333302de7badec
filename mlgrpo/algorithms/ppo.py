"""PPO's per-token rewards: pure functions over (N, T) completion tensors, between the rewards and GAE.

    outcome rewards (N,) -> token_rewards: the reward on each completion's last token
    -> minus kl_penalty: kl_coef * KL estimate per token (KL_ESTIMATORS), when the KL sits in the reward
    -> compute_advantages(estimator gae): one GAE pass, value targets = raw advantages + values

This is the classic RLHF reward (Ziegler et al. 2019; Ouyang et al. 2022; Huang et al. 2024, "The N+
implementation details of RLHF with PPO"): r_t = -beta * KL_t, plus the outcome reward at the last token.
mask (N, T) is 1 for completion tokens. A row without a reward (NaN outcome) keeps NaN on its last token,
so compute_advantages leaves it out of GAE, whitening and the value targets, and counts it.
Knows nothing about models, trainers or MLflow.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mlgrpo.algorithms.kl import KL_ESTIMATORS


def token_rewards(outcome: Tensor, mask: Tensor) -> Tensor:
    """(N, T): outcome[i] on row i's last completion token (the last 1 of its mask), 0 elsewhere.

    A row whose mask is all 0 (no completion token) has nowhere to put its reward: it is given NaN on
    token 0, so that it is treated (and counted) as a row without a reward rather than lost.

    >>> token_rewards(torch.tensor([1.0, 0.5]), torch.tensor([[1, 1, 1], [1, 1, 0]])).tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.5, 0.0]]
    """
    mask = mask.to(outcome.dtype)
    lengths = mask.sum(dim=1)
    # The last 1 of each row: the largest index where the mask is set (padding inside a row is allowed).
    positions = torch.arange(mask.size(1), device=mask.device, dtype=outcome.dtype)
    last = torch.where(mask > 0, positions, -1.0).amax(dim=1).clamp(min=0).long()
    value = torch.where(lengths > 0, outcome, float("nan"))
    out = torch.zeros_like(mask)
    return out.scatter(1, last[:, None], value[:, None])


def kl_penalty(logps: Tensor, ref_logps: Tensor, mask: Tensor, coef: float, estimator: str) -> tuple[Tensor, dict]:
    """((N, T) coef * KL_t on completion tokens (0 on padding), metrics), KL_t from KL_ESTIMATORS[estimator],
    estimated once. The penalty is subtracted from the token rewards. logps, ref_logps (N, T): log pi and
    log pi_ref of the sampled tokens under the rollout's policy and the reference. Metrics: kl (the mean
    KL_t over completion tokens, TRL's name) and ppo/kl_penalty (coef times it: subtracted per token).

    >>> m = torch.tensor([[1.0, 1.0, 0.0]])   # 0.1 * (-1 + 1.5), 0.1 * (-2 + 1), padding
    >>> out, metrics = kl_penalty(torch.tensor([[-1.0, -2.0, -9.0]]), torch.tensor([[-1.5, -1.0, 9.0]]), m, 0.1, "k1")
    >>> [round(v, 6) for v in out[0].tolist()], round(metrics["kl"].item(), 6)   # (0.5 - 1) / 2
    ([0.05, -0.1, 0.0], -0.25)
    """
    kl = torch.where(mask > 0, KL_ESTIMATORS.get(estimator)(logps, ref_logps), 0.0)
    mean = (kl * mask).sum() / mask.sum().clamp(min=1.0)
    return coef * kl, {"kl": mean.detach(), "ppo/kl_penalty": coef * mean.detach()}
