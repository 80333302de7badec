"""PPOTrainer: a critic that learns, GAE advantages per token, critic checkpoints, LoRA on the policy only."""

from __future__ import annotations

import copy

import pytest
import torch
from safetensors.torch import load_file

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError
from mlgrpo.trainers import AlgorithmConfig, PPOSettings, PPOTrainer
from mlgrpo.trainers.ppo import CRITIC_OPTIMIZER, CRITIC_WEIGHTS

from .conftest import grpo_args, length_reward


def ppo(**settings) -> AlgorithmConfig:
    return AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"),
                           ppo=PPOSettings(**settings))


def critic_vector(trainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in trainer.critic.parameters()])


class RecordingPPO(PPOTrainer):
    def _advantages(self, rewards, keys, output, local):
        advantages, metrics = super()._advantages(rewards, keys, output, local)
        self.seen = getattr(self, "seen", []) + [(advantages.clone(), output["completion_mask"].clone(), output["returns"].clone())]
        return advantages, metrics


def test_ppo_trains_policy_and_critic_with_per_token_advantages(tmp_path, make_model, tokenizer, dataset):
    model = make_model()
    start = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    trainer = RecordingPPO(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=3),
                           train_dataset=dataset, processing_class=tokenizer, algorithm=ppo())
    critic_start = critic_vector(trainer)
    trainer.train()
    assert (critic_vector(trainer) - critic_start).abs().max() > 1e-5
    assert (torch.cat([p.detach().flatten() for p in model.parameters()]) - start).abs().max() > 1e-5
    advantages, mask, returns = trainer.seen[0]
    assert advantages.dim() == 2 and advantages.shape == mask.shape  # per token
    assert torch.all(advantages[mask == 0] == 0)
    # Whitened over the batch's completion tokens: mean 0, std 1 (ddof 1, eps 1e-4).
    kept = advantages[mask == 1]
    assert abs(kept.mean().item()) < 1e-5 and abs(kept.std().item() - 1) < 1e-3
    # The critic starts at 0 (zero head), so the first returns are the token rewards summed from t on.
    logged = {k for entry in trainer.state.log_history for k in entry}
    for name in ("ppo/value_loss", "ppo/explained_variance", "ppo/value_clipfrac", "ppo/kl_penalty", "reward/en"):
        assert name in logged
    # Same rollout budget as GRPO: G completions per prompt.
    assert advantages.shape[0] == grpo_args(tmp_path).per_device_train_batch_size


class ResumeProbe(PPOTrainer):
    """Snapshots the critic and its optimiser right after a resume loaded them."""

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        self.loaded_critic = critic_vector(self)
        self.loaded_optimizer = copy.deepcopy(self.critic_optimizer.state_dict())


def test_critic_is_saved_and_restored_with_checkpoints(tmp_path, make_model, tokenizer, dataset):
    args = grpo_args(tmp_path, max_steps=2, save_strategy="steps", save_steps=2)
    first = PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                       processing_class=tokenizer, algorithm=ppo())
    first.train()
    checkpoint = tmp_path / "checkpoint-2"
    saved = load_file(str(checkpoint / CRITIC_WEIGHTS))
    assert (checkpoint / CRITIC_OPTIMIZER).exists()
    for name, value in first.critic.state_dict().items():
        torch.testing.assert_close(saved[name], value)
    # Resume: a fresh trainer (fresh critic) loads the critic and its optimiser from the checkpoint.
    resumed = ResumeProbe(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=3),
                          train_dataset=dataset, processing_class=tokenizer, algorithm=ppo())
    assert not torch.equal(critic_vector(resumed), critic_vector(first))
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert torch.equal(resumed.loaded_critic, critic_vector(first))
    first_state = first.critic_optimizer.state_dict()["state"]
    for index, state in resumed.loaded_optimizer["state"].items():
        torch.testing.assert_close(state["exp_avg"], first_state[index]["exp_avg"])
    assert resumed.state.global_step == 3


def test_value_head_on_the_policy_backbone(tmp_path, make_model, tokenizer, dataset):
    model = make_model()
    trainer = PPOTrainer(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=2),
                         train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(value_model="head", kl_mode="loss"))
    assert trainer.critic.backbone is model.model  # shared, not copied
    assert [id(p) for p in trainer._critic_params] == [id(p) for p in trainer.critic.head.parameters()]
    head_start = critic_vector(trainer)[-33:].clone()
    trainer.train()
    assert (critic_vector(trainer)[-33:] - head_start).abs().max() > 0


def test_lora_on_the_policy_only(tmp_path, make_model, tokenizer, dataset):
    from peft import LoraConfig

    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    trainer = PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=2),
                         train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(), peft_config=lora)
    assert any("lora" in n for n, _ in trainer.model.named_parameters())
    assert not any("lora" in n for n, _ in trainer.critic.named_parameters())
    trainer.train()
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert "ppo/kl_penalty" in logged  # reference = the base model with adapters disabled


def test_ppo_settings_are_validated():
    with pytest.raises(UserError, match="value_model"):
        PPOSettings(value_model="twin")
    with pytest.raises(UserError, match="kl_mode"):
        PPOSettings(kl_mode="both")
    with pytest.raises(UserError, match="GRPO has no critic"):
        AlgorithmConfig(name="grpo", ppo=PPOSettings(kl_coef=0.2))
