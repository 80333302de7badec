"""The policy loss: a per-token surrogate and a normaliser, looked up by TRL's `loss_type` name.

    ratio (token or sequence, `importance_ratio`) -> SURROGATES[kind]: per-token loss (B, T) or (B, 1)
    -> masks (off-policy, top-entropy), vLLM importance weights -> + beta * KL_t (k3)
    -> NORMALISERS[kind]: one number for the micro-batch

`LOSS_TYPES` maps each TRL 1.16 loss_type onto (surrogate, normaliser), as verl's policy-loss and
loss-aggregation registries do; `policy_loss` is the one call. It computes what TRL's
`GRPOTrainer._compute_loss` computes from the same log-probs (tests/algorithms/test_policy_loss.py runs
TRL's method on the same batch for every loss type, to 1e-6), so that the loss is a function of ours:

    grpo, sapo  sequence_mean   mean over completions of each completion's token mean (Shao et al. 2024)
    bnpo        token_mean      mean over the micro-batch's tokens
    dr_grpo     max_length      token sum / (B * max_completion_length) (Liu et al. 2025, "Dr. GRPO")
    dapo, cispo, vespo  step_tokens  token sum / the tokens of the whole optimiser step (Yu et al. 2025)
    luspo       sequence_sum    mean over completions of each completion's token sum

Gradient accumulation is the caller's: `PolicyLossParams.accumulation` (micro-batches per optimiser
step; 1 in evaluation) divides every normaliser but step_tokens, whose `step_tokens` already counts the
whole step's tokens on this process. Metrics are this micro-batch's (masked means over its tokens);
averaging them over processes is the caller's business. Knows nothing about models, trainers or MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from mlgrpo.algorithms.kl import KL_ESTIMATORS
from mlgrpo.algorithms.registry import Registry


@dataclass(frozen=True)
class PolicyLossBatch:
    """One micro-batch of B completions padded to T tokens."""

    logps: Tensor  # (B, T) log pi_theta(a_t | s_t) of the sampled tokens, with gradient
    old_logps: Tensor  # (B, T) log pi_old(a_t | s_t) at the rollout (logps.detach() when on-policy)
    advantages: Tensor  # (B,) per completion or (B, T) per token
    mask: Tensor  # (B, T) 1 for completion tokens that train (TRL: completion_mask * tool_mask)
    ref_logps: Tensor | None = None  # (B, T) log pi_ref(a_t | s_t), for the KL term (beta > 0)
    sampling_logps: Tensor | None = None  # (B, T) the inference engine's log-probs (off-policy mask); None: old
    importance_weights: Tensor | None = None  # (B, T) vLLM's pi_old / pi_sampler correction; None: off
    entropy_mask: Tensor | None = None  # (B, T) 1 on the tokens of top entropy (top_entropy_quantile < 1)


@dataclass(frozen=True)
class PolicyLossParams:
    """TRL's GRPOConfig loss settings, by the same names (epsilon_low is GRPOConfig.epsilon)."""

    loss_type: str = "dapo"
    epsilon_low: float = 0.2
    epsilon_high: float = 0.2
    delta: float | None = None  # upper clamp of the unclipped ratio (two-sided clipping); None: off
    importance_sampling_level: str = "token"  # "token" or "sequence" (GSPO)
    beta: float = 0.0  # coefficient of the k3 KL to the reference, per token
    bias_correction_kl: bool = False  # the KL weighted by the importance ratio
    off_policy_threshold: float | None = None  # DeepSeek-V3.2's off-policy sequence mask; None: off
    sapo_temperature_pos: float = 1.0
    sapo_temperature_neg: float = 1.05
    vespo_k_pos: float = 2.0
    vespo_lambda_pos: float = 3.0
    vespo_k_neg: float = 3.0
    vespo_lambda_neg: float = 2.0
    max_completion_length: int = 256  # max_length's fixed denominator
    accumulation: float = 1.0  # micro-batches per optimiser step (1 in evaluation)
    step_tokens: float = 1.0  # step_tokens' denominator: completion tokens of the optimiser step, this process


Metrics = dict[str, Tensor]
Surrogate = Callable[[Tensor, Tensor, PolicyLossBatch, PolicyLossParams], tuple[Tensor, Metrics]]
Normaliser = Callable[[Tensor, Tensor, PolicyLossParams], Tensor]
SURROGATES: Registry[Surrogate] = Registry("policy surrogate")
NORMALISERS: Registry[Normaliser] = Registry("loss normaliser")


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of x over the positions where mask is 1 (x (B, 1) broadcasts: a mean over completions)."""
    if x.shape[-1] == 1:
        return x.sum() / max(x.shape[0], 1)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def sequence_log_ratio(logps: Tensor, old_logps: Tensor, mask: Tensor) -> Tensor:
    """(B,) each completion's mean over its tokens of log pi - log pi_old (GSPO's sequence log-ratio).

    >>> m = torch.tensor([[1.0, 1.0, 0.0]])   # (0.2 + 0.4) / 2; the padded token does not count
    >>> round(sequence_log_ratio(torch.tensor([[-1.0, -1.0, 5.0]]), torch.tensor([[-1.2, -1.4, 0.0]]), m).item(), 6)
    0.3
    """
    return ((logps - old_logps) * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)


def importance_ratio(batch: PolicyLossBatch, level: str) -> tuple[Tensor, Tensor]:
    """(log_ratio (B, T), ratio): ratio pi / pi_old per token (B, T), or per completion (B, 1) at "sequence"."""
    log_ratio = batch.logps - batch.old_logps
    if level == "token":
        return log_ratio, torch.exp(log_ratio)
    if level == "sequence":
        return log_ratio, torch.exp(sequence_log_ratio(batch.logps, batch.old_logps, batch.mask)).unsqueeze(-1)
    raise ValueError(f"unknown importance_sampling_level {level!r}; use 'token' or 'sequence'")


@SURROGATES.register("clipped")
def clipped(ratio: Tensor, log_ratio: Tensor, batch: PolicyLossBatch, p: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """PPO's clipped surrogate, -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) (r capped at delta if set)."""
    adv = _column(batch.advantages)
    clipped_ratio = torch.clamp(ratio, 1 - p.epsilon_low, 1 + p.epsilon_high)
    if p.delta is not None:
        ratio = torch.clamp(ratio, max=p.delta)
    loss = -torch.min(ratio * adv, clipped_ratio * adv)
    low = ((ratio < 1 - p.epsilon_low) & (adv < 0)).float()
    high = ((ratio > 1 + p.epsilon_high) & (adv > 0)).float()
    return loss, {"clip_ratio/low_mean": masked_mean(low, batch.mask), "clip_ratio/high_mean": masked_mean(high, batch.mask),
                  "clip_ratio/region_mean": masked_mean(torch.maximum(low, high), batch.mask),
                  "clip_ratio/low_min": nan_reduce(_per_completion(low, batch.mask), torch.min),
                  "clip_ratio/high_max": nan_reduce(_per_completion(high, batch.mask), torch.max)}


@SURROGATES.register("cispo")
def cispo(ratio: Tensor, log_ratio: Tensor, batch: PolicyLossBatch, p: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """MiniMax-M1's CISPO: -sg(min(r, eps_high)) A log pi (the clipped weight carries no gradient)."""
    adv = _column(batch.advantages)
    loss = -torch.clamp(ratio, max=p.epsilon_high).detach() * adv * batch.logps
    clipped_share = ((ratio > p.epsilon_high) & (adv > 0)).float()
    return loss, {"cispo_clip_ratio": masked_mean(clipped_share, batch.mask)}


@SURROGATES.register("sapo")
def sapo(ratio: Tensor, log_ratio: Tensor, batch: PolicyLossBatch, p: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """SAPO's soft gate: -sigmoid(tau (r - 1)) * 4 / tau * A, tau by the advantage's sign."""
    adv = _column(batch.advantages)
    tau = torch.where(adv > 0, p.sapo_temperature_pos, p.sapo_temperature_neg)
    return -torch.sigmoid(tau * (ratio - 1)) * 4 / tau * adv, {}


@SURROGATES.register("vespo")
def vespo(ratio: Tensor, log_ratio: Tensor, batch: PolicyLossBatch, p: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """VESPO: -phi(w) A log pi, phi(w) = e^lam w^k e^(-lam w) of the sequence ratio w, without gradient."""
    adv = _column(batch.advantages)
    phi = _gamma_weights(adv, log_ratio, batch.mask, batch.importance_weights, p)
    return -phi * adv * batch.logps, {"vespo/phi_seq_mean": masked_mean(phi, batch.mask)}


@torch.no_grad()
def _gamma_weights(adv: Tensor, log_ratio: Tensor, mask: Tensor, weights: Tensor | None, p: PolicyLossParams) -> Tensor:
    """(B, 1) phi(w) in log space, with TRL's clamps (log w to [log 1e-8, 20])."""
    floor = math.log(1e-8)
    log_w = (log_ratio.clamp(-20.0, 20.0) * mask).sum(-1, keepdim=True)  # a sum over tokens, not a mean
    if weights is not None:
        log_w = log_w + weights.log().clamp(floor, 20.0).sum(-1, keepdim=True)
    log_w = log_w.clamp(floor, 20.0)
    positive = adv >= 0
    k = torch.where(positive, p.vespo_k_pos, p.vespo_k_neg)
    lam = torch.where(positive, p.vespo_lambda_pos, p.vespo_lambda_neg).clamp(min=1e-4)
    return torch.exp(lam + k * log_w - lam * torch.exp(log_w)).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


@NORMALISERS.register("sequence_mean")
def sequence_mean(per_token: Tensor, mask: Tensor, p: PolicyLossParams) -> Tensor:
    return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()


@NORMALISERS.register("token_mean")
def token_mean(per_token: Tensor, mask: Tensor, p: PolicyLossParams) -> Tensor:
    return (per_token * mask).sum() / mask.sum().clamp(min=1.0)


@NORMALISERS.register("max_length")
def max_length(per_token: Tensor, mask: Tensor, p: PolicyLossParams) -> Tensor:
    return (per_token * mask).sum() / (per_token.size(0) * p.max_completion_length)


@NORMALISERS.register("step_tokens")
def step_tokens(per_token: Tensor, mask: Tensor, p: PolicyLossParams) -> Tensor:
    return (per_token * mask).sum() / max(p.step_tokens, 1.0)


@NORMALISERS.register("sequence_sum")
def sequence_sum(per_token: Tensor, mask: Tensor, p: PolicyLossParams) -> Tensor:
    return (per_token * mask).sum(-1).mean()


# TRL 1.16's loss_type -> (surrogate, normaliser). Every name mlgrpo's experiments accept is here.
LOSS_TYPES: Registry[tuple[str, str]] = Registry("loss_type")
for _name, _parts in {
    "grpo": ("clipped", "sequence_mean"), "bnpo": ("clipped", "token_mean"), "dr_grpo": ("clipped", "max_length"),
    "dapo": ("clipped", "step_tokens"), "luspo": ("clipped", "sequence_sum"), "cispo": ("cispo", "step_tokens"),
    "sapo": ("sapo", "sequence_mean"), "vespo": ("vespo", "step_tokens"),
}.items():
    LOSS_TYPES.add(_name, _parts)
# Normalisers that already count the whole optimiser step, so gradient accumulation does not divide again.
PER_STEP = frozenset({"step_tokens"})


def policy_loss(batch: PolicyLossBatch, params: PolicyLossParams) -> tuple[Tensor, Metrics]:
    """(loss, metrics) of one micro-batch: the 0-d loss to backpropagate (already divided for gradient
    accumulation) and 0-d metrics: policy_loss (before that division, TRL's logged value), kl (beta > 0)
    and the surrogate's clip shares.

    Hand-worked (grpo, one completion of two tokens, eps 0.2, A = 1): ratios e^0.5 = 1.6487 and e^0 = 1;
    token 1 is clipped to 1.2: per-token losses -1.2 and -1, their mean -1.1.
    >>> b = PolicyLossBatch(torch.tensor([[-0.5, -1.0]]), torch.tensor([[-1.0, -1.0]]), torch.tensor([1.0]),
    ...                     torch.ones(1, 2))
    >>> loss, metrics = policy_loss(b, PolicyLossParams(loss_type="grpo"))
    >>> round(loss.item(), 6), metrics["clip_ratio/high_mean"].item()
    (-1.1, 0.5)
    """
    surrogate, normaliser = LOSS_TYPES.get(params.loss_type)
    mask = batch.mask.to(batch.logps.dtype)
    log_ratio, ratio = importance_ratio(batch, params.importance_sampling_level)
    per_token, metrics = SURROGATES.get(surrogate)(ratio, log_ratio, batch, params)
    if params.off_policy_threshold is not None:
        per_token = per_token * off_policy_mask(batch, params.off_policy_threshold)
    if batch.entropy_mask is not None:
        per_token = per_token * batch.entropy_mask
    if batch.importance_weights is not None and surrogate != "vespo":  # vespo folds them into phi
        per_token = per_token * batch.importance_weights
    if params.beta != 0.0:
        kl = KL_ESTIMATORS.get("k3")(batch.logps, batch.ref_logps)
        if params.bias_correction_kl:
            kl = kl * ratio
        per_token = per_token + params.beta * kl
        metrics["kl"] = masked_mean(kl.detach(), mask)
    loss = NORMALISERS.get(normaliser)(per_token, mask, params)
    metrics["policy_loss"] = loss.detach()
    if normaliser not in PER_STEP:
        loss = loss / params.accumulation
    return loss, {name: value.detach() for name, value in metrics.items()}


def off_policy_mask(batch: PolicyLossBatch, threshold: float) -> Tensor:
    """(B, 1) DeepSeek-V3.2's off-policy sequence mask: 0 for a completion with a negative advantage whose
    mean KL(pi_sampler || pi_theta) over its tokens exceeds `threshold`; 1 otherwise. Tokens the engine
    could not score (NaN) give no evidence (0)."""
    sampling = batch.old_logps if batch.sampling_logps is None else batch.sampling_logps
    kl = torch.nan_to_num(sampling - batch.logps.detach(), nan=0.0)
    mean_kl = (kl * batch.mask).sum(1, keepdim=True) / batch.mask.sum(1, keepdim=True).clamp(min=1.0)
    return ((_column(batch.advantages) >= 0) | (mean_kl <= threshold)).to(batch.mask.dtype)


def entropy_bonus(entropies: Tensor, mask: Tensor, coef: float, accumulation: float = 1.0) -> tuple[Tensor, Metrics]:
    """(-coef * H / accumulation, {"entropy": H}): H the mean entropy over the masked tokens (B, T).

    TRL's documented objective L = L_policy - coef * H: the bonus does not depend on the loss type's
    normaliser. The caller passes the mask the policy loss acts on (with a top-entropy mask, their product).
    >>> loss, m = entropy_bonus(torch.tensor([[1.0, 3.0, 9.0]]), torch.tensor([[1.0, 1.0, 0.0]]), 0.1, 2.0)
    >>> round(loss.item(), 6), m["entropy"].item()   # H = (1 + 3) / 2 = 2; -0.1 * 2 / 2
    (-0.1, 2.0)
    """
    mean = (entropies * mask).sum() / mask.sum().clamp(min=1.0)
    return -coef * mean / accumulation, {"entropy": mean.detach()}


def _per_completion(x: Tensor, mask: Tensor) -> Tensor:
    """(B,) each completion's mean of x over its tokens (NaN for a completion without tokens); x (B, 1) as is."""
    return x.squeeze(1) if x.shape[1] == 1 else (x * mask).sum(-1) / mask.sum(-1)


def nan_reduce(x: Tensor, reduce) -> Tensor:
    """reduce(x) over its non-NaN values (TRL's nanmin / nanmax); NaN when there are none."""
    kept = x[~x.isnan()]
    return reduce(kept) if kept.numel() else torch.tensor(float("nan"), device=x.device)


def _column(advantages: Tensor) -> Tensor:
    """(B, 1) from per-completion (B,) advantages, so that they broadcast over tokens; (B, T) unchanged."""
    return advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
