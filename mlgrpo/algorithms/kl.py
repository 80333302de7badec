"""Per-token estimators of KL(pi || pi_ref) from the sampled tokens' log-probabilities, registered by name.

Every estimator has the signature `(logps: Tensor, ref_logps: Tensor) -> Tensor`, elementwise, any shape
(usually (N, T) completion tokens; the caller masks padding). With log r = log pi_ref - log pi on tokens
sampled from pi (J. Schulman, "Approximating KL divergence", 2020, http://joschu.net/blog/kl-approx.html):

    k1 = -log r = log pi - log pi_ref          unbiased, high variance, can be negative per token
    k2 = (log r)^2 / 2                         biased, low variance, >= 0
    k3 = (r - 1) - log r                       unbiased, low variance, >= 0 (TRL's GRPO loss, verl low_var_kl)

Where a KL is placed is the trainer's business (PPO: a per-token penalty in the reward, Ouyang et al.
2022; GRPO: a loss term, DeepSeekMath). TRL's loss implements k3 only, so a KL in the loss is k3.
verl names them kl, mse and low_var_kl and clamps k3 to [-10, 10] (its log r to [-20, 20]); we do not
clamp: a token whose log-ratio reaches 20 is a diverged policy, which the KL should show, not hide.
Knows nothing about models, trainers or MLflow.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from mlgrpo.algorithms.registry import Registry

KLEstimator = Callable[[Tensor, Tensor], Tensor]
KL_ESTIMATORS: Registry[KLEstimator] = Registry("KL estimator")


@KL_ESTIMATORS.register("k1")
def k1(logps: Tensor, ref_logps: Tensor) -> Tensor:
    """log pi - log pi_ref.

    >>> k1(torch.tensor([-1.0, -2.0]), torch.tensor([-1.5, -1.0])).tolist()   # -1 + 1.5, -2 + 1
    [0.5, -1.0]
    """
    return logps - ref_logps


@KL_ESTIMATORS.register("k2")
def k2(logps: Tensor, ref_logps: Tensor) -> Tensor:
    """(log pi - log pi_ref)^2 / 2.

    >>> k2(torch.tensor([-1.0, -2.0]), torch.tensor([-1.5, -1.0])).tolist()   # 0.5^2 / 2, 1^2 / 2
    [0.125, 0.5]
    """
    return 0.5 * (logps - ref_logps).square()


@KL_ESTIMATORS.register("k3")
def k3(logps: Tensor, ref_logps: Tensor) -> Tensor:
    """exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1, as TRL's GRPO loss computes it.

    >>> out = k3(torch.tensor([-1.0, -2.0]), torch.tensor([-1.5, -1.0]))
    >>> [round(v, 6) for v in out.tolist()]   # e^-0.5 + 0.5 - 1 = 0.106531; e^1 - 1 - 1 = 0.718282
    [0.106531, 0.718282]
    """
    log_ratio = ref_logps - logps
    return torch.exp(log_ratio) - log_ratio - 1.0
