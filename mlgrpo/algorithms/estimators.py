"""Advantage estimators: pure functions over tensors, registered by name.

Every estimator has the same signature, `(batch: EstimatorBatch, params: EstimatorParams) -> Tensor`,
and is found through `ESTIMATORS` by the name in the config; a trainer never branches on the name.
Each entry also says which std scopes the method admits and which it uses by default, so that the
config can reject a combination that would change what the method is.

Convention for outcome rewards (one scalar per completion), shared with TRL: NaN marks a completion
without a reward; it is left out of every statistic and gets advantage 0. Where an estimator divides
by a std it divides by (std + eps) (TRL: eps = 1e-4 added to the std, not to the variance), and gives
0 where the std is 0 (see divide_by_std), so eps = 0 is safe too.

Per-token estimators (gae) return advantages before any whitening; `compute_advantages` whitens them
over the std scope's completion tokens (`whiten_tokens`), so that PPO's value targets (raw advantages +
values) come from the same single GAE pass.

Singleton groups (a group with one scored row, e.g. prompt_in_language with one sample, or a group whose
other rows have no reward). The group mean is the row's own reward, so the centred reward is 0:
    grpo, dr_grpo, rloo: advantage 0 (rloo: no other sample to leave out). TRL: 0 as well (its group std is
        NaN, its nan_to_num gives 0). verl's grpo instead sets mean 0 and std 1 for a singleton, so the
        advantage is r / (1 + eps); verl's rloo and reinforce++-baseline keep r (mean 0).
    reinforce_pp, reinforce_pp_token: centred 0, then whitened over the scope like every other row:
        (0 - mean_scope) / (std_scope + eps), usually not 0. verl's reinforce++-baseline whitens r itself.
A group with no scored row at all contributes nothing. `adv/singleton_groups` counts them every step.

Knows nothing about models, tokenizers, prompts, languages or MLflow: ids and tensors only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from mlgrpo.algorithms.group_stats import group_stats
from mlgrpo.algorithms.registry import Registry


@dataclass(frozen=True)
class EstimatorBatch:
    """What an estimator sees. N rows (completions); T tokens for per-token estimators."""

    rewards: Tensor  # (N,) outcome reward per completion, NaN = none; (N, T) per-token rewards for gae
    group_ids: Tensor  # (N,) int64: rows that share a baseline (the group key)
    scale_ids: Tensor | None  # (N,) int64: rows that share a std (the std scope); None: no std scaling
    values: Tensor | None = None  # (N, T) critic estimates V(s_t) (gae)
    mask: Tensor | None = None  # (N, T) 1 for completion tokens, 0 for padding (gae)
    lengths: Tensor | None = None  # (N,) int64 completion tokens per row (reinforce_pp_token's token weights)


@dataclass(frozen=True)
class EstimatorParams:
    ddof: int = 1  # of every std (TRL: 1)
    eps: float = 1e-4  # added to every std before dividing (TRL: 1e-4)
    gamma: float = 1.0  # gae discount
    lam: float = 0.95  # gae lambda


Estimator = Callable[[EstimatorBatch, EstimatorParams], Tensor]


@dataclass(frozen=True)
class EstimatorSpec:
    fn: Estimator
    scopes: tuple[str, ...]  # std scopes the method admits ("none": no std scaling)
    default_scope: str  # the method's own convention, used when the config leaves std_scope unset
    per_token: bool  # True: (N, T) rewards and advantages; False: (N,) outcome rewards
    paper: str


ESTIMATORS: Registry[EstimatorSpec] = Registry("advantage estimator")


def register_estimator(name: str, *, scopes: tuple[str, ...], default_scope: str, per_token: bool = False, paper: str):
    def wrap(fn: Estimator) -> Estimator:
        ESTIMATORS.add(name, EstimatorSpec(fn, scopes, default_scope, per_token, paper))
        return fn

    return wrap


def divide_by_std(centered: Tensor, std: Tensor, eps: float) -> Tensor:
    """centered / (std + eps); 0 where the scope's std is 0 (or NaN: no rewards), as it has no spread.

    When the baseline group lies inside its scope the deviations there are exactly 0 anyway (TRL's
    0 / (0 + eps)); when it does not (say, length buckets scaled per language), dividing by eps alone
    would blow a deviation up 10^4 times.
    """
    spread = std > 0
    return torch.where(spread, centered / torch.where(spread, std + eps, 1.0), 0.0)


def _zero_missing(advantages: Tensor, rewards: Tensor) -> Tensor:
    return advantages.masked_fill(torch.isnan(rewards), 0.0)


@register_estimator(
    "grpo",
    scopes=("group", "language", "batch", "none"),
    default_scope="group",
    paper="Shao et al. 2024, DeepSeekMath (arXiv:2402.03300), outcome supervision",
)
def grpo(batch: EstimatorBatch, params: EstimatorParams) -> Tensor:
    """A_i = (r_i - mean_group(r)) / (std_scope(r) + eps). rewards (N,) -> advantages (N,).

    The std is of the raw rewards over the scope, as TRL's scale_rewards="group" | "batch" | "none".
    """
    r = batch.rewards
    centered = r - group_stats(r, batch.group_ids, params.ddof).mean
    if batch.scale_ids is not None:
        centered = divide_by_std(centered, group_stats(r, batch.scale_ids, params.ddof).std, params.eps)
    return _zero_missing(centered, r)


@register_estimator(
    "dr_grpo",
    scopes=("none",),
    default_scope="none",
    paper="Liu et al. 2025, Understanding R1-Zero-Like Training (Dr. GRPO, arXiv:2503.20783)",
)
def dr_grpo(batch: EstimatorBatch, params: EstimatorParams) -> Tensor:
    """A_i = r_i - mean_group(r): GRPO without the std, whose division favours near-constant groups
    (too easy or too hard prompts). rewards (N,) -> advantages (N,)."""
    r = batch.rewards
    return _zero_missing(r - group_stats(r, batch.group_ids, params.ddof).mean, r)


@register_estimator(
    "rloo",
    scopes=("none",),
    default_scope="none",
    paper="Ahmadian et al. 2024, Back to Basics: REINFORCE-style optimization (RLOO, arXiv:2402.14740)",
)
def rloo(batch: EstimatorBatch, params: EstimatorParams) -> Tensor:
    """A_i = r_i - mean_{j != i} r_j = n/(n-1) * (r_i - mean_group(r)), n = rewarded rows in the group.

    A group with one rewarded row has no other sample to compare with: advantage 0.
    rewards (N,) -> advantages (N,).
    """
    r = batch.rewards
    stats = group_stats(r, batch.group_ids, params.ddof)
    n = stats.count
    loo = torch.where(n > 1, n / torch.where(n > 1, n - 1, 1.0), 0.0)
    return _zero_missing(loo * (r - stats.mean), r)


@register_estimator(
    "reinforce_pp",
    scopes=("batch", "language"),
    default_scope="batch",
    paper="Hu et al. 2025, REINFORCE++ (arXiv:2501.03262), the group-baseline variant",
)
def reinforce_pp(batch: EstimatorBatch, params: EstimatorParams) -> Tensor:
    """Subtract the group mean, then whiten over the scope: A = (c - mean_scope(c)) / (std_scope(c) + eps),
    c = r - mean_group(r). REINFORCE++ normalises over the global batch to avoid GRPO's per-prompt
    std bias. Each completion counts once in the scope's mean and std, whatever its length; verl and
    OpenRLHF whiten per token instead (reinforce_pp_token). rewards (N,) -> advantages (N,)."""
    if batch.scale_ids is None:
        raise ValueError("reinforce_pp whitens over a scope: give scale_ids (all zeros for the whole batch)")
    r = batch.rewards
    centered = r - group_stats(r, batch.group_ids, params.ddof).mean
    scope = group_stats(centered, batch.scale_ids, params.ddof)
    return _zero_missing(divide_by_std(centered - scope.mean, scope.std, params.eps), r)


@register_estimator(
    "reinforce_pp_token",
    scopes=("batch", "language"),
    default_scope="batch",
    paper="Hu et al. 2025, REINFORCE++ (arXiv:2501.03262), the group-baseline variant whitened per token "
          "as published (verl reinforce_plus_plus_baseline, OpenRLHF reinforce_baseline)",
)
def reinforce_pp_token(batch: EstimatorBatch, params: EstimatorParams) -> Tensor:
    """reinforce_pp with the scope's mean and std taken over completion tokens, not completions.

    c_i = r_i - mean_group(r) is broadcast to the row's T_i tokens and whitened over every token of the
    scope, so a row weighs T_i times: mean = sum_i T_i c_i / sum_i T_i, std with ddof over sum_i T_i tokens.
    Every token of a row gets the same value, so the advantage stays one number per row (N,).
    Hand-worked: one group r = [0, 1, 2] with T = [1, 1, 2]: c = [-1, 0, 1]; tokens -1, 0, 1, 1:
    mean 0.25, std (ddof 1) sqrt((1.5625 + 0.0625 + 0.5625 * 2) / 3) = 0.957427;
    A = [-1.305582, -0.261116, 0.783349] (eps 0). reinforce_pp (per completion) gives [-1, 0, 1].
    verl adds 1e-8 to the variance (rsqrt(var + 1e-8)); we add eps to the std, like every estimator here.
    rewards (N,) and lengths (N,) -> advantages (N,); a row with no tokens gets 0.
    """
    if batch.scale_ids is None:
        raise ValueError("reinforce_pp_token whitens over a scope: give scale_ids (all zeros for the whole batch)")
    if batch.lengths is None:
        raise ValueError("reinforce_pp_token weighs rows by their tokens: give lengths (N,) completion token counts")
    r = batch.rewards
    centered = r - group_stats(r, batch.group_ids, params.ddof).mean
    lengths = batch.lengths.clamp(min=0)
    tokens = torch.repeat_interleave(centered, lengths)  # one entry per completion token, NaN rows stay NaN
    scope = group_stats(tokens, torch.repeat_interleave(batch.scale_ids, lengths), params.ddof)
    if tokens.numel() == 0:
        return torch.zeros_like(r)
    first = (torch.cumsum(lengths, 0) - lengths).clamp(max=tokens.numel() - 1)  # each row's first token
    has_tokens = lengths > 0
    mean, std = scope.mean[first], scope.std[first]
    whitened = divide_by_std(centered - mean, std, params.eps)
    return _zero_missing(torch.where(has_tokens, whitened, 0.0), r)


@register_estimator(
    "gae",
    scopes=("none", "batch", "language"),
    default_scope="none",
    per_token=True,
    paper="Schulman et al. 2016, High-Dimensional Continuous Control Using GAE (arXiv:1506.02438)",
)
def gae(batch: EstimatorBatch, params: EstimatorParams) -> Tensor:
    """Generalised advantage estimation for PPO, per token.

    rewards (N, T) per-token rewards (usually the outcome reward on the last completion token, minus a
    KL penalty), values (N, T) V(s_t), mask (N, T) 1 for completion tokens. Returns (N, T) advantages,
    0 at masked positions:
        delta_t = r_t + gamma * V(next) - V_t,   A_t = delta_t + gamma * lam * A(next)
    where "next" is the next unmasked token (V(next) = 0 and A(next) = 0 after the last one), so
    padding inside a sequence is skipped. PPO's value targets are returns = advantages + values.
    The advantages are returned unwhitened (scale_ids is not read): compute_advantages whitens them over
    the std scope (whiten_tokens) and takes the value targets from the same pass.
    """
    if batch.values is None or batch.mask is None:
        raise ValueError("gae needs values (N, T) and mask (N, T)")
    rewards, values, mask = batch.rewards, batch.values, batch.mask.to(batch.rewards.dtype)
    if not (rewards.shape == values.shape == mask.shape and rewards.dim() == 2):
        raise ValueError(f"gae: rewards, values and mask must share one (N, T) shape, got "
                         f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}")
    next_value = torch.zeros_like(rewards[:, 0])
    next_advantage = torch.zeros_like(rewards[:, 0])
    columns = []
    for t in reversed(range(rewards.shape[1])):  # a recursion over time, not over groups
        m = mask[:, t]
        delta = rewards[:, t] + params.gamma * next_value - values[:, t]
        advantage = (delta + params.gamma * params.lam * next_advantage) * m
        next_value = m * values[:, t] + (1 - m) * next_value
        next_advantage = advantage + (1 - m) * next_advantage
        columns.append(advantage)
    return torch.stack(columns[::-1], dim=1)


def whiten_tokens(advantages: Tensor, mask: Tensor, scale_ids: Tensor, params: EstimatorParams) -> Tensor:
    """(A - mean_scope) / (std_scope + eps) over the unmasked tokens of each scope; 0 at masked positions.

    advantages (N, T), mask (N, T), scale_ids (N,): a row's tokens share its scope. The mean and std are
    over tokens (a long completion weighs more), as PPO implementations whiten (OpenRLHF, verl masked_whiten).
    """
    token_scope = scale_ids[:, None].expand_as(advantages).reshape(-1)
    flat = advantages.reshape(-1).masked_fill(mask.reshape(-1) == 0, float("nan"))
    scope = group_stats(flat, token_scope, params.ddof)
    whitened = divide_by_std(flat - scope.mean, scope.std, params.eps)
    return whitened.masked_fill(torch.isnan(flat), 0.0).reshape(advantages.shape)
