"""PPO's token rewards, per-token KL penalty and value targets: hand-worked numbers, one GAE pass."""

from __future__ import annotations

import math

import pytest
import torch

from mlgrpo.algorithms import KL_ESTIMATORS, AdvantageConfig, GroupKeys, compute_advantages, kl_penalty, token_rewards

NAN = float("nan")
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
LOGPS = torch.tensor([[-1.0, -2.0, -0.5], [-0.3, -0.6, -5.0]], dtype=torch.float64)
REF = torch.tensor([[-1.5, -1.0, -0.7], [-0.4, -0.9, 0.0]], dtype=torch.float64)


def close(tensor: torch.Tensor, expected) -> None:
    torch.testing.assert_close(tensor, torch.tensor(expected, dtype=tensor.dtype), rtol=0, atol=1e-12)


def keys(n: int) -> GroupKeys:
    return GroupKeys(prompt_ids=torch.arange(n), lang_ids=torch.zeros(n, dtype=torch.long), languages=("en",))


def test_token_rewards_put_the_outcome_on_the_last_completion_token():
    out = token_rewards(torch.tensor([1.0, 0.5, 2.0]), torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 1]]))
    # row 2 has padding inside: its last completion token is position 2
    assert out.tolist() == [[0.0, 0.0, 1.0], [0.0, 0.5, 0.0], [0.0, 0.0, 2.0]]
    empty = token_rewards(torch.tensor([1.0]), torch.tensor([[0, 0]]))
    assert math.isnan(empty[0, 0]) and empty[0, 1] == 0.0  # no token to carry it: a row without a reward
    unscored = token_rewards(torch.tensor([NAN]), torch.tensor([[1, 1]]))
    assert unscored[0, 0] == 0.0 and math.isnan(unscored[0, 1])


def test_kl_estimators_by_hand():
    # log pi - log pi_ref = 0.5 and -1:  k1 0.5, -1; k2 0.125, 0.5; k3 e^-0.5 - 1 + 0.5, e^1 - 1 - 1
    lp, ref = torch.tensor([-1.0, -2.0]), torch.tensor([-1.5, -1.0])
    assert KL_ESTIMATORS.get("k1")(lp, ref).tolist() == [0.5, -1.0]
    assert KL_ESTIMATORS.get("k2")(lp, ref).tolist() == [0.125, 0.5]
    assert KL_ESTIMATORS.get("k3")(lp, ref).tolist() == pytest.approx([math.exp(-0.5) - 0.5, math.e - 2])
    assert KL_ESTIMATORS.names() == ("k1", "k2", "k3")


def test_k3_is_trls_per_token_kl():
    # TRL 1.16 GRPOTrainer._compute_loss: exp(ref - logp) - (ref - logp) - 1
    trl = torch.exp(REF - LOGPS) - (REF - LOGPS) - 1
    torch.testing.assert_close(KL_ESTIMATORS.get("k3")(LOGPS, REF), trl)


def test_kl_penalty_and_returns_by_hand():
    # k1 per token: row 0 [0.5, -1, 0.2], row 1 [0.1, 0.3, (padding)]; coef 0.1
    penalty, metrics = kl_penalty(LOGPS, REF, MASK, 0.1, "k1")
    assert metrics["kl"].item() == pytest.approx((0.5 - 1 + 0.2 + 0.1 + 0.3) / 5)  # one estimate, five tokens
    assert metrics["ppo/kl_penalty"].item() == pytest.approx(0.1 * metrics["kl"].item())
    close(penalty, [[0.05, -0.1, 0.02], [0.01, 0.03, 0.0]])
    rewards = token_rewards(torch.tensor([1.0, 0.5], dtype=torch.float64), MASK) - penalty
    # row 0: [-0.05, 0.1, 0.98]; row 1: [-0.01, 0.47, 0]
    close(rewards, [[-0.05, 0.1, 0.98], [-0.01, 0.47, 0.0]])
    values = torch.tensor([[0.2, 0.4, 0.6], [0.1, 0.1, 0.0]], dtype=torch.float64)
    cfg = AdvantageConfig(estimator="gae", gamma=1.0, lam=1.0)
    result = compute_advantages(rewards, keys(2), cfg, values=values, mask=MASK.double())
    # gamma = lam = 1: the value target is the return G_t = sum of the rewards from t on; A = G - V
    # row 0: G = [1.03, 1.08, 0.98], A = [0.83, 0.68, 0.38]; row 1: G = [0.46, 0.47], A = [0.36, 0.37]
    close(result.returns, [[1.03, 1.08, 0.98], [0.46, 0.47, 0.0]])
    close(result.advantages, [[0.83, 0.68, 0.38], [0.36, 0.37, 0.0]])
    # lam = 0.5, gamma = 1 on row 0: delta = r_t + V_{t+1} - V_t = [0.15, 0.3, 0.38];
    # A_2 = 0.38, A_1 = 0.3 + 0.5 * 0.38 = 0.49, A_0 = 0.15 + 0.5 * 0.49 = 0.395; returns A + V
    half = compute_advantages(rewards[:1], keys(1), AdvantageConfig(estimator="gae", gamma=1.0, lam=0.5),
                              values=values[:1], mask=MASK[:1].double())
    close(half.advantages, [[0.395, 0.49, 0.38]])
    close(half.returns, [[0.595, 0.89, 0.98]])


def test_a_row_without_reward_leaves_gae_whitening_and_the_value_targets():
    rewards = token_rewards(torch.tensor([1.0, NAN, 0.0, 2.0], dtype=torch.float64),
                            torch.ones(4, 3, dtype=torch.float64))
    values = torch.full((4, 3), 0.3, dtype=torch.float64)
    result = compute_advantages(rewards, keys(4), AdvantageConfig(estimator="gae", std_scope="batch"),
                                values=values, mask=torch.ones(4, 3, dtype=torch.float64))
    assert result.mask[1].tolist() == [0.0, 0.0, 0.0] and result.mask[[0, 2, 3]].min() == 1.0
    assert result.advantages[1].tolist() == [0.0, 0.0, 0.0] and result.returns[1].tolist() == [0.0, 0.0, 0.0]
    kept = result.advantages[[0, 2, 3]].flatten()  # whitened over the 9 scored tokens only
    assert kept.mean().item() == pytest.approx(0.0, abs=1e-9) and kept.std().item() == pytest.approx(1.0, rel=1e-3)
    assert result.metrics["adv/nonfinite_rewards"].item() == 1.0
