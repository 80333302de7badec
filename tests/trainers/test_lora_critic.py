"""The LoRA critic: its own adapter on the LoRA policy's frozen base, switched in for its forward and backward."""

from __future__ import annotations

import copy

import pytest
import torch
from safetensors.torch import load_file

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError
from mlgrpo.trainers import AlgorithmConfig, PPOSettings, PPOTrainer
from mlgrpo.trainers.critic import CRITIC_ADAPTER, completion_values, critic_forward
from mlgrpo.trainers.ppo import CRITIC_WEIGHTS

from .conftest import grpo_args, length_reward

LORA_CRITIC = AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"),
                              ppo=PPOSettings(value_model="lora", value_learning_rate=1e-2))


def lora():
    from peft import LoraConfig

    return LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def named(module, marker: str) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters() if marker in n}


def trainer_for(tmp_path, make_model, tokenizer, dataset, **args):
    return PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, **args),
                      train_dataset=dataset, processing_class=tokenizer, algorithm=LORA_CRITIC, peft_config=lora())


def test_lora_critic_trains_its_adapter_and_head_and_leaves_the_base_alone(tmp_path, make_model, tokenizer, dataset):
    trainer = trainer_for(tmp_path, make_model, tokenizer, dataset, max_steps=3)
    policy = trainer.model
    critic_before = named(policy, f".{CRITIC_ADAPTER}.")
    policy_before = named(policy, ".default.")
    base_before = {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_" not in n}
    assert critic_before and policy_before
    assert trainer.critic.backbone is policy.get_base_model().model  # the policy's own backbone: no copy
    trainer.train()
    # the critic's optimiser holds exactly its adapter and its head; the policy's holds none of them
    critic_ids = {id(p) for n, p in policy.named_parameters() if f".{CRITIC_ADAPTER}." in n}
    critic_ids |= {id(p) for p in trainer.critic.head.parameters()}
    assert {id(p) for p in trainer._critic_params} == critic_ids
    policy_optimised = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not policy_optimised & critic_ids
    for before, marker in ((critic_before, f".{CRITIC_ADAPTER}."), (policy_before, ".default.")):
        after = named(policy, marker)
        assert max((after[n] - before[n]).abs().max().item() for n in before) > 1e-6, marker
    for name, value in base_before.items():
        assert torch.equal(dict(policy.named_parameters())[name].detach(), value), name
    # after training, the policy's adapter is the active, trainable one again
    assert policy.active_adapter == "default"
    assert all(p.requires_grad == (".default." in n) for n, p in policy.named_parameters() if "lora_" in n)
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert {"ppo/value_loss", "ppo/critic_grad_norm"} <= logged


def test_values_are_those_of_the_critic_adapter_alone_and_the_policy_is_unchanged(tmp_path, make_model, tokenizer,
                                                                                 dataset):
    trainer = trainer_for(tmp_path, make_model, tokenizer, dataset, max_steps=2)
    trainer.train()  # both adapters and the head have moved away from their starts
    policy, critic = trainer.model, trainer.critic
    ids = tokenizer(["<en> number: 12 ->", "<ja> number: 7 ->"], return_tensors="pt", padding=True)
    prompt, mask = ids["input_ids"], ids["attention_mask"]
    completion = torch.tensor([[5, 6, 7], [8, 9, 10]])
    completion_mask = torch.ones_like(completion)
    policy.eval()
    logits_before = policy(input_ids=prompt, attention_mask=mask).logits
    with torch.no_grad(), critic_forward(policy, critic):
        values = completion_values(critic, prompt, mask, completion, completion_mask)
    logits_after = policy(input_ids=prompt, attention_mask=mask).logits
    torch.testing.assert_close(logits_after, logits_before, rtol=0, atol=0)
    # Reference: a copy with the policy's adapter deleted, so that only the critic's can act.
    alone = copy.deepcopy(policy)
    alone.set_adapter(CRITIC_ADAPTER)
    alone.delete_adapter("default")
    with torch.no_grad():
        full_ids, full_mask = torch.cat([prompt, completion], 1), torch.cat([mask, completion_mask], 1)
        hidden = alone.get_base_model().model(input_ids=full_ids, attention_mask=full_mask).last_hidden_state
        expected = critic.head(hidden).squeeze(-1)[:, prompt.size(1) - 1 : prompt.size(1) - 1 + completion.size(1)]
    torch.testing.assert_close(values, expected)
    with torch.no_grad():  # and the critic's adapter does change the values: the switch is not a no-op
        without = critic.head(policy.get_base_model().model(input_ids=full_ids, attention_mask=full_mask)
                              .last_hidden_state).squeeze(-1)
    assert (without[:, prompt.size(1) - 1 :][:, : completion.size(1)] - values).abs().max() > 1e-6


class ResumeProbe(PPOTrainer):
    """The critic's own tensors right after a resume loaded them."""

    def load_state(self, checkpoint):
        super().load_state(checkpoint)
        self.loaded = {k: v.detach().clone() for k, v in self.critic.state_dict().items()}


def test_lora_critic_checkpoint_holds_its_adapter_and_head_and_resumes(tmp_path, make_model, tokenizer, dataset):
    first = trainer_for(tmp_path, make_model, tokenizer, dataset, max_steps=2, save_strategy="steps", save_steps=2)
    first.train()
    saved = load_file(str(tmp_path / "checkpoint-2" / CRITIC_WEIGHTS))
    assert saved and all(k.startswith("head.") or f".{CRITIC_ADAPTER}." in k for k in saved)
    assert any(k.startswith("head.") for k in saved) and any("lora_A" in k for k in saved)
    resumed = ResumeProbe(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=3),
                          train_dataset=dataset, processing_class=tokenizer, algorithm=LORA_CRITIC,
                          peft_config=lora())
    assert any(not torch.equal(resumed.critic.state_dict()[k], v) for k, v in saved.items())  # a fresh critic
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))
    for key, value in saved.items():
        assert torch.equal(resumed.loaded[key], value), key
    assert resumed.state.global_step == 3


def test_lora_critic_needs_a_lora_policy(tmp_path, make_model, tokenizer, dataset):
    with pytest.raises(UserError, match="value_model: lora .* set model.lora"):
        PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path), train_dataset=dataset,
                   processing_class=tokenizer, algorithm=LORA_CRITIC)
