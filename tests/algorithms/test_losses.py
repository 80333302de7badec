"""The loss registry: every loss is a pure function returning (0-d loss, metrics of 0-d tensors)."""

from __future__ import annotations

import math

import pytest
import torch

from mlgrpo.algorithms import inter_group_rows
from mlgrpo.algorithms.losses import LOSSES, sft_cross_entropy
from mlgrpo.algorithms.policy_loss import PolicyLossBatch, PolicyLossParams

B, T, V = 3, 4, 5
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])


def calls() -> dict:
    gen = torch.Generator().manual_seed(0)
    logps = -torch.rand(B, T, generator=gen)
    values, old, returns = (torch.randn(B, T, generator=gen) for _ in range(3))
    rows = inter_group_rows(torch.tensor([1.0, -1.0, 0.5]), torch.tensor([0, 0, 1]))
    return {
        "policy": ((PolicyLossBatch(logps, logps, torch.tensor([1.0, -1.0, 0.5]), MASK), PolicyLossParams("grpo")), {}),
        "entropy": ((torch.rand(B, T, generator=gen), MASK, 0.01), {}),
        "value": ((values, old, returns, MASK, 0.2), {}),
        "kl_penalty": ((logps, logps - 0.1, MASK, 0.05, "k3"), {}),
        "sft": ((torch.randn(B, T, V, generator=gen), torch.randint(0, V, (B, T), generator=gen), MASK), {}),
        "inter_group": ((logps, logps.detach() - 0.1, MASK, torch.tensor([1.0, -1.0, 0.5]), rows, 0.1, 1.0), {}),
    }


@pytest.mark.parametrize("name", ["policy", "entropy", "value", "kl_penalty", "sft", "inter_group"])
def test_every_loss_returns_a_loss_and_named_metrics(name):
    args, kwargs = calls()[name]
    loss, metrics = LOSSES.get(name)(*args, **kwargs)
    if name == "kl_penalty":  # a per-token penalty subtracted from the rewards, not a scalar loss
        assert loss.shape == (B, T) and torch.all(loss[MASK == 0] == 0)
    else:
        assert loss.dim() == 0 and math.isfinite(loss.item())
    assert metrics and all(isinstance(v, torch.Tensor) and not v.requires_grad for v in metrics.values())
    assert set(LOSSES.names()) == {"policy", "entropy", "value", "kl_penalty", "sft", "inter_group"}


def test_sft_cross_entropy_is_the_token_mean_of_minus_log_softmax():
    args, _ = calls()["sft"]
    logits, targets, mask = args
    loss, metrics = sft_cross_entropy(logits, targets, mask)
    nll = [[-torch.log_softmax(logits[b, t], -1)[targets[b, t]].item() for t in range(T)] for b in range(B)]
    kept = [nll[b][t] for b in range(B) for t in range(T) if mask[b, t]]
    assert loss.item() == pytest.approx(sum(kept) / len(kept), abs=1e-6)
    rows = [sum(nll[b][t] for t in range(T) if mask[b, t]) / mask[b].sum().item() for b in range(B)]
    assert metrics["sft/nll_rows"].tolist() == pytest.approx(rows, abs=1e-6)


def test_inter_group_loss_is_zero_at_the_rollout_policy_and_scaled_by_coef_and_scale():
    args, _ = calls()["inter_group"]
    logps, _, mask, adv, rows, _, _ = args
    at_rollout, _ = LOSSES.get("inter_group")(logps, logps.detach(), mask, adv, rows, 0.1, 1.0)
    assert at_rollout.item() == 0.0  # ratio 1 on every row: the variance has not changed
    moved, metrics = LOSSES.get("inter_group")(*args)
    doubled, _ = LOSSES.get("inter_group")(logps, args[1], mask, adv, rows, 0.2, 2.0)
    assert doubled.item() == pytest.approx(4 * moved.item()) and moved.item() == pytest.approx(
        0.1 * metrics["adv/inter_group_change"].item())
