"""The method notes' recipes on the trainers: reward clipping per function, and the entropy bonus through
TRL's own field in both arms (hand-worked against a plain entropy of the same batch)."""

from __future__ import annotations

import pytest

import torch

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.rewards.config import RewardClip
from mlgrpo.trainers import AlgorithmConfig, MultilingualGRPOTrainer, PPOTrainer

from .conftest import grpo_args

PPO = AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"))


def long_tailed(completions, **kwargs):
    """Length / 10, and now and then an outlier of 40 (a reward model's rare extreme score)."""
    return [40.0 if len(c) % 4 == 0 else len(c) / 10.0 for c in completions]


class Recording(MultilingualGRPOTrainer):
    def _advantages(self, rewards, keys, output, local):
        self.rewards_seen = getattr(self, "rewards_seen", []) + [rewards.clone()]
        return super()._advantages(rewards, keys, output, local)


def test_clipped_rewards_are_what_the_advantages_and_trls_reward_logs_see(tmp_path, make_model, tokenizer, dataset):
    trainer = Recording(model=make_model(), reward_funcs=[long_tailed], args=grpo_args(tmp_path, max_steps=3),
                        train_dataset=dataset, processing_class=tokenizer, reward_clip=[RewardClip(max=1.0)])
    trainer.train()
    seen = torch.cat(trainer.rewards_seen)
    assert seen.max() <= 1.0
    logs = [entry for entry in trainer.state.log_history if "rewards/long_tailed/clipped_high" in entry]
    assert len(logs) == 3
    outliers = [e for e in logs if e["rewards/long_tailed/clipped_high"] > 0]
    assert outliers, "the random policy's completions should hit a multiple of 4 characters now and then"
    for entry in outliers:  # TRL's own per-function mean is of the clipped values; the raw mean is logged beside it
        assert entry["rewards/long_tailed/mean"] <= 1.0 < entry["rewards/long_tailed/raw_mean"]
        assert entry["rewards/long_tailed/clip_high"] == 1.0


class FirstLoss:
    """Records the first micro-batch's loss and a plain entropy of its completion tokens."""

    def loss(self, model, batch):
        loss = super().loss(model, batch)
        if not hasattr(self, "first"):
            ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)
            mask = torch.cat([batch.prompt_mask, batch.completion_mask], dim=1)
            width = batch.completion_ids.size(1)
            with torch.no_grad():
                logits = model(input_ids=ids, attention_mask=mask).logits[:, -width - 1:-1] / self.temperature
                logp = torch.log_softmax(logits.float(), dim=-1)
                per_token = -(logp.exp() * logp).sum(-1)  # H = -sum_v p_v log p_v
                done = batch.completion_mask.float()
            self.first = (loss.detach(), ((per_token * done).sum() / done.sum()).item())
        return loss


class GRPOFirst(FirstLoss, MultilingualGRPOTrainer):
    pass


class PPOFirst(FirstLoss, PPOTrainer):
    pass


@pytest.mark.slow
def test_entropy_bonus_is_trls_entropy_coef_in_both_arms(tmp_path, make_model, tokenizer, dataset):
    """loss(coef) = loss(0) - coef x mean token entropy (TRL: L = L_policy - coef * H), on the same first batch."""
    from .conftest import length_reward

    coef = 0.05  # the method notes' range is 0.01-0.05
    for cls, algorithm in ((GRPOFirst, AlgorithmConfig()), (PPOFirst, PPO)):
        losses = {}
        for value in (0.0, coef):
            trainer = cls(model=make_model(), reward_funcs=[length_reward],
                          args=grpo_args(tmp_path / f"{cls.__name__}-{value}", max_steps=1, entropy_coef=value),
                          train_dataset=dataset, processing_class=tokenizer, algorithm=algorithm)
            trainer.train()
            losses[value] = trainer.first
        (plain, entropy0), (bonus, entropy) = losses[0.0], losses[coef]
        assert entropy == entropy0 > 0  # the same batch and weights: the same completions were drawn
        # A random tiny policy over 400 tokens: entropy near log(400) = 5.99, so the bonus is ~0.3.
        torch.testing.assert_close(plain - bonus, torch.tensor(coef * entropy), rtol=0, atol=1e-5)
